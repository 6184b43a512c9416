"""The semantic plugin's own queries over the store's nodes, edges and counters (``store.query/execute``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.store import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.upkeep import batches, marks

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess

_DUE_SUMMARY = """
SELECT g.parent_id, g.n, g.newest FROM (
    SELECT c.parent_id AS parent_id, count(*) AS n, max(c.created_at) AS newest FROM nodes c
    WHERE c.status = 'live' AND c.kind != 'summary' AND c.parent_id IS NOT NULL GROUP BY c.parent_id
) g WHERE g.n > ? AND NOT EXISTS (
    SELECT 1 FROM nodes s WHERE s.parent_id = g.parent_id AND s.kind = 'summary' AND s.status = 'live'
    AND s.created_at >= g.newest)
ORDER BY g.newest DESC LIMIT ?"""


def parents_due_a_summary(store: StoreAccess, more_than: int, limit: int) -> list[tuple[str, int]]:
    """``(parent id, live children)`` of up to ``limit`` parents with more than ``more_than`` live
    non-summary children and no live summary as new as the newest of them; newest activity first."""
    rows = store.query(_DUE_SUMMARY, (more_than, limit))
    return [(p, int(n)) for p, n, _ in rows]


def newest_live_children(store: StoreAccess, parent_id: str, limit: int, *, except_kind: str | None = None
                         ) -> list[NodeRow]:
    """Up to ``limit`` live children of ``parent_id``, newest first, leaving out ``except_kind``."""
    but = "" if except_kind is None else "AND kind != ? "  # (kind is never NULL; ``IS NOT ?`` is SQLite's alone)
    return [row_to_node(r) for r in store.query(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE parent_id = ? AND status = 'live' {but}"
        f"ORDER BY created_at DESC LIMIT ?", (parent_id, *(() if except_kind is None else (except_kind,)), limit))]


def live_children_ids(store: StoreAccess, parent_id: str, kind: str) -> list[str]:
    return [r[0] for r in store.query("SELECT id FROM nodes WHERE parent_id = ? AND kind = ? AND "
                                      "status = 'live'", (parent_id, kind))]


def set_node_time(store: StoreAccess, node_id: str, at: int) -> None:
    """Set a node's ``created_at`` and ``updated_at`` to ``at`` (ms)."""
    store.execute("UPDATE nodes SET created_at = ?, updated_at = ? WHERE id = ?", (at, at, node_id))


def has_edge(store: StoreAccess, src_id: str, dst_id: str, kind: str) -> bool:
    return store.query_one("SELECT 1 FROM edges WHERE src_id = ? AND dst_id = ? AND kind = ?",
                           (src_id, dst_id, kind)) is not None


def remove_edges_to(store: StoreAccess, dst_id: str, kind: str) -> list[str]:
    """Delete every ``kind`` edge pointing at ``dst_id``; return the sources they came from."""
    with store.tx():
        sources = [s for (s,) in store.query("SELECT src_id FROM edges WHERE dst_id = ? AND kind = ?",
                                             (dst_id, kind))]
        store.execute("DELETE FROM edges WHERE dst_id = ? AND kind = ?", (dst_id, kind))
    return sources


def set_counter(store: StoreAccess, name: str, value: int) -> None:
    """Set a gauge (a counter that is measured, not bumped), e.g. a walker's backlog."""
    store.execute("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET "
                  "value = excluded.value", (name, int(value)))


def machines_of(store: StoreAccess, ids: list[str]) -> dict[str, str | None]:
    """The machine each node's metadata records (None: none), for nodes of a store machines share."""
    out: dict[str, str | None] = {}
    for part in batches(list(dict.fromkeys(ids))):
        out.update(store.query(f"SELECT id, json_extract(metadata, '$.machine') FROM nodes "  # type: ignore[arg-type]
                               f"WHERE id IN ({marks(len(part))})", part))
    return out
