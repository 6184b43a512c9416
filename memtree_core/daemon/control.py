"""The daemon's side of the process model: its lock, state file and sockets; how ``memtree serve`` starts a
daemon (:func:`start_daemon`: forked, or a new interpreter) and how a forked one detaches, runs and exits;
``memtree stop``.  What the forwarder sees from the outside is in :mod:`memtree_core.forwarder.daemons`.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import subprocess

from memtree_core.daemon.project import write_json
from memtree_core.forwarder.daemons import kill, pid_alive
from memtree_core.forwarder.paths import ProjectPaths, is_locked, read_state

DAEMON_PROCESS_NAME = "memtree-daemon"  # what ps -o comm, top and pgrep show for a forked daemon
EXEC_ENV = "MEMTREE_DAEMON_EXEC"
DaemonEntry = Callable[[str, str, int, int], None]  # (root, project hash, log fd, status fd); never returns
THREADS_GRACE_S = 5.0  # all of the daemon's remaining threads together, at exit
EXIT_HANDLERS_S = 5.0  # then the exit handlers, before the process ends regardless


def try_lock(path: Path) -> int | None:
    """Take the daemon lock; return its fd (keep it open for the process's life) or None if another holds it."""
    import fcntl

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def write_state(paths: ProjectPaths, state: dict[str, Any]) -> None:
    write_json(str(paths.state), state)


def running_daemon(paths: ProjectPaths) -> dict[str, Any] | None:
    """The running daemon's state file, verified: the lock is held, by the state's live pid as far as the
    kernel's lock table says (Linux): never signal a pid we cannot vouch for."""
    state = read_state(paths) if is_locked(paths.lock) else {}
    pid = state.get("pid")
    if not isinstance(pid, int) or not pid_alive(pid):
        return None
    try:
        st = os.stat(paths.lock)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return state
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for parts in map(str.split, lines):  # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; waiters: "->"
        if "->" not in parts and len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == dev:
            return state if int(parts[4]) == pid else None
    return state


def stop(paths: ProjectPaths, timeout: float = 10.0, force: bool = False) -> dict[str, Any]:
    """SIGTERM the project's daemon and wait for it to exit (not for the lock: a new daemon may hold it);
    ``force``: SIGKILL it after ``timeout``.  ``{"stopped": bool, "pid": int | None, "reason": str}``."""
    import signal

    state = running_daemon(paths)
    if state is None:
        return {"stopped": False, "pid": None, "reason": f"a daemon holds {paths.lock} but its state file names no "
                f"live pid it owns; it may still be starting, try again" if is_locked(paths.lock) else "no daemon running"}
    pid = int(state["pid"])
    if kill(pid, signal.SIGTERM, timeout):
        return {"stopped": True, "pid": pid, "reason": "stopped"}
    if force and kill(pid, signal.SIGKILL, 5.0):
        return {"stopped": True, "pid": pid, "reason": f"killed (no exit within {timeout:g}s of SIGTERM)"}
    return {"stopped": False, "pid": pid,
            "reason": f"pid {pid} did not exit within {timeout:g}s of SIGTERM; see {paths.log}, or kill -9 {pid}"}


def daemon_status(paths: ProjectPaths) -> dict[str, Any]:
    """``{"running": bool, "pid": int | None, "version": ...}`` from the lock (truth) and the state file."""
    running = is_locked(paths.lock)
    state = read_state(paths) if running else {}
    return {"running": running, "pid": state.get("pid"), "version": state.get("version")}


def bind_private(path: Path) -> Any:
    """A Unix socket listening at ``path``, 0600 from its first instant.  Only the lock's holder binds, so a
    file already there is a stale one left by a killed daemon."""
    import socket

    path.unlink(missing_ok=True)
    old = os.umask(0o177)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
        except OSError:
            sock.close()
            raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def run_forked(run: Callable[..., int], root: str, project_hash: str, log_fd: int, status_fd: int) -> NoReturn:
    """The daemon (``run``: :func:`memtree_core.daemon.main.run`, passed in so this module never imports the
    one that imports it) in a fork of ``memtree serve``: detach from everything of the forwarder's, run, exit."""
    import atexit
    import fcntl

    status = 1
    try:
        # stdin/stdout/stderr may have been closed by whoever started the forwarder: keep ours off 0-2.
        log_fd, status_fd = (fd if fd > 2 else fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (log_fd, status_fd))
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)  # never the agent's pipes: it would wait for their EOF until the daemon exits
        os.dup2(log_fd, 2)
        os.closerange(3, status_fd)  # as close_fds=True would: the log, null, the agent's fds, sockets
        os.closerange(status_fd + 1, _max_fd())
        os.chdir(root)
        atexit._clear()  # the forwarder's exit handlers are not the daemon's
        try:
            with open("/proc/self/comm", "w") as f:  # Linux; argv stays "memtree serve"
                f.write(DAEMON_PROCESS_NAME)
        except OSError:
            pass
        status = run(root, project_hash, on_ready=lambda: _say(status_fd, b"R"))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _finish(status, status_fd)


def join_threads(total_s: float) -> bool:
    """Wait for the other non-daemon threads within ``total_s`` overall: tool calls abandoned at stop must
    not hold the exit for minutes.  True when none is left."""
    import threading

    def others() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]

    deadline = time.monotonic() + total_s
    for t in others():
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() for t in others())


def _finish(status: int, status_fd: int) -> NoReturn:
    """What interpreter shutdown does, in a child that must not return into the forwarder's frames."""
    import atexit
    import threading

    # Whatever still runs, the process ends: `memtree stop` waits for this pid.
    watchdog = threading.Timer(THREADS_GRACE_S + EXIT_HANDLERS_S, os._exit, (status,))
    watchdog.daemon = True
    watchdog.start()
    try:
        if join_threads(THREADS_GRACE_S):
            atexit._run_exitfuncs()  # only with no thread left that a handler could wait on
        else:
            left = [t.name for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
            sys.stderr.write(f"daemon exit: {len(left)} thread(s) still running, not waited for: "
                             f"{', '.join(left[:10])}\n")
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException:
        pass
    _say(status_fd, b"X%d" % status)
    os._exit(status)


def _say(fd: int, what: bytes) -> None:
    try:
        os.write(fd, what)
    except OSError:
        pass  # the forwarder has stopped listening (it only does while it waits for us to start)


def _max_fd() -> int:
    try:
        return max(256, int(os.sysconf("SC_OPEN_MAX")))
    except (OSError, ValueError):
        return 1 << 16


def start_daemon(paths: ProjectPaths, root: Path | str, entry: DaemonEntry | None = None
                 ) -> subprocess.Popen[bytes] | ForkedDaemon:
    """Start the project's daemon detached, its stderr the log (0600; rotated once past 5 MB): a fork running
    ``entry`` (no second interpreter start), else (``MEMTREE_DAEMON_EXEC=1``, or other threads a fork would copy
    half of) ``python -m memtree_core.cli daemon``.  The result's ``poll()`` is None while it runs; if another
    daemon wins the lock, this one exits 0 at once."""
    paths.ensure()
    try:
        if paths.log.stat().st_size > 5_000_000:
            paths.log.replace(paths.log.with_suffix(".log.1"))
    except FileNotFoundError:
        pass
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(log_fd, 0o600)
    threads = sys.modules.get("threading")
    if entry is not None and (threads is None or threads.active_count() == 1) and os.environ.get(EXEC_ENV, "") in ("", "0"):
        return ForkedDaemon(_fork(str(root), paths.dir.name, log_fd, entry))
    import subprocess

    try:  # -P: the project's files in the working directory may not shadow a module of ours
        return subprocess.Popen([sys.executable, "-P", "-m", "memtree_core.cli", "daemon", "--project", str(root),
                                 "--project-hash", paths.dir.name], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log_fd, start_new_session=True, cwd=str(root))
    finally:
        os.close(log_fd)


def _fork(root: str, project_hash: str, log_fd: int, entry: DaemonEntry) -> int:
    """Double fork: ``entry`` runs in its own session, reparented away from the forwarder (which exits with
    its agent session).  Returns the read end of its status pipe."""
    read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # anything buffered would be written twice
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        pid = os.fork()
    except OSError:
        for fd in (log_fd, read_end, write_end):
            os.close(fd)
        raise
    if pid == 0:  # the intermediate child: never returns
        try:
            os.close(read_end)
            os.setsid()  # no controlling terminal, no signals meant for the agent's process group
            if os.fork() == 0:
                entry(root, project_hash, log_fd, write_end)
            os._exit(0)
        except BaseException:
            import traceback

            try:
                os.write(log_fd, traceback.format_exc().encode("utf-8", "replace"))
                os.write(write_end, b"X1")
            finally:
                os._exit(1)
    os.close(write_end)
    os.close(log_fd)
    try:
        os.waitpid(pid, 0)  # the intermediate child exits at once
    except ChildProcessError:
        pass  # SIGCHLD ignored by whoever started us: the kernel reaped it
    return read_end


class ForkedDaemon:
    """A forked daemon seen through its status pipe: it writes ``R`` once its sockets and state file are in
    place and ``X<status>`` as it exits.  Like a ``Popen``, ``poll()`` is None while it runs, else its exit
    status (-1: killed before it could say)."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        self.ready, self.returncode, self._said = False, None, b""

    def poll(self) -> int | None:
        while self.fd is not None and select.select([self.fd], [], [], 0)[0]:
            self._read()
        return self.returncode

    def wait(self, timeout: float) -> None:
        """Sleep until the daemon says something (ready, or exited) or ``timeout`` passes."""
        if self.fd is None:
            time.sleep(timeout)
        elif select.select([self.fd], [], [], timeout)[0]:
            self._read()

    def _read(self) -> None:
        data = os.read(self.fd, 64)  # type: ignore[arg-type]
        self._said += data
        self.ready = self.ready or b"R" in self._said
        if not data:  # every write end is closed: the daemon has exited
            status = self._said.partition(b"X")[2]
            self.returncode = int(status) if status.lstrip(b"-").isdigit() else -1
            self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    __del__ = close
