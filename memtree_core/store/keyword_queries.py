"""Named store methods for keyword search over ``nodes_fts``: probes, bounded ranking and checks.

The keyword retriever (memtree_plugins/retrieval/search.py) decides how to rank; these are the statements it
runs, each bounded by a LIMIT or a caller-sized batch, so a search reads what it did when its SQL was inline
(issue 15's latency figures: ``python eval/bench/search.py``).  ``expr`` is an FTS5 MATCH expression;
``rowid_range`` an inclusive ``(lo, hi)`` of node rowids (a parent's children) or None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memtree_core.store.node_filter import NodeFilter
from memtree_core.store.rows import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.symbols import SYMBOL_WEIGHT
from memtree_core.store.upkeep import batches, marks

# Column weights (id, content, symbols): a definition's name outweighs any number of uses in body text.
BM25 = f"bm25(f.nodes_fts, 0.0, 1.0, {SYMBOL_WEIGHT})"


def _range(rowid_range: tuple[int, int] | None, column: str = "rowid") -> tuple[str, list[int]]:
    if rowid_range is None:
        return "", []
    return f" AND {column} BETWEEN ? AND ?", list(rowid_range)


class KeywordQueries:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``query`` and ``query_one``."""

    if TYPE_CHECKING:
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def query_one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def nth_newest_match(self, expr: str, n: int, rowid_range: tuple[int, int] | None = None) -> int | None:
        """The rowid of the ``n``-th newest node (1-based) matching ``expr``, or None when fewer match: a walk
        of ``n`` entries of the match list, never all of it."""
        rng_sql, rng_params = _range(rowid_range)
        row = self.query_one(f"SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?{rng_sql} ORDER BY rowid DESC "
                             f"LIMIT 1 OFFSET ?", [expr, *rng_params, n - 1])
        return int(row[0]) if row is not None else None

    def newest_matches(self, expr: str, limit: int, rowid_range: tuple[int, int] | None = None) -> list[int]:
        """Rowids of up to ``limit`` nodes matching ``expr``, newest first."""
        rng_sql, rng_params = _range(rowid_range)
        return [r for (r,) in self.query(f"SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?{rng_sql} "
                                         "ORDER BY rowid DESC LIMIT ?", [expr, *rng_params, limit])]

    def count_matches_upto(self, expr: str, cap: int) -> int:
        """How many nodes match ``expr``, counting no further than ``cap``."""
        row = self.query_one("SELECT count(*) FROM (SELECT 1 FROM nodes_fts WHERE nodes_fts MATCH ? LIMIT ?)",
                             (expr, cap))
        return int(row[0]) if row else 0

    def rank_matches(self, expr: str, limit: int, *, by_recency: bool = False,
                     rowid_range: tuple[int, int] | None = None, min_rowid: int | None = None,
                     where: NodeFilter | None = None) -> list[tuple[int, float]]:
        """``(rowid, bm25)`` of the best ``limit`` matches of ``expr`` (bm25 is lower for better; 0.0 and
        newest first when ``by_recency``), optionally only rowids from ``min_rowid`` on.  Without ``where``
        the index alone is read (no row of ``nodes``); with it, each candidate joins its node to pass it."""
        score_sql, order_sql = ("0.0", "f.rowid DESC") if by_recency else (BM25, "2, f.rowid DESC")
        rng_sql, rng_params = _range(rowid_range, "f.rowid")
        lo_sql, lo_params = ("", []) if min_rowid is None else (" AND f.rowid >= ?", [min_rowid])
        head = f"SELECT f.rowid, {score_sql} FROM nodes_fts f"
        match = f"f.nodes_fts MATCH ?{rng_sql}{lo_sql}"
        if where is None:
            return self.query(f"{head} WHERE {match} ORDER BY {order_sql} LIMIT ?",  # type: ignore[return-value]
                              [expr, *rng_params, *lo_params, limit])
        cond, params = where.sql()
        return self.query(  # type: ignore[return-value]
            f"{head} CROSS JOIN nodes n ON n.rowid = f.rowid WHERE {match} AND {cond} "
            f"ORDER BY {order_sql} LIMIT ?", [expr, *rng_params, *lo_params, *params, limit])

    def bm25_of(self, expr: str, rowids: Sequence[int]) -> list[tuple[int, float]]:
        """``(rowid, bm25)`` of those of ``rowids`` matching ``expr`` (one statement)."""
        return self.query(f"SELECT f.rowid, {BM25} FROM nodes_fts f WHERE f.nodes_fts MATCH ? AND f.rowid IN "
                          f"({marks(len(rowids))})", [expr, *rowids])  # type: ignore[return-value]

    def rowids_matching(self, expr: str, rowids: Sequence[int]) -> set[int]:
        """Which of ``rowids`` match ``expr``: one seek into its match list per row, never a read of all of it."""
        found: set[int] = set()
        for part in batches(rowids):
            found.update(r for (r,) in self.query(
                f"SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ? AND rowid IN ({marks(len(part))})",
                [expr, *part]))
        return found

    def rowids_passing(self, rowids: Sequence[int], where: NodeFilter) -> set[int]:
        """Which of ``rowids`` are nodes that satisfy ``where`` (one statement)."""
        if not rowids:
            return set()
        cond, params = where.sql()
        return {r for (r,) in self.query(f"SELECT n.rowid FROM nodes n WHERE n.rowid IN ({marks(len(rowids))}) "
                                         f"AND {cond}", [*rowids, *params])}

    def nodes_by_rowid(self, rowids: Sequence[int]) -> dict[int, NodeRow]:
        if not rowids:
            return {}
        return {n.rowid: n for n in map(row_to_node, self.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE rowid IN ({marks(len(rowids))})", list(rowids)))}

    def symbols_of(self, rowids: Sequence[int]) -> dict[int, tuple[str, bool]]:
        """Each node's ``symbols`` text and whether it is an ``impl`` block (metadata kind), by rowid."""
        rows = self.query(f"SELECT rowid, symbols, json_extract(metadata, '$.kind') = 'impl' FROM nodes "
                          f"WHERE rowid IN ({marks(len(rowids))})", list(rowids))
        return {r: (text or "", bool(impl)) for r, text, impl in rows}

    def newest_passing(self, where: NodeFilter, limit: int) -> list[str]:
        """Ids of the ``limit`` newest nodes that satisfy ``where``."""
        cond, params = where.sql()
        return [i for (i,) in self.query(f"SELECT n.id FROM nodes n WHERE {cond} ORDER BY n.rowid DESC LIMIT ?",
                                         [*params, limit])]

    def children_rowid_range(self, parent_id: str) -> tuple[int, int] | None:
        """The lowest and highest rowid of ``parent_id``'s children, or None when it has none."""
        row = self.query_one("SELECT min(rowid), max(rowid) FROM nodes WHERE parent_id = ?", (parent_id,))
        if not row or row[0] is None:
            return None
        return int(row[0]), int(row[1])
