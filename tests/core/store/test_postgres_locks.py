"""One walker loop per project across daemons on one server (memtree_core/store/postgres/locks.py): the
session advisory lock goes to one holder, is free again when it is released, and when its holder process is
SIGKILLed (the server ends the session)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import wait_for

from memtree_core.store.postgres.locks import SessionLock

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e .[postgresql])")
REPO = Path(__file__).resolve().parents[3]
PROJECT = "0123456789abcdef"


def test_one_holder_at_a_time(postgres_url: str) -> None:
    a, b = SessionLock(postgres_url, "walkers", PROJECT), SessionLock(postgres_url, "walkers", PROJECT)
    other_project = SessionLock(postgres_url, "walkers", "fedcba9876543210")
    try:
        assert a.try_acquire() and a.holding()
        assert a.try_acquire()  # again: still this one's
        assert not b.try_acquire() and not b.holding()
        assert other_project.try_acquire()  # another project's walkers are not held up
        a.release()
        assert not a.holding()
        assert b.try_acquire() and b.holding()
    finally:
        for lock in (a, b, other_project):
            lock.release()


def test_a_killed_holder_frees_the_lock(postgres_url: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from memtree_core.store.postgres.locks import SessionLock\n"
         f"lock = SessionLock({postgres_url!r}, 'walkers', {PROJECT!r})\n"
         "print('held' if lock.try_acquire() else 'refused', flush=True)\n"
         "time.sleep(120)\n"],
        cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    mine = SessionLock(postgres_url, "walkers", PROJECT)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not mine.try_acquire()
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        wait_for(mine.try_acquire, what="the lock of a SIGKILLed holder to be free")
        assert mine.holding()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        mine.release()
