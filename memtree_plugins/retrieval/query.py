"""User text -> the phrases a keyword search looks for (:class:`~memtree_core.store.keywords.Keywords`).

The index's query syntax (FTS5: AND/OR/NOT/NEAR, quotes, parentheses, ``*``, ``^``, ``-``, ``col:``) is never
taken from the user, nor written here: every whitespace-separated word becomes one phrase of its tokens,
which the store quotes, so operators and punctuation are plain data.  A phrase is a run of adjacent tokens
(the index's tokenizer splits it again), so ``my_func`` or ``foo.bar()`` becomes the phrase ``my func`` /
``foo bar`` — an identifier still matches as one thing, while separate words stay separate terms (a
multi-word query is an AND of its words, never one phrase).  Words with no letter or digit at all (``(``,
``*``, ``--``) are dropped.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from memtree_core.store.keywords import Keywords

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
    text: str  # the tokens as the index sees them, space-joined (lowercased)

    @property
    def keywords(self) -> Keywords:
        """This term alone."""
        return Keywords((self.text,))

    def in_symbols(self, leading: bool = False) -> Keywords:
        """This term in a node's ``symbols`` (the names a definition chunk defines); ``leading``: as its
        first name."""
        return Keywords((self.text,), field="symbols", leading=leading)


@dataclass(frozen=True)
class ParsedQuery:
    raw: str
    terms: tuple[Term, ...]
    notes: tuple[str, ...] = ()

    def all_of(self, terms: tuple[Term, ...] | None = None) -> Keywords:
        return Keywords(tuple(t.text for t in (terms or self.terms)))

    def any_of(self, terms: tuple[Term, ...] | None = None) -> Keywords:
        return Keywords(tuple(t.text for t in (terms or self.terms)), any=True)


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
