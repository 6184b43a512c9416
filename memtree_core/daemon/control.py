"""Starting, finding and stopping a project's daemon from the outside.  Stdlib only: ``memtree serve`` and
``memtree stop`` use this and must start fast.
"""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path

from memtree_core.daemon.version import code_version  # noqa: F401  (re-exported: the forwarder asks here)
from memtree_core.lockfile import is_locked, read_state
from memtree_core.project import ProjectPaths

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:  # subprocess is imported where used: the forwarder starts without it (fork_daemon needs none)
    import subprocess
    from typing import Any, NoReturn

# A log above this size is moved to daemon.log.1 when a new daemon is started.
LOG_ROTATE_BYTES = 5_000_000


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (dead, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # the state letter follows the parenthesised command name, which may itself hold spaces
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): trust kill(0)


def lock_holder(paths: ProjectPaths) -> int | None:
    """The pid holding the daemon lock, from the kernel's own table (Linux), or None when unknown."""
    try:
        st = os.stat(paths.lock)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (blocked waiters carry a "->" marker)
        if "->" not in parts and len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == dev:
            return int(parts[4])
    return None


def running_daemon(paths: ProjectPaths) -> dict[str, Any] | None:
    """The running daemon's state file, verified: the lock is held and its pid is the state's pid."""
    if not is_locked(paths.lock):
        return None
    state = read_state(paths)
    pid = state.get("pid")
    if not isinstance(pid, int) or not pid_alive(pid):
        return None
    holder = lock_holder(paths)
    if holder is not None and holder != pid:
        return None  # a state file left by another process; never signal a pid we cannot vouch for
    return state


def wait_gone(paths: ProjectPaths, pid: int, timeout: float) -> bool:
    """Wait until ``pid`` has exited: its lock went with it.  Not until the lock is free: a session's
    forwarder may already have started the next daemon, which holds it (memtree stop then waited in vain)."""
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def stop(paths: ProjectPaths, timeout: float = 10.0, force: bool = False) -> dict[str, Any]:
    """SIGTERM the project's daemon and wait until it has released its lock.

    Returns ``{"stopped": bool, "pid": int | None, "reason": str}``; with ``force`` a daemon that does not
    exit within ``timeout`` gets SIGKILL (the kernel drops its lock; its socket files are replaced by the
    next daemon).
    """
    import signal  # here: signal.py builds its enums at import, and most forwarders never stop a daemon

    state = running_daemon(paths)
    if state is None:
        if is_locked(paths.lock):
            return {"stopped": False, "pid": None,
                    "reason": f"a daemon holds {paths.lock} but its state file names no live pid it owns; "
                              f"it may still be starting, try again"}
        return {"stopped": False, "pid": None, "reason": "no daemon running"}
    pid = int(state["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return {"stopped": True, "pid": pid, "reason": "it had already exited"}
    if wait_gone(paths, pid, timeout):
        return {"stopped": True, "pid": pid, "reason": "stopped"}
    if force:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if wait_gone(paths, pid, 5.0):
            return {"stopped": True, "pid": pid, "reason": f"killed (no exit within {timeout:g}s of SIGTERM)"}
    return {"stopped": False, "pid": pid,
            "reason": f"pid {pid} did not exit within {timeout:g}s of SIGTERM; see {paths.log}, "
                      f"or kill -9 {pid}"}


def open_log(paths: ProjectPaths) -> int:
    """The daemon log, 0600, append-only; rotated once when it has grown large."""
    paths.ensure()
    try:
        if paths.log.stat().st_size > LOG_ROTATE_BYTES:
            paths.log.replace(paths.log.with_suffix(".log.1"))
    except FileNotFoundError:
        pass
    fd = os.open(paths.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def spawn(paths: ProjectPaths, root: Path | str) -> subprocess.Popen[bytes]:
    """Start ``memtree daemon`` for ``root`` as a new interpreter, detached from this process (own session,
    no terminal), its stderr going to the log.  If another daemon wins the lock, this one exits 0 at once.

    :func:`start_daemon` prefers :func:`fork_daemon`, which skips this second interpreter start."""
    import subprocess

    log_fd = open_log(paths)
    try:
        return subprocess.Popen(
            # -P: the working directory is the project's; none of its files may shadow a module of ours
            [sys.executable, "-P", "-m", "memtree_core.cli", "daemon", "--project", str(root),
             "--project-hash", paths.dir.name],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_fd,
            start_new_session=True, close_fds=True, cwd=str(root))
    finally:
        os.close(log_fd)


# Set this (to anything but "" or "0") to start the daemon with spawn() even where fork_daemon() would do:
# a way out should forking ever misbehave somewhere, and the "before" figure of eval/bench/startup.py.
EXEC_ENV = "MEMTREE_DAEMON_EXEC"
DAEMON_PROCESS_NAME = "memtree-daemon"  # what ps -o comm, top and pgrep show for a forked daemon


def start_daemon(paths: ProjectPaths, root: Path | str) -> subprocess.Popen[bytes] | ForkedDaemon:
    """Start the project's daemon detached; the result's ``poll()`` is None while it runs."""
    threads = sys.modules.get("threading")
    # fork() copies only the calling thread: a process with other threads (one embedding the forwarder, say)
    # could hand the child a lock some other thread held.  The forwarder itself never starts a thread.
    single_threaded = threads is None or threads.active_count() == 1
    if hasattr(os, "fork") and single_threaded and os.environ.get(EXEC_ENV, "") in ("", "0"):
        return fork_daemon(paths, root)
    return spawn(paths, root)


class ForkedDaemon:
    """A daemon started by :func:`fork_daemon`, seen through its status pipe: it writes ``R`` once its
    sockets and state file are in place and ``X<status>`` as it exits.  Like a ``Popen``, ``poll()`` is None
    while it runs, else its exit status (-1: it was killed before it could say)."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        self.ready = False
        self.returncode: int | None = None
        self._said = b""

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
        assert self.fd is not None
        data = os.read(self.fd, 64)
        self._said += data
        self.ready = self.ready or b"R" in self._said
        if not data:  # every copy of the write end is closed: the daemon has exited
            status = self._said.partition(b"X")[2]
            self.returncode = int(status) if status.lstrip(b"-").isdigit() else -1
            self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self) -> None:
        self.close()


def fork_daemon(paths: ProjectPaths, root: Path | str) -> ForkedDaemon:
    """Start the daemon as a fork of this process: no second interpreter start, and the modules this process
    has imported already are the daemon's too (the cold start of the first session, DESIGN.md §7).

    Double fork: the daemon runs in its own session, reparented away from this process (the forwarder
    exits with its agent session; the daemon outlives it).  Its stdin/stdout are /dev/null -- never the
    agent's pipes, or the agent would wait for their EOF until the daemon exits -- its stderr the log, and no
    other descriptor of ours stays open in it but its status pipe."""
    log_fd = open_log(paths)
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
            if os.fork() != 0:
                os._exit(0)
            _daemon_child(str(root), paths.dir.name, log_fd, write_end)
        except BaseException:
            _report_crash(log_fd, write_end)
        os._exit(1)
    os.close(write_end)
    os.close(log_fd)
    try:
        os.waitpid(pid, 0)  # the intermediate child exits at once
    except ChildProcessError:
        pass  # SIGCHLD ignored (inherited from whoever started us): the kernel reaped it
    return ForkedDaemon(read_end)


def _report_crash(log_fd: int, status_fd: int) -> None:
    import traceback

    try:
        os.write(log_fd, traceback.format_exc().encode("utf-8", "replace"))
        os.write(status_fd, b"X1")
    except OSError:
        pass


def _above_stdio(fd: int) -> int:
    import fcntl

    return fd if fd > 2 else fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)  # close-on-exec, as os.pipe() makes them


def _daemon_child(root: str, project_hash: str, log_fd: int, status_fd: int) -> NoReturn:
    """The daemon's side of :func:`fork_daemon`: detach from everything of the forwarder's, run, exit."""
    import atexit

    status = 1
    try:
        # stdin/stdout/stderr may have been closed by whoever started the forwarder: keep ours off 0-2.
        log_fd, status_fd = _above_stdio(log_fd), _above_stdio(status_fd)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, status_fd)  # as close_fds=True would: the log, null, the agent's fds, sockets
        os.closerange(status_fd + 1, _max_fd())
        os.chdir(root)
        atexit._clear()  # the forwarder's exit handlers are not the daemon's
        try:
            with open("/proc/self/comm", "w") as f:  # Linux; ps/top/pgrep name it (argv stays "memtree serve")
                f.write(DAEMON_PROCESS_NAME)
        except OSError:
            pass
        from memtree_core.daemon.main import run

        status = run(root, project_hash, on_ready=lambda: _say(status_fd, b"R"))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _finish(status, status_fd)


THREADS_GRACE_S = 5.0  # all of the daemon's remaining threads together, at exit
EXIT_HANDLERS_S = 5.0  # then the exit handlers, before the process ends regardless


def join_threads(total_s: float) -> bool:
    """Wait for the other non-daemon threads within ``total_s`` overall (not per thread): tool calls
    abandoned at stop (their processes ended, pure-Python work still finishing) must not hold the exit for
    minutes.  True when none is left."""
    import threading

    deadline = time.monotonic() + total_s
    for t in threading.enumerate():
        if t is not threading.current_thread() and not t.daemon:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() and not t.daemon and t is not threading.current_thread()
                   for t in threading.enumerate())


def _finish(status: int, status_fd: int) -> NoReturn:
    """What interpreter shutdown does, in a child that must not return into the forwarder's frames."""
    import atexit
    import threading

    # Whatever is still running, the process ends: `memtree stop` waits for this pid, and a thread stuck in
    # a tool call or an exit handler waiting on one must not hold it.
    watchdog = threading.Timer(THREADS_GRACE_S + EXIT_HANDLERS_S, os._exit, (status,))
    watchdog.daemon = True
    watchdog.start()
    try:
        if join_threads(THREADS_GRACE_S):
            atexit._run_exitfuncs()  # only with no thread left that a handler could wait on
        else:  # said in the daemon log (stderr), so what held the exit can be found
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
        return max(256, int(os.sysconf("SC_OPEN_MAX")))  # Linux closes the range in one syscall
    except (OSError, ValueError):
        return 1 << 16


def log_tail(paths: ProjectPaths, lines: int = 5) -> str:
    try:
        with open(paths.log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
