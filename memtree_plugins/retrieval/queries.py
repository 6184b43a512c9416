"""The retrieval plugin's own reads of ``nodes`` and ``edges``, over the store's ``query``.

Keyword matching itself goes through the store's keyword methods (``keyword_search``, ``keyword_count``,
``keyword_snippets``); what is here is plain SQL over the tables.  Each function is one statement over a
caller-sized batch (callers keep batches at 500, under SQLite's parameter limit), so a search or a walk
costs what it did when this SQL lived in the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memtree_core.store import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.upkeep import marks

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess
    from memtree_core.store.node_filter import NodeFilter

# The columns a graph walk needs to rank a node without its content (compose's _Cand, in its field order).
LIGHT_COLUMNS = "id, parent_id, kind, source_uri, created_at, rowid"
_SUMMARY_COLUMNS = ", ".join(f"s.{c.strip()}" for c in NODE_COLUMNS.split(","))


# -- by rowid (keyword search) ----------------------------------------------------------------------------
def rowids_passing(store: StoreAccess, rowids: Sequence[int], where: NodeFilter) -> set[int]:
    """Which of ``rowids`` are nodes that satisfy ``where`` (one statement)."""
    if not rowids:
        return set()
    cond, params = where.sql()
    return {r for (r,) in store.query(f"SELECT n.rowid FROM nodes n WHERE n.rowid IN ({marks(len(rowids))}) "
                                      f"AND {cond}", [*rowids, *params])}


def nodes_by_rowid(store: StoreAccess, rowids: Sequence[int]) -> dict[int, NodeRow]:
    if not rowids:
        return {}
    return {n.rowid: n for n in map(row_to_node, store.query(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE rowid IN ({marks(len(rowids))})", list(rowids)))}


def symbols_of(store: StoreAccess, rowids: Sequence[int]) -> dict[int, tuple[str, bool]]:
    """Each node's ``symbols`` text and whether it is an ``impl`` block (metadata kind), by rowid."""
    rows = store.query(f"SELECT rowid, symbols, json_extract(metadata, '$.kind') = 'impl' FROM nodes "
                       f"WHERE rowid IN ({marks(len(rowids))})", list(rowids))
    return {r: (text or "", bool(impl)) for r, text, impl in rows}


def children_rowid_range(store: StoreAccess, parent_id: str) -> tuple[int, int] | None:
    """The lowest and highest rowid of ``parent_id``'s children, or None when it has none."""
    row = store.query_one("SELECT min(rowid), max(rowid) FROM nodes WHERE parent_id = ?", (parent_id,))
    if not row or row[0] is None:
        return None
    return int(row[0]), int(row[1])


# -- the tree and the edges (neighbors, recent) ----------------------------------------------------------
def _kinds(kinds: Sequence[str] | None) -> tuple[str, list[str]]:
    if kinds is None:
        return "", []
    return f" AND kind IN ({marks(len(kinds))})", list(kinds)


def parent_links(store: StoreAccess, ids: Sequence[str]) -> list[tuple[str, str]]:
    """``(id, parent_id)`` of those of ``ids`` that have a parent."""
    return store.query(  # type: ignore[return-value]
        f"SELECT id, parent_id FROM nodes WHERE id IN ({marks(len(ids))}) AND parent_id IS NOT NULL", list(ids))


def child_links(store: StoreAccess, ids: Sequence[str], limit: int) -> list[tuple[str, str]]:
    """``(child id, parent id)`` of the first ``limit`` children (by id, any status) of ``ids``."""
    return store.query(  # type: ignore[return-value]
        f"SELECT id, parent_id FROM nodes WHERE parent_id IN ({marks(len(ids))}) ORDER BY id LIMIT ?",
        [*ids, limit])


def edges_from(store: StoreAccess, ids: Sequence[str], kinds: Sequence[str] | None = None
               ) -> list[tuple[str, str, str]]:
    """``(src, dst, kind)`` of the edges leaving ``ids`` (of ``kinds`` only, when given)."""
    kind_sql, kind_params = _kinds(kinds)
    return store.query(  # type: ignore[return-value]
        f"SELECT src_id, dst_id, kind FROM edges WHERE src_id IN ({marks(len(ids))}){kind_sql}",
        [*ids, *kind_params])


def edges_into(store: StoreAccess, ids: Sequence[str], kinds: Sequence[str] | None = None
               ) -> list[tuple[str, str, str]]:
    """``(src, dst, kind)`` of the edges arriving at ``ids`` (of ``kinds`` only, when given)."""
    kind_sql, kind_params = _kinds(kinds)
    return store.query(  # type: ignore[return-value]
        f"SELECT src_id, dst_id, kind FROM edges WHERE dst_id IN ({marks(len(ids))}){kind_sql}",
        [*ids, *kind_params])


def newest_nodes(store: StoreAccess, limit: int, *, since: int = 0, kinds: Sequence[str] = (),
                 statuses: Sequence[str] | None = None) -> list[NodeRow]:
    """Up to ``limit`` nodes created at or after ``since`` (ms), newest first, of ``kinds`` (all when
    empty) and ``statuses`` (all when None)."""
    where, params = ["created_at >= ?"], [since]
    if kinds:
        where.append(f"kind || '' IN ({marks(len(kinds))})")
        params += kinds
    if statuses is not None:
        where.append(f"status || '' IN ({marks(len(statuses))})")
        params += statuses
    # created_at leads the nodes_created_parent index: SQLite walks it backwards and stops at `limit`.
    # ``|| ''`` keeps the planner off the status/kind indexes, which would sort every live node (SQLite's
    # unary ``+`` does the same there, and PostgreSQL has no unary + for text).
    return [row_to_node(r) for r in store.query(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?",
        [*params, limit])]


# -- compose's expansion -----------------------------------------------------------------------------------
def live_children_light(store: StoreAccess, ids: Sequence[str], limit: int) -> list[tuple[Any, ...]]:
    """:data:`LIGHT_COLUMNS` of the live ones among the first ``limit`` children (by id, whatever their
    status) of ``ids``."""
    return [row[:-1] for row in store.query(
        f"SELECT {LIGHT_COLUMNS}, status FROM nodes WHERE parent_id IN ({marks(len(ids))}) ORDER BY id LIMIT ?",
        [*ids, limit]) if row[-1] == "live"]


def live_linked_light(store: StoreAccess, ids: Sequence[str], parents: Sequence[str]) -> list[tuple[Any, ...]]:
    """:data:`LIGHT_COLUMNS` of the live nodes at the other end of an edge of ``ids`` (``summarizes``
    edges left out: a summary is not a neighbour of what it sums up), and of ``parents``, in one
    statement that reads each row once (duplicates possible)."""
    m = marks(len(ids))
    given = f" UNION ALL VALUES {','.join(['(?)'] * len(parents))}" if parents else ""
    return store.query(
        f"SELECT {LIGHT_COLUMNS} FROM nodes WHERE status = 'live' AND id IN ("
        f"SELECT dst_id FROM edges WHERE src_id IN ({m}) AND kind != 'summarizes' "
        f"UNION ALL SELECT src_id FROM edges WHERE dst_id IN ({m}) AND kind != 'summarizes'{given})",
        [*ids, *ids, *parents])


def newest_live_summaries(store: StoreAccess, ids: Sequence[str]) -> dict[str, NodeRow]:
    """The newest live summary of each of ``ids`` (a ``summarizes`` edge from the summary to it)."""
    out: dict[str, NodeRow] = {}
    for row in store.query(
            f"SELECT e.dst_id, {_SUMMARY_COLUMNS} FROM edges e JOIN nodes s ON s.id = e.src_id "
            f"WHERE e.dst_id IN ({marks(len(ids))}) AND e.kind = 'summarizes' AND s.status = 'live' "
            f"ORDER BY e.dst_id, s.created_at DESC, s.id DESC", list(ids)):
        out.setdefault(row[0], row_to_node(row[1:]))
    return out


def references_from(store: StoreAccess, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(src, dst) of the ``references`` edges out of ``ids``."""
    return store.query(f"SELECT src_id, dst_id FROM edges WHERE kind = 'references' AND src_id IN "  # type: ignore[return-value]
                       f"({marks(len(ids))})", list(ids))


def enclosing_chunks(store: StoreAccess, file_id: str, node: NodeRow) -> list[NodeRow]:
    """The chunks of the definitions around ``node`` in the same file version, outermost first: a method's
    class (``parent`` in its metadata), that class's own parent, ..."""
    out: list[NodeRow] = []
    parent = node.meta.get("parent") if '"parent"' in node.metadata else None
    seen = {node.id}
    while isinstance(parent, str) and parent and len(out) < 8:
        row = store.query_one(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE parent_id = ? AND kind = 'file_chunk' "
            "AND json_extract(metadata, '$.symbol') = ? AND json_extract(metadata, '$.kind') != 'class_body' "
            "ORDER BY rowid LIMIT 1", (file_id, parent))
        if row is None:
            break
        found = row_to_node(row)
        if found.id in seen:
            break
        seen.add(found.id)
        out.insert(0, found)
        parent = found.meta.get("parent")
    return out
