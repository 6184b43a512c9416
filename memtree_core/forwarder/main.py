"""``memtree serve``: join the agent's stdin/stdout to the project's daemon, whole lines (one JSON-RPC message
each) passed untouched; answers given from the daemon's record are checked against the daemon's own, and a
daemon that dies is replaced mid-session (docs/architecture.md#the-forwarder, #process-model).
"""

from __future__ import annotations

import _socket as socket  # not socket.py: it turns every constant into an enum at import (~3 ms of a start)
import json
import os
import select
import sys
import time
from pathlib import Path

from memtree_core.forwarder import records
from memtree_core.forwarder.daemons import kill, pid_alive, see_log
from memtree_core.forwarder.paths import ProjectPaths, UnsafeSocketDir, is_locked, memtree_home, read_state
from memtree_core.forwarder.resend import MAX_RESENDS, Request, ToolHints

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Start = Callable[[ProjectPaths, Path], Any]  # the host's memtree_core.daemon.control.start_daemon

START_TIMEOUT_S = 60.0  # a cold daemon imports the SDK; a loaded machine can take much longer
REPLAY_TIMEOUT_S = 30.0
MAX_SILENT_LOSSES = 3  # daemons lost in a row without one answer: it crashes at boot, stop trying
MAX_BUFFER = 64 << 20  # stop reading stdin while this much waits for a slow daemon
DRAIN_S = 30.0  # after EOF on stdin, how long answers to requests already sent are awaited
DAEMON_LOST = -32000  # JSON-RPC "server error" range
PARSE_ERROR, INVALID_REQUEST = -32700, -32600  # JSON-RPC 2.0's own codes


class DaemonUnavailable(Exception):
    def __init__(self, message: str, crashed: bool = False) -> None:
        super().__init__(message)
        self.crashed = crashed  # ours exited with an error: retrying would crash it again


def _note(message: str) -> None:
    try:
        print(f"memtree serve: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _parse(line: bytes) -> Any:
    try:  # bytes that are not UTF-8 (a file name) are carried as the daemon reads them: surrogate escapes
        return json.loads(line.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None


_key = json.dumps  # a JSON-RPC id as a dict key: 1 and "1" are different ids


def _error(rid: Any, message: str, code: int = DAEMON_LOST) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}).encode() + b"\n"


def _refusal(msg: Any, line: bytes, initialized: bool) -> bytes | None:
    """The answer the forwarder gives itself to a line the daemon would pass over in silence (the SDK drops
    what is not JSON, and answers a request before ``initialize`` with an empty "invalid parameters"), or None
    to forward it."""
    if msg is None:
        return _error(None, "parse error: each line must be one JSON-RPC message", PARSE_ERROR) if line.strip() else None
    if not isinstance(msg, dict):
        return _error(None, "invalid request: a JSON-RPC message is a JSON object", INVALID_REQUEST)
    method = msg.get("method")
    if not initialized and "id" in msg and isinstance(method, str) and method not in ("initialize", "ping"):
        return _error(msg["id"], f"the session is not initialized: send 'initialize' before {method!r}",
                      INVALID_REQUEST)
    return None


def _peer(sock: socket.socket) -> tuple[int, int] | None:
    """``(pid, uid)`` serving the other end, or None where the OS does not say (macOS/BSD)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)  # struct ucred: three C ints
    return int.from_bytes(creds[0:4], sys.byteorder), int.from_bytes(creds[4:8], sys.byteorder)


def try_connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        peer = _peer(sock)
        if peer is None or peer[1] == os.geteuid():  # macOS/BSD: the checked 0700 directory is the guard
            return sock
        _note(f"the socket {path} is served by another user; not using it")  # the directory was swapped
    except OSError:
        pass
    sock.close()
    return None


def _daemon_state(paths: ProjectPaths, sock: socket.socket) -> dict[str, Any] | None:
    """The state file of the daemon on ``sock``, once it names the pid the kernel gives for the socket (it
    follows the bind by microseconds; macOS: the live pid of the lock's holder); None: cannot tell."""
    peer, deadline = _peer(sock), time.monotonic() + 1.0
    while True:
        state = read_state(paths)
        pid = state.get("pid")
        if (pid == peer[0]) if peer else (type(pid) is int and is_locked(paths.lock) and pid_alive(pid)):
            return state
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)


def connect(paths: ProjectPaths, root: Path, version: str, start: Start) -> socket.socket:
    """A socket to a daemon of the installed version, ``start``-ing one when none answers."""
    deadline, proc, spawned = time.monotonic() + START_TIMEOUT_S, None, 0
    try:
        while True:
            sock = try_connect(paths.mcp_socket)
            if sock is not None:
                state = _daemon_state(paths, sock)
                if state is None or state.get("version") == version:  # None: do not stop what we cannot identify
                    return sock
                theirs, what = state.get("installed_at"), f"daemon pid {state['pid']} runs {state.get('version')}"
                if type(theirs) is int and theirs > records.installed_at():  # or each restarts the other's
                    _note(f"{what}, from a newer install than this one ({version}): using it")
                    return sock
                sock.close()
                _note(f"{what}, installed is {version}: restarting it")
                kill(state["pid"], 15, 10.0) or kill(state["pid"], 9, 5.0)  # SIGTERM, SIGKILL (no signal's enums)
                continue
            if proc is not None and proc.poll() not in (None, 0):
                raise DaemonUnavailable(f"the memtree daemon exited with status {proc.returncode} while starting; "
                                        + see_log(paths), crashed=True)
            if not is_locked(paths.lock) and (proc is None or proc.poll() is not None):
                if spawned >= 5:
                    raise DaemonUnavailable("the memtree daemon keeps exiting at start; " + see_log(paths))
                _close(proc)
                try:
                    proc, spawned = start(paths, root), spawned + 1  # a loser of the lock exits 0
                except OSError as exc:  # no process could be made (EAGAIN, ENOMEM)
                    raise DaemonUnavailable(f"cannot start the memtree daemon: {exc}; free some memory or "
                                            f"processes, then start the session again", crashed=True) from exc
            if time.monotonic() > deadline:
                raise DaemonUnavailable(f"no memtree daemon answered on {paths.mcp_socket} within "
                                        f"{START_TIMEOUT_S:g}s; " + see_log(paths))
            # Sleep until our daemon says it listens (or exits): the CPU is the daemon's while it imports.
            if getattr(proc, "fd", None) is not None and not proc.ready:
                proc.wait(0.05)
            else:
                time.sleep(0.003)
    finally:
        _close(proc)


def _close(proc: Any) -> None:
    if hasattr(proc, "close"):  # a forked daemon's status pipe (a Popen has none)
        proc.close()


class Forwarder:
    def __init__(self, paths: ProjectPaths, root: Path, early: records.Early, start: Start) -> None:
        self.paths, self.root, self.early, self.start, self.stdin, self.stdout = paths, root, early, start, 0, 1
        self.version = early.version or records.code_version()
        self.sock: socket.socket | None = None
        self.from_client, self.from_daemon = self.early.read, bytearray()  # partial lines
        self.to_daemon, self.head_sent = bytearray(), False  # whole lines; the first one partly sent
        self.held: list[bytes] = []  # agent lines held back while a replayed initialize is answered
        self.inflight: dict[str, Request] = {}  # id key -> a request sent and not yet answered
        self.hints = ToolHints(paths)
        self.initialize: dict[str, Any] | None = None
        self.initialized: bytes | None = None
        self.replay: str | None = None  # id key of our replayed initialize; its answer is not the agent's
        self.replay_deadline, self.replays, self.silent_losses = 0.0, 0, 0  # losses: since a daemon's last line
        self.stdin_open, self.drain_deadline = True, 0.0

    def _replay(self, timeout: float) -> None:
        """Send the agent's initialize again under an id of ours (its answer is not the agent's), and hold the
        agent's lines until it is answered."""
        self.replays += 1
        rid = f"memtree-serve-replay-{os.getpid()}-{self.replays}"
        self.replay, self.replay_deadline = _key(rid), time.monotonic() + timeout
        self.to_daemon += json.dumps(dict(self.initialize or {}, id=rid)).encode() + b"\n"

    def run(self) -> int:
        early = self.early
        if early.why:
            _note(f"waiting for the daemon: {early.why}")
        try:
            self.sock = connect(self.paths, self.root, self.version, self.start)
        except DaemonUnavailable as exc:
            return self._fail(str(exc), None)
        self.sock.setblocking(False)
        if early.text is not None:  # answered from the record
            self.initialize = early.message
            self._replay(START_TIMEOUT_S)  # a daemon just started answers after the SDK import
        for line in self._lines(self.from_client):  # read before the forwarder ran, not answered from the record
            self._from_client(line)
        while True:
            now = time.monotonic()
            if not self.stdin_open and ((not self.to_daemon and not self.inflight) or now > self.drain_deadline):
                return 0
            rlist: list[Any] = [self.sock] + ([self.stdin] if self.stdin_open and len(self.to_daemon) < MAX_BUFFER else [])
            deadlines = ([self.replay_deadline] if self.replay else []) + ([] if self.stdin_open else [self.drain_deadline])
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            readable, writable, _ = select.select(rlist, [self.sock] if self.to_daemon else [], [], timeout)
            if self.replay and not readable and time.monotonic() > self.replay_deadline:
                self._lost("the restarted daemon did not answer the replayed initialize")
                continue
            try:
                if self.sock in writable:
                    sent = self.sock.send(self.to_daemon)
                    if sent:  # is the head of what is left a line the daemon has seen part of?
                        chunk = self.to_daemon[:sent]
                        self.head_sent = not chunk.endswith(b"\n") if b"\n" in chunk else True
                    del self.to_daemon[:sent]
                if self.sock in readable:
                    self._read_daemon()
            except BlockingIOError:
                pass
            except OSError as exc:
                if not self.stdin_open and not self.inflight:
                    return 0
                self._lost(str(exc) or type(exc).__name__)
                continue
            if self.stdin in readable:
                self._read_client()

    def _read_client(self) -> None:
        data = os.read(self.stdin, 1 << 16)
        if not data:  # the agent hung up; answers to what it sent are still delivered, within a bound
            self.stdin_open, self.drain_deadline = False, time.monotonic() + DRAIN_S
        self.from_client += data
        for line in self._lines(self.from_client):
            self._from_client(line)

    def _from_client(self, line: bytes) -> None:
        msg = _parse(line)
        refusal = _refusal(msg, line, self.initialize is not None)
        if refusal is not None:
            self._to_client(refusal)
            return
        if isinstance(msg, dict):
            method = msg.get("method")
            if method == "initialize" and "id" in msg:
                self.initialize = msg
            elif method == "notifications/initialized":
                self.initialized = line
                if self.replay:
                    return  # sent once the replayed initialize is answered (_replayed)
            if isinstance(method, str) and "id" in msg:
                self.inflight[_key(msg["id"])] = Request(msg, line)
            elif method == "notifications/cancelled" and isinstance(msg.get("params"), dict):
                self.inflight.pop(_key(msg["params"].get("requestId")), None)  # may never be answered
        if self.replay:
            self.held.append(line)
        else:
            self.to_daemon += line

    def _read_daemon(self) -> None:
        data = self.sock.recv(1 << 16)  # type: ignore[union-attr]
        if not data:
            raise ConnectionResetError("the daemon closed the connection")
        self.from_daemon += data
        self.silent_losses = 0
        out = bytearray()
        for line in self._lines(self.from_daemon):
            msg = _parse(line) if self.inflight or self.replay else None
            key = _key(msg["id"]) if isinstance(msg, dict) and "method" not in msg and "id" in msg else None
            if key is not None and key == self.replay:
                self._replayed(msg)  # type: ignore[arg-type]
            else:
                request = self.inflight.pop(key, None) if key is not None else None
                if request is not None and request.method == "tools/list":
                    self.hints.learn(msg.get("result"))  # type: ignore[union-attr]
                out += line
        if out:
            self._to_client(bytes(out))

    def _to_client(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.stdout, view):]
        except OSError:
            raise SystemExit(0) from None  # the agent is gone; nothing left to serve

    @staticmethod
    def _lines(buf: bytearray) -> list[bytes]:
        end = buf.rfind(b"\n")
        lines = [line + b"\n" for line in bytes(buf[:end]).split(b"\n")] if end >= 0 else []
        del buf[:end + 1]
        return lines

    def _lost(self, why: str) -> None:
        _note(f"lost the daemon ({why}); restarting it")
        self.sock.close()  # type: ignore[union-attr]
        self.from_daemon.clear()
        # Lines the kernel never took may go to the next daemon (the handshake is redone); a partly sent one not.
        unsent = bytes(self.to_daemon).partition(b"\n")[2] if self.head_sent else bytes(self.to_daemon)
        self.to_daemon.clear()
        self.head_sent = False
        self.held = [line for line, msg in ((line, _parse(line)) for line in unsent.splitlines(keepends=True))
                     if not (isinstance(msg, dict) and (msg.get("method") in ("initialize", "notifications/initialized")
                                                        or _key(msg.get("id")) == self.replay))] + self.held
        never_sent = {_key(m["id"]) for m in map(_parse, self.held) if isinstance(m, dict) and "id" in m}
        resend: list[bytes] = []
        errors = bytearray()
        for key, request in list(self.inflight.items()):
            if key in never_sent:
                continue  # it goes out again with the held lines
            if request.method == "initialize":  # nothing ran yet: the agent gets the answer it waits for
                resend.insert(0, request.line)
                continue
            why_not = request.unsafe_to_resend(self.hints)
            if why_not is None and request.resends < MAX_RESENDS:
                request.resends += 1
                resend.append(request.line)
                continue
            del self.inflight[key]
            why_not = why_not or (f"it was already re-sent {request.resends} time(s) and each time the daemon "
                                  f"stopped while handling it")
            errors += _error(request.id, f"the memtree daemon stopped while handling {request.describe()} ({why}); "
                             f"the request was not re-sent because {why_not}, so it may or may not have taken "
                             f"effect. The daemon has been restarted: check, then retry the call if it is safe. "
                             f"Log: {self.paths.log}")
        self._to_client(bytes(errors))
        initialize_inflight = any(r.method == "initialize" and k not in never_sent for k, r in self.inflight.items())
        pending, self.held, self.replay = resend + self.held, [], None
        self.silent_losses += 1
        if self.silent_losses >= MAX_SILENT_LOSSES:
            self._fail(f"the memtree daemon exited {self.silent_losses} times in a row without answering; "
                       + see_log(self.paths), pending)
        for attempt in range(3):  # a SIGKILLed daemon can reset the first reconnect
            try:
                self.sock = connect(self.paths, self.root, self.version, self.start)
                break
            except DaemonUnavailable as exc:
                if attempt == 2 or exc.crashed:
                    self._fail(str(exc), pending)
        self.sock.setblocking(False)  # type: ignore[union-attr]
        if self.initialize is not None and not initialize_inflight:
            self._replay(REPLAY_TIMEOUT_S)
            self.held = pending
        else:
            self.to_daemon += b"".join(pending)

    def _replayed(self, msg: dict[str, Any]) -> None:
        """The daemon answered our initialize: check it, finish the handshake, release the held lines."""
        self.replay = None
        given, self.early.text = self.early.text, None
        if given is not None and self.early.record is not None and msg.get("result") != json.loads(given):
            _note(f"the daemon answered initialize otherwise than the recorded answer this session was given "
                  f"(recorded {given[:300]}, daemon {json.dumps(msg)[:300]}); the record is dropped")
            self.early.record.invalidate()
        self.to_daemon += (self.initialized or b"") + b"".join(self.held)
        self.held = []

    def _fail(self, why: str, pending: list[bytes] | None) -> int:
        """No daemon: answer every request in ``pending`` (None: the agent's first one) with ``why``; stop."""
        _note(why)
        why = f"memtree is unavailable: {why}"
        if pending is not None:
            self._to_client(b"".join(_error(m["id"], why) for m in map(_parse, pending)
                                     if isinstance(m, dict) and "id" in m and "method" in m))
            raise SystemExit(1)
        while True:
            for msg in map(_parse, self._lines(self.from_client)):
                if isinstance(msg, dict) and "id" in msg and "method" in msg:
                    self._to_client(_error(msg["id"], why))
                    return 1
            data = os.read(self.stdin, 1 << 16)
            if not data:
                return 1
            self.from_client += data


def main(early: records.Early, start: Start) -> int:
    """Serve the project ``early.identity`` names (``(hash, root)``); ``early``: what :func:`.records.answer`
    did first; ``start(paths, root)``: starts the daemon, detached."""
    paths = ProjectPaths.for_hash(memtree_home(), early.identity[0])  # type: ignore[index]
    forwarder = Forwarder(paths, Path(early.identity[1]), early, start)  # type: ignore[index]
    try:
        paths.ensure()
    except UnsafeSocketDir as exc:
        return forwarder._fail(str(exc), None)
    except OSError as exc:  # e.g. MEMTREE_HOME not writable: one line, never a traceback
        return forwarder._fail(f"cannot prepare {exc.filename or paths.dir}: {exc.strerror or exc}", None)
    return forwarder.run()  # KeyboardInterrupt: the host's
