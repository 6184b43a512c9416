"""Several sessions on one store, and what survives SIGKILL, with the real daemon: two
``memtree serve`` sessions, concurrent senders on the real ingest socket, the daemon killed mid-burst.

"Acked" means the sender read the daemon's ``{"ok": true}`` line: the capture was committed first.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from helpers.common import wait_for
from helpers.daemon import mcp_session, project_paths, run_async, state_pid

from memtree_core.store import Store


def payload(project: Path, n: int, tag: str) -> bytes:
    return json.dumps({
        "session_id": f"s-{tag}", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": f"echo {tag} {n}"},
        "tool_response": {"stdout": f"burst {tag} line {n} " + "unique words for the filter " * 3 + "\n",
                          "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_{tag}_{n}", "duration_ms": 1,
    }).encode()


def send(sock_path: Path, data: bytes, timeout: float = 10.0) -> dict[str, Any] | None:
    """One capture as the hook sends it; the daemon's ack, or None when it was not acked."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(sock_path))
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        ack = json.loads(reply.decode()) if reply.strip() else None
    except (OSError, ValueError):
        return None
    return ack if ack and ack.get("ok") else None


def stored_tool_use_ids(project: Path) -> list[str]:
    store = Store.open(project_paths(project).store, vectors=False)
    try:
        rows = store.query("SELECT metadata FROM nodes WHERE kind = 'tool_output'")
    finally:
        store.close()
    return [json.loads(m).get("tool_use_id", "") for (m,) in rows]


def burst(sock_path: Path, project: Path, tag: str, senders: int, per_sender: int,
          acked: list[str], stop: threading.Event | None = None) -> list[threading.Thread]:
    lock = threading.Lock()

    def run(k: int) -> None:
        for i in range(per_sender):
            if stop is not None and stop.is_set():
                return
            n = k * per_sender + i
            if send(sock_path, payload(project, n, tag)):
                with lock:
                    acked.append(f"toolu_{tag}_{n}")

    threads = [threading.Thread(target=run, args=(k,)) for k in range(senders)]
    for t in threads:
        t.start()
    return threads


def test_two_sessions_and_concurrent_senders_store_every_acked_capture_once(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    sock = project_paths(project).ingest_socket
    acked: list[str] = []

    async def main() -> None:
        async with mcp_session(project, env) as a, mcp_session(project, env) as b:
            pid = state_pid(project)
            daemon_guard.append(pid)  # type: ignore[arg-type]
            threads = burst(sock, project, "two", senders=4, per_sender=25, acked=acked)
            # Both sessions keep working while the captures pour in.
            for _ in range(5):
                for s in (a, b):
                    r = await s.call_tool("recent", {"limit": 3})
                    assert not r.is_error
                await anyio.sleep(0.05)
            for t in threads:
                t.join(timeout=60)
            assert state_pid(project) == pid  # one daemon served both sessions and every sender

    run_async(main)
    assert len(acked) == 100
    ids = stored_tool_use_ids(project)
    assert sorted(i for i in ids if i.startswith("toolu_two_")) == sorted(acked)  # each exactly once


def test_sigkill_during_a_burst_loses_nothing_acked_and_captures_resume(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    sock = project_paths(project).ingest_socket
    acked: list[str] = []
    stop = threading.Event()

    async def main() -> None:
        async with mcp_session(project, env) as s:
            first = state_pid(project)
            assert first is not None
            daemon_guard.append(first)
            threads = burst(sock, project, "kill", senders=4, per_sender=400, acked=acked, stop=stop)
            wait_for(lambda: len(acked) >= 40, 60, "some acked captures")
            os.kill(first, signal.SIGKILL)
            time.sleep(0.3)
            stop.set()
            for t in threads:
                t.join(timeout=60)
            # The session goes on through a restarted daemon...
            r = await s.call_tool("recent", {"limit": 1})
            assert not r.is_error
            second = wait_for(lambda: state_pid(project) not in (None, first) and state_pid(project), 60,
                              "a restarted daemon")
            daemon_guard.append(second)
            # ...and captures are accepted again within a few seconds.
            t0 = time.monotonic()
            wait_for(lambda: send(sock, payload(project, 0, "after")), 10, "captures to resume")
            assert time.monotonic() - t0 < 10

    run_async(main)
    ids = stored_tool_use_ids(project)
    kill_ids = [i for i in ids if i.startswith("toolu_kill_")]
    assert len(kill_ids) == len(set(kill_ids))  # nothing stored twice
    missing = set(acked) - set(kill_ids)
    assert not missing, f"{len(missing)} acked captures lost, e.g. {sorted(missing)[:3]}"
    assert "toolu_after_0" in ids
    assert len(acked) < 1600  # the kill really landed mid-burst


def test_the_real_hook_feeds_the_real_daemon_every_payload_shape(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    """What Claude Code does: a session runs `memtree serve`; the plugin's hook command (hooks.json) gets each
    tool call's payload on stdin.  Rows land, then the daemon's own filter walker promotes them."""
    from helpers.hook import FIXTURES, run_hook

    names = ["post-read-text.json", "post-grep-content.json", "post-grep-files.json", "post-bash.json"]

    async def main() -> None:
        async with mcp_session(project, env) as s:
            daemon_guard.append(state_pid(project))  # type: ignore[arg-type]
            for name in names:
                p = json.loads((FIXTURES / name).read_text())
                p["cwd"] = str(project)
                out = run_hook(json.dumps(p).encode(), project)
                assert out.returncode == 0 and out.stdout == b""
            failure = json.loads((FIXTURES / "post-tool-use-failure-bash.json").read_text())
            assert run_hook(json.dumps(failure).encode(), project, event="PostToolUseFailure").returncode == 0
            image = json.loads((FIXTURES / "post-read-image.json").read_text())
            assert run_hook(json.dumps(image).encode(), project).returncode == 0
            # the daemon's filter walker promotes what it keeps to live, where search finds it
            wait_for(lambda: _statuses(project).get("pending", 0) == 0, 30, "the filter walker")
            r = await s.call_tool("search", {"query": "KeyError", "mode": "keyword"})
            assert not r.is_error and r.structured_content["hits"], r

    run_async(main)
    store = Store.open(project_paths(project).store, vectors=False)
    try:
        rows = store.query("SELECT kind, status, metadata FROM nodes WHERE kind != 'summary'")
    finally:
        store.close()
    tools = sorted(json.loads(m).get("tool", "") for _, _, m in rows)
    assert tools == ["Bash", "Bash", "Grep", "Grep", "Read"]  # the image Read is skipped, with a reason
    failed = [json.loads(m) for _, _, m in rows if json.loads(m).get("failure")]
    assert len(failed) == 1 and failed[0]["tool_use_id"] == "toolu_01F8yZa"


def _statuses(project: Path) -> dict[str, int]:
    store = Store.open(project_paths(project).store, vectors=False)
    try:
        return dict(store.query("SELECT status, count(*) FROM nodes GROUP BY status"))
    finally:
        store.close()
