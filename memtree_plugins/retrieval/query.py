"""User text -> the phrases a keyword search looks for (:class:`~memtree_core.store.keywords.Keywords`).

The index's query syntax (FTS5: AND/OR/NOT/NEAR, quotes, parentheses, ``*``, ``^``, ``-``, ``col:``) is never
taken from the user, nor written here: every whitespace-separated word becomes one phrase of its tokens,
which the store quotes, so operators and punctuation are plain data.  A phrase is a run of adjacent tokens
(the index's tokenizer splits it again), so ``my_func`` or ``foo.bar()`` becomes the phrase ``my func`` /
``foo bar`` — an identifier still matches as one thing, while separate words stay separate terms (a
multi-word query is an AND of its words, never one phrase).  Words with no letter or digit at all (``(``,
``*``, ``--``) are dropped.

What a developer types is read as they mean it:

* words between double quotes (``"retry delay"``) are one phrase, kept whole (stopwords included);
* English function words (``where``, ``do``, ``the``: :data:`STOPWORDS`) are left out when the query has
  other words -- they match nearly every chunk of prose and, as AND terms, only take hits away;
* an identifier is looked for in both spellings: ``parseArgs`` also as the words ``parse args`` (matching
  ``parse_args``), ``parse_args`` also as ``parseargs`` (matching ``parseArgs``);
* every term counts: bm25 weights each by its rarity, so a long question is not cut short.  Only past
  ``MAX_TERMS`` (a bound on the cost of one match expression, far above a question's length) are terms
  left out, and the result says so.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memtree_core.store.keywords import Keywords
from memtree_core.store.symbols import split_identifier

MAX_QUERY_CHARS = 4000
MAX_TERMS = 64
# Function words of English questions: they say how a developer asks, not what they look for.  Content
# verbs of code (get, set, make, find, use, run...) are not here: they name what code does.
STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be because been being both but by can could
did do does doing done during each either else ever every few for from further had has have having he her
here hers him his how i if in into is it its itself just let lets me might more most must my neither no
nor not of off on once only or other our ours out over own per please same she should so some such than
that the their theirs them then there these they this those though through thus to too under until up upon
us very via was way we were what whatever when whenever where whereas wherever whether which while who
whom whose why will with within without would yet you your yours
""".split())
_QUOTED_OR_WORD = re.compile(r'"([^"]*)"|(\S+)')
_SNAKE = re.compile(r"[^\W_]+(?:[_-][^\W_]+)+")


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
    alts: tuple[str, ...] = ()  # other spellings of the same identifier, any of which matches too

    @property
    def phrase(self) -> str | tuple[str, ...]:
        """What a match expression holds for this term: its text, or its text and its other spellings."""
        return (self.text, *self.alts) if self.alts else self.text

    @property
    def keywords(self) -> Keywords:
        """This term alone."""
        return Keywords((self.phrase,))

    def in_symbols(self, leading: bool = False) -> Keywords:
        """This term in a node's ``symbols`` (the names a definition chunk defines); ``leading``: as its
        first name."""
        return Keywords((self.phrase,), field="symbols", leading=leading)


@dataclass(frozen=True)
class ParsedQuery:
    raw: str
    terms: tuple[Term, ...]
    notes: tuple[str, ...] = ()

    def all_of(self, terms: tuple[Term, ...] | None = None) -> Keywords:
        return Keywords(tuple(t.phrase for t in (terms or self.terms)))

    def any_of(self, terms: tuple[Term, ...] | None = None) -> Keywords:
        return Keywords(tuple(t.phrase for t in (terms or self.terms)), any=True)


def _spellings(word: str, toks: list[str], alone: bool) -> tuple[str, ...]:
    """The other spellings of an identifier-like ``word`` (its tokens ``toks``): a camelCase token split
    into its words, a snake_case or kebab-case word joined into one token.  A query that is this one word
    alone (``alone``) asks for the name as typed: its snake_case form already reaches a camelCase
    definition through the definition's ``symbols`` parts, and the joined token, stemmed, would also match
    other names (``get_proxy`` as ``getproxy`` finds every ``getproxies``)."""
    if len(toks) == 1:
        parts = split_identifier(toks[0])
        if len(parts) > 1 and any(c.isupper() for c in toks[0][1:]) and toks[0].isascii():
            return (" ".join(parts).lower(),)
        return ()
    core = word.strip("()[]{}<>,;:!?.'`*")
    if not alone and _SNAKE.fullmatch(core):
        return ("".join(toks).lower(),)
    return ()


def _term(word: str, alone: bool = False) -> Term | None:
    toks = _tokens(word)
    if not toks:
        return None
    return Term(" ".join(toks).lower(), _spellings(word, toks, alone))


def _is_stopword(word: str) -> bool:
    toks = _tokens(word)
    return len(toks) == 1 and toks[0].lower() in STOPWORDS and word.strip(".,;:!?()'\"`").isalpha()


def parse(query: str) -> ParsedQuery:
    """Split ``query`` into quoted terms; raise ValueError when nothing searchable is left."""
    if query is None or not str(query).strip():
        raise ValueError("the query is empty; pass one or more words to search for")
    query = str(query)
    notes: list[str] = []
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"the query is {len(query)} characters long; keep it under {MAX_QUERY_CHARS} "
                         "(search for a few distinctive words, not a whole text)")
    pieces = [(m.group(1), True) if m.group(1) is not None else (m.group(2), False)
              for m in _QUOTED_OR_WORD.finditer(query)]
    if any(not quoted and not _is_stopword(w) and _tokens(w) for w, quoted in pieces):
        pieces = [(w, quoted) for w, quoted in pieces if quoted or not _is_stopword(w)]
    alone = len(pieces) == 1
    seen: dict[str, Term] = {}
    for word, quoted in pieces:
        term = Term(" ".join(_tokens(word)).lower()) if quoted else _term(word, alone)
        if term is not None and term.text:
            seen.setdefault(term.text, term)
    terms = tuple(seen.values())
    if not terms:
        raise ValueError(f"the query {query!r} has no letters or digits to search for")
    if len(terms) > MAX_TERMS:
        notes.append(f"only the first {MAX_TERMS} of {len(terms)} terms were used")
        terms = terms[:MAX_TERMS]
    return ParsedQuery(query, terms, tuple(notes))
