"""The daemon's single-instance lock and the state file it writes.

``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``daemon.lock``: the holder is the one daemon of the project.  The
kernel drops the lock when the process dies (even on SIGKILL), so a stale lock can never block a restart.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from memtree_core import private_json
from memtree_core.project import ProjectPaths

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any


def try_lock(path: Path) -> int | None:
    """Take the lock; return its fd (keep it open for the process's life) or None if another holds it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def is_locked(path: Path) -> bool:
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops our shared lock
    return False


def read_state(paths: ProjectPaths) -> dict[str, Any]:
    try:
        value = json.loads(paths.state.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_state(paths: ProjectPaths, state: dict[str, Any]) -> None:
    private_json.write(str(paths.state), state)


def daemon_status(paths: ProjectPaths) -> dict[str, Any]:
    """``{"running": bool, "pid": int | None, ...}`` from the lock (truth) and the state file (details)."""
    running = is_locked(paths.lock)
    state = read_state(paths) if running else {}
    return {"running": running, "pid": state.get("pid") if running else None,
            "version": state.get("version") if running else None}
