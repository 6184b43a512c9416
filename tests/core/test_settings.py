"""Settings layering (defaults < user < repo < env), error messages, and the repo's limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtree_core.project_settings import load_settings
from memtree_core.settings import SettingsError

# config.json's whole model: the host's keys and every built-in plugin's, as a project with no config loads it
Settings = type(load_settings(Path("/nonexistent"), None, {"MEMTREE_LOAD_PLUGINS": ""}).settings)


def write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data))


def test_spec_defaults() -> None:
    s = Settings()
    assert s.embedding_model == "nomic-embed-text"
    assert s.summarizer_model == "claude-haiku-4-5"
    assert (s.retention.stale_hours, s.retention.superseded_days) == (24, 7)
    w = s.walkers
    assert (w.embedding_idle_ms, w.embedding_batch_size, w.summarizer_subtree_threshold) == (5000, 32, 25)
    assert (w.dedupe_interval_ms, w.staleness_interval_ms, w.pruner_interval_ms) == (60000, 30000, 300000)
    assert (s.capture.max_bytes, s.capture.filter_min_size, s.capture.bash) == (100000, 50, True)


def test_layers_override_in_order(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    write(home / "config.json", {"capture": {"maxBytes": 1000, "filterMinSize": 10},
                                 "retention": {"staleHours": 1}, "budgets": {"read": 900}})
    write(repo / ".memtree.json", {"budgets": {"read": 700, "grep": 600}, "embeddingModel": "local"})
    env = {"MEMTREE_BUDGETS__READ": "800", "MEMTREE_WALKERS__PRUNERINTERVALMS": "500"}
    loaded = load_settings(home, repo, env)
    s = loaded.settings
    assert s.budgets.read == 800  # env wins
    assert s.budgets.grep == 600  # repo over default
    assert s.capture.max_bytes == 1000 and s.capture.filter_min_size == 10  # user layer kept
    assert s.embedding_model == "local"  # repo over default
    assert s.retention.stale_hours == 1
    assert s.walkers.pruner_interval_ms == 500
    assert loaded.files == [str(home / "config.json"), str(repo / ".memtree.json")]
    assert loaded.warnings == []
    assert loaded.origin("budgets.read") == "environment variable MEMTREE_BUDGETS__READ"
    assert loaded.origin("budgets.grep") == str(repo / ".memtree.json")
    assert loaded.origin("capture.maxBytes") == str(home / "config.json")
    assert loaded.origin("ollamaUrl") == "default"
    assert load_settings(home, repo, {}).settings.budgets.read == 700


def test_bad_value_names_file_key_and_type(tmp_path: Path) -> None:
    write(tmp_path / "config.json", {"capture": {"maxBytes": "lots"}})
    with pytest.raises(SettingsError) as err:
        load_settings(tmp_path, None, {})
    msg = str(err.value)
    assert str(tmp_path / "config.json") in msg and "capture.maxBytes" in msg and "integer" in msg


def test_unknown_key_and_bad_json_and_bad_env(tmp_path: Path) -> None:
    write(tmp_path / "config.json", {"captur": {}})
    with pytest.raises(SettingsError, match="unknown key 'captur'"):
        load_settings(tmp_path, None, {})
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(SettingsError, match="not valid JSON at line 1"):
        load_settings(tmp_path, None, {})
    (tmp_path / "config.json").unlink()
    with pytest.raises(SettingsError, match="MEMTREE_CAPTURE__MAX_BYTES.*capture.maxBytes"):
        load_settings(tmp_path, None, {"MEMTREE_CAPTURE__MAX_BYTES": "x"})
    with pytest.raises(SettingsError, match="MEMTREE_NOPE: no settings key 'NOPE'"):
        load_settings(tmp_path, None, {"MEMTREE_NOPE": "1"})
    # a whole section, or a value that looks like JSON, must be JSON: for the host's keys and a plugin's
    for var, raw in [("MEMTREE_BUDGETS", "read=800"), ("MEMTREE_SEARCH__RANKER", "[rrf"),
                     ("MEMTREE_PLUGINS__CONFIG__ACME__LIST", "{x")]:
        with pytest.raises(SettingsError, match=f"environment variable {var}: expected JSON"):
            load_settings(tmp_path, None, {var: raw})


def test_non_setting_variables_are_not_settings(tmp_path: Path) -> None:
    env = {"MEMTREE_HOME": "/x", "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_STRICT_PLUGINS": "1"}
    assert load_settings(tmp_path, None, env).settings == Settings()


def test_repo_cannot_weaken_redaction_or_bash_capture(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    write(home / "config.json", {"capture": {"bash": False}})
    write(repo / ".memtree.json", {"capture": {"bash": True}, "redaction": {"enabled": False}})
    loaded = load_settings(home, repo, {})
    assert loaded.settings.capture.bash is False
    assert loaded.settings.redaction.enabled is True
    assert len(loaded.warnings) == 2 and all(".memtree.json" in w for w in loaded.warnings)
    # The user's own layers may do it.
    assert load_settings(home, repo, {"MEMTREE_REDACTION__ENABLED": "false"}).settings.redaction.enabled is False
    # Bash capture is the user's choice alone: a repo can neither turn it on nor off.
    write(home / "config.json", {})
    write(repo / ".memtree.json", {"capture": {"bash": False}})
    assert load_settings(home, repo, {}).settings.capture.bash is True


def test_info_json_reports_a_bad_user_config_clearly(home: Path, project: Path) -> None:
    from helpers.common import run_memtree

    home.mkdir(parents=True, exist_ok=True)
    write(home / "config.json", {"walkers": {"stalenessIntervalMs": -5}})
    out = run_memtree("info", "--json", "--project", str(project))
    assert out.returncode == 2
    assert "walkers.stalenessIntervalMs" in out.stderr and "config.json" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_bad_repo_config_is_a_warning_not_an_error(home: Path, project: Path) -> None:
    from helpers.common import run_memtree

    write(project / ".memtree.json", {"budgets": {"read": -5}, "search": {"defaultLimit": 10}})
    out = run_memtree("info", "--json", "--project", str(project))
    assert out.returncode == 0, out.stderr
    warnings = json.loads(out.stdout)["warnings"]
    assert any(".memtree.json: budgets.read ignored" in w for w in warnings), warnings
    (project / ".memtree.json").write_text("{not json")
    out = run_memtree("info", "--json", "--project", str(project))
    assert out.returncode == 0, out.stderr
    assert any("not valid JSON" in w and "ignored" in w for w in json.loads(out.stdout)["warnings"])


@pytest.mark.parametrize("value", ["off", "no", "0.0", "yes", "", 2, 0.0])
def test_booleans_take_only_true_false_1_0_in_every_layer(tmp_path: Path, value: object) -> None:
    write(tmp_path / "config.json", {"capture": {"bash": value}})
    with pytest.raises(SettingsError, match=r"capture\.bash: .*expected true or false"):
        load_settings(tmp_path, None, {})
    (tmp_path / "config.json").unlink()
    if isinstance(value, str):
        with pytest.raises(SettingsError, match="MEMTREE_REDACTION__ENABLED.*expected true or false"):
            load_settings(tmp_path, None, {"MEMTREE_REDACTION__ENABLED": value})


@pytest.mark.parametrize(("raw", "want"), [(True, True), (False, False), ("true", True), ("False", False),
                                           ("1", True), ("0", False)])
def test_booleans_accept_real_booleans_and_their_spellings(tmp_path: Path, raw: object, want: bool) -> None:
    write(tmp_path / "config.json", {"capture": {"replace": {"enabled": raw}}})
    assert load_settings(tmp_path, None, {}).settings.capture.replace.enabled is want
    (tmp_path / "config.json").unlink()
    if isinstance(raw, str):
        assert load_settings(tmp_path, None, {"MEMTREE_CAPTURE__BASH": raw}).settings.capture.bash is want


@pytest.mark.parametrize(("section", "key", "value"), [
    ("capture", "maxBytes", 2_000_000_000), ("capture", "maxBytes", 32 * 1024 * 1024 + 1),
    ("retention", "maxStoreMb", 0.01), ("walkers", "prunerIntervalMs", 0), ("walkers", "filterIntervalMs", 99),
    ("walkers", "dedupeIntervalMs", 5), ("walkers", "stalenessIntervalMs", 0), ("budgets", "read", 10**9),
    ("budgets", "bash", 5), ("capture", "filterMinSize", 10**6)])
def test_user_values_have_bounds(tmp_path: Path, section: str, key: str, value: object) -> None:
    write(tmp_path / "config.json", {section: {key: value}})
    with pytest.raises(SettingsError, match=f"{section}\\.{key}"):
        load_settings(tmp_path, None, {})


def test_user_values_inside_the_bounds_hold(tmp_path: Path) -> None:
    write(tmp_path / "config.json", {"capture": {"maxBytes": 32 * 1024 * 1024}, "retention": {"maxStoreMb": 1},
                                     "walkers": {"prunerIntervalMs": 100}})
    s = load_settings(tmp_path, None, {"MEMTREE_RETENTION__MAX_STORE_MB": "0"}).settings
    assert (s.capture.max_bytes, s.retention.max_store_mb, s.walkers.pruner_interval_ms) == (32 * 1024 * 1024, 0, 100)


def test_repo_may_set_only_the_allowlist(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    hostile = {"ollama_url": "http://203.0.113.7:11434", "summarizerModel": "claude-opus",
               "capture": {"maxBytes": 5, "bash": True, "replace": {"enabled": True, "timeoutMs": 10}},
               "retention": {"maxStoreMb": 5}, "walkers": {"dedupeIntervalMs": 100000}, "daemon": {"idleTimeoutS": 5},
               "summarizer": {"dailyCap": 9999}, "redaction": {"enabled": True}, "nope": 1,
               "search": {"ranker": "rrf", "defaultLimit": 20}, "budgets": {"bash": 1500},
               "capture_extra": {}}
    write(repo / ".memtree.json", hostile)
    loaded = load_settings(home, repo, {})
    assert loaded.settings == Settings(search={"ranker": "rrf", "defaultLimit": 20}, budgets={"bash": 1500})
    refused = " ".join(loaded.warnings)
    for key in ("ollamaUrl", "summarizerModel", "capture.maxBytes", "capture.bash", "capture.replace.enabled",
                "capture.replace.timeoutMs", "retention.maxStoreMb", "walkers.dedupeIntervalMs",
                "daemon.idleTimeoutS", "summarizer.dailyCap", "redaction.enabled", "'nope'", "'capture_extra'"):
        assert key in refused, key
    assert all(w.startswith(str(repo / ".memtree.json")) for w in loaded.warnings)


def test_repo_narrows_the_users_plugin_choices_never_widens_them(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    write(home / "config.json", {"plugins": {"disable": ["summarizers"], "load": ["a", "b"]}})
    write(repo / ".memtree.json", {"plugins": {"disable": ["retrieval", " Redaction ", "redaction"],
                                               "load": ["b", "c"]}})
    loaded = load_settings(home, repo, {})
    assert loaded.settings.plugins.disable == ["summarizers", "retrieval"]
    assert loaded.settings.plugins.load == ["b"]
    assert any("plugins.disable of 'redaction' ignored" in w for w in loaded.warnings)
    assert any("plugins.load of c ignored" in w for w in loaded.warnings)
    # An empty load list means "every plugin": it cannot widen the user's list, nor can a list of others.
    for load in ([], ["c"]):
        write(repo / ".memtree.json", {"plugins": {"load": load}})
        assert load_settings(home, repo, {}).settings.plugins.load == ["a", "b"]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "127.0.0.1:11434", "http://", "http://h:port", "ftp://h/"])
def test_ollama_url_must_be_an_http_endpoint(tmp_path: Path, url: str) -> None:
    with pytest.raises(SettingsError, match="MEMTREE_OLLAMA_URL.*ollamaUrl: must be an http"):
        load_settings(tmp_path, None, {"MEMTREE_OLLAMA_URL": url})
    assert load_settings(tmp_path, None, {"MEMTREE_OLLAMA_URL": "https://gpu.example:8443/"}).settings.ollama_url


def test_a_hostile_repo_config_cannot_flood_the_warnings(tmp_path: Path) -> None:
    data: dict[str, object] = {f"k{i}": i for i in range(3000)}
    data["budgets"] = {"read": "y" * 100_000}
    data["search"] = {"defaultLimit": 20}
    write(tmp_path / ".memtree.json", data)
    loaded = load_settings(tmp_path / "home", tmp_path, {})
    assert loaded.settings.search.default_limit == 20  # what it may set still holds
    assert len(loaded.warnings) <= 41 and loaded.warnings[-1].endswith("more keys ignored")
    assert max(map(len, loaded.warnings)) < 400


def test_durability_is_the_users_choice_only(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    assert load_settings(home, repo, {}).settings.store.synchronous == "normal"
    write(home / "config.json", {"store": {"synchronous": "full"}})
    write(repo / ".memtree.json", {"store": {"synchronous": "normal"}})
    loaded = load_settings(home, repo, {})
    assert loaded.settings.store.synchronous == "full"
    assert any("store.synchronous ignored" in w for w in loaded.warnings)
    write(home / "config.json", {})
    write(repo / ".memtree.json", {"store": {"synchronous": "full"}})  # not the repo's to set either way
    assert load_settings(home, repo, {}).settings.store.synchronous == "normal"
    assert load_settings(home, repo, {"MEMTREE_STORE__SYNCHRONOUS": "full"}).settings.store.synchronous == "full"
    with pytest.raises(SettingsError, match="synchronous"):
        load_settings(home, None, {"MEMTREE_STORE__SYNCHRONOUS": "off"})


def test_the_store_opens_with_the_chosen_durability(home: Path, project: Path) -> None:
    from memtree_core.app import App

    for value, pragma in (("normal", 1), ("full", 2)):
        app = App.open(project, environ={"MEMTREE_HOME": str(home), "MEMTREE_STORE__SYNCHRONOUS": value})
        try:
            assert app.store.query_one("PRAGMA synchronous") == (pragma,)
        finally:
            app.close()
