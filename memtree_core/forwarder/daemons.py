"""A project's running daemon seen from the outside: found (and verified) from its lock and state file,
signalled, its log's last lines; starting one is the host's (:func:`memtree_core.daemon.control.start_daemon`).
"""

from __future__ import annotations

import os
import time

from memtree_core.forwarder.paths import ProjectPaths, is_locked, read_state

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any


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
