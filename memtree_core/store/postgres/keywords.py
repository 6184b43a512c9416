"""A :class:`~memtree_core.store.keywords.Keywords` as a PostgreSQL ``tsquery`` (docs/postgresql.md,
"Keyword search"): what FTS5's MATCH expression says on SQLite, over the ``tsv`` / ``tsv_symbols`` columns
of memtree_core/store/postgres/schema.py.

Each phrase goes through the same folding and splitting as the indexed text (:func:`schema.words_sql`) and
``phraseto_tsquery`` (its words adjacent, in order, stemmed); a tuple of spellings is their OR; the phrases
are ANDed, or ORed with ``any``.  ``field="symbols"`` searches ``tsv_symbols``, and ``leading`` starts each
phrase with the marker that opens that field, as FTS5's ``^`` does.

Ranking is FTS5's bm25 (its k1, b and idf), each phrase of the query a term (a tuple of spellings one
term): a phrase's frequency in a node is ``ts_rank_cd`` of that phrase alone (with no normalization it
sums the weight of each occurrence, as FTS5 sums the column weights of each hit), a node's length its
content's bytes against the average of the newest ``AVGDL_SAMPLE`` nodes, and the phrase's document count
for its idf is counted up to ``DF_CAP``: a commoner phrase weighs as one found in ``DF_CAP`` nodes (its
idf saturates at that floor), so the cost of a query never grows with its commonest word's matches.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from memtree_core.store.keywords import Keywords
from memtree_core.store.node_filter import NodeFilter
from memtree_core.store.postgres.dialect import translate
from memtree_core.store.postgres.schema import LEADING_MARK, TS_CONFIG, folded_sql, words_sql
from memtree_core.store.symbols import SYMBOL_WEIGHT, WORDS_WEIGHT


def tsquery(query: Keywords) -> tuple[str, str, list[Any]]:
    """``(column, expression, params)``: the tsvector column to match and a ``tsquery`` SQL expression
    (psycopg placeholders) with its parameters, for ``column @@ (expression)``."""
    column, parts = terms(query)
    return column, (" || " if query.any else " && ").join(e for e, _ in parts), [x for _, ps in parts for x in ps]


def terms(query: Keywords) -> tuple[str, list[tuple[str, list[Any]]]]:
    """``(column, [(expression, params), ...])``: the ``tsquery`` of each phrase of ``query`` (a tuple of
    spellings their OR), the terms bm25 weighs one by one."""
    column = "tsv_symbols" if query.field == "symbols" else "tsv"

    def one(phrase: str, params: list[Any]) -> str:
        params.append(f"{LEADING_MARK} {phrase}" if query.leading else phrase)
        return f"phraseto_tsquery('{TS_CONFIG}', {words_sql('%s')})"

    parts: list[tuple[str, list[Any]]] = []
    for p in query.phrases:
        params: list[Any] = []
        expr = one(p, params) if isinstance(p, str) else "(" + " || ".join(one(x, params) for x in p) + ")"
        parts.append((expr, params))
    return column, parts


# ts_rank_cd's weights, {D, C, B, A}: body text (D), the words of its identifiers (C) and a definition's
# symbols (A) in the ratio of the SQLite store's bm25 column weights, scaled so the largest is 1 (its range);
# a phrase's frequency is ts_rank_cd times _TOP: 1 for each hit in body text, SYMBOL_WEIGHT in symbols.
_TOP = max(1.0, WORDS_WEIGHT, SYMBOL_WEIGHT)
WEIGHTS = "{" + ", ".join(map(repr, (1.0 / _TOP, WORDS_WEIGHT / _TOP, 0.0, SYMBOL_WEIGHT / _TOP))) + "}"
K1, B = 1.2, 0.75  # FTS5's bm25 constants
DF_CAP = 1000  # a phrase's matches counted for its idf (counting 1000: 2-10 ms at 1M nodes, 0.3-3 at 100k)
AVGDL_SAMPLE = 1000  # the newest nodes whose average length stands for the store's
# ts_headline's marks, a text's own characters never (Unicode's private use), the caller's put in after
_MARKS = ("\ue000", "\ue001")
_DIACRITICS = re.compile("[\u0300-\u036f]")  # what schema.folded_sql drops
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


def _bm25(query: Keywords, expr: str, params: list[Any]) -> tuple[str, str]:
    """``(from, score)`` for ranking: the FROM items that give the query (``q.q``, with ``expr`` and its
    ``params``), each term's ``tsquery`` (``q.qI``, its parameters added to ``params``) and idf (``s.idfI``),
    and the score, FTS5's bm25 over those terms (negative: lower is better)."""
    column, parts = terms(query)
    for _expr, ps in parts:
        params += ps
    symbols = column == "tsv_symbols"
    # a term's frequency: with no normalization ts_rank_cd sums the weight of each of its hits
    weights, scale = ("{1, 1, 1, 1}", SYMBOL_WEIGHT) if symbols else (WEIGHTS, _TOP)
    queries = ", ".join([f"{expr} AS q", *(f"{e} AS q{i}" for i, (e, _) in enumerate(parts))])
    counts = "".join(
        f", (SELECT count(*) FROM (SELECT 1 FROM nodes m WHERE m.{column} @@ q.q{i} AND m.status <> 'pruned'"
        f"{' AND m.symbols <> ' + repr('') if symbols else ''} LIMIT {DF_CAP}) d)::float8 AS df{i}"
        for i in range(len(parts)))
    stats = (f"(SELECT coalesce(max(rowid), 0) FROM nodes)::float8 AS total, "
             f"(SELECT greatest(avg(octet_length(content)), 1) FROM (SELECT content FROM nodes "
             f"WHERE status <> 'pruned' ORDER BY rowid DESC LIMIT {AVGDL_SAMPLE}) a)::float8 AS avgdl{counts}")
    idfs = "".join(f", greatest(1e-6, ln((c.total - c.df{i} + 0.5) / (c.df{i} + 0.5))) AS idf{i}"
                   for i in range(len(parts)))
    # OFFSET 0 keeps each subquery whole: computed once, not copied into every row's score
    head = f"(SELECT {queries}) q, LATERAL (SELECT c.avgdl{idfs} FROM (SELECT {stats} OFFSET 0) c OFFSET 0) s"
    # bm25's term part, tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)), with tf once (0 where it is 0)
    norm = f"{K1} * ({1 - B} + {B} * octet_length(n.content)::float8 / s.avgdl)"
    score = " + ".join(f"s.idf{i} * coalesce({K1 + 1} / (1 + {norm} / nullif({scale} * "
                       f"ts_rank_cd('{weights}', n.{column}, q.q{i}, 0), 0)), 0)" for i in range(len(parts)))
    return head, f"-({score})"


def _option(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


class PgKeywordSearch:
    """Keyword search over the ``tsv`` / ``tsv_symbols`` columns, mixed into
    :class:`~memtree_core.store.postgres.store.PostgresStore` (which provides ``_rows``): the same three
    methods as the SQLite store's :class:`~memtree_core.store.keywords.KeywordSearch`, the score bm25's as
    there (lower is better; see the module docstring)."""

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
        head, score = _bm25(query, expr, params) if order == "rank" else (f"(SELECT {expr} AS q) q", "0.0")
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
        rows = self._rows(f"SELECT n.rowid, {score} FROM nodes n, {head} "
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
        after the text's start or ends before its end.  It reads the text with its diacritics dropped, as
        the index does (``Café`` is marked for ``cafe``), and shows the text's own letters at those places
        (:func:`_unfold`)."""
        if (rowids is None) == (texts is None):
            raise ValueError("keyword_snippets takes rowids or texts, one of the two")
        most = max(2, int(tokens))
        options = _OPTIONS.format(_option(_MARKS[0]), _option(_MARKS[1]), most, max(1, most // 2), _option(" "))
        _column, expr, params = tsquery(query)

        def shown(body: str, rows: str) -> str:
            # the fragment of the folded text, and that text when it is not the body (OFFSET 0: folded once)
            return (f"CASE WHEN f.t <> {body} THEN f.t END, ts_headline('{TS_CONFIG}', f.t, q.q, %s) "
                    f"FROM {rows}, (SELECT {expr} AS q) q, LATERAL (SELECT {folded_sql(body)} AS t OFFSET 0) f")

        if rowids is not None:
            if not rowids:
                return {}
            found = self._rows(
                f"SELECT n.rowid, n.content, {shown('n.content', 'nodes n')} "
                f"WHERE n.rowid = ANY(%s) AND n.tsv @@ q.q", [options, *params, [int(r) for r in rowids]])
        else:
            assert texts is not None
            keys = list(texts)
            found = self._rows(
                f"SELECT t.k, t.body, {shown('t.body', 'unnest(%s::bigint[], %s::text[]) AS t(k, body)')} "
                f"WHERE to_tsvector('{TS_CONFIG}', {words_sql('t.body')}) @@ q.q",
                [options, keys, [texts[k] for k in keys], *params])
        return {int(k): _cut(body, _unfold(body, folded, text), ellipsis).replace(_MARKS[0], marks[0])
                .replace(_MARKS[1], marks[1]) for k, body, folded, text in found}


def _unfold(body: str, folded: str | None, shown: str) -> str:
    """``shown``, a fragment of ``folded`` (``body`` with its diacritics dropped, :func:`schema.folded_sql`)
    with its matches between ``_MARKS``, as the same fragment of ``body`` with the same marks; ``shown``
    itself where ``folded`` is None (the body has no diacritics) or the fragment cannot be placed."""
    if folded is None:
        return shown
    pieces = [_DIACRITICS.sub("", unicodedata.normalize("NFD", c)) for c in body]
    if "".join(pieces) != folded:
        return shown
    origin = [i for i, piece in enumerate(pieces) for _ in piece]  # the body's character of each folded one
    origin.append(len(body))
    plain = shown.replace(_MARKS[0], "").replace(_MARKS[1], "")
    at = folded.find(plain)
    if not plain or at < 0:
        return shown
    out, j, last = [], at, origin[at]
    for c in shown:
        if c in _MARKS:
            out += [body[last:origin[j]], c]
            last = origin[j]
        else:
            j += 1
    return "".join(out) + body[last:origin[j]]


def _cut(body: str, shown: str, ellipsis: str) -> str:
    """``shown`` (a fragment of ``body`` with its matches between ``_MARKS``) with ``ellipsis`` where it
    was cut."""
    plain = " ".join(shown.replace(_MARKS[0], "").replace(_MARKS[1], "").split())
    whole = " ".join(body.split())
    if not plain:
        return shown
    head = "" if whole.startswith(plain) else ellipsis
    tail = "" if whole.endswith(plain) else ellipsis
    return head + shown.strip() + tail
