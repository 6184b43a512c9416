"""The daemon records its own handshake for forwarders (:mod:`memtree_core.forwarder.records`), and the
tools' annotations (:mod:`memtree_core.forwarder.resend`).

Once the tools are registered, the daemon runs one short in-memory session per protocol version it speaks
-- the same low-level ``Server.run`` a socket session runs -- asks ``initialize``, and writes the answers.  Recording what the server really answers (rather than building the answer by hand)
keeps the cache true to the SDK whatever it adds to a handshake.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from memtree_core.daemon.project import write_json
from memtree_core.daemon.sessions import _dump, _parse
from memtree_core.forwarder import records
from memtree_core.forwarder.resend import TOOL_HINTS_FILE

log = logging.getLogger("memtree.daemon.handshake")

ASK_TIMEOUT_S = 10.0


async def _ask(server: Any, protocol: str) -> dict[str, Any]:
    """``initialize`` in one private session; method -> result."""
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](8)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](8)
    lowlevel = server._lowlevel_server  # as sessions.serve_connection does
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": protocol, "capabilities": {},
                    "clientInfo": {"name": "memtree-handshake-recorder", "version": "1"}}},
    ]
    answers: dict[str, Any] = {}
    async with to_server, from_server, anyio.create_task_group() as tg:
        tg.start_soon(lowlevel.run, from_client, to_client, lowlevel.create_initialization_options())
        with anyio.fail_after(ASK_TIMEOUT_S):
            for request in requests:
                await to_server.send(SessionMessage(_parse(json.dumps(request).encode())))
                if "id" not in request:
                    continue
                while True:
                    reply = json.loads(_dump((await from_server.receive()).message))
                    if reply.get("id") == request["id"]:
                        break
                if "result" not in reply:
                    raise RuntimeError(f"{request['method']} answered {reply.get('error')}")
                answers[str(request["method"])] = reply["result"]
        tg.cancel_scope.cancel()
    return answers


async def record(server: Any, directory: Path, version: str) -> None:
    """Write ``handshake.json``; a failure is logged and leaves forwarders waiting for the daemon as before."""
    try:
        answers = {protocol: await _ask(server, protocol) for protocol in HANDSHAKE_PROTOCOL_VERSIONS}
        # Each answer as its JSON text: a forwarder parses only the one it checks, and sends it as it is.
        texts = {protocol: {method: json.dumps(result, separators=(",", ":")) for method, result in methods.items()}
                 for protocol, methods in answers.items()}
        write_json(str(Path(directory) / records.HANDSHAKE_FILE), {
            "format": records.HANDSHAKE_FORMAT, "version": version, "answers": texts})
    except Exception:
        log.exception("cannot record the handshake for forwarders; sessions start as before")
        (Path(directory) / records.HANDSHAKE_FILE).unlink(missing_ok=True)


def write_tool_hints(directory: Path, tools: list[dict[str, Any]]) -> None:
    """The tools' annotations (``tools/list`` shape), for forwarders whose client never listed them."""
    write_json(str(directory / TOOL_HINTS_FILE), {"tools": tools})
