"""A search hit's snippet: the words around the match, marked, at a cost that does not grow with the body.

FTS5's ``snippet()`` tokenizes a hit's whole body (porter stemming included) to pick its best fragment:
~1 ms for a 100 KB tool output, so ten such hits cost more than the search.  A body up to ``WHOLE_CHARS``
still gets ``snippet()`` over the indexed row.  A longer one gets it over a window of ``WINDOW_CHARS``
around the first place a query word occurs, found by a plain case-insensitive scan (a few us for 100 KB),
cut by the store with the index's own tokenizer (``keyword_snippets(texts=...)``), so the marks and the
fragment are made by the same rules.  When the scan finds no word there (a match through stemming or
diacritics the scan does not see), the whole body is used as before: correct first, fast in the usual case.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memtree_core.store.keywords import Keywords

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess
    from memtree_plugins.retrieval.query import Term

SNIPPET_TOKENS = 16
OPEN, CLOSE, ELLIPSIS = "«", "»", "…"
WHOLE_CHARS = 4096  # bodies up to this are cut by snippet() over the stored row itself
WINDOW_CHARS = 2048  # the window around the first match of a longer body
BEFORE_CHARS = 512  # of which this much comes before the match
MIN_PREFIX = 4  # a word is also looked for without up to 3 final letters (retries -> retr, for "retry")
SCAN_TERMS = 8  # query terms looked for in one big body
_BLANK = re.compile(r"\s")


def snippets(store: StoreAccess, hits: list[tuple[int, Keywords, str]], terms: tuple[Term, ...]) -> dict[int, str]:
    """The marked fragment of each hit ``(rowid, what it matched, body)``, by rowid."""
    out: dict[int, str] = {}
    windows: dict[int, tuple[int, int, str]] = {}
    for rowid, _expr, content in hits:
        if len(content) > WHOLE_CHARS and (at := first_match(content, terms)) is not None:
            windows[rowid] = (*_window(content, at), content)
    if windows:  # any query word marks a window: an AND of words far apart would miss it
        out.update(_window_snippets(store, Keywords(tuple(t.phrase for t in terms), any=True), windows))
    rest: dict[Keywords, list[int]] = {}  # the others, one statement per query
    for rowid, expr, _content in hits:
        if not out.get(rowid):
            rest.setdefault(expr, []).append(rowid)
    for expr, rowids in rest.items():
        found = store.keyword_snippets(expr, rowids=rowids, marks=(OPEN, CLOSE), ellipsis=ELLIPSIS,
                                       tokens=SNIPPET_TOKENS)
        out.update((r, (found.get(r) or "").strip()) for r in rowids)
    return out


def first_match(content: str, terms: tuple[Term, ...]) -> int | None:
    """Where the earliest query word occurs in ``content`` (case-insensitive), or None.  Each term's first
    token is looked for, then the same token shortened by up to three letters (stemmed forms); at most
    ``SCAN_TERMS`` terms, so a long query costs a bounded number of scans of a big body."""
    lowered = content.lower()
    if len(lowered) != len(content):  # a letter lowercased into two ("İ"): offsets would shift
        return _first_match_re(content, terms)
    best: int | None = None
    for term in terms[:SCAN_TERMS]:
        token = term.text.split(" ", 1)[0]
        shortest = token[:max(MIN_PREFIX, len(token) - 3)]
        if lowered.find(shortest) < 0:  # every longer form holds it: one scan rules the term out
            continue
        for cut in range(0, 4):
            word = token[:len(token) - cut]
            if len(word) < len(shortest):
                break
            at = lowered.find(word)
            if at >= 0:
                best = at if best is None else min(best, at)
                break
    return best


def _first_match_re(content: str, terms: tuple[Term, ...]) -> int | None:
    """:func:`first_match` by case-insensitive regular expressions, for the rare body whose lowercase form
    is longer than itself."""
    best: int | None = None
    for term in terms[:SCAN_TERMS]:
        token = term.text.split(" ", 1)[0]
        shortest = token[:max(MIN_PREFIX, len(token) - 3)]
        for word in dict.fromkeys((token, token[:-1], token[:-2], shortest)):
            if len(word) < len(shortest):
                continue
            m = re.search(re.escape(word), content, re.IGNORECASE)
            if m is not None:
                best = m.start() if best is None else min(best, m.start())
                break
    return best


def _window_snippets(store: StoreAccess, expr: Keywords, windows: dict[int, tuple[int, int, str]]
                     ) -> dict[int, str]:
    """The snippet of each window ``(start, end, body)``; a window with no match of ``expr`` is left out."""
    rows = store.keyword_snippets(expr, texts={r: body[a:b] for r, (a, b, body) in windows.items()},
                                  marks=(OPEN, CLOSE), ellipsis=ELLIPSIS, tokens=SNIPPET_TOKENS)
    out = {}
    for rowid, text in rows.items():
        found = (text or "").strip()
        if OPEN not in found:
            continue
        start, end, body = windows[rowid]
        # The window's own edges are not the body's: say that text goes on, as snippet() does at its cuts.
        if start > 0 and not found.startswith(ELLIPSIS):
            found = ELLIPSIS + found
        if end < len(body) and not found.endswith(ELLIPSIS):
            found += ELLIPSIS
        out[rowid] = found
    return out


def _window(content: str, at: int) -> tuple[int, int]:
    """``WINDOW_CHARS`` around ``at`` (``BEFORE_CHARS`` before it), widened to the nearest blank at each end
    (within 64 characters) so that no word is cut in two."""
    start = max(0, at - BEFORE_CHARS)
    end = min(len(content), start + WINDOW_CHARS)
    if start > 0:
        m = _BLANK.search(content, start - 64, start)
        start = m.start() + 1 if m else start
    if end < len(content):
        m = _BLANK.search(content, end, end + 64)
        end = m.start() if m else end
    return start, end
