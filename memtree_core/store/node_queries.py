"""Store methods over nodes, edges, meta and counters beyond the basics in ``store.py``, still used by more
than one part of memtree.

A query only one plugin asks belongs in that plugin, over ``query``/``query_one``/``execute``; those
shared by several built-ins are in ``memtree_plugins/lib/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memtree_core.store.rows import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.upkeep import marks

_DUE_SUMMARY = """
SELECT g.parent_id, g.n, g.newest FROM (
    SELECT c.parent_id AS parent_id, count(*) AS n, max(c.created_at) AS newest FROM nodes c
    WHERE c.status = 'live' AND c.kind != 'summary' AND c.parent_id IS NOT NULL GROUP BY c.parent_id
) g WHERE g.n > ? AND NOT EXISTS (
    SELECT 1 FROM nodes s WHERE s.parent_id = g.parent_id AND s.kind = 'summary' AND s.status = 'live'
    AND s.created_at >= g.newest)
ORDER BY g.newest DESC LIMIT ?"""


class NodeQueries:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``tx``, ``query`` and ``query_one``."""

    if TYPE_CHECKING:
        def tx(self) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def query_one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    # -- reading nodes --------------------------------------------------------------------------------
    def newest_live_children(self, parent_id: str, limit: int, *, except_kind: str | None = None) -> list[NodeRow]:
        """Up to ``limit`` live children of ``parent_id``, newest first, leaving out ``except_kind``."""
        return [row_to_node(r) for r in self.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE parent_id = ? AND status = 'live' AND kind IS NOT ? "
            f"ORDER BY created_at DESC LIMIT ?", (parent_id, except_kind, limit))]

    def count_in_status(self, status_: str) -> int:
        row = self.query_one("SELECT count(*) FROM nodes WHERE status = ?", (status_,))
        return int(row[0]) if row else 0

    def parents_due_a_summary(self, more_than: int, limit: int) -> list[tuple[str, int]]:
        """``(parent id, live children)`` of up to ``limit`` parents with more than ``more_than`` live
        non-summary children and no live summary as new as the newest of them; newest activity first."""
        rows = self.query(_DUE_SUMMARY, (more_than, limit))
        return [(p, int(n)) for p, n, _ in rows]

    def live_children_ids(self, parent_id: str, kind: str) -> list[str]:
        return [r[0] for r in self.query("SELECT id FROM nodes WHERE parent_id = ? AND kind = ? AND "
                                         "status = 'live'", (parent_id, kind))]

    # -- writing nodes --------------------------------------------------------------------------------
    def set_node_time(self, node_id: str, at: int) -> None:
        """Set a node's ``created_at`` and ``updated_at`` to ``at`` (ms)."""
        with self.tx() as c:
            c.execute("UPDATE nodes SET created_at = ?, updated_at = ? WHERE id = ?", (at, at, node_id))

    # -- edges ----------------------------------------------------------------------------------------
    def edges_of(self, node_id: str) -> list[tuple[str, str, str]]:
        """``(src, dst, kind)`` of every edge from or to ``node_id``, by kind."""
        return self.query("SELECT src_id, dst_id, kind FROM edges WHERE src_id = ? OR dst_id = ? "  # type: ignore[return-value]
                          "ORDER BY kind, src_id, dst_id", (node_id, node_id))

    def has_edge(self, src_id: str, dst_id: str, kind: str) -> bool:
        return self.query_one("SELECT 1 FROM edges WHERE src_id = ? AND dst_id = ? AND kind = ?",
                              (src_id, dst_id, kind)) is not None

    def remove_edges_to(self, dst_id: str, kind: str) -> list[str]:
        """Delete every ``kind`` edge pointing at ``dst_id``; return the sources they came from."""
        with self.tx() as c:
            sources = [s for (s,) in c.execute("SELECT src_id FROM edges WHERE dst_id = ? AND kind = ?",
                                               (dst_id, kind))]
            c.execute("DELETE FROM edges WHERE dst_id = ? AND kind = ?", (dst_id, kind))
        return sources

    # -- rowids and meta -------------------------------------------------------------------------------
    def rowid_of(self, node_id: str) -> int | None:
        row = self.query_one("SELECT rowid FROM nodes WHERE id = ?", (node_id,))
        return int(row[0]) if row else None

    def rowids_of(self, ids: Sequence[str]) -> list[int]:
        """The rowids of those of ``ids`` that exist (one statement: the caller keeps ``ids`` short)."""
        return [r for (r,) in self.query(f"SELECT rowid FROM nodes WHERE id IN ({marks(len(ids))})", list(ids))]

    def meta_keys(self, prefix: str) -> list[str]:
        """Every meta key that starts with ``prefix``."""
        return [k for (k,) in self.query("SELECT key FROM meta WHERE key >= ? AND key < ?",
                                         (prefix, prefix + "\U0010ffff"))]

    def delete_meta(self, key: str) -> None:
        with self.tx() as c:
            c.execute("DELETE FROM meta WHERE key = ?", (key,))

    # -- counters -------------------------------------------------------------------------------------
    def set_counter(self, name: str, value: int) -> None:
        """Set a gauge (a counter that is measured, not bumped), e.g. a walker's backlog."""
        with self.tx() as c:
            c.execute("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET "
                      "value = excluded.value", (name, int(value)))
