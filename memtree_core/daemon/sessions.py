"""One MCP session per connection on the daemon's MCP socket.

Framing is the stdio one (one JSON-RPC message per line), so ``memtree serve`` can pass bytes through
without parsing them.  Each connection runs the low-level ``Server.run`` over a pair of memory streams fed
by a reader and a writer on the socket, in its own task group: a session that fails is logged and closed,
and never touches the others.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import anyio
import anyio.abc
import mcp_types
from mcp.shared.message import SessionMessage

log = logging.getLogger("memtree.daemon.sessions")

READ_CHUNK = 1 << 16
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one JSON-RPC line; a client sending more without a newline is cut off


class Activity:
    """What the idle timeout needs: how many sessions are connected and when the last one ended."""

    def __init__(self) -> None:
        self.sessions = 0
        self.served = 0
        self.last_change = time.monotonic()

    def opened(self) -> None:
        self.sessions += 1
        self.served += 1
        self.last_change = time.monotonic()

    def closed(self) -> None:
        self.sessions -= 1
        self.last_change = time.monotonic()


def _parse(line: bytes) -> mcp_types.JSONRPCMessage:
    """One JSON-RPC message.  A file name that is not UTF-8 reaches us as a lone surrogate escape
    (``"caf\\udce9.txt"``, Python's ``os.fsdecode`` form) or as raw bytes; the SDK's strict JSON parser
    rejects both and the request would never be answered.  Parsed here the way ``os.fsdecode`` does, such a
    name reaches the tool as the same ``str`` the file system gives for that file."""
    try:
        return mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as strict:
        try:
            value = json.loads(line.decode("utf-8", "surrogateescape"))
        except ValueError:
            raise strict from None
        return mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False)


def _dump(message: mcp_types.JSONRPCMessage) -> bytes:
    """The message as one line of UTF-8 JSON; text that cannot be UTF-8 (a lone surrogate from a file
    name) is replaced, so the answer always goes out."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
    except Exception:
        data = message.model_dump(mode="python", by_alias=True, exclude_unset=True)
        return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8", "replace")


async def _read_lines(stream: anyio.abc.ByteReceiveStream,
                      sink: anyio.abc.ObjectSendStream[SessionMessage | Exception]) -> None:
    """Socket bytes -> parsed messages; a line that is not JSON-RPC goes to the server as an exception
    (it answers with a parse error), as the stdio transport does."""
    buf = bytearray()
    async with sink:
        while True:
            try:
                chunk = await stream.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return
            start = len(buf)
            buf += chunk
            end = buf.find(b"\n", start)
            cut = 0
            while end >= 0:
                line = bytes(buf[cut:end]).strip()
                cut = end + 1
                if line:
                    try:
                        message = _parse(line)
                    except Exception as exc:
                        await sink.send(exc)
                    else:
                        await sink.send(SessionMessage(message))
                end = buf.find(b"\n", cut)
            del buf[:cut]
            if len(buf) > MAX_MESSAGE_BYTES:
                log.warning("a message over %d bytes without a line end: the session is closed", MAX_MESSAGE_BYTES)
                return


async def _write_lines(stream: anyio.abc.ByteSendStream,
                       source: anyio.abc.ObjectReceiveStream[SessionMessage]) -> None:
    async with source:
        async for item in source:
            await stream.send(_dump(item.message) + b"\n")


async def serve_connection(stream: anyio.abc.SocketStream, server: Any, activity: Activity) -> None:
    """Run one full MCP session on ``stream``; never raises (except cancellation)."""
    activity.opened()
    session_no = activity.served
    log.info("session %d opened (%d connected)", session_no, activity.sessions)
    try:
        async with stream:
            to_server, from_socket = anyio.create_memory_object_stream[SessionMessage | Exception](16)
            to_socket, from_server = anyio.create_memory_object_stream[SessionMessage](16)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_lines, stream, to_server)
                tg.start_soon(_write_lines, stream, from_server)
                lowlevel = server._lowlevel_server  # MCPServer exposes it only privately
                await lowlevel.run(from_socket, to_socket, lowlevel.create_initialization_options())
                # The client hung up (or the server loop ended): stop the writer too.
                tg.cancel_scope.cancel()
    except Exception:
        log.exception("session %d failed; closed", session_no)
    finally:
        activity.closed()
        log.info("session %d closed (%d connected)", session_no, activity.sessions)


async def serve_socket(sock: socket.socket, server: Any, activity: Activity) -> None:
    """Accept connections on the bound, listening MCP socket until cancelled."""
    listener = await anyio.abc.SocketListener.from_socket(sock)
    async with listener, anyio.create_task_group() as tg:
        while True:
            try:
                conn = await listener.accept()
            except (anyio.BrokenResourceError, OSError) as exc:
                # EMFILE and friends: back off instead of spinning; the daemon stays up.
                log.warning("accept failed: %s", exc)
                await anyio.sleep(0.1)
                continue
            tg.start_soon(serve_connection, conn, server, activity)
