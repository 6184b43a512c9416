"""Run a shell command as a real subprocess in its own process group, keeping a bounded head and tail.

Output is read as it arrives from both pipes; each stream keeps its first ``keep`` bytes and a sliding
last ``keep`` bytes and counts the rest, so a command printing 100 MB costs at most ~4 x ``keep`` bytes
of memory.  On timeout the whole group gets SIGTERM, then after a short grace SIGKILL goes to the group and to every
process the command started that left it (``cmd &``, ``setsid``, a double fork: found by the marker
:mod:`memtree_plugins.wrappers.children` puts in their environment); what was read so far is kept, and what could not
be ended is reported.  After the shell exits normally, a background child still holding the pipes open is
given ``DRAIN_S`` seconds, then left alone (its output past that point is not captured).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from memtree_plugins.wrappers import children

KILL_GRACE_S = 2.0
DRAIN_S = 1.0
_READ = 65536


@dataclass
class HeadTail:
    """First ``keep`` bytes, last ``keep`` bytes, and the total seen."""

    keep: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.keep:
                del self.tail[: len(self.tail) - self.keep]

    def parts(self) -> tuple[bytes, bytes, int]:
        """(head, tail, bytes omitted between them)."""
        tail = bytes(self.tail[-self.keep:]) if self.tail else b""
        return bytes(self.head), tail, self.total - len(self.head) - len(tail)


@dataclass
class Outcome:
    stdout: HeadTail
    stderr: HeadTail
    returncode: int | None
    timed_out: bool
    duration_ms: int
    left_running: bool  # a background child still held the pipes after the shell exited
    not_ended: str | None = None  # on timeout: what the kill sweep could not end, in one line


def shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(command: str, cwd: str, timeout: float, keep: int, env: dict[str, str] | None = None) -> Outcome:
    start = time.monotonic()
    token, marker = children.new_call()
    proc = subprocess.Popen([shell(), "-c", command], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**(os.environ if env is None else env), **marker})
    children.register(token, proc.pid)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = HeadTail(keep), HeadTail(keep)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout.fileno(), selectors.EVENT_READ, out)
    sel.register(proc.stderr.fileno(), selectors.EVENT_READ, err)
    deadline = start + timeout
    timed_out = False
    kill_at: float | None = None
    exited_at: float | None = None
    left_running = False
    swept: children.Ended | None = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                _signal_group(proc.pid, signal.SIGTERM)
                kill_at = now + KILL_GRACE_S
            if kill_at is not None and now >= kill_at:
                swept = children.end_call(token, proc.pid)  # the group and every escaped child, one pass
                kill_at = None
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_S:
                left_running = not timed_out
                break
            wake = [t for t in (None if timed_out else deadline, kill_at,
                                exited_at + DRAIN_S if exited_at is not None else None) if t is not None]
            wait = min(max((min(wake) - now) if wake else 0.25, 0.0), 0.25)
            for key, _ in sel.select(timeout=wait):
                data = os.read(key.fd, _READ)
                if data:
                    key.data.add(data)
                else:
                    sel.unregister(key.fd)
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        if timed_out and swept is None:
            swept = children.end_call(token, proc.pid)
        try:
            returncode = proc.wait(timeout=KILL_GRACE_S if timed_out else 5)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            returncode = proc.wait()
        children.unregister(token)
    return Outcome(out, err, returncode, timed_out, int((time.monotonic() - start) * 1000), left_running,
                   swept.summary() if swept else None)
