"""User text -> a safe FTS5 MATCH expression.

FTS5 query syntax (AND/OR/NOT/NEAR, quotes, parentheses, ``*``, ``^``, ``-``, ``col:``) is never taken from
the user: every whitespace-separated word becomes one double-quoted FTS5 string, so operators and
punctuation are plain data.  Inside a quoted string FTS5 runs its own tokenizer, so ``my_func`` or
``foo.bar()`` becomes the phrase ``my func`` / ``foo bar`` (adjacent tokens) — an identifier still matches
as one thing, while separate words stay separate terms (a multi-word query is an AND of its words, never
one phrase).  Words with no letter or digit at all (``(``, ``*``, ``--``) are dropped.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

MAX_QUERY_CHARS = 4000
MAX_TERMS = 16


def _is_token_char(ch: str) -> bool:
    # unicode61 keeps letters, numbers and private-use characters; everything else separates tokens.
    cat = unicodedata.category(ch)
    return cat[0] in "LN" or cat == "Co"


def _tokens(word: str) -> list[str]:
    out, cur = [], []
    for ch in word:
        if _is_token_char(ch):
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


@dataclass(frozen=True)
class Term:
    text: str  # the tokens as FTS sees them, space-joined (lowercased)

    @property
    def fts(self) -> str:
        return '"' + self.text.replace('"', '""') + '"'


@dataclass(frozen=True)
class ParsedQuery:
    raw: str
    terms: tuple[Term, ...]
    notes: tuple[str, ...] = ()

    def all_of(self, terms: tuple[Term, ...] | None = None) -> str:
        return " AND ".join(t.fts for t in (terms or self.terms))

    def any_of(self, terms: tuple[Term, ...] | None = None) -> str:
        return " OR ".join(t.fts for t in (terms or self.terms))


def parse(query: str) -> ParsedQuery:
    """Split ``query`` into quoted terms; raise ValueError when nothing searchable is left."""
    if query is None or not str(query).strip():
        raise ValueError("the query is empty; pass one or more words to search for")
    query = str(query)
    notes: list[str] = []
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"the query is {len(query)} characters long; keep it under {MAX_QUERY_CHARS} "
                         "(search for a few distinctive words, not a whole text)")
    seen: dict[str, Term] = {}
    for word in query.split():
        toks = _tokens(word)
        if not toks:
            continue
        text = " ".join(toks).lower()
        seen.setdefault(text, Term(text))
    terms = tuple(seen.values())
    if not terms:
        raise ValueError(f"the query {query!r} has no letters or digits to search for")
    if len(terms) > MAX_TERMS:
        notes.append(f"only the first {MAX_TERMS} of {len(terms)} terms were used")
        terms = terms[:MAX_TERMS]
    return ParsedQuery(query, terms, tuple(notes))
