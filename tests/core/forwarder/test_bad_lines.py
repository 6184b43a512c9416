"""What the daemon's SDK would pass over in silence, ``memtree serve`` answers itself, as JSON-RPC 2.0 says."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.daemon import INIT, RawClient


def _raw(client: RawClient, data: bytes) -> None:
    assert client.proc.stdin is not None
    client.proc.stdin.write(data)
    client.proc.stdin.flush()


def test_bad_lines_get_json_rpc_errors_and_the_session_goes_on(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    client = RawClient(project, env)
    try:
        _raw(client, b"hello\n")
        assert client.receive()["error"]["code"] == -32700
        _raw(client, b"[1, 2]\n")
        assert client.receive() == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "invalid request: a JSON-RPC message is a JSON object"}}
        client.send({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
        early = client.receive()
        assert early["id"] == 7 and early["error"]["code"] == -32600
        assert "send 'initialize' before 'tools/list'" in early["error"]["message"]
        _raw(client, b"\n")  # a blank line is no message: nothing to answer
        client.send(INIT)
        assert client.receive()["result"]["serverInfo"]["name"] == "memtree"
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        assert client.receive()["result"]["tools"]
    finally:
        assert client.close() == 0


def test_echo_hello_into_serve_gets_a_parse_error(home: Path, project: Path, env: dict[str, str],
                                                  daemon_guard: list[int]) -> None:
    client = RawClient(project, env)
    _raw(client, b"hello\n")
    assert client.close() == 0
    assert client.proc.stdout is not None
    out = os.read(client.proc.stdout.fileno(), 65536)
    assert b'"code": -32700' in out
