"""``memtree serve``: join the agent's stdin/stdout to the project's daemon (docs/architecture.md, process
model), passing whole lines (one JSON-RPC message each) untouched.

* No daemon answers: start one detached (the lock decides among racing forwarders) and wait for it; one
  from an older install is stopped and replaced (one from a newer install is used).
* ``initialize`` is answered from the daemon's recorded handshake when it matches in every way
  (:mod:`.early`); it then goes to the daemon as a replay whose answer is checked (a difference drops the
  record), and every other line is held until that answer.  While no daemon ran at start, ``tools/list`` is
  answered from the record too, then checked (a difference: ``notifications/tools/list_changed``).
* The daemon dies mid-session: a new one is started, ``initialize`` replayed under a fresh id (its answer
  dropped) and ``notifications/initialized`` re-sent.  Requests in flight are re-sent when that is safe
  (:mod:`.resend`) or never reached the daemon; the others fail, saying so.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path

try:  # the C module: socket.py turns every constant into an enum at import (~3 ms of a session's start)
    import _socket as socket
except ImportError:  # pragma: no cover
    import socket  # type: ignore[no-redef]

from memtree_core.forwarder import records
from memtree_core.forwarder.daemons import ForkedDaemon, log_tail, running_daemon, start_daemon, stop
from memtree_core.forwarder.early import Early, answer_from_record, project_dir
from memtree_core.forwarder.paths import (
    ProjectPaths,
    UnsafeSocketDir,
    identify_remembered,
    is_locked,
    memtree_home,
    read_state,
)
from memtree_core.forwarder.resend import MAX_RESENDS, Request, ToolHints

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memtree_core.forwarder.daemons import DaemonEntry

START_TIMEOUT_S = 60.0  # a cold daemon imports the SDK; a loaded machine can take much longer
REPLAY_TIMEOUT_S = 30.0
MAX_SILENT_LOSSES = 3  # daemons lost in a row without one answer: it crashes at boot, stop trying
STATE_WAIT_S = 1.0  # the state file follows the socket bind by microseconds
MAX_BUFFER = 64 << 20  # stop reading stdin while this much waits for a slow daemon
READ_CHUNK = 1 << 16
DRAIN_S = 30.0  # after EOF on stdin, how long answers to requests already sent are awaited
DAEMON_LOST = -32000  # JSON-RPC "server error" range


class DaemonUnavailable(Exception):
    """No daemon could be reached or started; ``crashed``: ours exited with an error (retrying would not help)."""

    def __init__(self, message: str, crashed: bool = False) -> None:
        super().__init__(message)
        self.crashed = crashed


def _note(message: str) -> None:
    try:
        sys.stderr.write(f"memtree serve: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None  # not ours to judge: the daemon answers it with a parse error


def _id_key(value: Any) -> str:
    return json.dumps(value)


def _error_line(rid: Any, why: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid,
                       "error": {"code": DAEMON_LOST, "message": f"memtree is unavailable: {why}"}}).encode() + b"\n"


def _tail(paths: ProjectPaths) -> str:
    tail = log_tail(paths)
    return f"\nlast lines of the log:\n{tail}" if tail else ""


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


def _version_ok(paths: ProjectPaths, version: str, sock: socket.socket) -> bool:
    """Is the daemon on ``sock`` of ``version``?  Its state file says once it names the pid the kernel gives
    for the socket; else the lock's holder vouches (not first: /proc/locks can take ~10 ms)."""
    peer, deadline = _peer(sock), time.monotonic() + STATE_WAIT_S
    while True:
        state = read_state(paths) if peer is not None else {}
        if peer is None or state.get("pid") != peer[0]:
            state = running_daemon(paths)
        if state is not None:
            return state.get("version") == version
        if time.monotonic() > deadline:
            return True  # cannot tell: do not stop a daemon we cannot identify
        time.sleep(0.01)


def connect(paths: ProjectPaths, root: Path, version: str, entry: DaemonEntry | None = None,
            timeout: float = START_TIMEOUT_S, check_version: bool = True,
            pause: Callable[[ForkedDaemon | None, float], None] | None = None,
            first: socket.socket | None = None) -> socket.socket:
    """A socket to a daemon of the installed version, starting one when none answers.  ``pause(daemon, s)``
    spends the waits (``daemon``: ours, not ready yet); ``first``: a socket already connected."""
    deadline = time.monotonic() + timeout
    proc: Any = None
    spawned = 0
    try:
        while True:
            sock, first = first or try_connect(paths.mcp_socket), None
            if sock is not None:
                if not check_version or _version_ok(paths, version, sock):
                    return sock
                state = running_daemon(paths) or {}
                theirs = state.get("installed_at")
                if type(theirs) is int and theirs > records.installed_at():
                    # Two installs serve this project: the newer one's daemon stays, or each would restart
                    # the other's at every session start.
                    _note(f"daemon pid {state.get('pid')} runs {state.get('version')}, from a newer install "
                          f"than this one ({version}): using it")
                    return sock
                sock.close()
                _note(f"daemon pid {state.get('pid')} runs {state.get('version')}, installed is {version}: "
                      f"restarting it")
                stop(paths, timeout=10.0, force=True)
                check_version = False  # a new daemon is of the installed version by construction
                continue
            if proc is not None and proc.poll() not in (None, 0):
                raise DaemonUnavailable(f"the memtree daemon exited with status {proc.returncode} while starting; "
                                        f"see {paths.log}" + _tail(paths), crashed=True)
            if not is_locked(paths.lock) and (proc is None or proc.poll() is not None):
                if spawned >= 5:
                    raise DaemonUnavailable(f"the memtree daemon keeps exiting at start; see {paths.log}" + _tail(paths))
                if isinstance(proc, ForkedDaemon):
                    proc.close()
                try:
                    proc = start_daemon(paths, root, entry)  # if another daemon wins the lock, ours exits 0
                except OSError as exc:  # no process could be made (EAGAIN, ENOMEM)
                    raise DaemonUnavailable(f"cannot start the memtree daemon: {exc}; free some memory or "
                                            f"processes, then start the session again", crashed=True) from exc
                spawned += 1
            if time.monotonic() > deadline:
                raise DaemonUnavailable(f"no memtree daemon answered on {paths.mcp_socket} within {timeout:g}s; "
                                        f"see {paths.log}" + _tail(paths))
            ours = proc if isinstance(proc, ForkedDaemon) and not proc.ready and proc.fd is not None else None
            # Sleep until our daemon says it listens (or exits): the CPU is the daemon's while it imports.
            (pause or _pause)(ours, 0.05 if ours is not None else 0.003)
    finally:
        if isinstance(proc, ForkedDaemon):
            proc.close()


def _pause(proc: ForkedDaemon | None, timeout: float) -> None:
    if proc is not None:
        proc.wait(timeout)
    else:
        time.sleep(timeout)


class Forwarder:
    def __init__(self, paths: ProjectPaths, root: Path, stdin: int = 0, stdout: int = 1,
                 early: Early | None = None, entry: DaemonEntry | None = None) -> None:
        self.paths, self.root, self.stdin, self.stdout, self.entry = paths, root, stdin, stdout, entry
        self.early = early if early is not None else Early()
        self.version = self.early.version or records.code_version()
        self.sock: socket.socket | None = None
        self.from_client = self.early.read  # a partial line from the agent (what was read already, first)
        self.from_daemon = bytearray()  # a partial line from the daemon
        self.to_daemon = bytearray()  # whole lines waiting for the socket
        self.head_sent = False  # the first line in to_daemon was partly sent
        self.held: list[bytes] = []  # agent lines held back while a replayed initialize is answered
        self.inflight: dict[str, Request] = {}  # id key -> a request sent and not yet answered
        self.hints = ToolHints(paths)
        self.initialize: dict[str, Any] | None = None
        self.initialized: bytes | None = None
        self.replay: str | None = None  # id key of our replayed initialize; its answer is not the agent's
        self.replay_deadline = 0.0
        self.replays = 0
        self.silent_losses = 0  # daemons lost since the last line a daemon sent
        self.stdin_open = True
        self.drain_deadline = 0.0
        # initialize answered from the record: the record, the protocol asked, the result given (JSON text)
        self.cached: records.Handshake | None = None
        self.protocol: Any = None
        self.expect_initialize: str | None = None
        self.expect_tools: Any = None  # the tools/list result given from the record, until the daemon confirms
        self.tools_check: str | None = None  # id key of our own tools/list asking the daemon for the truth
        self.tools_from_record = False  # may tools/list be answered from the record (no daemon ran at start)

    def _new_replay(self) -> None:
        """Lines are held from here until the daemon answers the replayed initialize."""
        self.replays += 1
        self.replay = _id_key(f"memtree-serve-replay-{os.getpid()}-{self.replays}")

    def _send_replay(self, timeout: float) -> None:
        self.replay_deadline = time.monotonic() + timeout
        self.to_daemon += json.dumps(dict(self.initialize or {}, id=json.loads(self.replay or "0"))).encode() + b"\n"

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> int:
        sock = try_connect(self.paths.mcp_socket)
        self.tools_from_record = sock is None  # a daemon that runs answers tools/list in a millisecond
        if self.early.text is None:
            if not answer_from_record(self.early, str(self.paths.dir), self.stdin, self.stdout) and self.early.gone:
                if sock is not None:
                    sock.close()
                return 0  # the client hung up before asking anything
            if self.early.why and self.early.why != "no recorded handshake":
                _note(f"waiting for the daemon: {self.early.why}")
        if self.early.text is not None:
            self.cached, self.protocol, self.expect_initialize = self.early.record, self.early.protocol, self.early.text
            self.initialize = self.early.message
            self._new_replay()
        try:
            self.sock = connect(self.paths, self.root, self.version, self.entry,
                                pause=self._pause if self.cached is not None else None, first=sock)
        except DaemonUnavailable as exc:
            if self.cached is not None:
                self._fail_all(str(exc), self.held)
            return self._fail_start(str(exc))
        self.sock.setblocking(False)
        if self.cached is not None:
            self._send_replay(START_TIMEOUT_S)  # a daemon just started answers after the SDK import
        for line in self._lines(self.from_client):  # read while waiting, not answered from the record
            self._from_client(line)
        while True:
            now = time.monotonic()
            if not self.stdin_open and ((not self.to_daemon and not self.inflight) or now > self.drain_deadline):
                return 0
            rlist: list[Any] = [self.sock]
            if self.stdin_open and len(self.to_daemon) < MAX_BUFFER:
                rlist.append(self.stdin)
            deadlines = ([self.replay_deadline] if self.replay else []) + ([] if self.stdin_open else [self.drain_deadline])
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            readable, writable, _ = select.select(rlist, [self.sock] if self.to_daemon else [], [], timeout)
            if self.replay and not readable and time.monotonic() > self.replay_deadline:
                self._lost("the restarted daemon did not answer the replayed initialize")
                continue
            try:
                if self.sock in writable:
                    self._flush()
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

    def _pause(self, daemon: ForkedDaemon | None, timeout: float) -> None:
        """While the daemon starts: read the client (answering ``tools/list`` from the record, holding the
        rest), and wake up as soon as our daemon says it is ready."""
        fds = [self.stdin] if self.stdin_open and sum(map(len, self.held)) < MAX_BUFFER else []
        if daemon is not None and daemon.fd is not None:
            fds.append(daemon.fd)
        if not fds:
            time.sleep(timeout)
            return
        readable = select.select(fds, [], [], timeout)[0]
        if daemon is not None and daemon.fd in readable:
            daemon.poll()
        if self.stdin in readable:
            self._read_client()

    def _answer(self, rid: Any, result: str) -> None:
        self._to_client(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":' + result.encode() + b"}\n")

    def _from_record(self, msg: dict[str, Any]) -> bool:
        """Answer ``tools/list`` (no cursor) from the record while the daemon is not through its handshake,
        when the ``MEMTREE_*`` settings (which choose the tools) are the record's."""
        if (self.cached is None or not self.replay or not self.tools_from_record or msg.get("method") != "tools/list"
                or "id" not in msg or (isinstance(msg.get("params"), dict) and msg["params"].get("cursor") is not None)
                or self.cached.env != records.environment_mark()):
            return False
        text = self.cached.text(self.protocol, "tools/list")
        result = self.cached.result(self.protocol, "tools/list")
        if text is None or result is None:
            return False
        self.hints.learn(result)
        self.expect_tools = result
        self._answer(msg["id"], text)
        return True

    def _tools_checked(self, msg: dict[str, Any]) -> None:
        """The daemon's own tools/list, asked after one was answered from the record."""
        self.tools_check = None
        self.hints.learn(msg.get("result"))
        if msg.get("result") != self.expect_tools and self.cached is not None:
            _note("the daemon lists other tools than the recorded list this session was given; the record is "
                  "dropped and the client told to list the tools again")
            self.cached.invalidate()
            self._to_client(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
        self.expect_tools = None

    def _read_client(self) -> None:
        data = os.read(self.stdin, READ_CHUNK)
        if not data:  # the agent hung up; answers to what it sent are still delivered, within a bound
            self.stdin_open = False
            self.drain_deadline = time.monotonic() + DRAIN_S
            return
        self.from_client += data
        for line in self._lines(self.from_client):
            self._from_client(line)

    def _from_client(self, line: bytes) -> None:
        msg = _parse(line)
        if isinstance(msg, dict):
            if self._from_record(msg):
                return
            method = msg.get("method")
            if method == "initialize" and "id" in msg:
                self.initialize = msg
            elif method == "notifications/initialized":
                self.initialized = line
                if self.replay:
                    return  # sent once the replayed initialize is answered (_replayed)
            if isinstance(method, str) and "id" in msg:
                self.inflight[_id_key(msg["id"])] = Request.of(msg, line)
            elif method == "notifications/cancelled" and isinstance(msg.get("params"), dict):
                self.inflight.pop(_id_key(msg["params"].get("requestId")), None)  # may never be answered
        if self.replay:
            self.held.append(line)
        else:
            self.to_daemon += line

    def _read_daemon(self) -> None:
        data = self.sock.recv(READ_CHUNK)  # type: ignore[union-attr]
        if not data:
            raise ConnectionResetError("the daemon closed the connection")
        self.from_daemon += data
        self.silent_losses = 0
        out = bytearray()
        for line in self._lines(self.from_daemon):
            msg = _parse(line) if self.inflight or self.replay or self.tools_check else None
            if isinstance(msg, dict) and "method" not in msg and "id" in msg:
                key = _id_key(msg["id"])
                if key == self.replay:
                    self._replayed(msg)
                    continue
                if key == self.tools_check:
                    self._tools_checked(msg)
                    continue
                request = self.inflight.pop(key, None)
                if request is not None and request.method == "tools/list":
                    self.hints.learn(msg.get("result"))
            out += line
        if out:
            self._to_client(bytes(out))

    def _flush(self) -> None:
        sent = self.sock.send(self.to_daemon)  # type: ignore[union-attr]
        if sent:  # is the head of what is left a line the daemon has seen part of?
            chunk = self.to_daemon[:sent]
            self.head_sent = not chunk.endswith(b"\n") if b"\n" in chunk else True
        del self.to_daemon[:sent]

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
        if end < 0:
            return []
        lines = [line + b"\n" for line in bytes(buf[:end]).split(b"\n")]
        del buf[:end + 1]
        return lines

    # -- a lost daemon -------------------------------------------------------------------------------
    def _lost(self, why: str) -> None:
        _note(f"lost the daemon ({why}); restarting it")
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.from_daemon.clear()
        # Lines the kernel never took are safe to send to the next daemon; a partly sent one is not.
        unsent = bytes(self.to_daemon).partition(b"\n")[2] if self.head_sent else bytes(self.to_daemon)
        self.to_daemon.clear()
        self.head_sent = False
        carried = []
        for line in unsent.splitlines(keepends=True):
            msg = _parse(line)
            if isinstance(msg, dict) and (msg.get("method") in ("initialize", "notifications/initialized")
                                          or _id_key(msg.get("id")) == self.replay):
                continue  # the handshake is redone below
            carried.append(line)
        self.held = carried + self.held
        resend: list[bytes] = []
        errors = bytearray()
        never_sent = {_id_key(m["id"]) for m in map(_parse, self.held) if isinstance(m, dict) and "id" in m}
        initialize_inflight = False
        for key, request in list(self.inflight.items()):
            if key in never_sent:
                continue  # its bytes never reached the daemon: it goes out again with the held lines
            if request.method == "initialize":  # nothing ran yet: the agent gets the answer it waits for
                initialize_inflight = True
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
            errors += json.dumps({"jsonrpc": "2.0", "id": request.id, "error": {
                "code": DAEMON_LOST,
                "message": f"the memtree daemon stopped while handling {request.describe()} ({why}); the "
                           f"request was not re-sent because {why_not}, so it may or may not have taken effect. "
                           f"The daemon has been restarted: check, then retry the call if it is safe. "
                           f"Log: {self.paths.log}"}}).encode() + b"\n"
        if errors:
            self._to_client(bytes(errors))
        pending, self.held, self.replay = resend + self.held, [], None
        self.silent_losses += 1
        if self.silent_losses >= MAX_SILENT_LOSSES:
            self._fail_all(f"the memtree daemon exited {self.silent_losses} times in a row without answering; "
                           f"see {self.paths.log}" + _tail(self.paths), pending)
        for attempt in range(3):  # a SIGKILLed daemon can reset the first reconnect
            try:
                self.sock = connect(self.paths, self.root, self.version, self.entry, check_version=False)
                break
            except DaemonUnavailable as exc:
                if attempt == 2 or exc.crashed:
                    self._fail_all(str(exc), pending)
        self.sock.setblocking(False)  # type: ignore[union-attr]
        if self.initialize is not None and not initialize_inflight:
            self._new_replay()
            self._send_replay(REPLAY_TIMEOUT_S)
            self.held = pending
        else:
            self.to_daemon += b"".join(pending)

    def _replayed(self, msg: dict[str, Any]) -> None:
        """The daemon answered our initialize: finish the handshake and release the held lines."""
        self.replay = None
        if self.expect_initialize is not None:
            if msg.get("result") != json.loads(self.expect_initialize) and self.cached is not None:
                _note(f"the daemon answered initialize otherwise than the recorded answer this session was given "
                      f"(recorded {self.expect_initialize[:300]}, daemon {json.dumps(msg)[:300]}); "
                      f"the record is dropped")
                self.cached.invalidate()
            self.expect_initialize = None
        self.to_daemon += (self.initialized or b"") + b"".join(self.held)
        self.held = []
        if self.expect_tools is not None and self.tools_check is None:  # check what the client was given
            check_id = f"memtree-serve-tools-{os.getpid()}"
            self.tools_check = _id_key(check_id)
            self.to_daemon += json.dumps({"jsonrpc": "2.0", "id": check_id, "method": "tools/list"}).encode() + b"\n"

    def _fail_all(self, why: str, pending: list[bytes]) -> None:
        """No daemon could be restarted: answer every request with the reason, then stop."""
        _note(why)
        self._to_client(b"".join(_error_line(m["id"], why) for m in map(_parse, pending)
                                 if isinstance(m, dict) and "id" in m and "method" in m))
        raise SystemExit(1)

    def _fail_start(self, why: str) -> int:
        """The daemon cannot start: say why on stderr and answer the agent's first request with it."""
        _note(why)
        while True:
            for msg in map(_parse, self._lines(self.from_client)):
                if isinstance(msg, dict) and "id" in msg and "method" in msg:
                    self._to_client(_error_line(msg["id"], why))
                    return 1
            data = os.read(self.stdin, READ_CHUNK)
            if not data:
                return 1
            self.from_client += data


def main(project: str | None, early: Early | None = None, entry: DaemonEntry | None = None) -> int:
    """Serve ``project``.  ``early``: what :func:`.early.answer` did first; ``entry``: what a forked daemon
    runs (else the daemon is started as a new interpreter)."""
    if early is not None and early.gone:
        return 0  # the agent left before asking anything
    home = memtree_home()
    if early is not None and early.identity is not None:
        project_hash, root = early.identity[0], Path(early.identity[1])
    else:
        identity = identify_remembered(project_dir(project), home)
        project_hash, root = identity.hash, identity.root
    paths = ProjectPaths.for_hash(home, project_hash)
    forwarder = Forwarder(paths, root, early=early, entry=entry)
    try:
        paths.ensure()
    except UnsafeSocketDir as exc:
        return forwarder._fail_start(str(exc))
    except OSError as exc:  # e.g. MEMTREE_HOME not writable: one line, never a traceback
        return forwarder._fail_start(f"cannot prepare {exc.filename or paths.dir}: {exc.strerror or exc}")
    try:
        return forwarder.run()
    except KeyboardInterrupt:
        return 130
