"""The examples under ``examples/`` do what their READMEs say, through the real pieces.

* ``examples/memtree-example-plugin`` is pip-installed into this test environment (a real distribution with
  a real entry point) and shows up in ``memtree plugins --json``; its chunker, its ``window`` override, its
  redaction rule and its filter change what the real server (``memtree serve`` + daemon, driven by the mcp
  SDK's stdio client) and the real capture hook do.
* ``examples/per-repo-plugin-set/.memtree.json`` gives a repo exactly the plugin set it names, and a repo
  cannot use the same file to switch redaction off.

The package is installed into a folder of this module's, put on ``PYTHONPATH`` of the processes it starts,
so other test modules never see a third-party plugin they did not ask for.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.common import MEMTREE, wait_for
from helpers.daemon import mcp_session, open_store, run_async, text_of

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PLUGIN = REPO / "examples" / "memtree-example-plugin"
PLUGIN_SET = REPO / "examples" / "per-repo-plugin-set"
DIST = "memtree-example-plugin"
HOOKS = json.loads((REPO / "plugin" / "hooks" / "hooks.json").read_text())


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=300)


def _setuptools_at_least(major: int) -> bool:
    if importlib.util.find_spec("setuptools") is None:
        return False
    from importlib.metadata import version

    return int(version("setuptools").split(".")[0]) >= major


@pytest.fixture(scope="module")
def acme_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``pip install --target`` the example plugin into a folder of this module's, on ``PYTHONPATH`` of every
    process the module starts (built from a copy, so the build leaves nothing in the repo).

    Not into the test environment itself: tests in other workers enumerate its entry points meanwhile and
    would see a half-written distribution."""
    work = tmp_path_factory.mktemp("example-plugin")
    src = work / "memtree-example-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = work / "site"
    # memtree itself is already installed here; --no-deps keeps pip from resolving it again.  The build
    # uses this environment's setuptools when it is new enough for the SPDX `license` field, else pip
    # builds in an isolated environment (which fetches setuptools from the package index).
    isolation = ["--no-build-isolation"] if _setuptools_at_least(77) else []
    result = pip("install", "--quiet", "--no-deps", "--target", str(site), *isolation, str(src))
    assert result.returncode == 0, f"pip install of the example plugin failed:\n{result.stderr}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
        mp.syspath_prepend(str(site))  # and for the tests that open an App in this process
        yield


def env_with(home: Path, **extra: str | None) -> dict[str, str]:
    """The subprocess environment: the isolated home from the ``home`` fixture, plus ``extra``
    (a value of None removes the variable)."""
    env = dict(os.environ)
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def plugins_json(project: Path, env: dict[str, str]) -> tuple[int, dict[str, dict[str, Any]]]:
    r = subprocess.run([MEMTREE, "plugins", "--json", "--project", str(project)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.strip(), r.stderr
    return r.returncode, {p["name"]: p for p in json.loads(r.stdout)}


def _chunk_refs(value: Any) -> list[dict[str, Any]]:
    """Every chunk reference (a dict with ``lines`` and ``kind``) anywhere in a structured result."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if isinstance(value.get("lines"), str) and "kind" in value:
            found.append(value)
        for v in value.values():
            found.extend(_chunk_refs(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_chunk_refs(v))
    return found


def _require(tools: set[str], *names: str) -> None:
    missing = [n for n in names if n not in tools]
    if missing:
        raise AssertionError(f"tool(s) {', '.join(missing)} not registered: is a built-in plugin failing?")


_TOKENS = random.Random(118)  # seeded: the same tokens on every run


def acme_token() -> str:
    return "acme_live_" + _TOKENS.randbytes(16).hex()


INI = """\
; deployment settings
root = /srv/app

[database]
host = db.internal
port = 5432
name = orders

[cache]
backend = redis
ttl = 300

[[workers]]
name = mailer
"""


# -- memtree plugins -------------------------------------------------------------------------------------
def test_installed_plugin_is_loaded_and_lists_what_it_provides(acme_installed: None, home: Path,
                                                               project: Path) -> None:
    code, report = plugins_json(project, env_with(home, MEMTREE_LOAD_PLUGINS="acme"))
    assert code == 0, report
    acme = report["acme"]
    assert acme["status"] == "loaded", acme
    assert acme["source"].startswith(f"entrypoint:{DIST} 0.1.0"), acme
    assert {k: sorted(v) for k, v in acme["provides"].items()} == {
        "redaction_rules": ["acme-token"],
        "filters": ["acme-listings-lockfiles"],
        "chunkers": ["acme-sections", "window"],
        "capture_adapters": ["acme-webfetch"],
    }


def test_the_override_replaces_the_builtin_window_chunker(acme_installed: None, home: Path,
                                                          project: Path) -> None:
    from memtree_core.app import App

    with_acme = App.open(project, environ=env_with(home, MEMTREE_LOAD_PLUGINS="acme"))
    builtin_only = App.open(project, environ=env_with(home, MEMTREE_LOAD_PLUGINS=""))
    try:
        entry = with_acme.plugins.chunkers.entry("window")
        assert (entry.plugin, entry.replaced) == ("acme", "chunkers")
        assert builtin_only.plugins.chunkers.entry("window").plugin == "chunkers"
        text = "".join(f"line {i}\n" for i in range(1, 251))
        spans = [(c.start_line, c.end_line) for c in with_acme.chunker_for("notes.txt").chunk("notes.txt", text)]
        before = [(c.start_line, c.end_line) for c in builtin_only.chunker_for("notes.txt").chunk("notes.txt", text)]
        assert spans == [(1, 100), (101, 200), (201, 250)]
        assert before == [(1, 200), (201, 250)]
        assert with_acme.chunker_for("settings.ini").name == "acme-sections"
        assert builtin_only.chunker_for("settings.ini").name == "window"
    finally:
        with_acme.close()
        builtin_only.close()


def test_disabling_the_plugin_by_name_turns_all_of_it_off(acme_installed: None, home: Path,
                                                          project: Path) -> None:
    code, report = plugins_json(project, env_with(home, MEMTREE_LOAD_PLUGINS=None,
                                                  MEMTREE_DISABLE_PLUGINS="acme"))
    assert code == 0
    assert report["acme"]["status"] == "disabled"
    assert "provides" not in report["acme"]


# -- the real server -------------------------------------------------------------------------------------
@pytest.mark.usefixtures("daemon_guard")  # stops the daemon the session starts, checks none is left
def test_server_reads_ini_by_section_and_redacts_acme_tokens_in_bash(acme_installed: None, home: Path,
                                                                     project: Path) -> None:
    (project / "deploy.ini").write_text(INI)
    token = acme_token()
    env = env_with(home, MEMTREE_LOAD_PLUGINS="acme")

    async def main() -> tuple[list[dict[str, Any]], Any]:
        async with mcp_session(project, env) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            _require(tools, "read", "bash")
            read = await session.call_tool("read", {"path": "deploy.ini"})
            assert not read.is_error, text_of(read)
            bash = await session.call_tool("bash", {"command": f"echo deploy key {token}"})
            return _chunk_refs(read.structured_content), bash

    chunks, bash = run_async(main)
    assert [(c["lines"], c["kind"], c.get("symbol")) for c in chunks] == [
        ("1-3", "preamble", None), ("4-8", "section", "database"), ("9-12", "section", "cache"),
        ("13-14", "section", "workers")]

    assert not bash.is_error, text_of(bash)
    shown = text_of(bash) + json.dumps(bash.structured_content)
    assert token not in shown
    assert "[REDACTED:acme-token]" in shown
    conn = open_store(project)
    try:
        rows = conn.execute("SELECT count(*) FROM nodes WHERE content LIKE ?", (f"%{token[10:]}%",)).fetchone()
        stored = conn.execute("SELECT count(*) FROM nodes WHERE content LIKE '%[REDACTED:acme-token]%'").fetchone()
    finally:
        conn.close()
    assert rows[0] == 0, "the token reached the store"
    assert stored[0] >= 1, "the bash output was not stored"


def run_hook(payload: dict[str, Any], project: Path, env: dict[str, str]) -> None:
    """The capture hook exactly as plugin/hooks/hooks.json configures it, run the way Claude Code runs it."""
    (hook,) = [h for g in HOOKS["hooks"]["PostToolUse"] for h in g["hooks"] if h["command"].endswith("/capture")]
    environ = {**env, "CLAUDE_PLUGIN_ROOT": str(REPO), "CLAUDE_PROJECT_DIR": str(project)}
    r = subprocess.run(["/bin/sh", "-c", hook["command"]], input=json.dumps(payload).encode(), env=environ,
                       capture_output=True, timeout=30)
    assert r.returncode == 0 and not r.stdout, r


def bash_payload(project: Path, command: str, stdout: str, n: int) -> dict[str, Any]:
    return {"session_id": "example-test", "transcript_path": "/dev/null", "cwd": str(project),
            "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "example"},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
            "tool_use_id": f"toolu_example_{n}"}


@pytest.mark.usefixtures("daemon_guard")
def test_capture_path_redacts_with_the_plugin_rule_and_filters_listings(acme_installed: None, home: Path,
                                                                         project: Path) -> None:
    token = acme_token()
    env = env_with(home, MEMTREE_LOAD_PLUGINS="acme")
    listing = "".join(f"-rw-r--r--  1 dev dev  {100 + i} Jan  1 12:00 module_{i}.py\n" for i in range(20))
    config_dump = f"ACME_ENDPOINT=https://api.acme.test\nclient token in use: {token}\nretries=3\n" * 3

    async def main() -> None:
        # A session starts the daemon; the hook only ever talks to a running one.
        async with mcp_session(project, env) as session:
            await session.list_tools()
            run_hook(bash_payload(project, "ls -la src", listing, 1), project, env)
            run_hook(bash_payload(project, "cat deploy/env.txt", config_dump, 2), project, env)
            conn = open_store(project)
            try:
                def settled() -> list[tuple[str, str, str]] | None:
                    rows = conn.execute(
                        "SELECT n.metadata, n.status, n.content FROM nodes n WHERE n.kind = 'tool_output'"
                    ).fetchall()
                    if len(rows) == 2 and all(r[1] != "pending" for r in rows):
                        return rows
                    return None

                rows = wait_for(settled, 30, "both captures to be stored and triaged by the filter walker")
                by_command = {json.loads(meta)["command"]: (status, content) for meta, status, content in rows}
                reasons = [r[0] for r in conn.execute(
                    "SELECT t.reason FROM transitions t JOIN nodes n ON n.id = t.node_id "
                    "WHERE n.metadata LIKE '%ls -la src%' AND t.to_status = 'pruned'")]
            finally:
                conn.close()
        status, _ = by_command["ls -la src"]
        assert status == "pruned" and reasons == ["filter:directory_listing"], (status, reasons)
        status, content = by_command["cat deploy/env.txt"]
        assert status == "live"
        assert token not in content and content.count("[REDACTED:acme-token]") == 3

    run_async(main)


def webfetch_payload(project: Path, url: str, result: str) -> dict[str, Any]:
    """A WebFetch PostToolUse payload as Claude Code sends it to a hook."""
    return {"session_id": "example-test", "transcript_path": "/dev/null", "cwd": str(project),
            "hook_event_name": "PostToolUse", "tool_name": "WebFetch",
            "tool_input": {"url": url, "prompt": "How does the client retry?"},
            "tool_response": {"bytes": 48_213, "code": 200, "codeText": "OK", "result": result,
                              "durationMs": 812, "url": url},
            "tool_use_id": "toolu_example_webfetch"}


@pytest.mark.usefixtures("daemon_guard")
def test_the_plugin_adapter_captures_webfetch_through_the_hook_and_daemon(acme_installed: None, home: Path,
                                                                           project: Path) -> None:
    token = acme_token()
    url = "https://docs.acme.test/client/retries"
    page = ("The client retries a failed request three times with exponential backoff (0.5 s, 1 s, 2 s).\n"
            f"The token in the example below is {token}, a sandbox key.\n")
    env = env_with(home, MEMTREE_LOAD_PLUGINS="acme")

    async def main() -> None:
        async with mcp_session(project, env) as session:
            run_hook(webfetch_payload(project, url, page), project, env)
            conn = open_store(project)
            try:
                row = wait_for(lambda: conn.execute(  # stored, then made live by the filter walker
                    "SELECT kind, source_uri, content, metadata FROM nodes WHERE source_uri = ? AND status = 'live'",
                    (url,)).fetchone(), 30, "the WebFetch capture to be stored and triaged")
            finally:
                conn.close()
            kind, source_uri, content, metadata = row
            assert (kind, source_uri) == ("tool_output", url)
            assert "exponential backoff" in content and token not in content
            assert "[REDACTED:acme-token]" in content
            meta = json.loads(metadata)
            assert meta["tool"] == "WebFetch" and meta["tool_use_id"] == "toolu_example_webfetch"
            found = await session.call_tool("search", {"query": "exponential backoff", "mode": "keyword"})
            assert not found.is_error and url in json.dumps(found.structured_content), text_of(found)

    run_async(main)
    # Without the plugin the same payload is an unknown tool: dropped, nothing stored.
    from memtree_core.app import App

    app = App.open(project, environ=env_with(home, MEMTREE_LOAD_PLUGINS=""))
    try:
        assert app.plugins.capture_adapters.names() == ["read", "grep", "bash"]
    finally:
        app.close()


# -- the per-repo plugin set -----------------------------------------------------------------------------
def repo_with(project: Path, config: dict[str, Any] | None = None) -> Path:
    target = project / ".memtree.json"
    if config is None:
        shutil.copy(PLUGIN_SET / ".memtree.json", target)
    else:
        target.write_text(json.dumps(config))
    return project


def test_a_repo_gets_exactly_the_plugin_set_its_config_names(acme_installed: None, home: Path,
                                                             project: Path) -> None:
    from memtree_plugins import BUILTINS

    repo_with(project)
    # No MEMTREE_LOAD_PLUGINS: the repo's own `load` decides which third-party plugins load.
    code, report = plugins_json(project, env_with(home, MEMTREE_LOAD_PLUGINS=None))
    assert code == 0, report
    expected = {name: "loaded" for name in BUILTINS} | {"summarizers": "disabled", "acme": "loaded"}
    statuses = {name: p["status"] for name, p in report.items()}
    third_party_others = {n: s for n, s in statuses.items() if n not in expected}
    assert {n: statuses.get(n) for n in expected} == expected
    assert set(third_party_others.values()) <= {"not-selected"}, third_party_others


def test_the_same_repo_without_the_config_loads_every_installed_plugin(acme_installed: None, home: Path,
                                                                       project: Path) -> None:
    code, report = plugins_json(project, env_with(home, MEMTREE_LOAD_PLUGINS=None))
    assert report["summarizers"]["status"] == "loaded"
    assert report["acme"]["status"] == "loaded"


def test_a_repo_requiring_a_plugin_that_is_not_installed_is_told_what_is_missing(home: Path,
                                                                                  project: Path) -> None:
    """The repository's requirement is named, validated, with a warning to install it only if the name is
    trusted: never as `pip install` advice (a repository could lure a user into a typosquat)."""
    repo_with(project, {"plugins": {"require": {"memtree-not-a-real-plugin": ">=1"}}})
    code, report = plugins_json(project, env_with(home, MEMTREE_LOAD_PLUGINS=None))
    assert code == 1
    missing = report["memtree-not-a-real-plugin"]
    assert missing["status"] == "missing" and "'memtree-not-a-real-plugin' is not installed" in missing["error"]
    assert "only if you trust that name" in missing["error"] and "pip install" not in missing["error"]


def test_a_repo_cannot_disable_redaction(acme_installed: None, home: Path, project: Path) -> None:
    repo_with(project, {"plugins": {"load": ["acme"], "disable": ["redaction", "acme", "summarizers"]},
                        "redaction": {"enabled": False}})
    env = env_with(home, MEMTREE_LOAD_PLUGINS=None)
    code, report = plugins_json(project, env)
    assert code == 0
    assert report["redaction"]["status"] == "loaded"
    # what the repo may switch off, it does; but a rule plugin the user installed keeps its redaction rules
    assert report["summarizers"]["status"] == "disabled"
    assert report["acme"]["status"] == "rules-only" and report["acme"]["provides"] == {
        "redaction_rules": ["acme-token"]}
    info = subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], env=env, capture_output=True,
                          text=True, timeout=60)
    warnings = " ".join(json.loads(info.stdout).get("config_warnings", []))
    assert "plugins.disable of 'redaction' ignored" in warnings and "redaction.enabled ignored" in warnings

    from memtree_core.app import App

    app = App.open(project, environ=env)
    try:
        clean, hits = app.redact("GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4)
    finally:
        app.close()
    assert "ghp_" not in clean and sum(hits.values()) >= 1
