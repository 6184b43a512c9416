"""The built-in plugins' own settings: each declares the top-level keys of config.json it owns, the host keeps
its own, and users and repositories set them as before (same keys, same layers, same repository limits)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import MEMTREE
from pydantic import BaseModel

from memtree_core.app import App
from memtree_core.plugin_settings import BuiltinSettings, check_model, claims
from memtree_core.plugins import build
from memtree_core.project_settings import load, load_settings
from memtree_core.settings import Settings, SettingsError, _repo_may_set

NO_THIRD_PARTY = {"MEMTREE_LOAD_PLUGINS": ""}

# What a repository's .memtree.json could set before the built-ins owned their keys: it may set these after,
# nothing more (a key path covers everything under it).
REPO_MAY_SET = {("embeddingModel",), ("plugins", "load"), ("plugins", "disable"), ("plugins", "require"),
                ("budgets",), ("search", "ranker"), ("search", "defaultLimit"), ("capture", "filterMinSize")}


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def leaf_paths(model: type, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        path = (*prefix, info.alias or name)
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            out.extend(leaf_paths(sub, path))
        else:
            out.append(path)
    return out


def whole_model(home: Path) -> type:
    """config.json's whole model: the host's and every built-in's keys, as a project with no config loads it."""
    return type(load_settings(home, None, NO_THIRD_PARTY).settings)


def test_the_host_keeps_only_its_own_keys_and_the_built_ins_the_rest(tmp_path: Path) -> None:
    assert set(Settings.model_fields) == {"capture", "redaction", "daemon", "store", "plugins"}
    whole = whole_model(tmp_path)
    assert set(whole.model_fields) == {"capture", "redaction", "daemon", "store", "plugins", "embedding_model",
                                       "summarizer_model", "ollama_url", "retention", "walkers", "index",
                                       "summarizer", "search", "budgets", "digest"}
    # one section, two owners: the walkers plugin's intervals and the semantic plugin's embedding keys
    assert set(whole.model_fields["walkers"].annotation.model_fields) == {
        "embedding_idle_ms", "embedding_batch_size", "summarizer_subtree_threshold", "dedupe_interval_ms",
        "staleness_interval_ms", "pruner_interval_ms", "filter_interval_ms", "staleness_batch_files",
        "prune_batch_rows"}


def test_a_repository_may_set_exactly_what_it_could_before(tmp_path: Path) -> None:
    whole = whole_model(tmp_path)
    allowed = {p for p in leaf_paths(whole) if _repo_may_set(whole, p)}
    expected = {p for p in leaf_paths(whole) if any(p[:len(a)] == a for a in REPO_MAY_SET)}
    assert allowed == expected
    assert ("budgets", "read") in allowed and ("ollamaUrl",) not in allowed  # the check sees both kinds


def test_a_disabled_plugins_keys_are_a_warning_in_every_layer(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    write(home / "config.json", {"retention": {"staleHours": 1}, "walkers": {"embeddingIdleMs": 0,
                                                                            "prunerIntervalMs": 500}})
    write(repo / ".memtree.json", {"search": {"defaultLimit": 20}})
    env = {**NO_THIRD_PARTY, "MEMTREE_DISABLE_PLUGINS": "walkers,retrieval", "MEMTREE_INDEX__BACKGROUND": "true"}
    loaded = load_settings(home, repo, env)
    said = "\n".join(loaded.warnings)
    for key, plugin in (("retention", "walkers"), ("walkers.prunerIntervalMs", "walkers"),
                        ("search", "retrieval"), ("INDEX.BACKGROUND", "walkers")):
        assert f"{key} ignored: it is plugin {plugin!r}'s setting, and that plugin is not loaded" in said, key
    # the semantic plugin's key in the same section still holds, and is still checked
    assert loaded.settings.walkers.embedding_idle_ms == 0
    write(home / "config.json", {"walkers": {"embeddingIdleMs": -1}})
    with pytest.raises(SettingsError, match="walkers.embeddingIdleMs"):
        load_settings(home, repo, env)
    # a key no plugin owns is still an error in the user's own config
    write(home / "config.json", {"retentoin": {}})
    with pytest.raises(SettingsError, match="unknown key 'retentoin'"):
        load_settings(home, repo, env)


def test_each_plugin_reads_its_own_settings(home: Path, project: Path) -> None:
    write(project / ".memtree.json", {"budgets": {"read": 700}, "search": {"ranker": "rrf"}})
    env = {**NO_THIRD_PARTY, "MEMTREE_HOME": str(home), "MEMTREE_RETENTION__STALE_HOURS": "3",
           "MEMTREE_WALKERS__DEDUPE_INTERVAL_MS": "1000"}
    app = App.open(project, environ=env)
    try:
        walkers, semantic = app.plugin_settings("walkers"), app.plugin_settings("semantic")
        assert walkers.retention.stale_hours == 3 and app.settings.retention.stale_hours == 3
        assert semantic.walkers.dedupe_interval_ms == 1000
        assert not hasattr(semantic.walkers, "pruner_interval_ms")  # its own keys of the shared section only
        assert "embedding_model" not in semantic.model_fields_set  # unset: "auto" (semantic.vectors)
        assert app.plugin_settings("wrappers").budgets.read == 700
        assert app.plugin_settings("retrieval").search.ranker == "rrf"
        assert app.plugin_settings("wrappers").config.grep_engine == "auto"
        assert app.plugin_settings("tokens") is None  # it declares none
    finally:
        app.close()


def plugin_module(folder: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    """Make ``source`` importable as module ``name`` for this test only."""
    (folder / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, name, raising=False)


RIVAL = '''
from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings, Section


class {section_class}(Section):
    {key}: int = 1


class Rival(BuiltinSettings):
    {section}: {section_class} = {section_class}()


@hookimpl
def memtree_settings_model():
    return Rival
'''


@pytest.mark.parametrize(("section", "section_class", "key", "owner"), [
    ("search", "Search", "ranker", "plugin 'retrieval''s"), ("capture", "Capture", "max_bytes", "the host's"),
    ("walkers", "Walkers", "embedding_idle_ms", "plugin 'semantic''s")])
def test_two_owners_of_one_key_fail_the_second_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       section: str, section_class: str, key: str,
                                                       owner: str) -> None:
    module = f"rival_{section}_{key}"
    plugin_module(tmp_path, monkeypatch, module, RIVAL.format(section=section, section_class=section_class, key=key))
    builtins = {"retrieval": "memtree_plugins.retrieval", "semantic": "memtree_plugins.semantic",
                "rival": module}
    plugins = build(Settings(), NO_THIRD_PARTY, builtins=builtins)
    info = plugins.info("rival")
    assert info is not None and info.status == "failed"
    camel = "".join(w if i == 0 else w.title() for i, w in enumerate(key.split("_")))
    assert f"its settings key {section}.{camel} is already {owner}" in info.error
    assert "rival" not in plugins.settings_sections and plugins.info("retrieval").status == "loaded"


SCALAR_RIVAL = '''
from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings


class Rival(BuiltinSettings):
    walkers: int = 1  # a key that is another owner's section


@hookimpl
def memtree_settings_model():
    return Rival
'''


def test_a_key_that_is_another_owners_section_fails_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = "rival_scalar_walkers"
    plugin_module(tmp_path, monkeypatch, module, SCALAR_RIVAL)
    plugins = build(Settings(), NO_THIRD_PARTY, builtins={"semantic": "memtree_plugins.semantic", "rival": module})
    info = plugins.info("rival")
    assert info is not None and info.status == "failed"
    assert "its settings key walkers is already plugin 'semantic''s" in info.error


THIRD_PARTY_SECTION = '''
from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings


class Mine(BuiltinSettings):
    verbose: bool = False


@hookimpl
def memtree_settings_model():
    return Mine
'''


def test_only_a_built_in_owns_top_level_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = "third_party_section"
    plugin_module(tmp_path, monkeypatch, module, THIRD_PARTY_SECTION)
    import importlib

    plugins = build(Settings(), NO_THIRD_PARTY, extra=[("mine", importlib.import_module(module))])
    info = plugins.info("mine")
    assert info is not None and info.status == "failed" and "only a built-in plugin" in info.error


def test_a_built_ins_checks_live_in_its_types() -> None:
    from pydantic import field_validator

    class Checked(BuiltinSettings):
        url: str = "http://x"

        @field_validator("url")
        @classmethod
        def _check(cls, value: str) -> str:
            return value

    assert "checks must be in its fields' types" in (check_model(Checked, builtin=True) or "")
    assert claims(Checked) == [("url",)]


def test_plugins_json_shows_each_built_ins_keys(home: Path, project: Path) -> None:
    write(home / "config.json", {"retention": {"staleHours": 2}})
    out = subprocess.run([MEMTREE, "plugins", "--json", "--project", str(project)], capture_output=True, text=True,
                         timeout=60, env={**_env(home), **NO_THIRD_PARTY})
    assert out.returncode == 0, out.stderr
    report = {p["name"]: p for p in json.loads(out.stdout)}
    assert report["walkers"]["sections"]["retention"]["staleHours"] == 2
    assert report["retrieval"]["sections"] == {"search": {"ranker": "shaped", "defaultLimit": 10}}
    # capture is shared: the selectors plugin lists only its own key of it (the host keeps maxBytes and bash)
    assert list(report["selectors"]["sections"]["capture"]) == ["replace"]
    assert report["selectors"]["sections"]["capture"]["replace"]["timeoutMs"] == 150
    assert report["wrappers"]["settings"] == {"grepEngine": "auto"}  # its plugins.config values, as before
    assert "sections" not in report["tokens"]


def _env(home: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env["MEMTREE_HOME"] = str(home)
    return env


def test_the_plugin_choice_is_read_before_the_plugins_and_the_rest_after(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    write(home / "config.json", {"plugins": {"disable": ["summarizers"]}, "summarizerModel": "x"})
    loaded, plugins = load(home, repo, {**NO_THIRD_PARTY}, kinds=())
    assert plugins.info("summarizers").status == "disabled"
    assert any("summarizerModel ignored: it is plugin 'summarizers'" in w for w in loaded.warnings)
    assert not hasattr(loaded.settings, "summarizer_model")


def test_a_config_naming_a_disabled_plugins_key_does_not_stop_the_cli(home: Path, project: Path) -> None:
    write(home / "config.json", {"ollamaUrl": "http://127.0.0.1:9"})
    out = subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], capture_output=True, text=True,
                         timeout=120, env={**_env(home), **NO_THIRD_PARTY, "MEMTREE_DISABLE_PLUGINS": "embedders"})
    assert out.returncode == 0, out.stderr
    warnings = json.loads(out.stdout)["warnings"]
    assert any("ollamaUrl ignored: it is plugin 'embedders'" in w for w in warnings), warnings



def test_a_plugins_modules_serve_with_its_defaults_when_it_is_disabled(home: Path, project: Path) -> None:
    from memtree_plugins.retrieval.settings import search_settings
    from memtree_plugins.semantic import vectors
    from memtree_plugins.semantic.settings import semantic_settings

    env = {**NO_THIRD_PARTY, "MEMTREE_HOME": str(home), "MEMTREE_DISABLE_PLUGINS": "semantic,retrieval",
           "MEMTREE_EMBEDDING_MODEL": "local", "MEMTREE_SEARCH__RANKER": "rrf"}
    app = App.open(project, environ=env)
    try:
        assert app.plugin_settings("semantic") is None and app.plugin_settings("retrieval") is None
        # memtree reembed and the inspector still call into them: the settings are the defaults, and the
        # user's values for a disabled plugin were ignored with a warning
        assert vectors.configured_model(app) == "auto" and semantic_settings(app).walkers.embedding_batch_size == 32
        assert search_settings(app).ranker == "shaped"
        assert any("EMBEDDING_MODEL ignored: it is plugin 'semantic'" in w for w in app.loaded.warnings)
    finally:
        app.close()


@pytest.mark.parametrize(("disabled", "section", "typo"), [("selectors", "capture", "maxByts"),
                                                           ("filters", "capture", "maxByts"),
                                                           ("semantic", "walkers", "prunerIntervlMs")])
def test_a_typo_in_a_shared_section_stays_an_error_when_a_co_owner_is_disabled(
        tmp_path: Path, disabled: str, section: str, typo: str) -> None:
    """The disabled plugin owns only the keys it declares in a section it shares: any other unknown key there
    is still the user's mistake, not that plugin's dormant setting."""
    home = tmp_path / "home"
    env = {**NO_THIRD_PARTY, "MEMTREE_DISABLE_PLUGINS": disabled}
    write(home / "config.json", {section: {typo: 5}})
    with pytest.raises(SettingsError, match=f"unknown key '{section}.{typo}'"):
        load_settings(home, None, env)
    (home / "config.json").unlink()
    with pytest.raises(SettingsError, match="no settings key"):
        load_settings(home, None, {**env, f"MEMTREE_{section.upper()}__{typo.upper()}": "5"})
