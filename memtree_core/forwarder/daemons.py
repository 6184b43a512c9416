"""A project's daemon seen from the outside: alive, signalled, its log's last lines; starting one is the
host's (:func:`memtree_core.daemon.control.start_daemon`).
"""

from __future__ import annotations

import os
import time

from memtree_core.forwarder.paths import ProjectPaths


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


def see_log(paths: ProjectPaths) -> str:
    """"see <the log>", with its last lines."""
    try:
        with open(paths.log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            tail = "\n".join(f.read().decode("utf-8", "replace").splitlines()[-5:])
    except OSError:
        tail = ""
    return f"see {paths.log}" + (f"\nlast lines of the log:\n{tail}" if tail else "")
