"""Starting, finding and stopping a project's daemon from the outside.  Stdlib only: ``memtree serve`` and
``memtree stop`` use this and must start fast.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memtree_core.lockfile import is_locked, read_state
from memtree_core.project import ProjectPaths

# A log above this size is moved to daemon.log.1 when a new daemon is started.
LOG_ROTATE_BYTES = 5_000_000
_PACKAGES = ("memtree_core", "memtree_plugins")


def code_version() -> str:
    """``<__version__>+<hash>`` of what pip installed: the packages' ``__init__`` files and memtree's
    ``.dist-info`` (both rewritten by every install, upgrade or ``pip install -e .``), so a forwarder can tell
    that the running daemon came from an older install.

    Ordinary edits in an editable checkout do not count on purpose: several sessions would otherwise restart
    the shared daemon at every saved file.  After editing memtree itself, run ``memtree stop``.
    """
    from memtree_core import __version__

    digest = hashlib.sha256()
    base = Path(__file__).resolve().parent.parent.parent
    marks = [base / package / "__init__.py" for package in _PACKAGES]
    for entry in dict.fromkeys([str(base), *filter(None, sys.path)]):
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        marks += [Path(entry, n, "RECORD") for n in names if n.startswith("memtree-") and n.endswith(".dist-info")]
    for mark in marks:
        try:
            st = os.stat(mark)
        except OSError:
            continue
        digest.update(f"{mark}:{st.st_mtime_ns}:{st.st_size}\n".encode())
    return f"{__version__}+{digest.hexdigest()[:12]}"


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
    """Wait until the lock is free and ``pid`` has exited (it releases the lock just before it exits)."""
    deadline = time.monotonic() + timeout
    while is_locked(paths.lock) or pid_alive(pid):
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
    """Start ``memtree daemon`` for ``root`` detached from this process (own session, no terminal), its
    stderr going to the log.  If another daemon wins the lock, this one exits 0 at once."""
    log_fd = open_log(paths)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "memtree_core.cli", "daemon", "--project", str(root),
             "--project-hash", paths.dir.name],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_fd,
            start_new_session=True, close_fds=True, cwd=str(root))
    finally:
        os.close(log_fd)


def log_tail(paths: ProjectPaths, lines: int = 5) -> str:
    try:
        with open(paths.log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
