"""Named store methods for walking the tree and the edges: neighbours, the newest nodes, summaries.

Each method is one statement over a caller-sized batch of ids (the callers keep batches at 500, under
SQLite's parameter limit), so a walk costs what it did when its SQL was inline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memtree_core.store.rows import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.upkeep import marks

# The columns a graph walk needs to rank a node without its content.
LIGHT_COLUMNS = "id, parent_id, kind, source_uri, created_at, rowid"
_SUMMARY_COLUMNS = ", ".join(f"s.{c.strip()}" for c in NODE_COLUMNS.split(","))


def _kinds(kinds: Sequence[str] | None) -> tuple[str, list[str]]:
    if kinds is None:
        return "", []
    return f" AND kind IN ({marks(len(kinds))})", list(kinds)


class GraphQueries:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``query``."""

    if TYPE_CHECKING:
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...

    def parent_links(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(id, parent_id)`` of those of ``ids`` that have a parent."""
        return self.query(  # type: ignore[return-value]
            f"SELECT id, parent_id FROM nodes WHERE id IN ({marks(len(ids))}) AND parent_id IS NOT NULL", list(ids))

    def child_links(self, ids: Sequence[str], limit: int) -> list[tuple[str, str]]:
        """``(child id, parent id)`` of the first ``limit`` children (by id, any status) of ``ids``."""
        return self.query(  # type: ignore[return-value]
            f"SELECT id, parent_id FROM nodes WHERE parent_id IN ({marks(len(ids))}) ORDER BY id LIMIT ?",
            [*ids, limit])

    def edges_from(self, ids: Sequence[str], kinds: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
        """``(src, dst, kind)`` of the edges leaving ``ids`` (of ``kinds`` only, when given)."""
        kind_sql, kind_params = _kinds(kinds)
        return self.query(  # type: ignore[return-value]
            f"SELECT src_id, dst_id, kind FROM edges WHERE src_id IN ({marks(len(ids))}){kind_sql}",
            [*ids, *kind_params])

    def edges_into(self, ids: Sequence[str], kinds: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
        """``(src, dst, kind)`` of the edges arriving at ``ids`` (of ``kinds`` only, when given)."""
        kind_sql, kind_params = _kinds(kinds)
        return self.query(  # type: ignore[return-value]
            f"SELECT src_id, dst_id, kind FROM edges WHERE dst_id IN ({marks(len(ids))}){kind_sql}",
            [*ids, *kind_params])

    def newest_nodes(self, limit: int, *, since: int = 0, kinds: Sequence[str] = (),
                     statuses: Sequence[str] | None = None) -> list[NodeRow]:
        """Up to ``limit`` nodes created at or after ``since`` (ms), newest first, of ``kinds`` (all when
        empty) and ``statuses`` (all when None)."""
        where, params = ["created_at >= ?"], [since]
        if kinds:
            where.append(f"+kind IN ({marks(len(kinds))})")
            params += kinds
        if statuses is not None:
            where.append(f"+status IN ({marks(len(statuses))})")
            params += statuses
        # created_at leads the nodes_created_parent index: SQLite walks it backwards and stops at `limit`.
        # The unary + keeps the planner off the status/kind indexes, which would sort every live node.
        return [row_to_node(r) for r in self.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit])]

    def live_children_light(self, ids: Sequence[str], limit: int) -> list[tuple[Any, ...]]:
        """:data:`LIGHT_COLUMNS` of the live ones among the first ``limit`` children (by id, whatever their
        status) of ``ids``."""
        return [row[:-1] for row in self.query(
            f"SELECT {LIGHT_COLUMNS}, status FROM nodes WHERE parent_id IN ({marks(len(ids))}) ORDER BY id LIMIT ?",
            [*ids, limit]) if row[-1] == "live"]

    def live_linked_light(self, ids: Sequence[str], parents: Sequence[str]) -> list[tuple[Any, ...]]:
        """:data:`LIGHT_COLUMNS` of the live nodes at the other end of an edge of ``ids`` (``summarizes``
        edges left out: a summary is not a neighbour of what it sums up), and of ``parents``, in one
        statement that reads each row once (duplicates possible)."""
        m = marks(len(ids))
        given = f" UNION ALL VALUES {','.join(['(?)'] * len(parents))}" if parents else ""
        return self.query(
            f"SELECT {LIGHT_COLUMNS} FROM nodes WHERE status = 'live' AND id IN ("
            f"SELECT dst_id FROM edges WHERE src_id IN ({m}) AND kind != 'summarizes' "
            f"UNION ALL SELECT src_id FROM edges WHERE dst_id IN ({m}) AND kind != 'summarizes'{given})",
            [*ids, *ids, *parents])

    def newest_live_summaries(self, ids: Sequence[str]) -> dict[str, NodeRow]:
        """The newest live summary of each of ``ids`` (a ``summarizes`` edge from the summary to it)."""
        out: dict[str, NodeRow] = {}
        for row in self.query(
                f"SELECT e.dst_id, {_SUMMARY_COLUMNS} FROM edges e JOIN nodes s ON s.id = e.src_id "
                f"WHERE e.dst_id IN ({marks(len(ids))}) AND e.kind = 'summarizes' AND s.status = 'live' "
                f"ORDER BY e.dst_id, s.created_at DESC, s.id DESC", list(ids)):
            out.setdefault(row[0], row_to_node(row[1:]))
        return out
