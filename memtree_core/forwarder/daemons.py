"""Finding, starting and stopping a project's daemon from the outside (``memtree serve``, ``memtree stop``).

A daemon starts detached: as a fork of the forwarder running what the host hands :func:`start_daemon` (no
second interpreter start), else (``MEMTREE_DAEMON_EXEC=1``, or other threads a fork would copy half of) as
``python -m memtree_core.cli daemon``.
"""

from __future__ import annotations

import os
import select
import sys
import time

from memtree_core.forwarder.paths import ProjectPaths, is_locked, read_state

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    import subprocess  # imported where used: a fork needs none
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    DaemonEntry = Callable[[str, str, int, int], None]  # (root, project hash, log fd, status fd); never returns

EXEC_ENV = "MEMTREE_DAEMON_EXEC"


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie counts as gone."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat", "rb") as f:  # the state letter follows the parenthesised name
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except ProcessLookupError:
        return False
    except (OSError, IndexError):  # PermissionError from kill: alive; no /proc (macOS): trust kill(0)
        return True


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


def kill(pid: int, sig: int, wait: float) -> bool:
    """Send ``sig`` to ``pid``; True once it has exited, within ``wait`` seconds."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + wait
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not pid_alive(pid)


def log_tail(paths: ProjectPaths, lines: int = 5) -> str:
    try:
        with open(paths.log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return ""


def start_daemon(paths: ProjectPaths, root: Path | str, entry: DaemonEntry | None = None
                 ) -> subprocess.Popen[bytes] | ForkedDaemon:
    """Start the project's daemon detached, its stderr the log (0600; rotated once past 5 MB); the result's
    ``poll()`` is None while it runs.  If another daemon wins the lock, this one exits 0 at once."""
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
