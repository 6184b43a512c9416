"""Plugin loading: built-ins by name, entry points, selection, failure isolation, strict mode, conflicts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import MEMTREE
from plugin_fixtures import GOOD, RAISES_AT_IMPORT, RAISES_IN_HOOK, UNKNOWN_HOOK, env_with, make_dist

from memtree_core.hookspecs import hookimpl
from memtree_core.plugins import PluginLoadError, build
from memtree_core.registry import Register, Registry, RegistryConflict
from memtree_core.settings import Settings
from memtree_plugins import BUILTINS


def memtree(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the real CLI with exactly ``env`` (no MEMTREE_* leaks in from the test process)."""
    return subprocess.run([MEMTREE, *args], env=env, capture_output=True, text=True, timeout=60)


def plugins_json(project: Path, env: dict[str, str]) -> dict[str, dict]:
    out = memtree("plugins", "--json", "--project", str(project), env=env)
    assert out.stdout, out.stderr
    return {p["name"]: p for p in json.loads(out.stdout)}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    s = tmp_path / "site"
    make_dist(s, "memtree-good", "1.2.0", {"good": GOOD})
    make_dist(s, "memtree-broken", "0.1.0", {"broken-import": RAISES_AT_IMPORT, "broken-hook": RAISES_IN_HOOK})
    make_dist(s, "memtree-typo", "0.1.0", {"typo": UNKNOWN_HOOK})
    return s


def test_every_builtin_is_listed_by_name(home: Path, project: Path) -> None:
    report = plugins_json(project, env_with(project, MEMTREE_HOME=str(home)))
    for name, module in BUILTINS.items():
        assert report[name]["status"] == "loaded"
        assert report[name]["source"] == f"builtin:{module}"


def test_broken_plugins_are_reported_and_skipped(home: Path, project: Path, site: Path) -> None:
    env = env_with(site, MEMTREE_HOME=str(home))
    out = memtree("plugins", "--json", "--project", str(project), env=env)
    report = {p["name"]: p for p in json.loads(out.stdout)}
    assert out.returncode == 1  # failures make `memtree plugins` exit non-zero
    assert report["good"]["status"] == "loaded"
    assert report["good"]["source"] == "entrypoint:memtree-good 1.2.0"
    assert report["good"]["provides"] == {"chunkers": ["upper"]}
    assert report["broken-import"]["status"] == "failed"
    assert "RuntimeError: boom at import" in report["broken-import"]["error"]
    assert report["broken-hook"]["status"] == "failed"
    assert "ValueError: boom in register hook" in report["broken-hook"]["error"]
    assert report["typo"]["status"] == "failed"
    assert "memtree_register_chunkerz" in report["typo"]["error"]
    assert all(report[name]["status"] == "loaded" for name in BUILTINS)


def test_strict_mode_makes_a_failure_fatal(home: Path, project: Path, site: Path) -> None:
    env = env_with(site, MEMTREE_HOME=str(home), MEMTREE_STRICT_PLUGINS="1")
    out = memtree("plugins", "--project", str(project), env=env)
    assert out.returncode == 2
    assert "broken-import" in out.stderr and "MEMTREE_STRICT_PLUGINS" in out.stderr
    assert "Traceback" not in out.stderr


def test_load_plugins_selects_by_entry_point_or_distribution(home: Path, project: Path, site: Path) -> None:
    report = plugins_json(project, env_with(site, MEMTREE_HOME=str(home), MEMTREE_LOAD_PLUGINS="good"))
    assert report["good"]["status"] == "loaded"
    assert report["broken-import"]["status"] == "not-selected"
    report = plugins_json(project, env_with(site, MEMTREE_HOME=str(home), MEMTREE_LOAD_PLUGINS="memtree-broken"))
    assert report["good"]["status"] == "not-selected"
    assert report["broken-hook"]["status"] == "failed"
    report = plugins_json(project, env_with(site, MEMTREE_HOME=str(home), MEMTREE_LOAD_PLUGINS=""))
    assert {report[n]["status"] for n in ("good", "broken-import", "typo")} == {"not-selected"}
    assert report["chunkers"]["status"] == "loaded"  # built-ins are not third-party selections


def test_disable_plugins_blocks_before_import_builtins_included(home: Path, project: Path, site: Path) -> None:
    env = env_with(site, MEMTREE_HOME=str(home), MEMTREE_DISABLE_PLUGINS="broken-import,chunkers,memtree-typo")
    report = plugins_json(project, env)
    assert report["broken-import"]["status"] == "disabled"  # never imported, so no error
    assert "error" not in report["broken-import"]
    assert report["chunkers"]["status"] == "disabled"
    assert report["typo"]["status"] == "disabled"


def test_per_repo_plugin_set(home: Path, project: Path, site: Path) -> None:
    (project / ".memtree.json").write_text(json.dumps(
        {"plugins": {"load": ["good"], "disable": ["retrieval"], "require": {"memtree-good": ">=1.0"}}}))
    report = plugins_json(project, env_with(site, MEMTREE_HOME=str(home)))
    assert report["good"]["status"] == "loaded"
    assert report["broken-import"]["status"] == "not-selected"
    assert report["retrieval"]["status"] == "disabled"
    (project / ".memtree.json").write_text(json.dumps({"plugins": {"require": {"memtree-good": ">=2"}}}))
    report = plugins_json(project, env_with(site, MEMTREE_HOME=str(home), MEMTREE_LOAD_PLUGINS="good"))
    assert report["memtree-good"]["status"] == "missing"
    assert "does not satisfy" in report["memtree-good"]["error"]


def test_repo_config_cannot_disable_redaction(home: Path, project: Path) -> None:
    (project / ".memtree.json").write_text(json.dumps({"plugins": {"disable": ["redaction"]}}))
    report = plugins_json(project, env_with(project, MEMTREE_HOME=str(home)))
    assert report["redaction"]["status"] == "loaded"


class _Named:
    def __init__(self, name: str, tag: str = "") -> None:
        self.name = name
        self.tag = tag


def test_registry_conflict_names_both_plugins_and_replaces_overrides() -> None:
    reg: Registry[_Named] = Registry("chunker")
    Register(reg, "alpha")(_Named("py"))
    with pytest.raises(RegistryConflict) as err:
        Register(reg, "beta")(_Named("py"))
    assert "'alpha'" in str(err.value) and "'beta'" in str(err.value) and "replaces=True" in str(err.value)
    Register(reg, "beta")(_Named("py", "beta's"), replaces=True)
    assert reg["py"].tag == "beta's"
    assert reg.entry("py").replaced == "alpha"  # type: ignore[union-attr]
    Register(reg, "gamma").remove("py")
    assert "py" not in reg and reg.removed == {"py": "gamma"}


class FirstChunker:
    @hookimpl
    def memtree_register_chunkers(self, register):
        register(_Named("window", "first"))


class ClashingChunker:
    """A plugin that registers a chunker under another plugin's name without declaring replaces."""

    @hookimpl
    def memtree_register_chunkers(self, register):
        register(_Named("window"))


class ReplacingChunker:
    @hookimpl
    def memtree_register_chunkers(self, register):
        register(_Named("window", "mine"), replaces=True)


def test_conflict_fails_only_the_newcomer() -> None:
    first = ("first", FirstChunker())
    plugins = build(Settings(), {}, builtins={}, extra=[first, ("clash", ClashingChunker())])
    info = plugins.info("clash")
    assert info is not None and info.status == "failed"
    assert "'first'" in info.error and "'clash'" in info.error
    assert plugins.chunkers.entry("window").plugin == "first"
    with pytest.raises(PluginLoadError):
        build(Settings(), {"MEMTREE_STRICT_PLUGINS": "1"}, builtins={}, extra=[first, ("clash", ClashingChunker())])
    plugins = build(Settings(), {}, builtins={}, extra=[first, ("mine", ReplacingChunker())])
    assert plugins.chunkers["window"].tag == "mine"


def test_token_counter_hook_first_result_wins_over_builtin() -> None:
    class Fixed:
        name = "fixed"

        def count(self, text: str) -> int:
            return 7

    class CounterPlugin:
        @hookimpl
        def memtree_token_counter(self, settings):
            return Fixed()

    assert build(Settings(), {}).token_counter.name == "estimate"
    assert build(Settings(), {}, extra=[("c", CounterPlugin())]).token_counter.count("x") == 7


def test_importing_memtree_core_loads_no_plugins() -> None:
    import subprocess
    import sys

    code = ("import sys, memtree_core, memtree_core.cli; "
            "print(any(m.startswith('memtree_plugins') or m == 'pluggy' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
