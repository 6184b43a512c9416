"""One MCP session per connection on the daemon's MCP socket.

Framing is the stdio one (one JSON-RPC message per line), so ``memtree serve`` can pass bytes through
without parsing them.  Each connection has its own task group: a reader of lines, a writer, and -- until the
SDK is ready -- the early layer (:mod:`memtree_core.daemon.early`), then the low-level ``Server.run`` over a
pair of memory streams.  A session that fails is logged and closed, and never touches the others.  Nothing
here imports the SDK before it is needed.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from memtree_core.daemon.per_session import CONNECTION, Connection

TYPE_CHECKING = False
if TYPE_CHECKING:
    import mcp_types

    from memtree_core.daemon.early import Early

log = logging.getLogger("memtree.daemon.sessions")

READ_CHUNK = 1 << 16
EOF, READY, DONE = object(), object(), object()  # a connection's line queue: client gone, SDK ready, early answer out
EARLY_THREADS = 4  # early tools/call answers running at once, daemon-wide
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
    import mcp_types

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


@dataclass
class Sdk:
    """The daemon's MCP side as it comes up: ``server`` once the SDK is imported; ``ready`` once the SDK is to
    answer whatever the early layer (``early``, None without records) does not."""

    early: Early | None
    server: Any = None
    ready: Any = None  # an anyio.Event, made on the event loop


async def _read_lines(stream: anyio.abc.ByteReceiveStream, sink: anyio.abc.ObjectSendStream[Any]) -> None:
    """Socket bytes -> whole lines, then :data:`EOF` (the client hung up, or sent too much without a line end)."""
    buf = bytearray()
    try:
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
                    await sink.send(line)
                end = buf.find(b"\n", cut)
            del buf[:cut]
            if len(buf) > MAX_MESSAGE_BYTES:
                log.warning("a message over %d bytes without a line end: the session is closed", MAX_MESSAGE_BYTES)
                return
    finally:
        await sink.send(EOF)


async def _write(stream: anyio.abc.ByteSendStream, source: anyio.abc.ObjectReceiveStream[bytes]) -> None:
    async with source:
        async for data in source:
            await stream.send(data)


def _answer(rid: Any, result_json: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (json.dumps(rid).encode(), result_json.encode())


class _Deferred(bytes):
    """A line the early layer tried and gave to the SDK: never tried early again."""


class EarlySession:
    """One connection until the SDK is ready: the early layer answers what it can; the rest is kept, in
    order, for the SDK (see :mod:`memtree_core.daemon.early`)."""

    def __init__(self, early: Early | None, out: anyio.abc.ObjectSendStream[bytes],
                 lines: anyio.abc.ObjectSendStream[Any], threads: anyio.CapacityLimiter) -> None:
        self.early, self.out, self.lines, self.threads = early, out, lines, threads
        self.deferred: list[bytes] = []
        self.deferring = early is None
        self.initialize: bytes | None = None  # the client's initialize, answered here; replayed to the SDK
        self.initialized: bytes | None = None
        self.initialize_id: Any = None
        self.protocol = ""  # the protocol version the client asked for in its initialize
        self.inflight = 0  # this connection's early tools/list and tools/call answers in progress

    def finished(self, eof: bool) -> bool:
        """The client hung up and nothing is left to answer."""
        return eof and not self.deferred and not self.inflight

    def take(self, line: bytes, tg: anyio.abc.TaskGroup) -> None:
        if self.deferring or isinstance(line, _Deferred):
            self.deferred.append(bytes(line))
            return
        try:
            msg = json.loads(line.decode("utf-8", "surrogateescape"))
        except (ValueError, RecursionError):
            msg = None
        early = self.early
        assert early is not None
        if not isinstance(msg, dict):
            msg = {}  # not a JSON-RPC message: the SDK answers it
        method = msg.get("method")
        if method == "initialize" and "id" in msg and self.initialize is None:
            params = msg.get("params")
            known = early.initialize.get(params.get("protocolVersion")) if isinstance(params, dict) else None
            if known is not None:
                self.initialize, self.initialize_id = line, msg["id"]
                self.protocol = str(params["protocolVersion"])  # type: ignore[index]
                self.out.send_nowait(_answer(msg["id"], known))
                return
        elif self.initialize is not None and method == "notifications/initialized" and self.initialized is None:
            self.initialized = line
            return
        elif self.initialized is not None and "id" in msg and method == "ping":
            self.out.send_nowait(_answer(msg["id"], "{}"))
            return
        elif self.initialized is not None and "id" in msg and method in ("tools/list", "tools/call"):
            early.busy += 1
            self.inflight += 1
            tg.start_soon(self._answer_tools, line, msg)
            return
        self.deferring = True  # anything else: it, and every line after it, goes to the SDK in order
        self.deferred.append(line)

    async def _answer_tools(self, line: bytes, msg: dict[str, Any]) -> None:
        early = self.early
        assert early is not None
        try:
            while not early.armed.is_set():
                await anyio.sleep(0.005)
            answer = None
            if msg["method"] == "tools/list":
                listed = early.tools_list(self.protocol)
                answer = _answer(msg["id"], listed) if listed is not None else None
            else:
                answer = await self._call(msg)
            if answer is None:
                await self.lines.send(_Deferred(line))
            else:
                await self.out.send(answer)
                early.answered += 1
        finally:
            early.busy -= 1
            self.inflight -= 1
            await self.lines.send(DONE)

    async def _call(self, msg: dict[str, Any]) -> bytes | None:
        early = self.early
        assert early is not None
        params = msg.get("params")
        tool = early.tools.get(params.get("name")) if isinstance(params, dict) else None
        kwargs = tool.arguments(params.get("arguments", {})) if tool is not None else None  # type: ignore[union-attr]
        shape = early.call_shape(self.protocol)
        if tool is None or kwargs is None or shape is None or getattr(early.app, "damaged", None):
            return None
        try:
            result = await anyio.to_thread.run_sync(tool.call, early.app, kwargs, shape, limiter=self.threads,
                                                    abandon_on_cancel=True)
            return _answer(msg["id"], json.dumps(result, ensure_ascii=False))
        except Exception:
            log.debug("an early %s call goes to the SDK", tool.built.spec.name, exc_info=True)
            return None


async def _until_ready(sdk: Sdk, lines: anyio.abc.ObjectSendStream[Any]) -> None:
    async with lines:
        await sdk.ready.wait()
        await lines.send(READY)


async def serve_connection(stream: anyio.abc.SocketStream, sdk: Sdk, activity: Activity,
                           early_threads: anyio.CapacityLimiter | None = None) -> None:
    """Run one full MCP session on ``stream``; never raises (except cancellation)."""
    CONNECTION.set(Connection())  # this task's context, and every task and thread it starts
    activity.opened()
    session_no = activity.served
    log.info("session %d opened (%d connected)", session_no, activity.sessions)
    try:
        async with stream:
            to_socket, from_sdk = anyio.create_memory_object_stream[bytes](64)
            lines_in, lines = anyio.create_memory_object_stream[Any](64)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_lines, stream, lines_in)
                tg.start_soon(_write, stream, from_sdk)
                session = EarlySession(sdk.early, to_socket, lines_in.clone(),
                                       early_threads or anyio.CapacityLimiter(EARLY_THREADS))
                eof = False
                if not sdk.ready.is_set():
                    tg.start_soon(_until_ready, sdk, lines_in.clone())
                    while not session.finished(eof):
                        line = await lines.receive()
                        if line is READY:
                            break
                        if line is EOF:
                            eof = True
                        elif line is not DONE:
                            session.take(line, tg)
                if not session.finished(eof):
                    await _serve_sdk(sdk.server, session, lines, to_socket, eof, tg)
                tg.cancel_scope.cancel()
    except Exception:
        log.exception("session %d failed; closed", session_no)
    finally:
        activity.closed()
        log.info("session %d closed (%d connected)", session_no, activity.sessions)


async def _serve_sdk(server: Any, session: EarlySession, lines: anyio.abc.ObjectReceiveStream[Any],
                     to_socket: anyio.abc.ObjectSendStream[bytes], eof: bool, tg: anyio.abc.TaskGroup) -> None:
    """The rest of the session, by the SDK: the early-answered handshake replayed, then the kept lines."""
    from mcp.shared.message import SessionMessage

    to_server, from_socket = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](16)
    replayed = [line for line in (session.initialize, session.initialized) if line is not None]
    drop = [json.dumps(session.initialize_id)] if session.initialize is not None else []

    async def feed() -> None:
        async with to_server:
            pending = replayed + session.deferred
            session.deferred = []
            client_gone = eof
            while True:
                if pending:
                    line = pending.pop(0)
                elif client_gone and not session.inflight:
                    return  # the client hung up: the SDK answers what it was given, then the session ends
                else:
                    line = await lines.receive()
                    if line is EOF:
                        client_gone = True
                    if line is EOF or line is READY or line is DONE:
                        continue
                try:
                    message = _parse(bytes(line))
                except Exception as exc:
                    await to_server.send(exc)
                else:
                    await to_server.send(SessionMessage(message))

    async def answers() -> None:
        async with from_server:
            async for item in from_server:
                data = _dump(item.message)
                if drop:
                    head = json.loads(data)
                    if "method" not in head and json.dumps(head.get("id")) == drop[0]:
                        drop.clear()  # the SDK's answer to the replayed initialize: the client has one
                        given = session.early.initialize.get(session.protocol) if session.early else None
                        if given is not None and head.get("result") != json.loads(given):
                            # The record is replaced by this daemon's own (handshake.record) once it is up.
                            log.warning("the SDK answered initialize otherwise than the record this session was "
                                        "given (recorded %s, SDK %s)", given[:300], json.dumps(head)[:300])
                        continue
                await to_socket.send(data + b"\n")

    tg.start_soon(feed)
    tg.start_soon(answers)
    lowlevel = server._lowlevel_server  # MCPServer exposes it only privately
    await lowlevel.run(from_socket, to_client, lowlevel.create_initialization_options())


async def serve_socket(sock: socket.socket, sdk: Sdk, activity: Activity) -> None:
    """Accept connections on the bound, listening MCP socket until cancelled."""
    listener = await anyio.abc.SocketListener.from_socket(sock)
    early_threads = anyio.CapacityLimiter(EARLY_THREADS)
    async with listener, anyio.create_task_group() as tg:
        while True:
            try:
                conn = await listener.accept()
            except (anyio.BrokenResourceError, OSError) as exc:
                # EMFILE and friends: back off instead of spinning; the daemon stays up.
                log.warning("accept failed: %s", exc)
                await anyio.sleep(0.1)
                continue
            tg.start_soon(serve_connection, conn, sdk, activity, early_threads)
