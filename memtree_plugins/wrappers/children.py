"""The processes the wrapped tools start, and how to end all of them (resource bounds).

Every tool subprocess (the bash tool's shell, ripgrep) runs in its own process group and carries a marker
in its environment, ``MEMTREE_CHILD=<daemon pid>:<call token>``.  Its descendants inherit the marker even
when they leave the group (``cmd &`` then the shell exits, ``setsid``, a double fork), so at a timeout one
pass over ``/proc/*/environ`` of this user's processes finds every one of them; :func:`end_call` kills the
group and those.  :func:`end_all` does the same for every call of this daemon when it stops (the plugin's
``memtree_daemon_stopping`` hook).

What cannot be found or ended is reported, never hidden: a process that cleared its environment before
``exec`` (``env -i``), one that ignores SIGKILL while stuck in the kernel (``D`` state), one of another user
(a setuid program).  Without ``/proc`` (macOS) only the process group is ended, and the result says so.
"""

from __future__ import annotations

import os
import secrets
import signal
import threading
import time
from dataclasses import dataclass, field

from memtree_core.errors import Stopping

MARKER_ENV = "MEMTREE_CHILD"
PROC = "/proc"
REAP_WAIT_S = 0.5  # how long a SIGKILLed process is given to disappear before it is reported as surviving

_lock = threading.Lock()
_groups: dict[str, int] = {}  # call token -> process group id, while the call runs
# Set by end_all: the daemon is stopping.  A call queued behind the pool's busy threads would otherwise start
# its command after the sweep, and the daemon's exit would wait for it.
_closing = False


def new_call() -> tuple[str, dict[str, str]]:
    """A fresh call token and the environment entry that tags the call's processes."""
    if _closing:
        raise Stopping("the memtree daemon is stopping; the command was not run (call again in a moment)")
    token = f"{os.getpid()}:{secrets.token_hex(8)}"
    return token, {MARKER_ENV: token}


def register(token: str, pgid: int) -> None:
    with _lock:
        if not _closing:
            _groups[token] = pgid
            return
    _kill_group(pgid)  # started in the moment the daemon began to stop: it must not outlive the sweep


def unregister(token: str) -> None:
    with _lock:
        _groups.pop(token, None)


@dataclass
class Ended:
    """What a sweep did: pids killed, pids that outlived SIGKILL or could not be signalled, and notes."""

    killed: list[int] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str | None:
        """One line for a tool result, or None when there is nothing to say."""
        if not self.survivors and not self.notes:
            return None
        parts = []
        if self.survivors:
            shown = ", ".join(map(str, self.survivors[:3])) + (", …" if len(self.survivors) > 3 else "")
            parts.append(f"{len(self.survivors)} process(es) the command started could not be ended "
                         f"(pid {shown}); kill them yourself")
        return "; ".join(parts + self.notes)


def _tagged(prefix: bytes) -> tuple[list[int], bool]:
    """Pids of this user's processes whose environment holds ``MEMTREE_CHILD=<prefix>...``; and whether
    ``/proc`` could be read at all.  One directory listing, one ``environ`` read per same-user process."""
    me, uid = os.getpid(), os.getuid()
    needle = f"{MARKER_ENV}=".encode() + prefix
    try:
        names = os.listdir(PROC)
    except OSError:
        return [], False
    found = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat(f"{PROC}/{name}").st_uid != uid:
                continue
            with open(f"{PROC}/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        # Entries are NUL-separated; the marker must start an entry, not sit inside another value.
        if env.startswith(needle) or b"\x00" + needle in env:
            found.append(int(name))
    return found, True


def _gone(pid: int) -> bool:
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] == b"Z"  # dead, waiting for its parent to reap it
    except (OSError, IndexError):
        return True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _sweep(prefix: str, groups: list[int]) -> Ended:
    ended = Ended()
    for pgid in groups:
        _kill_group(pgid)
    pids, have_proc = _tagged(prefix.encode())
    if not have_proc:
        ended.notes.append("no /proc here: only the command's process group was ended; background processes "
                           "that left it may still run")
        return ended
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            ended.killed.append(pid)
        except ProcessLookupError:
            pass
        except PermissionError:
            ended.survivors.append(pid)
    deadline = time.monotonic() + REAP_WAIT_S
    waiting = list(ended.killed)
    while waiting and time.monotonic() < deadline:
        waiting = [p for p in waiting if not _gone(p)]
        if waiting:
            time.sleep(0.01)
    ended.survivors += waiting
    return ended


def end_call(token: str, pgid: int) -> Ended:
    """Kill the call's process group and every process tagged with its token (one ``/proc`` pass)."""
    return _sweep(token + "\x00", [pgid])


def end_all() -> Ended:
    """Kill every process any call of this daemon started (daemon shutdown), in one pass."""
    global _closing
    with _lock:
        _closing = True
        groups = list(_groups.values())
    return _sweep(f"{os.getpid()}:", groups)
