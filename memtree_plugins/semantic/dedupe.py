"""The ``dedupe`` walker: every ``walkers.dedupeIntervalMs``, find live nodes of the same kind
whose vectors have cosine >= 0.97; keep the newest, move the older to ``superseded`` (through
``store.transition``) with a ``supersedes`` edge newer -> older.  Nothing is deleted, and
:func:`restore` undoes a false merge (superseded -> live, the edge removed).

Files are the exception: two chunks with the same text in different files are two places, not two
copies, so ``file``/``file_chunk`` nodes only dedupe against nodes of the same file, and on a store machines
share, of the same machine's checkout (each machine keeps its own versions of a file, docs/postgresql.md
"Staleness per checkout").  And code that only
*means* the same is not a copy (``rates_at()`` and ``rates_br()`` differ in every number): a file node
supersedes another only when their normalised texts are near-identical (shingle Jaccard >= 0.95, see
:mod:`sameness`) and they agree on language and chunk kind; otherwise close vectors add a ``similar``
edge and change no status.
Bounded per run: it checks at most ``PER_RUN`` embedded nodes, resuming where the last run stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memtree_core.store.vectors import unpack
from memtree_plugins.semantic import queries, vectors
from memtree_plugins.semantic.sameness import same_code
from memtree_plugins.semantic.settings import semantic_settings

if TYPE_CHECKING:
    from memtree_core.context import Context

THRESHOLD = 0.97
PER_RUN = 500
NEIGHBOURS = 4
CURSOR = "dedupe:cursor"
REASON = "dedupe"
FILE_KINDS = ("file", "file_chunk")


class Dedupe:
    name = "dedupe"
    trigger = "interval"

    def interval_s(self, app: Context) -> float:
        return semantic_settings(app).walkers.dedupe_interval_ms / 1000

    def has_work(self, app: Context) -> bool:
        return app.store.vector.available

    def run(self, app: Context) -> dict[str, int]:
        store = app.store
        counts = {"checked": 0, "superseded": 0, "similar": 0}
        if not store.vector.available:
            return counts
        models = vectors.stored_models(store, counts=False)
        if len(models) != 1:
            return counts  # nothing embedded, or mixed models awaiting `memtree reembed`
        model, dim, _n = models[0]
        # numpy comes with the codes: loaded once there are vectors, never at the daemon's start
        from memtree_core.store import vector_codes as codes

        codes.warm(store)
        cursor = int(store.get_meta(CURSOR) or 0)
        rows = vectors.live_vectors_after(store, cursor, PER_RUN)
        last = cursor
        machines = queries.machines_of(store, [r[1] for r in rows if r[3] in FILE_KINDS]) if store.machine else {}
        for vrow, node_id, blob, kind, uri, created in rows:
            last = vrow
            counts["checked"] += 1
            where_sql = "n.status = 'live' AND n.kind = ? AND n.id != ?"
            params: list[Any] = [kind, node_id]
            if kind in FILE_KINDS:
                base = (uri or "").split("#", 1)[0]
                where_sql += " AND (n.source_uri = ? OR (n.source_uri >= ? AND n.source_uri < ?))"
                params += [base, base + "#", base + "#\U0010ffff"]
                if store.machine:  # another machine's checkout has its own version of the file: not a copy
                    machine = machines.get(node_id)
                    where_sql += " AND n.metadata LIKE ?" if machine else " AND n.metadata NOT LIKE ?"
                    params.append(f'%"machine":"{machine}"%' if machine else '%"machine":"%')
            hits = vectors.knn(store, unpack(blob), model, dim, NEIGHBOURS, where=(where_sql, params))
            dups = [(i, 1.0 - d) for i, d in hits if 1.0 - d >= THRESHOLD]
            if dups and kind in FILE_KINDS:
                dups = self._copies(app, node_id, dups, counts)
            if not dups:
                continue
            counts["superseded"] += self._merge(app, node_id, created, dups)
        if rows and len(rows) < PER_RUN:
            last = 0  # a full pass is done; the next run starts over (new nodes are compared to old ones)
        store.set_meta(CURSOR, str(last))
        return counts

    def _copies(self, app: Context, node_id: str, dups: list[tuple[str, float]],
                counts: dict[str, int]) -> list[tuple[str, float]]:
        """Keep the neighbours whose text is a copy of the node's; link the others as ``similar``."""
        store = app.store
        ids = [node_id, *(i for i, _ in dups)]
        rows = {i: (n.content, n.metadata, n.source_uri) for i, n in store.get_nodes(ids).items()}
        if node_id not in rows:
            return []
        copies = []
        for other, sim in dups:
            if other in rows and same_code(rows[node_id], rows[other])[0]:
                copies.append((other, sim))
            elif other in rows:
                a, b = sorted((node_id, other))
                if not queries.has_edge(store, a, b, "similar"):
                    store.add_edge(a, b, "similar")
                    counts["similar"] += 1
        return copies

    def _merge(self, app: Context, node_id: str, created: int, dups: list[tuple[str, float]]) -> int:
        store = app.store
        group = store.get_nodes([node_id, *(i for i, _ in dups)])
        live = [n for n in group.values() if n.status == "live"]
        if len(live) < 2:
            return 0
        keep = max(live, key=lambda n: (n.created_at, n.rowid))
        sims = dict(dups)
        merged = 0
        with store.tx():
            for old in live:
                if old.id == keep.id:
                    continue
                sim = sims.get(old.id) or sims.get(keep.id) or THRESHOLD
                store.transition([old.id], "superseded", f"{REASON}: near-duplicate of {keep.id} "
                                                         f"(cosine {sim:.3f})")
                store.add_edge(keep.id, old.id, "supersedes")
                merged += 1
        return merged


def restore(app: Context, node_id: str) -> str:
    """Undo a merge: ``superseded`` -> ``live`` and drop the ``supersedes`` edges pointing at the node.
    Returns a one-line account.  Raises KeyError for an unknown node, IllegalTransition if not superseded."""
    store = app.store
    with store.tx():
        if store.get_node(node_id) is None:
            raise KeyError(f"no node {node_id}")
        store.transition([node_id], "live", "restored: false merge undone")
        newer = queries.remove_edges_to(store, node_id, "supersedes")
    store.bump("walker:dedupe:restored")
    return f"{node_id} is live again" + (f" (was superseded by {', '.join(newer)})" if newer else "")
