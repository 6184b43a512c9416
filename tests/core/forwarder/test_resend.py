"""A daemon that dies under two sessions: what is safe to repeat is re-sent, the rest fails saying so.

Real ``memtree serve`` forwarders driven with raw JSON-RPC lines, a real daemon, a real SIGKILL.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from helpers.common import wait_for
from helpers.daemon import INIT, RawClient, project_paths, state_pid

from memtree_core.forwarder.resend import SAFE_METHODS, Request, ToolHints


def _start(project: Path, env: dict[str, str], list_tools: bool) -> RawClient:
    client = RawClient(project, env)
    client.send(INIT)
    assert client.receive()["result"]["serverInfo"]["name"] == "memtree"
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    if list_tools:
        client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = {t["name"]: t for t in client.receive()["result"]["tools"]}
        assert tools["t_rsleep"]["annotations"]["readOnlyHint"] is True
        assert tools["t_isleep"]["annotations"]["idempotentHint"] is True
        assert not tools["t_sleep"]["annotations"].get("idempotentHint")
    return client


def _call(client: RawClient, rid: int, tool: str, arguments: dict[str, Any]) -> None:
    client.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                 "params": {"name": tool, "arguments": arguments}})


def _answers(client: RawClient, count: int) -> dict[Any, dict[str, Any]]:
    out: dict[Any, dict[str, Any]] = {}
    while len(out) < count:
        msg = client.receive(timeout=120)
        if "id" in msg and "method" not in msg:
            out[msg["id"]] = msg
    return out


def test_two_sessions_survive_a_sigkill_and_only_the_unsafe_call_fails(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    # One session listed its tools (hints from tools/list), the other never did (hints from the daemon's file).
    a = _start(project, env, list_tools=True)
    b = _start(project, env, list_tools=False)
    try:
        first = state_pid(project)
        assert first is not None
        daemon_guard.append(first)
        _call(a, 10, "t_rsleep", {"seconds": 2})  # read-only, in flight at the kill
        _call(a, 11, "t_sleep", {"seconds": 2})  # neither read-only nor idempotent, in flight at the kill
        _call(b, 10, "t_isleep", {"seconds": 2})  # idempotent, in flight at the kill
        time.sleep(1.0)  # the calls reach the daemon and start sleeping
        os.kill(first, signal.SIGKILL)
        # Right after the kill, before any restart: the next read-only calls of both sessions.
        _call(a, 12, "t_echo", {"text": "a"})
        _call(b, 12, "t_echo", {"text": "b"})

        got_a, got_b = _answers(a, 3), _answers(b, 2)
        assert got_a[10]["result"]["structuredContent"] == {"text": "slept", "length": 0}
        assert got_b[10]["result"]["structuredContent"] == {"text": "slept", "length": 0}
        assert got_a[12]["result"]["structuredContent"] == {"text": "a", "length": 1}
        assert got_b[12]["result"]["structuredContent"] == {"text": "b", "length": 1}
        message = got_a[11]["error"]["message"]
        assert "'t_sleep'" in message and "neither read-only nor idempotent" in message
        assert "not re-sent" in message and str(project_paths(project).log) in message

        second = wait_for(lambda: state_pid(project) not in (None, first) and state_pid(project), 60,
                          "a restarted daemon")
        daemon_guard.append(second)
        _call(a, 13, "t_echo", {"text": "again"})
        assert _answers(a, 1)[13]["result"]["structuredContent"]["text"] == "again"
    finally:
        assert a.close() == 0 and b.close() == 0


def test_what_is_safe_to_repeat() -> None:
    class Paths:
        dir = Path("/nonexistent-memtree-dir")

    hints = ToolHints(Paths())
    hints.learn({"tools": [
        {"name": "search", "annotations": {"readOnlyHint": True}},
        {"name": "read", "annotations": {"readOnlyHint": False, "idempotentHint": True}},
        {"name": "bash", "annotations": {"destructiveHint": True}},
        {"name": "bare"},
        "not a tool",
    ]})

    def why(msg: dict[str, Any]) -> str | None:
        return Request(dict(msg, id=1, jsonrpc="2.0"), b"").unsafe_to_resend(hints)

    for method in sorted(SAFE_METHODS):
        assert why({"method": method}) is None
    assert why({"method": "tools/call", "params": {"name": "search"}}) is None
    assert why({"method": "tools/call", "params": {"name": "read"}}) is None
    assert "neither read-only nor idempotent" in str(why({"method": "tools/call", "params": {"name": "bash"}}))
    assert "neither" in str(why({"method": "tools/call", "params": {"name": "bare"}}))
    assert "never declared" in str(why({"method": "tools/call", "params": {"name": "other"}}))
    assert "names no tool" in str(why({"method": "tools/call", "params": {"name": 5}}))
    assert "not known to be safe" in str(why({"method": "sampling/createMessage"}))


def test_the_built_in_tools_declare_what_may_be_repeated(home: Path, project: Path, monkeypatch) -> None:
    monkeypatch.delenv("MEMTREE_LOAD_PLUGINS")
    from memtree_core.app import App

    app = App.open(project)
    try:
        specs = {e.item.name: e.item for e in app.plugins.tools.entries()}
    finally:
        app.close()
    for name in ("search", "get", "neighbors", "path_to_root", "recent", "compose"):
        assert specs[name].read_only, name
    assert specs["read"].idempotent and specs["grep"].idempotent
    assert not specs["bash"].read_only and not specs["bash"].idempotent

