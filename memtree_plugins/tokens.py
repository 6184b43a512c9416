"""The default token counter: a conservative estimate that needs no tokenizer download.

Every budget and manifest figure in memtree goes through one counter, so it must not under-count: a budget
enforced with an under-counting estimate overflows the agent's context.  The estimate charges each piece of
text what BPE vocabularies typically spend on it, rounded up, then adds 10%:

- lowercase or Capitalized word: 1 token per 4 letters (``parse``, ``Server``, ``ing``)
- run of capitals: 1 per 2 letters (``HTTP``, ``BNPPARIBAS`` split badly in most vocabularies)
- digits: 1 per 2; each ASCII punctuation character: 1; ``_`` runs: 1 per 16
- newline: 1; a run of spaces/tabs: 1, a single space: 0.5 (it usually joins the next word)
- anything outside ASCII: 0.75 per UTF-8 byte (CJK, emoji and accents cost 1-3 tokens a character)

Measured against the Claude tokenizer that shipped inside the ``anthropic`` package (0.34), on this
repository's code and docs and a sample of installed packages' source (13,837 texts from one line to
20,000 characters): 1.71x the real count in total (median 1.75x), no under-count on any text of 40 tokens
or more except one (0.98x, a list of personal names); the worst single line was 0.83x.  ``tests/
test_tokens.py`` checks the never-under-count property on this repository's files.  A plugin that knows
the model's real tokenizer can replace this one through the ``memtree_token_counter`` hook.
"""

from __future__ import annotations

import math
import re

from memtree_core.hookspecs import hookimpl
from memtree_core.settings import Settings

# One alternative per class, tried in this order; the match's group number says which class it is.
_PIECES = re.compile(
    r"([A-Za-z0-9+/]{16,}={0,2})"  # 1 a long alphanumeric run: maybe a hash, base64 or a key (checked below)
    r"|([A-Z]{2,}(?![a-z]))"  # 2 run of capitals
    r"|([A-Z]?[a-z]+|[A-Z])"  # 3 word (lowercase, Capitalized, or a lone capital)
    r"|([0-9]+)"  # 4 digits
    r"|(_+)"  # 5 underscores
    r"|([^\x00-\x7f]+)"  # 6 non-ASCII
    r"|(\r\n|[\n\r\f\v])"  # 7 line breaks
    r"|([ \t]+)"  # 8 spaces and tabs
    r"|([\x00-\x7f])"  # 9 any other ASCII character (punctuation, control)
)
SAFETY = 1.1


def _is_blob(run: str) -> bool:
    digits = sum(c.isdigit() for c in run)
    upper = sum(c.isupper() for c in run)
    return digits >= 2 or (upper >= 3 and len(run) - upper - digits >= 3) or "+" in run or "/" in run


def _pieces(text: str) -> float:
    total = 0.0
    for m in _PIECES.finditer(text):
        kind = m.lastindex
        n = m.end() - m.start()
        if kind == 3:
            total += (n + 3) // 4
        elif kind == 8:
            total += 0.5 if n == 1 else 1
        elif kind == 7 or kind == 9:
            total += 1
        elif kind == 1:
            # Random-looking text (base64, hex, keys) costs about 3 tokens per 4 characters; a long
            # plain identifier is priced like the words it is made of.
            total += (3 * n + 3) // 4 if _is_blob(m.group()) else _pieces_plain(m.group())
        elif kind == 2 or kind == 4:
            total += (n + 1) // 2
        elif kind == 5:
            total += 1 if n <= 2 else (n + 15) // 16
        else:  # 6: non-ASCII
            total += 0.75 * len(m.group().encode("utf-8", "surrogatepass"))
    return total


_WORDISH = re.compile(r"([A-Z]{2,}(?![a-z]))|([A-Z]?[a-z]+|[A-Z])|([0-9]+)|(.)")


def _pieces_plain(run: str) -> float:
    """A long run that is not a blob: price its capitals, words and digits as in ``_pieces``."""
    total = 0.0
    for m in _WORDISH.finditer(run):
        n = m.end() - m.start()
        total += (n + 3) // 4 if m.lastindex == 2 else (n + 1) // 2 if m.lastindex in (1, 3) else 1
    return total


def estimate(text: str) -> int:
    return math.ceil(_pieces(text) * SAFETY)


class EstimatingCounter:
    name = "estimate"

    def count(self, text: str) -> int:
        return estimate(text) if text else 0


@hookimpl(trylast=True)
def memtree_token_counter(settings: Settings) -> EstimatingCounter:
    return EstimatingCounter()
