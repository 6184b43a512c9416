"""Keyword (full-text) access to the store: :class:`Keywords` says what to match, three methods find it.

A plugin describes what it looks for as :class:`Keywords` (phrases, all or any of them, optionally only in
a node's ``symbols`` text) and never writes the index's own syntax: here that is SQLite FTS5 over
``nodes_fts`` (a MATCH expression, bm25 with column weights), and a PostgreSQL store would give the same
three methods over a tsvector.  Each call is one statement (or one per batch of 500 rowids), bounded by a
LIMIT or by the rowids the caller passes, so keyword search stays as fast as the SQL it runs
(``python eval/bench/search.py``).

Rowids are the nodes' insertion order (``NodeRow.rowid``): "newest" means the highest rowid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from memtree_core.store.node_filter import NodeFilter
from memtree_core.store.symbols import SYMBOL_WEIGHT, WORDS_WEIGHT
from memtree_core.store.upkeep import batches
from memtree_core.store.upkeep import marks as placeholders

# Column weights (id, content, symbols, words): a definition's name outweighs any number of uses in body
# text; the words of the body's identifiers count as body text.
_BM25 = f"bm25(f.nodes_fts, 0.0, 1.0, {SYMBOL_WEIGHT}, {WORDS_WEIGHT})"
# Must stay the tokenizer of nodes_fts (schema.py, migration 4): snippets of texts outside the index are
# made by the same rules.
TOKENIZE = "porter unicode61 remove_diacritics 2"
_SCRATCH = "memtree_snippet"  # in the store's own in-memory scratch database, emptied after each use
FIELDS = ("symbols",)


@dataclass(frozen=True)
class Keywords:
    """What a keyword search matches.

    ``phrases``: each a run of words that must occur together, in order (the index's tokenizer splits and
    stems them: ``"parse flag"`` matches ``parse_flag`` and ``parsed flags``), or a tuple of such runs of
    which any one will do (the spellings of one identifier: ``("parseflag", "parse flag")``); ``any``: a
    node matches when one phrase does (else every phrase must); ``field``: only in that field of a node
    (``"symbols"``: the names a definition chunk defines, memtree_core/store/symbols.py), None for its whole
    text; ``leading``: each phrase must start the field (only with ``field``)."""

    phrases: tuple[str | tuple[str, ...], ...]
    any: bool = False
    field: str | None = None
    leading: bool = False

    def __post_init__(self) -> None:
        if not self.phrases or any(isinstance(p, tuple) and not p for p in self.phrases):
            raise ValueError("Keywords needs at least one phrase")
        if self.field is not None and self.field not in FIELDS:
            raise ValueError(f"unknown keyword field {self.field!r}; use one of {', '.join(FIELDS)}")
        if self.leading and self.field is None:
            raise ValueError("leading needs a field")

    def fts5(self) -> str:
        """The FTS5 MATCH expression (every phrase quoted: nothing in it is taken as an operator)."""
        lead = "^" if self.leading else ""

        def one(p: str) -> str:
            return lead + '"' + p.replace('"', '""') + '"'

        quoted = [one(p) if isinstance(p, str) else one(p[0]) if len(p) == 1
                  else "(" + " OR ".join(map(one, p)) + ")" for p in self.phrases]
        expr = (" OR " if self.any else " AND ").join(quoted)
        if self.field is None:
            return expr
        return f"{self.field} : {expr}" if len(quoted) == 1 else f"{self.field} : ({expr})"


def _conditions(query: Keywords, rowid_range: tuple[int | None, int | None] | None,
                where: NodeFilter | None) -> tuple[str, list[Any]]:
    parts, params = ["f.nodes_fts MATCH ?"], [query.fts5()]
    lo, hi = rowid_range if rowid_range is not None else (None, None)
    if lo is not None and hi is not None:
        parts.append("f.rowid BETWEEN ? AND ?")
        params += [lo, hi]
    elif lo is not None:
        parts.append("f.rowid >= ?")
        params.append(lo)
    elif hi is not None:
        parts.append("f.rowid <= ?")
        params.append(hi)
    if where is not None:
        cond, where_params = where.sql()
        parts.append(cond)
        params += where_params
    return " AND ".join(parts), params


class KeywordSearch:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``query``, ``query_one``, ``lock`` and
    ``route``."""

    lock: Any
    route: Any
    _scratch_conn: Any = None

    if TYPE_CHECKING:
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def query_one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def keyword_search(self, query: Keywords, *, limit: int | None = None, offset: int = 0,
                       order: Literal["rank", "newest"] = "rank", rowids: Sequence[int] | None = None,
                       rowid_range: tuple[int | None, int | None] | None = None,
                       where: NodeFilter | None = None) -> list[tuple[int, float]]:
        """``(rowid, score)`` of the nodes matching ``query``, in ``order``, skipping ``offset``, at most
        ``limit``.

        ``order``: ``"rank"`` best first by relevance (the score is bm25: lower is better; ties newest
        first) or ``"newest"`` newest first (the score is 0.0, and no relevance is computed: the match
        list is walked newest first and the walk stops at ``offset + limit``).  ``rowid_range``: only
        rowids from ``lo`` to ``hi`` inclusive (either may be None).  ``where``: only nodes that satisfy the
        filter (each candidate joins its node; without it only the index is read).  ``rowids``: only those
        of these nodes (any number: one seek per row into the match lists, in batches, never a read of
        them whole)."""
        if order not in ("rank", "newest"):
            raise ValueError(f"unknown keyword order {order!r}; use 'rank' or 'newest'")
        score, sort = (_BM25, "2, f.rowid DESC") if order == "rank" else ("0.0", "f.rowid DESC")
        head = f"SELECT f.rowid, {score} FROM nodes_fts f"
        if where is not None:
            head += " CROSS JOIN nodes n ON n.rowid = f.rowid"
        cond, params = _conditions(query, rowid_range, where)
        if rowids is not None:
            found: list[tuple[int, float]] = []
            for part in batches(list(rowids)):
                found += self.query(f"{head} WHERE {cond} AND f.rowid IN ({placeholders(len(part))})",
                                    [*params, *part])  # type: ignore[arg-type]
            found.sort(key=(lambda r: (r[1], -r[0])) if order == "rank" else (lambda r: -r[0]))
            end = None if limit is None else offset + limit
            return found[offset:end]
        page, page_params = "", []
        if limit is not None or offset:
            page, page_params = " LIMIT ?", [-1 if limit is None else limit]
            if offset:
                page += " OFFSET ?"
                page_params.append(offset)
        return self.query(f"{head} WHERE {cond} ORDER BY {sort}{page}",  # type: ignore[return-value]
                          [*params, *page_params])

    def keyword_count(self, query: Keywords, cap: int | None = None) -> int:
        """How many nodes match ``query``, counting no further than ``cap``."""
        inner = "SELECT 1 FROM nodes_fts WHERE nodes_fts MATCH ?" + ("" if cap is None else " LIMIT ?")
        row = self.query_one(f"SELECT count(*) FROM ({inner})",
                             (query.fts5(),) if cap is None else (query.fts5(), cap))
        return int(row[0]) if row else 0

    def keyword_snippets(self, query: Keywords, *, rowids: Sequence[int] | None = None,
                         texts: Mapping[int, str] | None = None, marks: tuple[str, str] = ("«", "»"),
                         ellipsis: str = "…", tokens: int = 16) -> dict[int, str]:
        """The fragment of up to ``tokens`` words that best shows the matches of ``query``, each match
        between ``marks`` and ``ellipsis`` where the text was cut, by key: of the stored text of each of
        ``rowids``, or of each of ``texts`` (key -> text, e.g. a window of a long body: cut by the index's
        own rules).  Give one of the two; a node or text that does not match is left out."""
        if (rowids is None) == (texts is None):
            raise ValueError("keyword_snippets takes rowids or texts, one of the two")
        cut = [marks[0], marks[1], ellipsis, int(tokens)]
        if rowids is not None:
            out: dict[int, str] = {}
            for part in batches(list(rowids)):
                out.update(self.query(
                    f"SELECT rowid, snippet(nodes_fts, 1, ?, ?, ?, ?) FROM nodes_fts "
                    f"WHERE nodes_fts MATCH ? AND rowid IN ({placeholders(len(part))})",
                    [*cut, query.fts5(), *part]))
            return out
        assert texts is not None
        with self.lock:
            conn = self._scratch()
            conn.execute(f"DELETE FROM {_SCRATCH}")
            conn.executemany(f"INSERT INTO {_SCRATCH}(rowid, content) VALUES (?, ?)", list(texts.items()))
            try:
                return dict(conn.execute(
                    f"SELECT rowid, snippet({_SCRATCH}, 0, ?, ?, ?, ?) FROM {_SCRATCH} WHERE {_SCRATCH} MATCH ?",
                    [*cut, query.fts5()]).fetchall())
            finally:
                conn.execute(f"DELETE FROM {_SCRATCH}")

    def _scratch(self) -> Any:
        """An in-memory database of the store's own SQLite, for the scratch table: never the store's connection,
        which is read-only (``PRAGMA query_only``, where even a temp table is a write) under ``memtree ui``."""
        if self._scratch_conn is None:
            conn = self.route.module.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(f"CREATE VIRTUAL TABLE {_SCRATCH} USING fts5(content, tokenize='{TOKENIZE}')")
            self._scratch_conn = conn
        return self._scratch_conn

    def _close_scratch(self) -> None:
        with self.lock:
            if self._scratch_conn is not None:
                self._scratch_conn.close()
                self._scratch_conn = None

