"""The ``note_staleness`` walker: a live note or observation about a node that changed goes stale too.

What a note is about changes when that node leaves ``live``: a file chunk goes stale when its file changes,
is superseded by its re-indexed version, or pruned.  The note then speaks of code that is no longer there, so
it moves to ``stale`` (reason ``about changed``) and default searches stop offering it as current; it stays
readable with ``status="stale"``.  Bounded: :data:`BATCH` notes per run."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree_core.context import Context

BATCH = 500
INTERVAL_S = 15.0

_CHANGED = """
SELECT DISTINCT n.id FROM nodes n
JOIN edges e ON e.src_id = n.id AND e.kind = 'references'
JOIN nodes t ON t.id = e.dst_id
WHERE n.kind IN ('note', 'observation') AND n.status = 'live' AND t.status IN ('stale', 'superseded', 'pruned')
LIMIT ?"""


class NoteStaleness:
    name = "note_staleness"
    trigger = "interval"

    def interval_s(self, app: Context) -> float:
        return INTERVAL_S

    def has_work(self, app: Context) -> bool:
        return app.store.query_one(
            "SELECT 1 FROM nodes WHERE kind IN ('note', 'observation') AND status = 'live' LIMIT 1") is not None

    def run(self, app: Context) -> dict[str, int]:
        ids = [row[0] for row in app.store.query(_CHANGED, (BATCH,))]
        moved = app.store.transition(ids, "stale", reason="about changed") if ids else 0
        return {"notes_marked_stale": moved}
