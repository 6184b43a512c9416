"""A repository's ``.memtree.json`` is untrusted input, and redaction fails closed.

Each finding is reproduced the way it was found: a hostile ``.memtree.json`` in the project, then the real
daemon (``memtree serve`` + the MCP SDK client), the real ingest socket, the real CLI.  What reached the disk
is checked in the bytes of ``store.db`` and its ``-wal``, not through the store's own reading of them.
"""

from __future__ import annotations

import http.server
import json
import os
import random
import string
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import daemon as shared
from helpers.common import MEMTREE, ingest_ack, wait_for
from helpers.daemon import mcp_session, project_paths, run_async, text_of

from memtree_core.app import App
from memtree_core.project_settings import load_settings
from memtree_core.registry import Registry

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "claude-code-payloads"

_rng = random.Random(11)


@pytest.fixture(autouse=True)
def _same_draws_in_any_order() -> None:
    """Each test draws from _rng as if it ran first: pytest-randomly and xdist change the order."""
    _rng.seed(11)
TOKEN = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
AWS_KEY = "AKIA" + "".join(_rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
MARKER = "deploy-settings-marker"  # plain text next to the secrets: proves the content itself was stored
SECRETS = f"{MARKER}\nGITHUB_TOKEN={TOKEN}\naws_access_key_id = {AWS_KEY}\n"


# -- helpers -----------------------------------------------------------------------------------------------
def serve_env(**extra: str) -> dict[str, str]:
    """The environment of a daemon with the built-in plugins only (``home`` cleared MEMTREE_* already)."""
    return {**os.environ, "MEMTREE_LOAD_PLUGINS": "", **extra}


def repo_config(project: Path, data: Any) -> None:
    (project / ".memtree.json").write_text(json.dumps(data))


def user_config(home: Path, data: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps(data))


def store_bytes(project: Path) -> bytes:
    """The store file and its write-ahead log as they are on disk."""
    store = project_paths(project).store
    return b"".join(p.read_bytes() for p in (store, Path(f"{store}-wal")) if p.exists())


def node_count(project: Path) -> int:
    conn = shared.open_store(project)
    try:
        return conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    finally:
        conn.close()


def counters(project: Path) -> dict[str, int]:
    conn = shared.open_store(project)
    try:
        return dict(conn.execute("SELECT name, value FROM counters").fetchall())
    finally:
        conn.close()


def bash_payload(project: Path, command: str, stdout: str) -> dict[str, Any]:
    p = json.loads((FIXTURES / "post-bash.json").read_text())
    p["cwd"] = str(project)
    p["tool_input"]["command"] = command
    p["tool_response"]["stdout"] = stdout
    p["tool_response"]["stderr"] = ""
    return p


def send_capture(project: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """Deliver one payload to the running daemon's ingest socket, as the hook does, and return its ack."""
    path = project_paths(project).ingest_socket
    wait_for(path.exists, 30, "the daemon's ingest socket")
    return ingest_ack(path, payload)


def info_json(project: Path, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def info_text(project: Path, env: dict[str, str]) -> str:
    out = subprocess.run([MEMTREE, "info", "--project", str(project)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout


def install_plugin(site: Path, name: str, source: str) -> None:
    """A real distribution with a ``memtree`` entry point, importable from ``site`` (on PYTHONPATH)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"memtree_{name}.py").write_text(textwrap.dedent(source))
    dist = site / f"memtree_{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: memtree-{name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[memtree]\n{name} = memtree_{name}\n")


# -- a repository cannot switch redaction off ----------------------------------------------------------------
@pytest.mark.parametrize("value", ["false", False, 0, "0", "off", "no", "False", 0.0])
def test_a_repo_cannot_turn_redaction_off_in_any_spelling(home: Path, project: Path, value: Any) -> None:
    repo_config(project, {"redaction": {"enabled": value}})
    loaded = load_settings(home, project, serve_env())
    assert loaded.settings.redaction.enabled is True
    assert any(".memtree.json: redaction.enabled ignored" in w for w in loaded.warnings), loaded.warnings


def test_a_repo_cannot_turn_redaction_off(home: Path, project: Path, daemon_guard: list[int]) -> None:
    # end to end through a real daemon once: what the settings above say is what the tools and capture do
    repo_config(project, {"redaction": {"enabled": "off"}})
    (project / "secrets.txt").write_text(SECRETS)
    env = serve_env()

    async def main() -> None:
        async with mcp_session(project, env) as s:
            bash = await s.call_tool("bash", {"command": "cat secrets.txt"})
            assert not bash.is_error, text_of(bash)
            assert bash.structured_content["stored"] is True
            read = await s.call_tool("read", {"path": "secrets.txt"})
            assert not read.is_error, text_of(read)
            for result in (bash, read):
                assert MARKER in text_of(result) and TOKEN not in text_of(result) and AWS_KEY not in text_of(result)
            ack = send_capture(project, bash_payload(project, "cat ./secrets.txt", SECRETS))
            assert ack["ok"] is True, ack
            raw = store_bytes(project)
            assert MARKER.encode() in raw  # the outputs are there...
            assert TOKEN.encode() not in raw and AWS_KEY.encode() not in raw  # ...their secrets are not

    run_async(main)
    info = info_json(project, env)
    assert any(".memtree.json: redaction.enabled ignored" in w for w in info["warnings"]), info["warnings"]


def test_the_user_can_turn_redaction_off_and_info_says_so(home: Path, project: Path) -> None:
    user_config(home, {"redaction": {"enabled": False}})
    text = info_text(project, serve_env())
    assert text.startswith("WARNING:")
    assert f"redaction is OFF (redaction.enabled = false, set by {home / 'config.json'})" in text


def test_a_repo_cannot_turn_bash_capture_back_on(home: Path, project: Path, daemon_guard: list[int]) -> None:
    user_config(home, {"capture": {"bash": False}})
    repo_config(project, {"capture": {"bash": "true"}})
    env = serve_env()

    async def main() -> None:
        async with mcp_session(project, env) as s:
            bash = await s.call_tool("bash", {"command": "echo bash-capture-probe"})
            assert not bash.is_error and "bash-capture-probe" in text_of(bash)
            assert bash.structured_content["stored"] is False
            assert "capture.bash is false" in bash.structured_content["not_stored_reason"]
            ack = send_capture(project, bash_payload(project, "echo hi", "bash-capture-probe\n"))
            assert ack == {"ok": False, "reason": "bash-disabled"}
            assert b"bash-capture-probe" not in store_bytes(project)

    run_async(main)
    info = info_json(project, env)
    assert info["capture"]["bash"] is False
    assert any(".memtree.json: capture.bash ignored" in w for w in info["warnings"])


# -- nothing leaves the machine on a repository's say-so -----------------------------------------------------
class _Ollama(http.server.BaseHTTPRequestHandler):
    """Records every request; answers like an Ollama that has nomic-embed-text."""

    def _reply(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.server.seen.append(("GET", self.path))  # type: ignore[attr-defined]
        self._reply({"models": [{"name": "nomic-embed-text:latest"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.seen.append(("POST", self.path))  # type: ignore[attr-defined]
        texts = body.get("input") or []
        self._reply({"embeddings": [[(i % 7 + 1) / 10.0] * 768 for i, _ in enumerate(texts)]})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def ollama_servers() -> Iterator[tuple[Any, Any]]:
    """Two recording endpoints on 127.0.0.1: the user's own, and the one a repository names."""
    servers = []
    for _ in range(2):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ollama)
        srv.seen = []  # type: ignore[attr-defined]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    yield servers[0], servers[1]
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _url(srv: Any) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}"


def test_a_repo_ollama_url_is_never_contacted(home: Path, project: Path, daemon_guard: list[int],
                                              ollama_servers: tuple[Any, Any]) -> None:
    users, repos = ollama_servers
    repo_config(project, {"ollamaUrl": _url(repos), "embeddingModel": "ollama"})
    (project / "notes.md").write_text("# Notes\n\nThe embedding walker sends this text to the embedder.\n" * 3)
    env = serve_env(MEMTREE_OLLAMA_URL=_url(users), MEMTREE_WALKERS__EMBEDDING_IDLE_MS="0")

    info = info_json(project, env)
    assert ("GET", "/api/tags") in users.seen  # info probes the user's endpoint...
    assert repos.seen == []  # ...never the repository's
    assert any(".memtree.json: ollamaUrl ignored" in w for w in info["warnings"])
    (dest,) = [d for d in info["network_destinations"] if d["what"] == "embedder ollama"]
    assert dest["url"] == _url(users) and dest["origin"] == "environment variable MEMTREE_OLLAMA_URL"
    assert dest["local"] is True

    async def main() -> None:
        async with mcp_session(project, env) as s:
            read = await s.call_tool("read", {"path": "notes.md"})
            assert not read.is_error, text_of(read)
            # The embedder really runs (the repo's embeddingModel is allowed), against the user's endpoint.
            wait_for(lambda: ("POST", "/api/embed") in users.seen, 60, "the embedder to post to the user's Ollama")

    run_async(main)
    assert repos.seen == []


def test_info_names_a_remote_destination_from_the_user_config(home: Path, project: Path) -> None:
    user_config(home, {"ollamaUrl": "http://192.0.2.10:9"})  # TEST-NET-1: never routed
    env = serve_env(MEMTREE_DISABLE_PLUGINS="embedders")  # nothing is probed: only what would be is listed
    info = info_json(project, env)
    assert all(d["what"] != "embedder ollama" for d in info["network_destinations"])
    # The local embedder is named, so info has no reason to probe the remote address; it still lists it.
    text = info_text(project, serve_env(MEMTREE_EMBEDDING_MODEL="local"))
    assert text.startswith("WARNING:")
    assert (f"content leaves this machine: embedder ollama -> http://192.0.2.10:9 (ANOTHER MACHINE; set by "
            f"{home / 'config.json'})") in text


# -- a repository cannot size resources -----------------------------------------------------------------------
def test_a_repo_cannot_size_memory_retention_or_intervals(home: Path, project: Path,
                                                         daemon_guard: list[int]) -> None:
    repo_config(project, {"capture": {"maxBytes": 2e9}, "retention": {"maxStoreMb": 0.01},
                          "walkers": {"prunerIntervalMs": 0}})
    env = serve_env()
    text = info_text(project, env)
    head = text.split("\n\n", 1)[0]
    assert head.startswith("WARNING:")
    for key in ("capture.maxBytes", "retention.maxStoreMb", "walkers.prunerIntervalMs"):
        assert f".memtree.json: {key} ignored" in head, key

    async def main() -> None:
        async with mcp_session(project, env) as s:
            big = await s.call_tool("bash", {"command": "python3 -c \"print('y' * 300000)\""})
            node = big.structured_content["node_id"]
            conn = shared.open_store(project)
            try:
                truncated, original, size = conn.execute(
                    "SELECT truncated, original_bytes, length(CAST(content AS BLOB)) FROM nodes WHERE id = ?",
                    (node,)).fetchone()
            finally:
                conn.close()
            # the default capture.maxBytes (100000) still holds
            assert truncated == 1 and original > 300000 and size <= 100000

    run_async(main)
    log = project_paths(project).log.read_text()
    assert "config: " in log and ".memtree.json: walkers.prunerIntervalMs ignored" in log


# -- redaction fails closed ------------------------------------------------------------------------------------
BLOCK_REDACTION = '''
import sys


class _Broken:
    """The built-in redaction plugin cannot be imported (a damaged install)."""

    def find_spec(self, name, path=None, target=None):
        if name == "memtree_plugins.redaction" or name.startswith("memtree_plugins.redaction."):
            raise ImportError("simulated damaged install: memtree_plugins.redaction is unreadable")
        return None


sys.meta_path.insert(0, _Broken())
'''


def test_without_redaction_rules_nothing_is_stored(home: Path, project: Path, tmp_path: Path,
                                                   daemon_guard: list[int]) -> None:
    site = tmp_path / "damaged"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_REDACTION)
    env = serve_env(PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    (project / "secrets.txt").write_text(SECRETS)

    info = info_json(project, env)
    assert {p["name"]: p["status"] for p in info["plugins"]}["redaction"] == "failed"
    assert info["warnings"][0].startswith("NOTHING IS STORED: redaction is unavailable")
    assert "simulated damaged install" in info["warnings"][0]
    assert info_text(project, env).startswith("WARNING:\n  ! NOTHING IS STORED: redaction is unavailable")

    async def main() -> None:
        async with mcp_session(project, env) as s:
            ack = send_capture(project, bash_payload(project, "cat secrets.txt", SECRETS))
            assert ack == {"ok": False, "reason": "redaction-unavailable"}
            bash = await s.call_tool("bash", {"command": "cat secrets.txt"})
            assert not bash.is_error, text_of(bash)
            assert bash.structured_content["stored"] is False and bash.structured_content["node_id"] is None
            assert "redaction is unavailable" in bash.structured_content["not_stored_reason"]
            read = await s.call_tool("read", {"path": "secrets.txt"})
            assert read.is_error and "redaction is unavailable" in text_of(read)
            grep = await s.call_tool("grep", {"pattern": "GITHUB_TOKEN"})
            assert grep.is_error and "redaction is unavailable" in text_of(grep)
            assert node_count(project) == 0
            assert counters(project).get("capture:dropped:redaction-unavailable") == 1
            raw = store_bytes(project)
            assert TOKEN.encode() not in raw and MARKER.encode() not in raw

    run_async(main)


HALF_REGISTERED = '''
from memtree_core.hookspecs import hookimpl


@hookimpl
def memtree_register_redaction_rules(register):
    # Take two built-in rules away, then fail before registering anything of its own.
    register.remove("github-pat")
    register.remove("aws-access-key-id")
    raise RuntimeError("half-registered rule plugin")
'''

RAISING_RULE = '''
from memtree_core.hookspecs import hookimpl


class Fragile:
    name = "fragile"

    def redact(self, text):
        if "GITHUB_TOKEN" in text:
            raise ValueError("cannot cope with this text")
        return text, 0


@hookimpl
def memtree_register_redaction_rules(register):
    register(Fragile())
'''


def test_a_broken_rule_plugin_leaves_the_built_in_rules_in_place(home: Path, project: Path, tmp_path: Path,
                                                                 daemon_guard: list[int]) -> None:
    site = tmp_path / "site"
    install_plugin(site, "halfrules", HALF_REGISTERED)
    env = serve_env(PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
                    MEMTREE_LOAD_PLUGINS="halfrules")
    # a repository may not disable the built-in plugin either
    repo_config(project, {"plugins": {"disable": ["redaction"], "load": ["halfrules"]}})

    info = info_json(project, env)
    status = {p["name"]: p for p in info["plugins"]}
    assert status["halfrules"]["status"] == "failed" and "half-registered" in status["halfrules"]["error"]
    assert status["redaction"]["status"] == "loaded"
    assert not any("removed by plugin halfrules" in w for w in info["warnings"])

    async def main() -> None:
        async with mcp_session(project, env):
            ack = send_capture(project, bash_payload(project, "cat secrets.txt", SECRETS))
            assert ack["ok"] is True, ack
            raw = store_bytes(project)
            assert MARKER.encode() in raw and TOKEN.encode() not in raw and AWS_KEY.encode() not in raw

    run_async(main)


def test_a_rule_that_fails_on_a_text_stores_nothing_of_it(home: Path, project: Path, tmp_path: Path,
                                                          daemon_guard: list[int]) -> None:
    site = tmp_path / "site"
    install_plugin(site, "fragile", RAISING_RULE)
    env = serve_env(PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
                    MEMTREE_LOAD_PLUGINS="fragile")
    (project / "secrets.txt").write_text(SECRETS)

    async def main() -> None:
        async with mcp_session(project, env) as s:
            ok = send_capture(project, bash_payload(project, "echo fine", "nothing secret here\n"))
            assert ok["ok"] is True, ok  # the rule is loaded and works on other text
            ack = send_capture(project, bash_payload(project, "cat secrets.txt", SECRETS))
            assert ack == {"ok": False, "reason": "redaction-unavailable"}
            bash = await s.call_tool("bash", {"command": "cat secrets.txt"})
            assert bash.structured_content["stored"] is False
            assert "rule 'fragile' from plugin fragile failed" in bash.structured_content["not_stored_reason"]
            assert MARKER.encode() not in store_bytes(project)

    run_async(main)


# -- the pieces -----------------------------------------------------------------------------------------------
def test_withdraw_puts_back_what_a_failed_plugin_removed_or_replaced_in_its_place() -> None:
    reg: Registry[str] = Registry("rule")
    for name in ("a", "b", "c"):
        reg.add(name, name.upper(), "builtin")
    reg.remove("b", "bad")
    reg.add("c", "mine", "bad", replaces=True)
    reg.add("d", "D", "bad")
    reg.add("e", "E", "good")
    reg.withdraw("bad")
    assert [(e.name, e.item, e.plugin) for e in reg.entries()] == [
        ("a", "A", "builtin"), ("b", "B", "builtin"), ("c", "C", "builtin"), ("e", "E", "good")]
    assert reg.removed == {}


def test_the_gate_is_closed_when_the_built_in_plugin_is_disabled_by_the_user(home: Path, project: Path) -> None:
    app = App.open(project, environ=serve_env(MEMTREE_DISABLE_PLUGINS="redaction"))
    try:
        assert app.redaction_unavailable and "disabled" in app.redaction_unavailable
        with pytest.raises(Exception, match="redaction is unavailable"):
            app.redact(SECRETS)
    finally:
        app.close()
    # Turning redaction off is the user's explicit choice, and then the gate is open.
    app = App.open(project, environ=serve_env(MEMTREE_DISABLE_PLUGINS="redaction", MEMTREE_REDACTION__ENABLED="false"))
    try:
        assert app.redaction_unavailable is None and app.redact(SECRETS) == (SECRETS, {})
    finally:
        app.close()


CORP_RULES = '''
import re

from memtree_core.hookspecs import hookimpl


class CorpSecret:
    name = "corp-secret"

    def redact(self, text):
        return re.subn(r"corp_secret_[0-9]{6}", "[REDACTED:corp-secret]", text)


@hookimpl
def memtree_register_redaction_rules(register):
    register(CorpSecret())


class NoVault:
    name = "no-vault"

    def check(self, command, app):
        return "corp:vault" if command.startswith("vault ") else None


@hookimpl
def memtree_register_command_policies(register):
    register(NoVault())


@hookimpl
def memtree_register_filters(register):
    raise AssertionError("a rules-only plugin must not be asked for anything but its redaction rules")
'''


@pytest.mark.parametrize("repo_plugins", [{"load": ["nothing-else"]}, {"disable": ["corprules"]},
                                          {"disable": ["memtree-corprules"]}])
def test_a_repo_cannot_leave_out_a_users_redaction_plugin(home: Path, project: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          repo_plugins: dict[str, Any]) -> None:
    site = tmp_path / "site"
    install_plugin(site, "corprules", CORP_RULES)
    monkeypatch.syspath_prepend(str(site))
    repo_config(project, {"plugins": repo_plugins})
    monkeypatch.delenv("MEMTREE_LOAD_PLUGINS")  # the user loads every installed plugin
    app = App.open(project)
    try:
        info = app.plugins.info("corprules")
        assert info is not None and info.status == "rules-only"
        assert info.provides == {"redaction_rules": ["corp-secret"], "command_policies": ["no-vault"]}
        assert app.command_denied("vault kv get secret/db") == "corp:vault"
        clean, hits = app.redact("key corp_secret_123456 and " + TOKEN)
        assert "corp_secret_123456" not in clean and TOKEN not in clean and hits["corp-secret"] == 1
    finally:
        app.close()
    # The user's own choice does take it out.
    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "corprules"})
    try:
        assert app.plugins.info("corprules").status == "disabled"  # type: ignore[union-attr]
        assert "corp-secret" not in app.plugins.redaction_rules
    finally:
        app.close()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge", "deep", "not-utf8", "directory"])
def test_a_hostile_config_file_is_ignored_with_a_warning_never_a_hang(home: Path, project: Path, tmp_path: Path,
                                                                      kind: str) -> None:
    target = project / ".memtree.json"
    if kind == "fifo":
        os.mkfifo(target)  # nobody ever writes: a plain read would wait forever
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")  # a plain read would fill memory
    elif kind == "huge":
        target.write_text('{"budgets": {"read": 500}, "pad": "' + "x" * 2_000_000 + '"}')
    elif kind == "deep":
        target.write_text("[" * 200_000)
    elif kind == "not-utf8":
        target.write_bytes(b'{"budgets": {"read": 500}, "x": "\xff\xfe"}')
    else:
        target.mkdir()
    info = info_json(project, serve_env())
    (warning,) = [w for w in info["warnings"] if ".memtree.json" in w]
    assert warning.startswith(str(target)) and "the whole file is ignored" in warning


def test_a_symlinked_repo_config_is_refused_never_followed(home: Path, project: Path, tmp_path: Path) -> None:
    # A link to a file outside the repository (the user's own files, say): memtree must not read through it.
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"budgets": {"read": 777}, "embeddingModel": "local"}))
    (project / ".memtree.json").symlink_to(outside)
    info = info_json(project, serve_env())
    (warning,) = [w for w in info["warnings"] if ".memtree.json" in w]
    assert warning.startswith(str(project / ".memtree.json"))
    assert "symbolic link" in warning and "the whole file is ignored" in warning
    loaded = load_settings(home, project, serve_env())
    assert loaded.settings.budgets.read != 777 and loaded.settings.embedding_model != "local"
    assert str(project / ".memtree.json") not in loaded.files
    # The user's own config.json may be a link (dotfile managers make them): it is read through it.
    user_config(tmp_path / "dotfiles", {"budgets": {"read": 555}})
    home.mkdir(exist_ok=True)
    (home / "config.json").symlink_to(tmp_path / "dotfiles" / "config.json")
    assert load_settings(home, project, serve_env()).settings.budgets.read == 555


def test_a_repo_cannot_disable_capture(home: Path, project: Path) -> None:
    repo_config(project, {"plugins": {"disable": ["capture", "walkers", "redaction", "chunkers"]}})
    env = serve_env()
    info = info_json(project, env)
    status = {p["name"]: p["status"] for p in info["plugins"]}
    assert (status["capture"], status["walkers"], status["redaction"]) == ("loaded", "loaded", "loaded")
    assert status["chunkers"] == "disabled"  # what a repository may narrow, it still does
    assert any(".memtree.json: plugins.disable of 'capture', 'redaction', 'walkers' ignored" in w
               for w in info["warnings"]), info["warnings"]
    # The user's own choice does switch it off.
    user_config(home, {"plugins": {"disable": ["capture"]}})
    assert {p["name"]: p["status"] for p in info_json(project, env)["plugins"]}["capture"] == "disabled"
