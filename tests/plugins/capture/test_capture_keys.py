"""Idempotent capture keys, on both backends: a tool call re-sent after it was stored (the hook's re-send, a
replay after a daemon restart, another machine's daemon on a shared store) lands once; a client reusing an id
for a different output still gets two captures."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

from memtree_core.app import App
from memtree_core.daemon.ingest import IngestServer

PAYLOAD = json.loads((Path(__file__).parents[2] / "data" / "claude-code-payloads" / "post-bash.json").read_text())


def _count(app: App, tool_use_id: str) -> int:
    row = app.store.query_one("SELECT count(*) FROM nodes WHERE json_extract(metadata, '$.tool_use_id') = ?",
                              (tool_use_id,))
    return int(row[0])


def test_a_capture_resent_after_a_restart_lands_once(backend_app: App, project: Path) -> None:
    first, _ = IngestServer(backend_app).ingest_once(copy.deepcopy(PAYLOAD))
    backend_app.close()
    again = App.open(project)  # a restarted daemon: its in-memory dedupe is empty
    try:
        resent, _ = IngestServer(again).ingest_once(copy.deepcopy(PAYLOAD))
        assert resent == first
        assert _count(again, PAYLOAD["tool_use_id"]) == 1
        assert again.store.counters("capture:") == {"capture:accepted:Bash": 1, "capture:deduplicated": 1}
        other = copy.deepcopy(PAYLOAD)
        other["tool_response"]["stdout"] = "4 passed in 0.10s\n"  # the same id, another output: another call
        second, _ = IngestServer(again).ingest_once(other)
        assert second != first
        assert _count(again, PAYLOAD["tool_use_id"]) == 2
    finally:
        again.close()


def test_daemons_sending_one_call_at_once_store_it_once(backend_app: App, project: Path) -> None:
    apps = [backend_app] + [App.open(project) for _ in range(3)]  # four daemons' own apps and servers
    results: list[list[str]] = []
    barrier = threading.Barrier(len(apps))

    def send(app: App) -> None:
        server = IngestServer(app)
        barrier.wait()
        results.append(server.ingest_once(copy.deepcopy(PAYLOAD))[0])

    threads = [threading.Thread(target=send, args=(a,)) for a in apps]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert len(results) == 4 and all(r == results[0] for r in results)
        assert _count(backend_app, PAYLOAD["tool_use_id"]) == 1
    finally:
        for a in apps[1:]:
            a.close()
