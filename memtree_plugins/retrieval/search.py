"""``search``: keyword retrieval over ``nodes_fts`` (FTS5 bm25), with a seam for semantic/hybrid modes.

How keyword search stays fast on a big store
--------------------------------------------
FTS5 computes bm25 for *every* row that matches before it can sort, so ``ORDER BY bm25 LIMIT 10`` over a
word found in 300k of 1M nodes costs 0.15-1.4 s.  memtree bounds the work instead of the store:

1. A probe walks the match list newest-first (rowid order is insertion order) and stops after
   ``window`` rows (``WINDOW`` = 1000, or 50 per requested hit): ``... ORDER BY rowid DESC LIMIT 1 OFFSET
   window-1``.  That costs O(window), not O(matches).
2. If the probe finds no row there, the query matches fewer than ``window`` nodes and ranking is
   **exact**.  Otherwise only the ``window`` newest matches are ranked (``rowid >= cutoff``), and the
   result says ``approximate: true, candidates: window``.  The trade-off, stated plainly: an older node
   that a full bm25 would have put first can be missed when the query matches more than ``window`` nodes.
   A query with one selective term (an identifier, an error message, a file name) is ranked exactly,
   because an AND is never larger than its rarest term.
3. bm25's idf makes FTS5 read each term's *whole* match list once per query (~25 ns a row: ~8 ms for a
   term in 300k nodes).  A term estimated (from its density among the newest rows, an O(256) walk) to
   match more than ``DF_BM25_MAX`` = 100k nodes is "very common".  When *every* term is very common, the
   window is returned newest first instead (``ranking: recency``, with a note): at that frequency idf is
   near zero and bm25 would only reorder by term counts, at a cost that grows with the store.  So the same
   one-word query can be bm25-ranked on a 100k store and recency-ranked on a 1M one; that is the price
   of a latency that does not grow with the store.  When only *some* terms are very common, the others
   rank (bm25 over them) and the very common ones must still match: each candidate is checked with one
   seek into their match lists (``keyword_search`` given the candidates' ``rowids``), since scoring them
   would read those lists whole (~13 ms for a term in 200k of 1M nodes) for a weight that is small beside
   the rarer terms'.
4. The window is ranked without joining ``nodes`` (a random page read per candidate on a big store); only
   the best few are checked against the filters.  When a filter (kind, path, time, a non-default status)
   is restrictive, the join is used and the window grows 4x at a time up to ``MAX_WINDOW`` until enough
   hits pass; ``parent_id`` first narrows the rowid range to that parent's children.
5. Terms are ANDed.  When the AND finds fewer than ``limit`` hits, an OR over the terms fills the rest
   (marked ``matched: some``, strategy ``and+or``); terms matching at least ``window`` nodes are left out
   of that OR when rarer terms exist, since their idf is near zero and they would flood the window.

Definitions first
-----------------
File chunks that hold a definition carry a ``symbols`` column (memtree_core/store/symbols.py: name,
qualified name, members, identifier parts), weighted ``SYMBOL_WEIGHT`` times body text in bm25.  A query
that is one identifier also gets a definition pass before the AND ranking: the chunks whose ``symbols``
hold it, sorted by how they define it (the exact name, the name up to case and ``_``, a member of a class
kept whole), come first; chunks that only carry it (methods of a class by that name) are left to bm25.
The pass is skipped for a term so common that bm25 itself is (see 3.).

Modes
-----
Each registered retriever (``memtree_register_retrievers``) is a mode of its name: ``keyword`` (this
module's :class:`KeywordRetriever`) and ``semantic`` (the semantic plugin's) are the built-ins.  ``hybrid``
fuses keyword's list with those of the retrievers that declare ``fuse`` through the ranker named by the
``search.ranker`` setting (the fused retrievers' lists are made on threads beside keyword's); ``auto`` is
hybrid when one of those is available, else keyword with the reason.
A mode with no retriever behind it fails with a clear "not available" error.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memtree_core.store import KINDS, source_uri
from memtree_core.store.keywords import Keywords
from memtree_core.store.node_filter import NodeFilter
from memtree_plugins.retrieval.models import SearchHit, SearchResult
from memtree_plugins.retrieval.nodes import line_range, node_tokens_estimate, parse_statuses, preview
from memtree_plugins.retrieval.priors import apply_priors, factors_for
from memtree_plugins.retrieval.queries import children_rowid_range, nodes_by_rowid, rowids_passing, symbols_of
from memtree_plugins.retrieval.query import ParsedQuery, Term, parse
from memtree_plugins.retrieval.settings import search_settings
from memtree_plugins.retrieval.snippets import snippets
from memtree_plugins.retrieval.when import parse_time

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memtree_core.context import Context, StoreAccess
    from memtree_core.store import NodeRow
    from memtree_core.types import Retriever

log = logging.getLogger("memtree.search")

MODES = ("auto", "keyword", "semantic", "hybrid")  # the built-in modes; each registered retriever adds its own
AUTO_KEY = "retrieval.auto_mode"
AUTO_TTL_S = 5.0  # how long the auto decision is reused: it costs a query over nodes_vec
WINDOW = 1000
PER_HIT = 50  # the window grows with the limit: at least this many candidates per requested hit
DF_BM25_MAX = 100_000  # above this many matches a term's idf count costs more than a few ms: see above
DF_PROBE = 256
WALK_READ_MAX = 10_000  # rowids a probe reads into a list (a one-term query's window, up to MAX_LIMIT * PER_HIT)
MAX_WINDOW = 32_000
MAX_LIMIT = 200
DEF_CANDIDATES = 100  # chunks naming a one-word query in their symbols, sorted by how they define it
# candidates per list before fusion and priors, at least (hit@5 over the question sets, hybrid, limit 10:
# 20 -> 30 lifted marshmallow 0.68 -> 0.71 and tar 0.47 -> 0.53; 40 and 60 were no better on the whole)
POOL = 30

@dataclass(frozen=True)
class Filters(NodeFilter):
    """What a hit must satisfy besides matching the query (the store's :class:`NodeFilter`, built from the
    tool's arguments).  ``status`` None means any status."""

    @classmethod
    def build(cls, *, kind: str | None = None, status: str | None = "live", path_prefix: str | None = None,
              since: str | int | None = None, until: str | int | None = None, parent_id: str | None = None,
              exclude: str | None = None, project_root: Path | None = None,
              other_roots: Sequence[Path] = ()) -> Filters:
        """``other_roots``: other machines' checkouts of the project (a shared store): a relative path
        filters (or excludes) that path in each of them too."""
        kinds = tuple(k.strip() for k in kind.split(",") if k.strip()) if kind else None
        bad = [k for k in kinds or () if k not in KINDS]
        if bad:  # an unknown kind would silently match nothing
            raise ValueError(f"unknown kind(s) {', '.join(map(repr, bad))}; use {', '.join(KINDS)}")
        since_ms = parse_time(since, "since")
        until_ms = parse_time(until, "until")
        if since_ms is not None and until_ms is not None and until_ms <= since_ms:
            raise ValueError("'until' is not after 'since'; the time range is empty")
        excluded = tuple(dict.fromkeys(u for part in (exclude or "").split(",")
                                       for root in (project_root, *other_roots)
                                       if (u := _uri_prefix(part, root)) is not None))
        also = tuple(dict.fromkeys(u for root in other_roots if _relative(path_prefix)
                                   and (u := _uri_prefix(path_prefix, root)) is not None))
        return cls(kinds or None, parse_statuses(status), _uri_prefix(path_prefix, project_root),
                   since_ms, until_ms, (parent_id or "").strip() or None, excluded, also)


def _relative(path: str | None) -> bool:
    """A path given relative to the project (``src/``), which names that path in every checkout."""
    text = (path or "").strip()
    return bool(text) and "://" not in text and not text.startswith(("tool:", "/", "~"))


def _uri_prefix(path: str | None, root: Path | None) -> str | None:
    """A source path prefix as stored in ``source_uri``: URIs pass through, paths become file:// URIs."""
    if not path or not path.strip():
        return None
    path = path.strip()
    if "://" in path or path.startswith("tool:"):
        return path
    p = Path(path).expanduser()
    if not p.is_absolute() and root is not None:
        p = root / p
    text = str(p) if not path.endswith("/") else str(p).rstrip("/") + "/"
    return source_uri.prefix(text)


@dataclass
class _Ranked:
    rowids: list[tuple[int, float]] = field(default_factory=list)
    approximate: bool = False
    candidates: int = 0


Walks = dict[tuple[Keywords, "tuple[int, int] | None"], tuple[list[int], bool]]


def _nth_newest(store: StoreAccess, query: Keywords, n: int, rowid_range: tuple[int, int] | None = None,
                walks: Walks | None = None, read: int = 0) -> int | None:
    """The rowid of the ``n``-th newest node (1-based) matching ``query``, or None when fewer match: a walk
    of ``n`` entries of the match list, never all of it.  ``walks``: this search's walks so far, by (query,
    range): a second probe of a match list already read that far costs nothing (on PostgreSQL each is a scan
    of the term's posting list); ``read``: how far to read it now, for the probe expected next."""
    if walks is None or max(n, read) > WALK_READ_MAX:
        rows = store.keyword_search(query, limit=1, offset=n - 1, order="newest", rowid_range=rowid_range)
        return int(rows[0][0]) if rows else None
    seen, whole = walks.get((query, rowid_range), ([], False))
    if len(seen) < n and not whole:
        want = max(n, read)
        seen = [int(r) for r, _ in store.keyword_search(query, limit=want, order="newest", rowid_range=rowid_range)]
        whole = len(seen) < want
        walks[(query, rowid_range)] = (seen, whole)
    return seen[n - 1] if len(seen) >= n else None


def _from(rowid_range: tuple[int, int] | None, cutoff: int | None) -> tuple[int | None, int | None] | None:
    """``rowid_range`` narrowed to rowids from ``cutoff`` on."""
    if cutoff is None:
        return rowid_range
    if rowid_range is None:
        return cutoff, None
    return max(rowid_range[0], cutoff), rowid_range[1]


def _heavy(store: StoreAccess, term: Term, top_rowid: int, walks: Walks | None = None, read: int = 0) -> bool:
    """Does ``term`` match more than ``DF_BM25_MAX`` nodes?  Estimated from how densely it occurs among
    the newest rows (an O(``DF_PROBE``) walk), because an exact count is O(matches)."""
    nth = _nth_newest(store, term.keywords, DF_PROBE, walks=walks, read=read)
    if nth is None:
        return False
    return DF_PROBE * top_rowid / max(1, top_rowid - nth + 1) > DF_BM25_MAX


def _rank(store: StoreAccess, expr: Keywords, filters: Filters, limit: int, exclude: set[int],
          rowid_range: tuple[int, int] | None, by_recency: bool = False, require: Keywords | None = None,
          walks: Walks | None = None) -> _Ranked:
    """Rank the matches of ``expr`` that pass ``filters`` (bm25, or newest first when ``by_recency``),
    over at most a window of the newest matches.  ``require``: terms each hit must also match (all of
    them), that take no part in the score (very common terms, see 3. above)."""
    order = "newest" if by_recency else "rank"
    window = max(WINDOW, limit * PER_HIT)
    if by_recency and filters.restrictive():
        # Newest first streams from FTS5 and stops at LIMIT: one pass over the widest window costs no
        # more than the rows it reads, so there is nothing to gain from growing it step by step.
        window = MAX_WINDOW
    want = limit + len(exclude)
    while True:
        cutoff = _nth_newest(store, expr, window, rowid_range, walks)  # only the window's matches are ranked
        span = _from(rowid_range, cutoff)
        rows = None
        if not filters.restrictive():
            # Fast path: rank without joining nodes (a random page read per candidate on a big store),
            # then check the status (and the required terms) of the few best only, more when too few pass.
            extra = want * 2 + 10
            while True:
                top = store.keyword_search(expr, limit=extra, order=order, rowid_range=span)
                ok = rowids_passing(store, [r for r, _ in top], filters)
                if require is not None:
                    ok &= {r for r, _ in store.keyword_search(require, order="newest",
                                                                 rowids=[r for r, _ in top if r in ok])}
                rows = [(r, sc) for r, sc in top if r in ok]
                if len(rows) >= want or len(top) < extra or require is None or extra >= window:
                    break
                extra *= 4
            if len(rows) < want and len(top) == extra:
                rows = None  # too many filtered out: take the exact (joined) path
        if rows is None:
            full = expr if require is None else Keywords((*expr.phrases, *require.phrases))
            rows = store.keyword_search(full, limit=want, order=order, rowid_range=span, where=filters)
        got = [(r, -sc) for r, sc in rows if r not in exclude][:limit]
        if cutoff is None:
            return _Ranked(got, False, 0)
        if len(got) >= limit or window >= MAX_WINDOW or not filters.restrictive():
            return _Ranked(got, True, window)
        window *= 4


def _definitions(store: StoreAccess, pq: ParsedQuery, filters: Filters, limit: int,
                 rowid_range: tuple[int, int] | None) -> list[tuple[int, float]]:
    """For a query that is one identifier, the chunks that define it, best first.

    bm25 alone lets the many chunks that use a common name (``Option``, ``echo``) outscore the one that
    defines it, so the chunks whose ``symbols`` column holds the word are sorted by how they define it
    (see :func:`_defines`); chunks that merely carry it (a method of class ``Option``) are left to bm25.
    """
    if len(pq.terms) != 1 or len(pq.raw.split()) != 1:
        return []
    term, word = pq.terms[0], pq.raw.strip()
    expr, want = term.in_symbols(), max(limit, DEF_CANDIDATES)
    # Usually few chunks name the word (a common word of prose names no definition): read them all in one
    # pass and score only those that define it.  Only when more name it does bm25 pick the candidates:
    # first the chunks whose symbols text starts with the word (their own name is the word: a type that
    # hundreds of methods and impl blocks also carry, ``Bytes``, is among these however long its body),
    # then the best of all that carry it (members of a class kept whole).
    named = [r for r, _ in store.keyword_search(expr, limit=want + 1, order="newest", rowid_range=rowid_range)]
    few = len(named) <= want
    if few:
        found = [(r, 0.0) for r in sorted(rowids_passing(store, named, filters))]
    else:
        found = _rank(store, term.in_symbols(leading=True), filters, want, set(), rowid_range).rowids
        seen = {r for r, _ in found}
        found += [(r, sc) for r, sc in _rank(store, expr, filters, want, seen, rowid_range).rowids]
    if not found:
        return []
    texts = symbols_of(store, [r for r, _ in found])
    if few:  # bm25 for the chunks that define the word, to order those of a tier
        defining = [r for r, _ in found if r in texts and _defines(texts[r][0], word, term.text) is not None]
        found = [(r, -sc) for r, sc in store.keyword_search(expr, rowids=defining)] if defining else []
    # Within a tier, a type's own definition comes before its impl blocks (Rust: ``struct Bytes`` and the
    # many ``impl Trait for Bytes`` that carry the same name).
    tiered = sorted(((tier, texts[r][1], -sc, r) for r, sc in found if r in texts
                     and (tier := _defines(texts[r][0], word, term.text)) is not None))
    out: list[tuple[int, float]] = []
    for _tier, _impl, neg, r in tiered[:limit]:
        score = -neg if not out else min(-neg, out[-1][1] - 1e-3)  # keep the list best-first
        out.append((r, score))
    return out


def _defines(symbols: str, word: str, term_text: str) -> int | None:
    """How a chunk with this ``symbols`` text defines ``word``: 0 by that exact name (or qualified name),
    1 by a name equal up to case and ``_`` (``Command`` for ``command``), 2 as a member of a class kept whole;
    None when it only carries the word (a parent's name, a part of a longer name)."""
    words = symbols.split()
    if not words:
        return None
    own, qual, members = words[0], words[2] if len(words) > 2 else "", [w for w in words[3:] if "." in w]
    if own == word or qual == word:
        return 0
    if " ".join(_fts_tokens(own)) == term_text or " ".join(_fts_tokens(qual)) == term_text:
        return 1
    if any(m == word or m.rsplit(".", 1)[-1] == word for m in members):
        return 2
    return None


def _fts_tokens(name: str) -> list[str]:
    from memtree_plugins.retrieval.query import _tokens

    return [t.lower() for t in _tokens(name)]


def _above(first: list[tuple[int, float]], rest: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Shift ``first``'s scores above every score in ``rest`` so the merged list stays best-first."""
    if not first or not rest:
        return first
    shift = max(0.0, max(s for _, s in rest) - min(s for _, s in first)) + 1e-3
    return [(r, s + shift) for r, s in first]


def keyword_search(app: Context, pq: ParsedQuery, limit: int, filters: Filters, marked: bool = True,
                   priors: bool = True) -> SearchResult:
    """Keyword hits, best first; ``marked``: with snippets (a caller that keeps only ids and scores, such as
    hybrid search's fusion, skips them); ``priors``: re-ranked by the priors for the query (priors.py:
    source before tests and docs, a member before its header), which hybrid search applies after fusion."""
    shown = limit
    if priors and factors_for(pq.raw) != (1.0, 1.0):
        limit = _pool(limit)
    else:
        priors = False
    store = app.store
    result = SearchResult(query=pq.raw, mode="keyword", terms=[t.text for t in pq.terms], strategy="and",
                          notes=list(pq.notes))
    notes = result.notes
    rowid_range: tuple[int, int] | None = None
    if filters.parent_id:
        rowid_range = children_rowid_range(store, filters.parent_id)
        if rowid_range is None:
            notes.append(f"node {filters.parent_id} has no children")
            return result

    with store.lock:  # one consistent view for the probe, the ranking and the snippets
        and_expr = pq.all_of()
        newest = store.query_one("SELECT max(rowid) FROM nodes")
        top = int(newest[0] or 0) if newest else 0
        walks: Walks = {}
        # one term: its probe reads as far as the ranking's window, whose match list it is
        read = max(WINDOW, limit * PER_HIT) if len(pq.terms) == 1 and rowid_range is None else 0
        heavy = tuple(t for t in pq.terms if _heavy(store, t, top, walks, read))
        by_recency = len(heavy) == len(pq.terms)
        # Some terms very common, some not: the others rank, the very common ones only have to match
        # (bm25 would read their whole match lists for an idf near the floor; see 3. above).
        light = tuple(t for t in pq.terms if t not in heavy)
        rank_expr, require = (pq.all_of(light), pq.all_of(heavy)) if heavy and light else (and_expr, None)
        if by_recency:
            result.ranking = "recency"
            notes.append(f"every term matches more than ~{DF_BM25_MAX:,} nodes: the newest matches come "
                         "first (bm25 would have to read every match); add a rarer word to rank by relevance")
        # (a term so common that bm25 is skipped is no identifier worth a scan of its matches)
        defined = [] if by_recency else _definitions(store, pq, filters, limit, rowid_range)
        ranked = _rank(store, rank_expr, filters, limit - len(defined), {r for r, _ in defined}, rowid_range,
                       by_recency, require, walks)
        picked: list[tuple[int, float, Keywords, str]] = [(r, s, and_expr, "all") for r, s in
                                                     [*_above(defined, ranked.rowids), *ranked.rowids]]
        approximate, candidates = ranked.approximate, ranked.candidates
        if len(picked) < limit and len(pq.terms) > 1:
            counts = {t: store.keyword_count(t.keywords, WINDOW) for t in pq.terms}
            selective = tuple(t for t in pq.terms if counts[t] < WINDOW)
            or_terms = selective if selective else pq.terms
            dropped = [t.text for t in pq.terms if t not in or_terms]
            if dropped:
                notes.append("very common term(s) left out of the any-term fallback: " + ", ".join(dropped))
            or_expr = pq.any_of(or_terms)
            more = _rank(store, or_expr, filters, limit - len(picked), {r for r, *_ in picked}, rowid_range,
                         by_recency and not selective)
            if more.rowids:
                result.strategy = "and+or"
            picked += [(r, s, or_expr, "some") for r, s in more.rowids]
            approximate = approximate or more.approximate
            candidates = max(candidates, more.candidates)
        nodes = nodes_by_rowid(store, [r for r, *_ in picked])
        picked = _in_score_order(picked)
        if priors:
            by_id = {nodes[r].id: n for n, (r, *_) in enumerate(picked) if r in nodes}
            order = apply_priors(pq.raw, [(nodes[r].id, s) for r, s, *_ in picked if r in nodes],
                                 lambda nid: nodes[picked[by_id[nid]][0]].source_uri,
                                 lambda nid: nodes[picked[by_id[nid]][0]].meta)
            picked = [(picked[by_id[nid]][0], s, *picked[by_id[nid]][2:]) for nid, s in order]
        picked = picked[:shown]
        marks = snippets(store, [(r, expr, nodes[r].content) for r, _s, expr, _m in picked if r in nodes],
                         pq.terms) if marked else {}

    result.approximate = approximate
    result.candidates = candidates
    for rowid, score, _expr, matched in picked:
        node = nodes.get(rowid)
        if node is not None:
            result.hits.append(_hit(app, node, score, marks.get(rowid, ""), matched))
    return result


def _in_score_order(picked: list[tuple[int, float, Keywords, str]]) -> list[tuple[int, float, Keywords, str]]:
    """The hits that match every term first, then those of the any-term fallback, each scored below the
    last of the first (its bm25 scaled down, its order kept): the score shown is the order ranked by."""
    first = [p for p in picked if p[3] == "all"]
    rest = [p for p in picked if p[3] != "all"]
    if not first or not rest:
        return picked
    floor = min(s for _, s, *_ in first)
    top = max(s for _, s, *_ in rest)
    if top < floor:
        return picked
    scale = floor / top * 0.99 if top > 0 and floor > 0 else None
    out = list(first)
    for r, s, expr, m in rest:
        new = s * scale if scale is not None else min(s, (out[-1][1] if out else floor) - 1e-3)
        out.append((r, new, expr, m))
    return out


def _hit(app: Context, node: NodeRow, score: float, snippet: str, matched: str) -> SearchHit:
    lines = line_range(node)
    first = preview(node.content)
    return SearchHit(id=node.id, kind=node.kind, status=node.status, source_uri=node.source_uri,
                     created_at=node.created_at, tokens=node_tokens_estimate(app, node),
                     lines=list(lines) if lines else None, preview=first,
                     score=round(score, 4), snippet=snippet or first, matched=matched)


# -- modes ---------------------------------------------------------------------------------------------
class KeywordRetriever:
    """The built-in ``keyword`` retriever: :func:`keyword_search` (``result`` keeps its snippets and notes)."""

    name = "keyword"
    fuse = False  # hybrid search starts from it; it is not fused twice

    def available(self, app: Context) -> tuple[bool, str]:
        return True, ""

    def result(self, app: Context, query: str, limit: int, filters: Filters) -> SearchResult:
        return keyword_search(app, parse(query), limit, filters)

    def retrieve(self, app: Context, query: str, limit: int, filters: Filters) -> list[tuple[str, float]]:
        return [(h.id, h.score) for h in keyword_search(app, parse(query), limit, filters, marked=False,
                                                        priors=False).hits]


def modes(app: Context) -> list[str]:
    """Every mode ``search`` accepts here: the built-in names and each registered retriever's."""
    return list(dict.fromkeys((*MODES, *app.plugins.retrievers.names())))


def _retriever(app: Context, name: str) -> Retriever:
    found = app.plugins.retrievers.get(name)
    if found is not None:
        return found
    why = (f"no plugin registered a retriever named {name!r} (is the plugin that provides it disabled?)"
           if app.store.vector.available else f"vector search is off: {app.store.vector.reason}")
    raise ValueError(f"search mode '{name}' is not available yet: {why}; use mode='keyword'")


def _fusing(app: Context) -> list[Retriever]:
    """The retrievers ``hybrid`` fuses with keyword, in precedence order."""
    return [r for r in app.plugins.retrievers.ranked() if getattr(r, "fuse", False) and r.name != "keyword"]


def auto_mode(app: Context) -> tuple[str, str]:
    """'hybrid' when semantic search can run on this store (the default), else 'keyword' and why."""
    import time

    cached = app.state.get(AUTO_KEY)  # a per-daemon cache of the decision: it costs a query over nodes_vec
    if cached and time.monotonic() - cached[0] < AUTO_TTL_S:
        return cached[1], cached[2]
    decision = ("keyword", "no plugin registered a retriever for hybrid search (the semantic plugin is "
                           "not loaded)")
    for retriever in _fusing(app):
        try:
            ok, why = retriever.available(app)
        except Exception as exc:  # a third-party retriever's failure costs its mode, not the search
            ok, why = False, f"retriever {retriever.name!r} failed: {type(exc).__name__}: {exc}"
        if ok:
            decision = ("hybrid", "")
            break
        if decision[0] == "keyword" and "no plugin registered" in decision[1]:
            decision = ("keyword", why)
    app.state[AUTO_KEY] = (time.monotonic(), *decision)
    return decision


def search(app: Context, query: str, mode: str = "auto", limit: int = 10,
           filters: Filters | None = None) -> SearchResult:
    """Search the store; see the module docstring for how ranking stays bounded.

    ``mode='auto'`` is hybrid when the store has vectors from the configured embedder, else keyword (the
    result's notes say why).
    """
    mode = (mode or "auto").strip().lower()
    known = modes(app)
    if mode not in known:
        raise ValueError(f"unknown search mode {mode!r}; use one of {', '.join(known)}")
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, not {limit!r}")
    if limit > MAX_LIMIT:
        raise ValueError(f"limit {limit} is above the maximum of {MAX_LIMIT}; narrow the query or page "
                         "with filters (since/until, kind, path_prefix)")
    pq = parse(query)
    filters = filters or Filters()
    why = ""
    if mode == "auto":
        mode, why = auto_mode(app)
    if mode == "keyword":
        result = _single(app, _retriever(app, "keyword"), pq, limit, filters)
        result.degraded = f"keyword only: {in_brief(why)}" if why else None
        return result
    if mode != "hybrid":
        return _single(app, _retriever(app, mode), pq, limit, filters)
    keyword = _retriever(app, "keyword")
    fusing = _fusing(app)
    # The fused lists are made beside keyword's: each mostly waits (on the embedder, on a server), so a hybrid
    # search costs about its slowest list rather than their sum.
    pending = {r.name: _beside().submit(r.retrieve, app, pq.raw, _pool(limit), filters) for r in fusing}
    lists = {"keyword": keyword.retrieve(app, pq.raw, _pool(limit), filters)}
    failed = [] if fusing else ["no plugin registered a retriever for hybrid search (the semantic plugin is "
                                "not loaded)"]
    broken: list[str] = []
    for retriever in fusing:
        try:
            lists[retriever.name] = pending[retriever.name].result()
        except ValueError as exc:  # no embedder / no vectors / mixed models: say why
            failed.append(str(exc))
        except Exception as exc:  # a broken plugin retriever costs its list, not the (default) search
            log.exception("retriever %s failed in hybrid search", retriever.name)
            broken.append(f"retriever {retriever.name!r} failed ({type(exc).__name__}: {exc})")
    if len(lists) == 1:  # nothing to fuse with: keyword, saying why
        result = _single(app, keyword, pq, limit, filters)
        result.notes.extend(broken)  # a failure, not a state: said each time it happens
        result.degraded = f"hybrid fell back to keyword: {in_brief((failed + broken)[0])}"
        return result
    return _fused(app, pq, mode, limit, lists)


_threads: tuple[int, ThreadPoolExecutor] | None = None  # (the process that made it, the pool)


def _beside() -> ThreadPoolExecutor:
    """The threads hybrid search runs its fused retrievers on: made on first use in each process (a forked
    child has none of its parent's threads), idle between searches."""
    global _threads
    if _threads is None or _threads[0] != os.getpid():
        _threads = (os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="memtree-retriever"))
    return _threads[1]


def in_brief(why: str) -> str:
    """A degraded state in a few words, its first clause: the whole reason is ``memtree info``'s to give."""
    head = why.split(": ", 1)[0].split(" (", 1)[0].strip().rstrip(".;")
    return (head[:80] or "semantic search is off") + " (details: memtree info)"


def _single(app: Context, retriever: Retriever, pq: ParsedQuery, limit: int, filters: Filters) -> SearchResult:
    """One retriever's hits; one that builds its own result (keyword: snippets, notes) gives that."""
    result = getattr(retriever, "result", None)
    if callable(result):
        return result(app, pq.raw, limit, filters)  # type: ignore[no-any-return]
    return _fused(app, pq, retriever.name, limit, {retriever.name: retriever.retrieve(app, pq.raw, _pool(limit),
                                                                                      filters)})


def _fused(app: Context, pq: ParsedQuery, mode: str, limit: int,
           lists: dict[str, list[tuple[str, float]]]) -> SearchResult:
    if len(lists) == 1:
        ((_, ranked),) = lists.items()
        order = [(nid, score) for nid, score in ranked[:_pool(limit)]]
    else:
        name = search_settings(app).ranker
        ranker = app.plugins.rankers.get(name)
        if ranker is None:
            raise ValueError(f"search mode '{mode}' needs the ranker {name!r} (setting search.ranker), "
                             "which no plugin registered; use mode='keyword'")
        fused = (ranker.fuse(lists, _pool(limit), query=pq.raw) if getattr(ranker, "reads_query", False)
                 else ranker.fuse(lists, _pool(limit)))
        order = [(h.node_id, h.score) for h in fused]
    nodes = app.store.get_nodes(nid for nid, _ in order)
    # the priors in every mode, one retriever's list too (priors.py; semantic hit@5 rose most)
    order = apply_priors(pq.raw, order, lambda nid: nodes[nid].source_uri if nid in nodes else None,
                         lambda nid: nodes[nid].meta if nid in nodes else {})[:limit]
    result = SearchResult(query=pq.raw, mode=mode, terms=[t.text for t in pq.terms], strategy=mode)
    for nid, score in order:
        node = nodes.get(nid)
        if node is not None:
            result.hits.append(_hit(app, node, score, preview(node.content), "some"))
    return result


def _pool(limit: int) -> int:
    """How many candidates a retriever gives for ``limit`` hits: more than asked, so that a hit the priors
    move down is replaced (and a hit they move up is there to move)."""
    return min(MAX_LIMIT, max(limit * 2, POOL))
