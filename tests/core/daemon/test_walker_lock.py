"""One walker loop per project across machines: daemons on one PostgreSQL store walk one at a time.

Real ``memtree daemon`` processes, each with a MEMTREE_HOME of its own (two machines), on one real server
(docs/postgresql.md, "Many daemons, one database").  A probe walker, installed as a real plugin, appends
``start <pid>`` and ``end <pid>`` around each run to one file shared by both daemons: the runs never
interleave, the second daemon waits (and says who holds the lock) until the first is SIGKILLed, then takes
over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers.common import MEMTREE, git_repo, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the eval package lives beside the tests
from eval.bench.many_writers import probe_site  # noqa: E402  (the probe walker: one plugin for both)


def _start(home: Path, project: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    home.mkdir()
    log = home.parent / f"{home.name}.log"
    proc = subprocess.Popen([MEMTREE, "daemon", "--project", str(project)], env={**env, "MEMTREE_HOME": str(home)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    return proc, log


def _events(probe: Path) -> list[tuple[str, int]]:
    out = []
    for line in probe.read_text().splitlines():
        what, pid = line.split()
        out.append((what, int(pid)))
    return out


def test_two_daemons_on_one_database_walk_one_at_a_time_and_the_survivor_takes_over(
        tmp_path: Path, postgres_url: str) -> None:
    project = git_repo(tmp_path / "proj")
    probe = tmp_path / "walks"
    probe.touch()
    site = probe_site(tmp_path / "site")
    site_dirs = [str(site), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(PYTHONPATH=os.pathsep.join(site_dirs), MEMTREE_LOAD_PLUGINS="walkprobe",
               MEMTREE_STORE_URL=postgres_url, MEMTREE_DAEMON__IDLE_TIMEOUT_S="120", WALK_PROBE_FILE=str(probe))
    first, first_log = _start(tmp_path / "home-a", project, env)
    second = None
    try:
        wait_for(lambda: f"start {first.pid}" in probe.read_text(), 60, "the first daemon's walks")
        second, second_log = _start(tmp_path / "home-b", project, env)
        wait_for(lambda: "waits and tries again" in second_log.read_text(), 60, "the second daemon waiting")
        said = second_log.read_text()
        assert f"walker lock held by memtree walkers {os.uname().nodename} pid {first.pid}" in said
        wait_for(lambda: probe.read_text().count(f"end {first.pid}") >= 3, 60, "more walks of the first")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        with probe.open("a") as f:
            f.write(f"killed {first.pid}\n")
        wait_for(lambda: probe.read_text().count(f"end {second.pid}") >= 3, 60, "the second daemon's walks")
        assert "walker lock taken: this daemon" in second_log.read_text()
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    events = _events(probe)
    killed = events.index(("killed", first.pid))
    # Before the kill only the first daemon walked; after it only the second.
    assert {pid for _, pid in events[:killed]} == {first.pid}
    assert {pid for _, pid in events[killed + 1:]} == {second.pid}
    # Runs never interleave: each start is followed by its own end (the killed one's last run may be cut).
    running = None
    for what, pid in events:
        if what == "start":
            assert running is None, f"{pid} started while {running} was walking"
            running = pid
        elif what == "end":
            assert running == pid
            running = None
        else:
            running = None  # the killed daemon's run, cut short
    assert "walker lock released by" in second_log.read_text()  # a clean stop gives it back


def test_on_sqlite_the_loop_walks_without_a_server_lock(app) -> None:
    from memtree_core.daemon.coordinator import Coordinator

    coordinator = Coordinator(app)
    assert coordinator.may_walk() is True
    assert coordinator._lock is None


def test_memtree_walk_on_a_server_walks_only_while_it_holds_the_lock(tmp_path: Path, postgres_url: str) -> None:
    from memtree_core.daemon.project import identify
    from memtree_core.store.postgres.locks import SessionLock

    project = git_repo(tmp_path / "proj")
    probe = tmp_path / "walks"
    probe.touch()
    site = probe_site(tmp_path / "site")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
               MEMTREE_LOAD_PLUGINS="walkprobe", MEMTREE_STORE_URL=postgres_url, MEMTREE_HOME=str(home),
               WALK_PROBE_FILE=str(probe))
    other = SessionLock(postgres_url, "walkers", identify(project).store_key, name="memtree walkers elsewhere")
    assert other.try_acquire()  # another machine's daemon walks this project
    walk = subprocess.Popen([MEMTREE, "walk", "--only", "probe", "--project", str(project)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # Ctrl-C as in a terminal
    from memtree_core.store.postgres.locks import holder

    try:
        me = f"memtree walkers {os.uname().nodename} pid {walk.pid}"
        wait_for(lambda: _sessions(postgres_url, me) > 0, 60, "memtree walk asking for the lock")
        assert probe.read_text() == ""
        other.release()
        wait_for(lambda: "start" in probe.read_text(), 60, "memtree walk's first walk once the lock is free")
        assert (holder(postgres_url, other.key) or "").startswith(me)
    finally:
        other.release()
        walk.send_signal(signal.SIGINT)
        walk.wait(30)


def _sessions(url: str, name: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                            (name,)).fetchone()[0]
