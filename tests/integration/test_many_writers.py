"""Nothing lost, many writers: 8 real daemons (separate processes and MEMTREE_HOMEs, standing for 8 machines)
write captures into one real PostgreSQL store while the one running the walkers is SIGKILLed and restarted
(eval/bench/many_writers.py; its full size, 10,000 captures per writer, is a benchmark).  Every
acknowledged capture is stored exactly once, and no two walker loops ever ran at once."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.common import git_repo

from eval.bench import many_writers as mw

WRITERS = 8
CAPTURES = int(os.environ.get("MEMTREE_TEST_WRITER_CAPTURES", "30"))  # per writer


def test_eight_daemons_on_one_database_lose_nothing_and_walk_one_at_a_time(tmp_path: Path,
                                                                         postgres_url: str) -> None:
    from memtree_core.daemon.project import identify

    project = git_repo(tmp_path / "project")
    work = tmp_path / "work"
    work.mkdir()
    result = mw.run(work, project, postgres_url, writers=WRITERS, captures=CAPTURES, timeout_s=300)

    assert result.refused == []
    assert len(result.acked) == WRITERS * CAPTURES + WRITERS  # and one warm-up capture each
    assert len(result.killed) == 1
    assert mw.check_store(postgres_url, identify(project).store_key, result) == []

    events = mw.probe_events(work / "walks")
    assert mw.overlapping_walks(events, result.killed) == []
    (killed,) = result.killed
    last_of_killed = max(i for i, (_, pid) in enumerate(events) if pid == killed)
    assert any(pid != killed for _, pid in events[last_of_killed + 1:])  # another daemon took over
    said = mw.lock_log(result.logs)
    assert sum("walker lock taken" in line for line in said) >= 2
    assert any("waits and tries again" in line for line in said)
