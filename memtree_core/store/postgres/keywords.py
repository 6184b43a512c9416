"""A :class:`~memtree_core.store.keywords.Keywords` as a PostgreSQL ``tsquery`` (docs/postgresql.md,
"Keyword search"): what FTS5's MATCH expression says on SQLite, over the ``tsv`` / ``tsv_symbols`` columns
of memtree_core/store/postgres/schema.py.

Each phrase goes through the same folding and splitting as the indexed text (:func:`schema.words_sql`) and
``phraseto_tsquery`` (its words adjacent, in order, stemmed); a tuple of spellings is their OR; the phrases
are ANDed, or ORed with ``any``.  ``field="symbols"`` searches ``tsv_symbols``, and ``leading`` starts each
phrase with the marker that opens that field, as FTS5's ``^`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from memtree_core.store.keywords import Keywords
from memtree_core.store.node_filter import NodeFilter
from memtree_core.store.postgres.dialect import translate
from memtree_core.store.postgres.schema import LEADING_MARK, TS_CONFIG, words_sql
from memtree_core.store.symbols import SYMBOL_WEIGHT, WORDS_WEIGHT


def tsquery(query: Keywords) -> tuple[str, str, list[Any]]:
    """``(column, expression, params)``: the tsvector column to match and a ``tsquery`` SQL expression
    (psycopg placeholders) with its parameters, for ``column @@ (expression)``."""
    column = "tsv_symbols" if query.field == "symbols" else "tsv"
    params: list[Any] = []

    def one(phrase: str) -> str:
        params.append(f"{LEADING_MARK} {phrase}" if query.leading else phrase)
        return f"phraseto_tsquery('{TS_CONFIG}', {words_sql('%s')})"

    parts = [one(p) if isinstance(p, str) else "(" + " || ".join(map(one, p)) + ")" for p in query.phrases]
    return column, (" || " if query.any else " && ").join(parts), params


# ts_rank's weights, {D, C, B, A}: body text (D), the words of its identifiers (C) and a definition's symbols
# (A) in the ratio of the SQLite store's bm25 column weights, scaled so the largest is 1 (ts_rank's range).
_TOP = max(1.0, WORDS_WEIGHT, SYMBOL_WEIGHT)
WEIGHTS = "{" + ", ".join(map(repr, (1.0 / _TOP, WORDS_WEIGHT / _TOP, 0.0, SYMBOL_WEIGHT / _TOP))) + "}"
# 1: the rank divided by 1 + log(the text's length in words), as bm25 weighs a match in a long text less
NORMALIZATION = 1
_OPTIONS = "StartSel={0}, StopSel={1}, MaxWords={2}, MinWords={3}, MaxFragments=1, FragmentDelimiter={4}"


def condition(sql: str) -> str:
    """A plugin's WHERE fragment for PostgreSQL: translated, and SQLite's ``1`` for "any" (what
    ``NodeFilter.sql()`` gives when it admits everything) as ``true``: PostgreSQL's AND takes no integer."""
    return "true" if sql.strip() == "1" else f"({translate(sql)})"


def _has_symbols(column: str) -> list[str]:
    """The condition a match in ``tsv_symbols`` implies (every row's holds the leading mark, a node without
    symbols nothing else): said to the planner, which otherwise guesses a word's share of the column by a
    default where few nodes have symbols, and may walk every node newest first looking for it."""
    return ["n.symbols <> ''"] if column == "tsv_symbols" else []


def _option(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


class PgKeywordSearch:
    """Keyword search over the ``tsv`` / ``tsv_symbols`` columns, mixed into
    :class:`~memtree_core.store.postgres.store.PostgresStore` (which provides ``_rows``): the same three
    methods as the SQLite store's :class:`~memtree_core.store.keywords.KeywordSearch`, the score
    ``-ts_rank`` (lower is better, as bm25's)."""

    if TYPE_CHECKING:
        def _rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...

    def keyword_search(self, query: Keywords, *, limit: int | None = None, offset: int = 0,
                       order: Literal["rank", "newest"] = "rank", rowids: Sequence[int] | None = None,
                       rowid_range: tuple[int | None, int | None] | None = None,
                       where: NodeFilter | None = None) -> list[tuple[int, float]]:
        if order not in ("rank", "newest"):
            raise ValueError(f"unknown keyword order {order!r}; use 'rank' or 'newest'")
        if rowids is not None and not rowids:
            return []
        column, expr, params = tsquery(query)
        score = f"-ts_rank('{WEIGHTS}', n.tsv, q.q, {NORMALIZATION})" if order == "rank" else "0.0"
        sort = "2, n.rowid DESC" if order == "rank" else "n.rowid DESC"
        parts = [f"n.{column} @@ q.q", "n.status <> 'pruned'", *_has_symbols(column)]
        lo, hi = rowid_range if rowid_range is not None else (None, None)
        if lo is not None:
            parts.append("n.rowid >= %s")
            params.append(lo)
        if hi is not None:
            parts.append("n.rowid <= %s")
            params.append(hi)
        if rowids is not None:
            parts.append("n.rowid = ANY(%s)")
            params.append([int(r) for r in rowids])
        if where is not None:
            cond, where_params = where.sql()
            parts.append(condition(cond))
            params += where_params
        page = ""
        if limit is not None:
            page += " LIMIT %s"
            params.append(limit)
        if offset:
            page += " OFFSET %s"
            params.append(offset)
        rows = self._rows(f"SELECT n.rowid, {score} FROM nodes n, (SELECT {expr} AS q) q "
                          f"WHERE {' AND '.join(parts)} ORDER BY {sort}{page}", params)
        return [(int(r), float(s)) for r, s in rows]

    def keyword_count(self, query: Keywords, cap: int | None = None) -> int:
        column, expr, params = tsquery(query)
        inner = " AND ".join([f"SELECT 1 FROM nodes n WHERE n.{column} @@ ({expr})", "n.status <> 'pruned'",
                              *_has_symbols(column)])
        if cap is not None:
            inner += " LIMIT %s"
            params.append(cap)
        return int(self._rows(f"SELECT count(*) FROM ({inner}) AS hits", params)[0][0])

    def keyword_snippets(self, query: Keywords, *, rowids: Sequence[int] | None = None,
                         texts: Mapping[int, str] | None = None, marks: tuple[str, str] = ("«", "»"),
                         ellipsis: str = "…", tokens: int = 16) -> dict[int, str]:
        """As the SQLite store's; ``ts_headline`` cuts the fragment, and ``ellipsis`` marks where it starts
        after the text's start or ends before its end."""
        if (rowids is None) == (texts is None):
            raise ValueError("keyword_snippets takes rowids or texts, one of the two")
        most = max(2, int(tokens))
        options = _OPTIONS.format(_option(marks[0]), _option(marks[1]), most, max(1, most // 2), _option(" "))
        _column, expr, params = tsquery(query)
        if rowids is not None:
            if not rowids:
                return {}
            found = self._rows(
                f"SELECT n.rowid, n.content, ts_headline('{TS_CONFIG}', n.content, q.q, %s) "
                f"FROM nodes n, (SELECT {expr} AS q) q WHERE n.rowid = ANY(%s) AND n.tsv @@ q.q",
                [options, *params, [int(r) for r in rowids]])
        else:
            assert texts is not None
            keys = list(texts)
            found = self._rows(
                f"SELECT t.k, t.body, ts_headline('{TS_CONFIG}', t.body, q.q, %s) "
                f"FROM unnest(%s::bigint[], %s::text[]) AS t(k, body), (SELECT {expr} AS q) q "
                f"WHERE to_tsvector('{TS_CONFIG}', {words_sql('t.body')}) @@ q.q",
                [options, keys, [texts[k] for k in keys], *params])
        return {int(k): _cut(body, shown, marks, ellipsis) for k, body, shown in found}


def _cut(body: str, shown: str, marks: tuple[str, str], ellipsis: str) -> str:
    """``shown`` (a fragment of ``body`` with its matches marked) with ``ellipsis`` where it was cut."""
    plain = " ".join(shown.replace(marks[0], "").replace(marks[1], "").split())
    whole = " ".join(body.split())
    if not plain:
        return shown
    head = "" if whole.startswith(plain) else ellipsis
    tail = "" if whole.endswith(plain) else ellipsis
    return head + shown.strip() + tail
