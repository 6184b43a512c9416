"""Passive capture, server side: Claude Code payload -> nodes (pure), and the ingest socket served over a real
App and a real Unix socket: validation, denylist, redaction before any write, drops, concurrency."""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import shutil
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
from helpers import postgres
from helpers.common import ingest_ack

from memtree_core.app import App
from memtree_core.daemon import ingest
from memtree_core.hookspecs import hookimpl
from memtree_core.store.keywords import Keywords
from memtree_core.store.source_uri import file_uri
from memtree_plugins.capture.payloads import Capture, Dropped, to_captures
from memtree_plugins.lib import hook_sender

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "claude-code-payloads"
REPO = Path(__file__).resolve().parents[3]


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


# -- payload -> nodes (pure) -----------------------------------------------------------------------------------
def test_read_text_becomes_a_file_chunk_keyed_by_line_range(tmp_path: Path) -> None:
    src = tmp_path / "cart.py"
    src.write_text("x\n" * 20)
    p = fixture("post-read-text.json")
    p["tool_response"]["file"]["filePath"] = str(src)
    p["tool_response"]["file"]["startLine"] = 5
    caps = to_captures(p, max_bytes=100_000)
    assert isinstance(caps, list) and len(caps) == 1
    cap = caps[0]
    assert cap.kind == "file_chunk"
    assert cap.source_uri == f"file://{src}#L5-15"  # numLines 11 from line 5
    assert cap.mtime == src.stat().st_mtime_ns  # the read tool's unit too (memtree_core.store.source_uri)
    assert cap.content.startswith("from decimal import Decimal")
    assert cap.metadata["totalLines"] == 212
    assert cap.metadata["tool"] == "Read" and cap.metadata["tool_use_id"] == "toolu_01A9xQ3"
    assert cap.metadata["session_id"] == p["session_id"] and cap.metadata["duration_ms"] == 4
    assert cap.metadata["hook_event"] == "PostToolUse" and cap.metadata["file_path"] == str(src)


def test_read_of_a_missing_file_has_mtime_zero_and_uri_escapes_fragment_chars() -> None:
    p = fixture("post-read-text.json")
    p["tool_response"]["file"]["filePath"] = "/nowhere/a#b%c.py"
    (cap,) = to_captures(p, max_bytes=100_000)  # type: ignore[misc]
    assert cap.mtime == 0
    assert cap.source_uri == "file:///nowhere/a%23b%25c.py#L1-11"


@pytest.mark.parametrize("kind", ["image", "pdf", "parts"])
def test_read_binary_kinds_are_skipped_with_a_reason(kind: str) -> None:
    p = fixture("post-read-image.json")
    p["tool_response"]["type"] = kind
    assert to_captures(p, max_bytes=100_000) == Dropped(f"binary:{kind}")


def test_read_notebook_stores_the_cells_source() -> None:
    p = fixture("post-read-text.json")
    p["tool_response"] = {"type": "notebook", "file": {"filePath": "/w/n.ipynb", "cells": [
        {"cellType": "code", "source": "import pandas as pd\n", "outputs": [{"data": "AAAA"}]},
        {"cellType": "markdown", "source": ["# Title\n", "text"]},
        {"cellType": "code", "source": ""}]}}
    (cap,) = to_captures(p, max_bytes=100_000)  # type: ignore[misc]
    assert cap.kind == "file_chunk" and cap.source_uri == "file:///w/n.ipynb"
    assert "import pandas as pd" in cap.content and "# Title\ntext" in cap.content and "AAAA" not in cap.content
    assert cap.metadata["cells"] == 3


def test_grep_every_output_mode() -> None:
    content = fixture("post-grep-content.json")
    (cap,) = to_captures(content, max_bytes=100_000)  # type: ignore[misc]
    assert cap.kind == "tool_output" and "def add(self, sku" in cap.content
    assert cap.metadata["mode"] == "content" and cap.metadata["pattern"] == "def add"
    assert cap.metadata["-C"] == 1 and cap.metadata["numLines"] == 5

    files = fixture("post-grep-files.json")
    (cap,) = to_captures(files, max_bytes=100_000)  # type: ignore[misc]
    assert cap.content == "shop/cart.py\nshop/pricing.py\ntests/test_pricing.py"
    assert cap.metadata["mode"] == "files_with_matches" and cap.metadata["numFiles"] == 3

    count = copy.deepcopy(files)
    count["tool_input"]["output_mode"] = "count"
    count["tool_response"] = {"mode": "count", "numFiles": 2, "filenames": [],
                              "content": "shop/cart.py:4\nshop/pricing.py:9", "numMatches": 13}
    (cap,) = to_captures(count, max_bytes=100_000)  # type: ignore[misc]
    assert cap.content == "shop/cart.py:4\nshop/pricing.py:9" and cap.metadata["numMatches"] == 13

    none = copy.deepcopy(files)
    none["tool_response"] = {"mode": "files_with_matches", "numFiles": 0, "filenames": []}
    assert to_captures(none, max_bytes=100_000) == Dropped("empty")


def test_bash_stdout_stderr_and_interrupted() -> None:
    p = fixture("post-bash.json")
    p["tool_response"]["stderr"] = "warning: deprecated\n"
    p["tool_response"]["interrupted"] = True
    (cap,) = to_captures(p, max_bytes=100_000)  # type: ignore[misc]
    assert cap.kind == "tool_output"
    assert cap.content.startswith("..F.") and cap.content.endswith("[stderr]\nwarning: deprecated\n")
    assert cap.metadata["command"] == "python -m pytest -q tests/test_cart.py"
    assert cap.metadata["interrupted"] is True and cap.metadata["tool"] == "Bash"


def tool_results(tmp_path: Path, p: dict) -> Path:
    """Claude Code's layout: the session transcript ``<config>/projects/<escaped cwd>/<session>.jsonl`` and,
    beside it, the session's ``<session>/tool-results/`` directory; the payload names that transcript."""
    projects = tmp_path / "claude" / "projects" / "-home-dev-shop"
    results = projects / p["session_id"] / "tool-results"
    results.mkdir(parents=True)
    (projects / f"{p['session_id']}.jsonl").write_text("")
    p["transcript_path"] = str(projects / f"{p['session_id']}.jsonl")
    return results


def test_bash_persisted_output_is_read_and_capped(tmp_path: Path) -> None:
    p = fixture("post-bash.json")
    full = tool_results(tmp_path, p) / "b5.txt"
    full.write_text("".join(f"line {i}\n" for i in range(5000)))
    p["tool_response"]["stdout"] = "line 0\n...[cut]"
    p["tool_response"]["persistedOutputPath"] = str(full)
    (cap,) = to_captures(p, max_bytes=1000)  # type: ignore[misc]
    assert cap.content.startswith("line 0\nline 1\n") and "[cut]" not in cap.content
    assert cap.original_bytes == full.stat().st_size
    (cap,) = to_captures(p, max_bytes=10_000_000)  # type: ignore[misc]
    assert cap.content == full.read_text() and cap.original_bytes is None
    p["tool_response"]["persistedOutputPath"] = str(full.parent / "gone.txt")
    (cap,) = to_captures(p, max_bytes=1000)  # type: ignore[misc]
    assert cap.content == "line 0\n...[cut]" and cap.metadata["persisted_unreadable"] is True
    assert "persisted_refused" not in cap.metadata


def test_persisted_output_is_read_only_from_the_sessions_tool_results(tmp_path: Path) -> None:
    p = fixture("post-bash.json")
    results = tool_results(tmp_path, p)
    secret = tmp_path / "secret.txt"
    secret.write_text("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
    (results / "link.txt").symlink_to(secret)
    (results.parent / "tool-results-elsewhere").symlink_to(tmp_path, target_is_directory=True)
    other = tmp_path / "claude" / "projects" / "-home-dev-shop" / "other-session" / "tool-results"
    other.mkdir(parents=True)
    (other / "x.txt").write_text("another session's output\n")
    p["tool_response"]["stdout"] = "preview\n"
    for named in ["/etc/passwd", str(secret), str(results / "link.txt"),
                  str(results / ".." / ".." / ".." / ".." / ".." / "secret.txt"),
                  str(results.parent / "tool-results-elsewhere" / "secret.txt"),
                  str(other / "x.txt"), "secret.txt", str(results)]:
        p["tool_response"]["persistedOutputPath"] = named
        (cap,) = to_captures(p, max_bytes=100_000)  # type: ignore[misc]
        assert cap.content == "preview\n", named  # the capture is kept, without the file
        assert cap.metadata["persisted_refused"] is True and "persisted_unreadable" not in cap.metadata
    # A payload that names no transcript (or not a .jsonl one) has no session directory to read from.
    (results / "b5.txt").write_text("the full output\n")
    p["tool_response"]["persistedOutputPath"] = str(results / "b5.txt")
    for transcript in (None, str(results.parent), "session.jsonl"):
        q = copy.deepcopy(p)
        q.pop("transcript_path") if transcript is None else q.update(transcript_path=transcript)
        (cap,) = to_captures(q, max_bytes=100_000)  # type: ignore[misc]
        assert cap.content == "preview\n" and cap.metadata["persisted_refused"] is True, transcript
    # Symlinks above the session directory (a ~/.claude linked elsewhere) are fine: Claude Code wrote there.
    (tmp_path / "dotfiles").symlink_to(tmp_path / "claude", target_is_directory=True)
    q = copy.deepcopy(p)
    q["transcript_path"] = p["transcript_path"].replace("/claude/", "/dotfiles/")
    q["tool_response"]["persistedOutputPath"] = str(results / "b5.txt").replace("/claude/", "/dotfiles/")
    (cap,) = to_captures(q, max_bytes=100_000)  # type: ignore[misc]
    assert cap.content == "the full output\n"


def test_post_tool_use_failure_is_marked() -> None:
    (cap,) = to_captures(fixture("post-tool-use-failure-bash.json"), max_bytes=100_000)  # type: ignore[misc]
    assert cap.kind == "tool_output" and cap.content.startswith("Exit code 2\nmake: ***")
    assert cap.metadata["failure"] is True and cap.metadata["is_interrupt"] is False
    assert cap.metadata["hook_event"] == "PostToolUseFailure" and cap.metadata["command"] == "make deploy"


@pytest.mark.parametrize("payload,reason", [
    ([1, 2], "not-an-object"),
    ({"hook_event_name": "PreToolUse", "tool_name": "Bash"}, "unknown-event"),
    ({"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_response": {}}, "unknown-tool"),
    ({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": ["x"]}, "empty"),
    ({"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_response": "text"}, "binary:text"),
    ({"hook_event_name": "PostToolUse", "tool_name": "Grep", "tool_input": "x", "tool_response": None}, "empty"),
    ({"hook_event_name": "PostToolUseFailure", "tool_name": "Read", "error": 3}, "empty"),
])
def test_strange_shapes_are_drops_never_exceptions(payload: object, reason: str) -> None:
    assert to_captures(payload, max_bytes=100) == Dropped(reason)


def test_unknown_extra_fields_are_ignored() -> None:
    p = fixture("post-bash.json")
    p.update({"prompt_id": "x", "agent_id": "y", "effort": {"a": 1}})
    p["tool_response"]["futureField"] = [1, 2]
    (cap,) = to_captures(p, max_bytes=100_000)  # type: ignore[misc]
    assert "prompt_id" not in cap.metadata and "futureField" not in cap.metadata


def test_file_uri_plain_path() -> None:
    assert file_uri("/a/b.py", 3, 9) == "file:///a/b.py#L3-9"


# -- the ingest server over a real socket ------------------------------------------------------------------------
SECRET = "SEKRET-0123456789abcdef"


class _TestSecrets:
    name = "test-secret"

    def redact(self, text: str) -> tuple[str, int]:
        return re.subn(r"SEKRET-[0-9a-f]{16}", "[REDACTED:test]", text)


class _Plugin:
    @hookimpl
    def memtree_register_redaction_rules(self, register):  # type: ignore[no-untyped-def]
        register(_TestSecrets())


class Served:
    def __init__(self, app: App) -> None:
        self.app = app
        self.sock = ingest.bind(app.paths, app.identity.root)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=ingest.serve, args=(self.sock, app, self.stop), daemon=True)
        self.thread.start()

    def send(self, data: bytes | dict) -> dict:
        return ingest_ack(self.app.paths.ingest_socket, data)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


@pytest.fixture
def served(home: Path, project: Path, backend: str):
    """The ingest socket served by a real App on each store (the `backend` fixture: SQLite, PostgreSQL)."""
    app = App.open(project, extra=[("test-secrets", _Plugin())])
    s = Served(app)
    yield s
    s.close()
    app.close()


def rows(app: App, where: str = "1=1", params: tuple = ()) -> list:
    return app.store.query(f"SELECT kind, status, source_uri, content, metadata, truncated, original_bytes "
                           f"FROM nodes WHERE {where} ORDER BY rowid", params)


def test_every_fixture_lands_pending_with_metadata(served: Served) -> None:
    acks = {f.name: served.send(json.loads(f.read_bytes())) for f in sorted(FIXTURES.glob("*.json"))}
    assert acks["post-read-image.json"] == {"ok": False, "reason": "binary:image"}
    ok = {name: a for name, a in acks.items() if a["ok"]}
    assert len(ok) == 5 and all(len(a["ids"]) == 1 for a in ok.values())
    nodes = served.app.store.get_nodes(a["ids"][0] for a in ok.values())
    read = nodes[ok["post-read-text.json"]["ids"][0]]
    assert (read.kind, read.status, read.source_uri) == ("file_chunk", "pending", "file:///home/dev/shop/shop/cart.py#L1-11")
    assert read.meta["tool_use_id"] == "toolu_01A9xQ3" and read.meta["totalLines"] == 212
    fail = nodes[ok["post-tool-use-failure-bash.json"]["ids"][0]]
    assert fail.meta["failure"] is True and fail.status == "pending"
    assert served.app.store.counters("capture:") == {
        "capture:accepted:Bash": 2, "capture:accepted:Grep": 2, "capture:accepted:Read": 1,
        "capture:dropped:binary:image": 1}


def test_socket_is_0600_and_registered_for_the_hook(served: Served) -> None:
    path = served.app.paths.ingest_socket
    assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
    link = ingest.root_link(served.app.paths.home, served.app.identity.root)
    assert os.readlink(link) == str(path)
    sender_file = served.app.paths.home / hook_sender.SENDER_FILE
    for _ in range(100):  # serve() writes it on its thread, right after it starts
        if sender_file.exists():
            break
        time.sleep(0.05)
    kind, sender, code = sender_file.read_text().split("\n")[:3]
    assert kind in ("nc", "perl", "python") and os.access(sender, os.X_OK)
    if kind == "python":
        assert code == str(served.app.paths.home / "hook-send.pyc") and Path(code).is_file()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another uid")
def test_another_uid_cannot_connect(served: Served) -> None:
    path = str(served.app.paths.ingest_socket)  # before setuid: the short fallback path names the uid
    # A new process as nobody (subprocess sets the uid between fork and exec, in C): Python code run in a fork
    # of this multi-threaded process could wait forever on a lock another thread held at the fork.
    probe = ("import socket, sys\n"
             "with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:\n"
             "    try:\n"
             "        c.connect(sys.argv[1])\n"
             "    except PermissionError:\n"
             "        sys.exit(0)\n"
             "sys.exit('connected')\n")
    python = shutil.which("python3", path="/usr/bin:/bin")  # one nobody may run (not under root's home)
    if python is None:
        pytest.skip("needs a system python3 (/usr/bin or /bin) that the user nobody may run, to connect as "
                    "another uid (the test's own Python may be where nobody cannot read it); there is none here")
    out = subprocess.run([python, "-I", "-S", "-c", probe, path], user=65534, group=65534, extra_groups=[],
                         capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr


def test_peer_uid_is_read_from_the_kernel(served: Served) -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert ingest.peer_uid(a) in (os.getuid(), None)


@pytest.mark.parametrize("raw,reason", [
    (b"{not json", "malformed-json"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
    (b'{"cwd": "\xff\xfe caf\xe9"}', "not-utf8"),
    (b"   \n", "empty-payload"),
    (b"[1,2,3]", "not-an-object"),
    (b'{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":{"stdout":"a\\u0000b"}}',
     "binary-content"),
])
def test_bad_payloads_are_dropped_counted_and_the_server_keeps_serving(served: Served, raw: bytes,
                                                                        reason: str, caplog) -> None:
    caplog.set_level(logging.INFO, logger="memtree.ingest")
    assert served.send(raw) == {"ok": False, "reason": reason}
    assert served.app.store.counters(f"capture:dropped:{reason}") == {f"capture:dropped:{reason}": 1}
    assert any(reason in r.getMessage() for r in caplog.records)
    assert served.send(fixture("post-bash.json"))["ok"] is True


def test_lone_surrogates_do_not_break_the_insert(served: Served) -> None:
    p = fixture("post-bash.json")
    raw = json.dumps(p).replace("1 failed", "1 \\ud800 failed").encode()
    ack = served.send(raw)
    assert ack["ok"] is True
    assert "\ufffd" in served.app.store.get_node(ack["ids"][0]).content  # type: ignore[union-attr]


def test_a_5mb_output_is_truncated_not_refused(served: Served) -> None:
    p = fixture("post-bash.json")
    p["tool_response"]["stdout"] = "0123456789abcdef\n" * (5 * 1024 * 1024 // 17)
    ack = served.send(p)
    node = served.app.store.get_node(ack["ids"][0])
    assert node is not None and node.truncated == 1
    assert node.original_bytes == len(p["tool_response"]["stdout"])
    assert len(node.content.encode()) <= served.app.settings.capture.max_bytes


def test_oversize_content_is_cut_before_redaction_without_losing_a_secret_across_the_cut(served: Served) -> None:
    cap = served.app.settings.capture.max_bytes
    p = fixture("post-bash.json")
    # A secret straddling the store's cut, in an output far over the cap (cut early, before redaction).
    p["tool_response"]["stdout"] = "a" * (cap - 8) + SECRET + "é" * (2 * cap)
    p["tool_response"]["stderr"] = ""
    node = served.app.store.get_node(served.send(p)["ids"][0])
    assert node is not None and node.truncated == 1
    assert node.original_bytes == len(p["tool_response"]["stdout"].encode())
    assert "SEKRET-" not in node.content and len(node.content.encode()) <= cap


def test_persisted_output_cut_is_marked_truncated(served: Served, tmp_path: Path) -> None:
    p = fixture("post-bash.json")
    full = tool_results(tmp_path, p) / "b5.txt"
    full.write_text("build log line\n" * 20000)  # 300 kB > capture.maxBytes
    p["tool_response"]["persistedOutputPath"] = str(full)
    node = served.app.store.get_node(served.send(p)["ids"][0])
    assert node is not None and node.truncated == 1 and node.original_bytes == full.stat().st_size
    assert node.content.startswith("build log line\n")
    assert "capture:persisted-output-refused" not in served.app.store.counters("capture:")


def test_a_persisted_output_outside_the_sessions_tool_results_never_reaches_the_store(
        served: Served, tmp_path: Path) -> None:
    p = fixture("post-bash.json")
    results = tool_results(tmp_path, p)
    secret = tmp_path / "id_ed25519"
    secret.write_text("not-a-key-but-private-0123456789\n")
    (results / "b5.txt").symlink_to(secret)
    p["tool_response"]["stdout"] = "preview\n"
    for i, named in enumerate(("/etc/passwd", str(secret), str(results / "b5.txt"))):
        p["tool_use_id"] = f"toolu_refused{i}"
        p["tool_response"]["persistedOutputPath"] = named
        ack = served.send(p)
        assert ack["ok"] is True  # the agent's call is captured, without the file
    dump = "\n".join(r[3] for r in rows(served.app))
    assert "private-0123456789" not in dump and "root:" not in dump and dump.count("preview") == 3
    assert served.app.store.counters("capture:")["capture:persisted-output-refused"] == 3


def test_oversized_payload_is_refused_without_reading_on(served: Served, monkeypatch) -> None:
    monkeypatch.setattr(ingest, "MAX_PAYLOAD_BYTES", 1024 * 1024)
    assert served.send(b"x" * (3 * 1024 * 1024)) == {"ok": False, "reason": "oversized"}
    assert served.send(fixture("post-grep-files.json"))["ok"] is True


def test_a_stalled_client_does_not_block_other_senders(served: Served) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
        slow.connect(str(served.app.paths.ingest_socket))
        slow.sendall(b'{"hook_event_name": "PostToolUse", ')  # ... and then nothing
        assert served.send(fixture("post-bash.json"))["ok"] is True


def test_a_stalled_client_times_out(served: Served, monkeypatch) -> None:
    monkeypatch.setattr(ingest, "READ_DEADLINE_S", 0.3)
    monkeypatch.setattr(ingest, "RECV_TIMEOUT_S", 0.2)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
        slow.settimeout(5)
        slow.connect(str(served.app.paths.ingest_socket))
        slow.sendall(b'{"hook_event_name": ')
        assert json.loads(slow.recv(4096)) == {"ok": False, "reason": "timeout"}


@pytest.mark.parametrize("command,reason", [
    ("env", "denied:env-dump"),
    ("printenv", "denied:env-dump"),
    ("cd /x && env | sort", "denied:env-dump"),
    ("aws sts get-caller-identity --profile prod", "denied:bash.deny"),
])
def test_denied_commands_drop_the_whole_capture(served: Served, command: str, reason: str) -> None:
    served.app.paths.bash_deny.write_text("# one regex per line\n^aws sts\n")
    for event in ("post-bash.json", "post-tool-use-failure-bash.json"):
        p = fixture(event)
        p["tool_input"]["command"] = command
        assert served.send(p) == {"ok": False, "reason": reason}
    assert rows(served.app) == []


def test_capture_bash_false_drops_bash_only(home: Path, project: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMTREE_CAPTURE__BASH", "false")
    app = App.open(project)
    s = Served(app)
    try:
        assert s.send(fixture("post-bash.json")) == {"ok": False, "reason": "bash-disabled"}
        assert s.send(fixture("post-tool-use-failure-bash.json")) == {"ok": False, "reason": "bash-disabled"}
        assert s.send(fixture("post-grep-content.json"))["ok"] is True
        assert [r[0] for r in rows(app)] == ["tool_output"]
    finally:
        s.close()
        app.close()


def test_secrets_are_redacted_before_the_row_the_fts_index_and_the_log(served: Served, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    p = fixture("post-bash.json")
    p["tool_input"]["command"] = f"deploy --token {SECRET}"
    p["tool_response"]["stdout"] = f"token is {SECRET}\nand again {SECRET}\n"
    p["tool_response"]["stderr"] = f"warn {SECRET}"
    ack = served.send(p)
    node = served.app.store.get_node(ack["ids"][0])
    assert node is not None
    assert SECRET not in node.content and node.content.count("[REDACTED:test]") == 3
    assert SECRET not in node.metadata and "[REDACTED:" in node.meta["command"]
    assert served.app.store.keyword_search(Keywords(("0123456789abcdef",))) == []
    assert served.app.store.keyword_search(Keywords(("REDACTED",))) != []
    hits = served.app.store.counters("redaction:")
    assert hits["redaction:test-secret"] >= 3 and sum(hits.values()) >= 4  # a built-in rule may take the flag
    assert not any(SECRET in r.getMessage() for r in caplog.records)


def test_every_acked_capture_is_present_exactly_once_under_4_concurrent_senders(served: Served) -> None:
    acked: list[tuple[str, list[str]]] = []
    lock = threading.Lock()

    def sender(n: int) -> None:
        for i in range(25):
            marker = f"marker-{n}-{i}"
            p = fixture("post-bash.json")
            p["tool_response"]["stdout"] = f"{marker}\n" + "output line\n" * 10
            ack = served.send(p)
            if ack["ok"]:
                with lock:
                    acked.append((marker, ack["ids"]))

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(acked) == 100
    for marker, ids in acked:
        found = served.app.store.query("SELECT id FROM nodes WHERE content LIKE ?", (marker + "\n%",))
        assert [r[0] for r in found] == ids


def test_last_activity_moves_on_each_connection(served: Served) -> None:
    before = ingest.last_activity()
    time.sleep(0.01)
    served.send(fixture("post-grep-files.json"))
    assert ingest.last_activity() > before


def test_serve_removes_its_socket_when_stopped(home: Path, project: Path) -> None:
    app = App.open(project)
    s = Served(app)
    s.close()
    app.close()
    assert not app.paths.ingest_socket.exists()
    assert os.path.islink(ingest.root_link(app.paths.home, app.identity.root))  # kept: "memtree used here"


def test_leaky_fixture_comes_out_clean_through_the_socket(home: Path, project: Path) -> None:
    cases_file = REPO / "eval" / "leaky" / "cases.json"
    cases = json.loads(cases_file.read_text())
    cases = cases.get("cases", cases) if isinstance(cases, dict) else cases
    app = App.open(project)
    s = Served(app)
    try:
        checked = 0
        for case in cases:
            text = _case_text(case, cases_file.parent)
            secrets = [x for x in case.get("secrets", case.get("must_not_contain", [])) if isinstance(x, str)]
            if text is None or not secrets:
                continue
            p = fixture("post-bash.json")
            p["tool_input"]["command"] = "cat leaky-output.txt"
            p["tool_response"]["stdout"] = text
            ack = s.send(p)
            if not ack["ok"]:
                continue  # dropped whole (denylist, binary): nothing stored, nothing leaked
            node = app.store.get_node(ack["ids"][0])
            for secret in secrets:
                assert secret not in node.content, f"case {case.get('name') or case.get('id')}: secret stored"  # type: ignore[union-attr]
            checked += 1
        assert checked, "no usable case in eval/leaky/cases.json"
    finally:
        s.close()
        app.close()


def _case_text(case: dict, base: Path) -> str | None:
    for key in ("text", "output", "input", "content"):
        if isinstance(case.get(key), str):
            return case[key]
    for key in ("file", "path"):
        if isinstance(case.get(key), str) and (base / case[key]).is_file():
            return (base / case[key]).read_text(encoding="utf-8", errors="replace")
    return None


def test_capture_dataclass_defaults() -> None:
    assert Capture("note", "x").metadata == {} and Capture("note", "x").original_bytes is None


def test_a_captured_print_of_a_secret_named_variable_is_masked(served: Served) -> None:
    """The hook's Bash payload of `echo "$STRIPE_API_KEY"`: a bare value only the command names."""
    value = "rk9fT2mQx7LpZ4wV"  # made up
    p = fixture("post-bash.json")
    p["tool_input"]["command"] = 'echo "$STRIPE_API_KEY"'
    p["tool_response"]["stdout"] = value + "\n"
    p["tool_response"]["stderr"] = ""
    ack = served.send(p)
    node = served.app.store.get_node(ack["ids"][0])
    assert node is not None and value not in node.content and "[REDACTED:printed-secret]" in node.content


# -- a token in a path -------------------------------------------------------------------------------------------
PATH_TOKEN = "ghp_" + "Q7rZt4XwN2lBk9PdM3sV8yH1cF6gJ0aE5uLo"  # the shape of a GitHub token (36 after ghp_)


def stored_text(app: App) -> str:
    """Every node's source URI, content and metadata, read from the store itself (past the App's store)."""
    got = postgres.read_back(app.store, "SELECT source_uri, content, metadata FROM nodes")
    return "\n".join(str(v) for row in got for v in row)


def test_a_token_in_a_read_files_path_is_stored_nowhere_and_the_walker_keeps_the_chunk(served: Served,
                                                                                      project: Path) -> None:
    from memtree_core.daemon.coordinator import Coordinator
    from memtree_plugins.retrieval.search import search

    src = project / PATH_TOKEN / "deploy-notes.txt"
    src.parent.mkdir()
    src.write_text("the quarterly deploy checklist for the gateway\n" * 3)
    p = fixture("post-read-text.json")
    p["cwd"] = str(project)
    p["tool_input"]["file_path"] = str(src)
    p["tool_response"]["file"].update(filePath=str(src), content=src.read_text(), startLine=1, numLines=3,
                                      totalLines=3)
    ack = served.send(p)
    assert ack["ok"] is True
    node = served.app.store.get_node(ack["ids"][0])
    assert node.source_uri.startswith(f"file://{project}/[REDACTED:") and node.source_uri.endswith(
        "/deploy-notes.txt#L1-3")
    assert node.meta["file_path"] == node.source_uri[len("file://"):].split("#")[0]
    assert PATH_TOKEN not in stored_text(served.app)

    Coordinator(served.app).run_once("filter")  # pending -> live
    walked = Coordinator(served.app).run_once("staleness_marker")["staleness_marker"]
    assert served.app.store.get_node(node.id).status == "live"  # not "file gone": its path cannot be stat'ed
    assert walked.get("redacted_paths_skipped") == 1 and "stats" not in walked
    found = search(served.app, "quarterly deploy checklist")
    assert [h.id for h in found.hits] == [node.id] and PATH_TOKEN not in found.model_dump_json()
