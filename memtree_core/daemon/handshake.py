"""The daemon records its own handshake for forwarders (:mod:`memtree_core.forwarder.records`) and for its
early layer (:mod:`memtree_core.daemon.early`).

Once the tools are registered, the daemon runs one short in-memory session per protocol version it speaks
-- the same low-level ``Server.run`` a socket session runs -- asks ``initialize`` and ``tools/list``, and
writes the answers.  A ``tools/call`` answer's shape (which keys a protocol version keeps, what the SDK
adds) is recorded the same way, from a probe tool on a server of its own.  Recording what the server really
answers (rather than building the answer by hand) keeps the records true to the SDK whatever it adds.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from memtree_core.daemon import early
from memtree_core.daemon.early import Built
from memtree_core.daemon.project import write_json
from memtree_core.daemon.sessions import _dump, _parse
from memtree_core.forwarder import records

log = logging.getLogger("memtree.daemon.handshake")

ASK_TIMEOUT_S = 10.0


async def _ask(server: Any, protocol: str, then: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """``initialize``, then the requests ``then``, in one private session; method -> result."""
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](8)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](8)
    lowlevel = server._lowlevel_server  # as sessions.serve_connection does
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": protocol, "capabilities": {},
                    "clientInfo": {"name": "memtree-handshake-recorder", "version": "1"}}},
        *([{"jsonrpc": "2.0", "method": "notifications/initialized"}, *then] if then else []),
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


def _probe_server(version: str) -> Any:
    """A server of its own with one tool answering as every memtree tool does (``tools._to_result``)."""
    from typing import Annotated

    from mcp_types import CallToolResult
    from pydantic import BaseModel

    from memtree_core.daemon.tools import _to_result, create_server

    class Probe(BaseModel):
        probe: str = early.PROBE_STRUCTURED

        def render(self) -> str:
            return early.PROBE_TEXT

    def probe() -> Any:
        return _to_result(Probe())

    probe.__annotations__ = {"return": Annotated[CallToolResult, Probe]}  # as wrap_tool publishes a tool's

    server = create_server(version)
    server.add_tool(probe, name="probe")
    server.tools_ready.set()
    return server


LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
PROBE = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "probe", "arguments": {}}}


async def record(server: Any, directory: Path, version: str, built: list[Built] | None = None) -> None:
    """Write ``handshake.json``, and ``tools.json`` for the tools ``built``; a failure is logged and leaves
    sessions waiting for the SDK as before."""
    try:
        answers = {protocol: await _ask(server, protocol, (LIST,)) for protocol in HANDSHAKE_PROTOCOL_VERSIONS}
        # Each answer as its JSON text: a forwarder parses only the one it checks, and sends it as it is.
        texts = {protocol: {method: json.dumps(result, separators=(",", ":")) for method, result in methods.items()}
                 for protocol, methods in answers.items()}
        (Path(directory) / early.TOOLS_FILE).unlink(missing_ok=True)  # never a tools record of other tools
        write_json(str(Path(directory) / records.HANDSHAKE_FILE), {
            "format": records.HANDSHAKE_FORMAT, "version": version,
            "answers": {p: {"initialize": m["initialize"]} for p, m in texts.items()}})
    except Exception:
        log.exception("cannot record the handshake for forwarders; sessions start as before")
        (Path(directory) / records.HANDSHAKE_FILE).unlink(missing_ok=True)
        return
    if built is None:
        return
    try:
        probe = _probe_server(version)
        for protocol in HANDSHAKE_PROTOCOL_VERSIONS:
            texts[protocol]["tools/call"] = json.dumps((await _ask(probe, protocol, (PROBE,)))["tools/call"],
                                                       separators=(",", ":"))
        write_json(str(Path(directory) / early.TOOLS_FILE), {
            "format": early.TOOLS_FORMAT, "version": version, "fingerprint": early.fingerprint(version, built),
            "answers": {p: {"tools/list": m["tools/list"], "tools/call": m["tools/call"]} for p, m in texts.items()}})
    except Exception:
        log.exception("cannot record the tools for early answers; first sessions wait for the SDK")
