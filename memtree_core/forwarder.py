"""``memtree serve``: join the agent's stdin/stdout to the project's daemon (DESIGN.md §7).

Stdlib only -- no MCP SDK, no pydantic, no settings -- so it starts in tens of milliseconds and every
session after the first gets its ``initialize`` answered by a daemon that is already warm.

* Bytes pass through untouched, whole lines only (the stdio framing: one JSON-RPC message per line).
* No daemon answers: start one detached (the lock decides among racing forwarders) and wait for it.  It is
  a fork of this process (no second interpreter start), see :func:`memtree_core.daemon.control.fork_daemon`.
* No daemon answers but the last one recorded its handshake (:mod:`memtree_core.handshake_cache`): answer
  ``initialize`` (and a ``tools/list`` asked before the daemon is up) from that record when it matches in
  every way, then start the daemon, replay ``initialize`` to it and hold everything else until it answers.
  The daemon's answers are checked against the recorded ones; a difference drops the record (and, for the
  tools, tells the client ``notifications/tools/list_changed``).
* A daemon answers, and its record matches: ``initialize`` is answered from the record all the same (a
  second session's start is then the interpreter's and these imports, not a round trip to a daemon that may
  be busy); the ``initialize`` goes to the daemon as a replay whose answer is checked, and everything else
  (``tools/list`` included) is held until it is answered, then forwarded.
* The project's identity (which needs git) is remembered per directory (:mod:`memtree_core.identity_cache`).
* The running daemon is older than the installed code: stop it and start a new one.
* The daemon dies mid-session: a new daemon is started, the client's ``initialize`` is replayed under a
  fresh id (its reply dropped) and ``notifications/initialized`` re-sent, so the agent's session goes on.
  Requests in flight are re-sent to it when repeating them is safe (:mod:`memtree_core.resend`): requests
  that change nothing, ``tools/call`` of a tool the daemon declared read-only or idempotent, and any line
  the kernel never took.  Only a call that may have changed something (``bash``) fails, saying so.
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
except ImportError:  # pragma: no cover - an interpreter without it
    import socket  # type: ignore[no-redef]

from memtree_core import handshake_cache
from memtree_core.daemon.control import (
    ForkedDaemon,
    code_version,
    log_tail,
    running_daemon,
    start_daemon,
    stop,
)
from memtree_core.daemon.version import installed_at
from memtree_core.early_answer import Early, project_dir  # noqa: F401  (project_dir: re-exported)
from memtree_core.lockfile import is_locked, read_state
from memtree_core.project import ProjectPaths, identify_remembered, memtree_home
from memtree_core.resend import MAX_RESENDS, Request, ToolHints
from memtree_core.socket_dirs import UnsafeSocketDir

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

START_TIMEOUT_S = 60.0  # a cold daemon imports the SDK (~1 s here); a loaded machine can take much longer
REPLAY_TIMEOUT_S = 30.0
MAX_SILENT_LOSSES = 3  # daemons lost in a row without a single answer: it crashes at boot, stop trying
STATE_WAIT_S = 1.0  # the state file follows the socket bind by microseconds
MAX_BUFFER = 64 << 20  # stop reading stdin while this much waits for a slow daemon
READ_CHUNK = 1 << 16
DRAIN_S = 30.0  # after EOF on stdin, how long answers to requests already sent are awaited
DAEMON_LOST = -32000  # JSON-RPC "server error" range


class DaemonUnavailable(Exception):
    """No daemon could be reached or started; the message names the log.  ``crashed``: the daemon we started
    exited with an error (retrying would only crash it again)."""

    def __init__(self, message: str, crashed: bool = False) -> None:
        super().__init__(message)
        self.crashed = crashed


def _id_key(value: Any) -> str:
    return json.dumps(value)


def _send_all_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def try_connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        if not _peer_is_me(sock):
            # Only possible if the directory was swapped after our check: never talk to another user.
            _note(f"the socket {path} is served by another user; not using it")
            sock.close()
            return None
    except OSError:
        sock.close()
        return None
    return sock


def _peer(sock: socket.socket) -> tuple[int, int] | None:
    """``(pid, uid)`` of the process serving the other end, or None where the OS does not say (macOS/BSD)."""
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, so_peercred, 12)  # struct ucred: three C ints
    return int.from_bytes(creds[0:4], sys.byteorder), int.from_bytes(creds[4:8], sys.byteorder)


def _peer_is_me(sock: socket.socket) -> bool:
    peer = _peer(sock)
    return peer is None or peer[1] == os.geteuid()  # macOS/BSD: the checked 0700 directory is the guard


def connect(paths: ProjectPaths, root: Path, version: str, timeout: float = START_TIMEOUT_S,
            check_version: bool = True,
            pause: Callable[[ForkedDaemon | None, float], None] | None = None,
            first: socket.socket | None = None) -> socket.socket:
    """A connected socket to a daemon of the installed version, starting one when none answers.

    ``pause(daemon, seconds)`` is how the wait between attempts is spent (the forwarder reads its client
    meanwhile when it answered ``initialize`` itself); ``daemon`` is the one we started while it has not
    said it is ready (sleep on its status pipe), else None.  ``first``: a socket the caller already connected."""
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
                if _newer_install(state):
                    # Two installs serve this project (say the plugin's and a pip install): the newer one's
                    # daemon stays, or each would restart the other's at every session start.
                    _note(f"daemon pid {state.get('pid')} runs {state.get('version')}, from a newer install "
                          f"than this one ({version}): using it")
                    return sock
                sock.close()
                _note(f"daemon pid {state.get('pid')} runs {state.get('version')}, installed is {version}: "
                      f"restarting it")
                stop(paths, timeout=10.0, force=True)
                check_version = False  # one restart; a new daemon is of the installed version by construction
                continue
            if proc is not None and proc.poll() not in (None, 0):
                raise DaemonUnavailable(f"the memtree daemon exited with status {proc.returncode} while starting; "
                                        f"see {paths.log}" + _tail(paths), crashed=True)
            if not is_locked(paths.lock) and (proc is None or proc.poll() is not None):
                if spawned >= 5:
                    raise DaemonUnavailable(f"the memtree daemon keeps exiting at start; see {paths.log}"
                                            + _tail(paths))
                _close(proc)
                try:
                    proc = start_daemon(paths, root)  # if another forwarder's daemon wins the lock, ours exits 0
                except OSError as exc:  # no process could be made (EAGAIN, ENOMEM): retrying will not help
                    raise DaemonUnavailable(f"cannot start the memtree daemon: {exc}; free some memory or "
                                            f"processes, then start the session again", crashed=True) from exc
                spawned += 1
            if time.monotonic() > deadline:
                raise DaemonUnavailable(f"no memtree daemon answered on {paths.mcp_socket} within {timeout:g}s; "
                                        f"see {paths.log}" + _tail(paths))
            status_fd = proc.fd if isinstance(proc, ForkedDaemon) and not proc.ready else None
            # Sleep until our daemon says it listens (or exits), not in a polling loop: the CPU is the
            # daemon's while it imports the SDK.  The timeout covers a daemon some other forwarder started.
            (pause or _pause)(proc if status_fd is not None else None, 0.05 if status_fd is not None else 0.003)
    finally:
        _close(proc)


def _pause(proc: ForkedDaemon | None, timeout: float) -> None:
    if proc is not None:
        proc.wait(timeout)
    else:
        time.sleep(timeout)


def _close(proc: Any) -> None:
    if isinstance(proc, ForkedDaemon):
        proc.close()


def _newer_install(state: dict[str, Any]) -> bool:
    """Did the daemon of ``state`` come from an install made after this one?  (An older daemon, and one
    whose state does not say, is replaced: that is an upgrade.)"""
    theirs = state.get("installed_at")
    return isinstance(theirs, int) and not isinstance(theirs, bool) and theirs > installed_at()


def _version_ok(paths: ProjectPaths, version: str, sock: socket.socket | None = None) -> bool:
    """Is the daemon on ``sock`` of ``version``?  Its state file says, once it is known to be that daemon's:
    it names the pid serving the socket (the kernel tells us that pid), else the daemon lock's holder."""
    peer = _peer(sock) if sock is not None else None
    deadline = time.monotonic() + STATE_WAIT_S
    while True:
        if peer is not None:
            state = read_state(paths)
            if state.get("pid") == peer[0]:
                return state.get("version") == version
        # No pid from the kernel, or a state file not (yet) that daemon's: the lock's holder vouches.  (Not
        # first: reading /proc/locks takes ~10 ms on some kernels, the forwarder's whole budget.)
        state = running_daemon(paths)
        if state is not None:
            return state.get("version") == version
        if time.monotonic() > deadline:
            return True  # cannot tell (no state file): do not stop a daemon we cannot identify
        time.sleep(0.01)


def _tail(paths: ProjectPaths) -> str:
    tail = log_tail(paths)
    return f"\nlast lines of the log:\n{tail}" if tail else ""


def _note(message: str) -> None:
    try:
        sys.stderr.write(f"memtree serve: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Forwarder:
    def __init__(self, paths: ProjectPaths, root: Path, stdin: int = 0, stdout: int = 1,
                 early: Early | None = None) -> None:
        self.paths = paths
        self.root = root
        self.stdin = stdin
        self.stdout = stdout
        self.version = (early.version if early is not None else None) or code_version()
        self.sock: socket.socket | None = None
        self.from_client = bytearray(early.read) if early is not None else bytearray()  # a partial line from the agent
        self.from_daemon = bytearray()  # a partial line from the daemon
        self.to_daemon = bytearray()  # whole lines waiting for the socket
        self.held: list[bytes] = []  # agent lines held back while a replayed initialize is answered
        self.inflight: dict[str, Request] = {}  # id key -> a request sent and not yet answered
        self.hints = ToolHints(paths)  # which tools are safe to call twice
        self.initialize: dict[str, Any] | None = None
        self.initialized: bytes | None = None
        self.replay: str | None = None  # id key of our replayed initialize; its reply is dropped
        self.replay_deadline = 0.0
        self.replays = 0
        self.silent_losses = 0  # daemons lost since the last line a daemon sent
        self.stdin_open = True
        self.drain_deadline = 0.0
        self.head_sent = False  # the first line in to_daemon was partly sent
        # Set when this session's initialize was answered from the daemon's recorded handshake:
        self.cached: handshake_cache.Handshake | None = None
        self.protocol: Any = None  # the protocol version the client asked for
        self.expect_initialize: str | None = None  # the result given (JSON text); the daemon's must equal it
        self.expect_tools: Any = None  # the tools/list result given from the record, until the daemon confirms
        self.tools_check: str | None = None  # id key of our own tools/list asking the daemon for the truth
        self.tools_from_record = False  # may tools/list be answered from the record (no daemon ran at start)
        if early is not None and early.text is not None:  # initialize was answered before this was imported
            self.cached, self.protocol, self.expect_initialize = early.record, early.protocol, early.text
            self.initialize = early.message
            self.replays += 1
            self.replay = _id_key(f"memtree-serve-replay-{os.getpid()}-{self.replays}")  # lines are held from here

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> int:
        sock = try_connect(self.paths.mcp_socket)
        # A daemon that runs answers tools/list in a millisecond, once it has the replayed initialize.
        self.tools_from_record = sock is None
        if self.cached is None and self._answer_from_record() is False:
            if sock is not None:
                sock.close()
            return 0  # the client hung up before asking anything
        try:
            self.sock = connect(self.paths, self.root, self.version,
                                pause=self._pause if self.cached is not None else None, first=sock)
        except DaemonUnavailable as exc:
            if self.cached is not None:
                self._fail_all(str(exc), self.held)
            return self._fail_start(str(exc))
        self.sock.setblocking(False)
        if self.cached is not None:
            self._send_replay(START_TIMEOUT_S)  # a daemon just started answers after the SDK import
        for line in self._lines(self.from_client):  # read while no daemon answered, not answered from the record
            self._from_client(line)
        while True:
            now = time.monotonic()
            if not self.stdin_open and ((not self.to_daemon and not self.inflight) or now > self.drain_deadline):
                return 0
            rlist: list[Any] = [self.sock]
            if self.stdin_open and len(self.to_daemon) < MAX_BUFFER:
                rlist.append(self.stdin)
            wlist = [self.sock] if self.to_daemon else []
            deadlines = ([self.replay_deadline] if self.replay else []) + ([] if self.stdin_open else [self.drain_deadline])
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            readable, writable, _ = select.select(rlist, wlist, [], timeout)
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

    # -- initialize answered from the recorded handshake (handshake_cache) ---------------------------------
    def _answer_from_record(self) -> bool | None:
        """Answer the client's ``initialize`` from the daemon's record when it matches in every way, without
        waiting for a daemon: for a first session none runs yet; for the next ones it does, and the answer
        still saves its round trip (the daemon may be busy with another session's calls).  True: answered
        (the daemon is started if need be, the initialize replayed to it, its answer checked against the one
        given, and everything else held until then); None: the daemon answers it as usual; False: the client
        left without a line."""
        record, why = handshake_cache.load(self.paths.dir, self.version)
        if record is None:
            if why != "no recorded handshake":
                _note(f"waiting for the daemon: {why}")
            return None
        while b"\n" not in self.from_client:
            data = os.read(self.stdin, READ_CHUNK)
            if not data:
                return False
            self.from_client += data
        first = bytes(self.from_client).partition(b"\n")[0]
        msg = handshake_cache.initialize_request(first)
        protocol = msg["params"]["protocolVersion"] if msg is not None else None
        text = record.text(protocol, "initialize")
        if msg is None or text is None:
            return None  # not a handshake the record answers as the daemon would: the daemon answers it
        del self.from_client[:len(first) + 1]
        # The record's text goes out as it is; it is parsed only to be compared with the daemon's answer.
        self.cached, self.protocol, self.expect_initialize = record, protocol, text
        self.initialize = msg
        self.replays += 1
        self.replay = _id_key(f"memtree-serve-replay-{os.getpid()}-{self.replays}")  # lines are held from here
        self._answer(msg["id"], text)
        return True

    def _answer(self, rid: Any, result: str) -> None:
        """Answer request ``rid`` with ``result``, JSON text from the record (ASCII, checked on reading)."""
        self._to_client(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":' + result.encode()
                        + b"}\n")

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

    def _send_replay(self, timeout: float) -> None:
        assert self.initialize is not None and self.replay is not None
        self.replay_deadline = time.monotonic() + timeout
        self.to_daemon += json.dumps(dict(self.initialize, id=json.loads(self.replay))).encode() + b"\n"

    def _from_record(self, msg: dict[str, Any]) -> bool:
        """Answer ``tools/list`` from the record while the daemon is not through its handshake yet."""
        if (self.cached is None or not self.replay or not self.tools_from_record or msg.get("method") != "tools/list"
                or "id" not in msg):
            return False
        params = msg.get("params")
        if isinstance(params, dict) and params.get("cursor") is not None:
            return False  # a page we did not record
        if self.cached.env != handshake_cache.environment_mark():
            return False  # other MEMTREE_* settings may load other plugins, so other tools
        text = self.cached.text(self.protocol, "tools/list")
        result = self.cached.result(self.protocol, "tools/list")
        if text is None or result is None:
            return False
        self.hints.learn(result)
        self.expect_tools = result
        self._answer(msg["id"], text)
        return True

    def _tools_checked(self, msg: dict[str, Any]) -> None:
        """The daemon's own tools/list, asked after a tools/list was answered from the record."""
        self.tools_check = None
        result = msg.get("result")
        self.hints.learn(result)
        if result != self.expect_tools and self.cached is not None:
            _note("the daemon lists other tools than the recorded list this session was given; the record is "
                  "dropped and the client told to list the tools again")
            self.cached.invalidate()
            self._to_client(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
        self.expect_tools = None

    def _read_client(self) -> None:
        data = os.read(self.stdin, READ_CHUNK)
        if not data:
            # The agent hung up.  Answers to requests it already sent are still delivered (a pipe like
            # `printf ... | memtree serve` expects them), within a bound.
            self.stdin_open = False
            self.drain_deadline = time.monotonic() + DRAIN_S
            return
        self.from_client += data
        for line in self._lines(self.from_client):
            self._from_client(line)

    def _from_client(self, line: bytes) -> None:
        msg = _parse(line)
        if isinstance(msg, dict) and self._from_record(msg):
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
                self.inflight[_id_key(msg["id"])] = Request.of(msg, line)
            elif method == "notifications/cancelled" and isinstance(msg.get("params"), dict):
                # A cancelled request may never be answered; do not wait for it.
                self.inflight.pop(_id_key(msg["params"].get("requestId")), None)
        if self.replay:
            self.held.append(line)
        else:
            self.to_daemon += line

    def _read_daemon(self) -> None:
        assert self.sock is not None
        data = self.sock.recv(READ_CHUNK)
        if not data:
            raise ConnectionResetError("the daemon closed the connection")
        self.from_daemon += data
        self.silent_losses = 0
        out = bytearray()
        for line in self._lines(self.from_daemon):
            if self.inflight or self.replay or self.tools_check:
                msg = _parse(line)
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
        assert self.sock is not None
        sent = self.sock.send(self.to_daemon)
        if sent:
            chunk = self.to_daemon[:sent]
            # Is the head of what is left a line the daemon has already seen part of?
            self.head_sent = not chunk.endswith(b"\n") if b"\n" in chunk else True
        del self.to_daemon[:sent]

    def _to_client(self, data: bytes) -> None:
        try:
            _send_all_fd(self.stdout, data)
        except (BrokenPipeError, OSError):
            # The agent is gone; nothing left to serve.
            raise SystemExit(0) from None

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
        unsent = bytes(self.to_daemon)
        if self.head_sent:
            unsent = unsent.partition(b"\n")[2]
        self.to_daemon.clear()
        self.head_sent = False
        carried = []
        for line in unsent.splitlines(keepends=True):
            msg = _parse(line)
            method = msg.get("method") if isinstance(msg, dict) else None
            if method in ("initialize", "notifications/initialized") or (
                    isinstance(msg, dict) and _id_key(msg.get("id")) == self.replay):
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
            if request.method == "initialize":
                # Nothing has run yet for this session: sending initialize again is safe and the agent
                # gets the answer it waits for (no replay of our own then).
                initialize_inflight = True
                resend.insert(0, request.line)
                continue
            why_not = request.unsafe_to_resend(self.hints)
            if why_not is None and request.resends < MAX_RESENDS:
                request.resends += 1
                resend.append(request.line)
                continue
            del self.inflight[key]
            if why_not is None:
                why_not = (f"it was already re-sent {request.resends} time(s) and each time the daemon stopped "
                           f"while handling it")
            errors += json.dumps({"jsonrpc": "2.0", "id": request.id, "error": {
                "code": DAEMON_LOST,
                "message": f"the memtree daemon stopped while handling {request.describe()} ({why}); the "
                           f"request was not re-sent because {why_not}, so it may or may not have taken effect. "
                           f"The daemon has been restarted: check, then retry the call if it is safe. "
                           f"Log: {self.paths.log}"}}).encode() + b"\n"
        if errors:
            self._to_client(bytes(errors))
        pending = resend + self.held
        self.held = []
        self.replay = None
        self.silent_losses += 1
        if self.silent_losses >= MAX_SILENT_LOSSES:
            self._fail_all(f"the memtree daemon exited {self.silent_losses} times in a row without answering; "
                           f"see {self.paths.log}" + _tail(self.paths), pending)
            return
        for attempt in range(3):  # a SIGKILLed daemon can reset the first reconnect
            try:
                self.sock = connect(self.paths, self.root, self.version, check_version=False)
                break
            except DaemonUnavailable as exc:
                if attempt == 2 or exc.crashed:
                    self._fail_all(str(exc), pending)
                    return
        assert self.sock is not None
        self.sock.setblocking(False)
        if self.initialize is not None and not initialize_inflight:
            self.replays += 1
            replay = dict(self.initialize, id=f"memtree-serve-replay-{os.getpid()}-{self.replays}")
            self.replay = _id_key(replay["id"])
            self.replay_deadline = time.monotonic() + REPLAY_TIMEOUT_S
            self.to_daemon += json.dumps(replay).encode() + b"\n"
            self.held = pending
        else:
            for line in pending:
                self.to_daemon += line

    def _replayed(self, msg: dict[str, Any]) -> None:
        """The (re)started daemon answered our initialize: finish the handshake and release held lines."""
        self.replay = None
        if self.expect_initialize is not None:
            if msg.get("result") != json.loads(self.expect_initialize) and self.cached is not None:
                _note(f"the daemon answered initialize otherwise than the recorded answer this session was given "
                      f"(recorded {self.expect_initialize[:300]}, daemon {json.dumps(msg)[:300]}); "
                      f"the record is dropped")
                self.cached.invalidate()
            self.expect_initialize = None
        if self.initialized is not None:
            self.to_daemon += self.initialized
        for line in self.held:
            self.to_daemon += line
        self.held = []
        if self.expect_tools is not None and self.tools_check is None:
            # The client has the recorded tools: check them against the daemon's (plugins or config may differ).
            check_id = f"memtree-serve-tools-{os.getpid()}"
            self.tools_check = _id_key(check_id)
            self.to_daemon += json.dumps({"jsonrpc": "2.0", "id": check_id, "method": "tools/list"}).encode() + b"\n"

    def _fail_all(self, why: str, pending: list[bytes]) -> None:
        """No daemon could be restarted: answer every request with the reason, then stop."""
        _note(why)
        out = bytearray()
        for line in pending:
            msg = _parse(line)
            if isinstance(msg, dict) and "id" in msg and "method" in msg:
                out += _error_line(msg["id"], why)
        if out:
            self._to_client(bytes(out))
        raise SystemExit(1)

    def _fail_start(self, why: str) -> int:
        """The daemon cannot start: say why on stderr and answer the agent's first request with it."""
        _note(why)
        buf = self.from_client  # what was read already (memtree_core.early_answer)
        while True:
            for line in self._lines(buf):
                msg = _parse(line)
                if isinstance(msg, dict) and "id" in msg and "method" in msg:
                    self._to_client(_error_line(msg["id"], why))
                    return 1
            data = os.read(self.stdin, READ_CHUNK)
            if not data:
                return 1
            buf += data


def _error_line(rid: Any, why: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid,
                       "error": {"code": DAEMON_LOST, "message": f"memtree is unavailable: {why}"}}).encode() + b"\n"


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter recurses
        return None  # not ours to judge: the daemon answers it with a parse error


def main(project: str | None, early: Early | None = None) -> int:
    """Serve ``project``; ``early``: what :func:`memtree_core.early_answer.answer` did before this module was
    imported (``memtree serve`` runs it first)."""
    if early is not None and early.gone:
        return 0  # the agent left before asking anything
    home = memtree_home()
    if early is not None and early.identity is not None:
        project_hash, root = early.identity[0], Path(early.identity[1])
    else:
        identity = identify_remembered(project_dir(project), home)
        project_hash, root = identity.hash, identity.root
    paths = ProjectPaths.for_hash(home, project_hash)
    try:
        paths.ensure()
    except UnsafeSocketDir as exc:
        return Forwarder(paths, root, early=early)._fail_start(str(exc))
    except OSError as exc:  # e.g. MEMTREE_HOME not writable: one line, never a traceback
        where = exc.filename or paths.dir
        return Forwarder(paths, root, early=early)._fail_start(f"cannot prepare {where}: {exc.strerror or exc}")
    try:
        return Forwarder(paths, root, early=early).run()
    except KeyboardInterrupt:
        return 130
