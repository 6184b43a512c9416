"""The default token counter: a conservative estimate that needs no tokenizer download.

Every budget and manifest figure in memtree goes through one counter, so it must not under-count: a budget
enforced with an under-counting estimate overflows the agent's context.  The estimate charges each piece of
text what BPE vocabularies typically spend on it, rounded up, then adds 10%:

- lowercase or Capitalized word: 1 token per 4 letters (``parse``, ``Server``, ``ing``)
- run of capitals: 1 per 2 letters (``HTTP``, ``BNPPARIBAS`` split badly in most vocabularies)
- digits: 1 per 2; each ASCII punctuation character: 1; ``_`` runs: 1 per 16
- newline: 1; a run of spaces/tabs: 1, a single space: 0.5 (it usually joins the next word)
- anything outside ASCII: 0.75 per UTF-8 byte (CJK, emoji and accents cost 1-3 tokens a character)
- a random-looking run of 16+ letters/digits (base64, hex, keys): 3 per 4 characters

Measured against the Claude tokenizer that shipped inside the ``anthropic`` package (0.34), on this
repository's code and docs and a sample of installed packages' source (23,469 texts from one line to
20,000 characters): 1.76x the real count in total (median 1.75x); of the 7,768 texts of 40 tokens or
more, 2 were under-counted (worst 0.95x: lists of personal names and handles); the worst short line was
0.83x.  Re-measured after the rewrite below (same counts by construction) on this repository and 1,500
installed packages' files (whole files, 40-line windows and single lines; 55,459 texts): 1.78x in total
(median 1.78x), none of the 18,121 texts of 40 tokens or more under-counted (worst 1.06x), worst short line
0.86x.  ``tests/plugins/tokens/test_tokens.py`` checks the never-under-count property on this repository's files.

Speed: the rules are not run as a regular expression (one match per unit) but counted per character class
with ``bytes.translate``/``count``/``replace`` in C, giving the same number for every text
(``tests/plugins/tokens/test_tokens.py`` checks it against the regex form, ``UNIT``).  24 KB of code, Markdown, JSON or
prose: 0.6-0.75 ms, against 2.1-3.0 ms for the regex form (3.4-4x).  A short line such as a compose header
costs ~10 us, ~5 us when its id/path runs were priced before (``_blob_extra_short``, a small LRU).

A plugin that knows the model's real tokenizer can replace this one through the ``memtree_token_counter``
hook.

The store keeps each node's count (memtree_core/store/token_counts.py), under the counter's ``name`` and
``version``: **change ``VERSION`` whenever a rule here changes a count**, or stored counts made by the old
rules would pass for new ones.  The ``token_counts`` walker counts the nodes stored without one (written
before the store kept counts, or by a writer with no counter), a bounded batch per run.
"""

from __future__ import annotations

import functools
import math
import re
import time
from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl
from memtree_core.registry import Register
from memtree_core.settings import Settings
from memtree_core.store import token_counts
from memtree_core.types import Walker

if TYPE_CHECKING:
    from memtree_core.context import Context

SAFETY = 1.1
VERSION = 1  # of the rules below; stored counts are keyed by it (see the module docstring)


def _classes(**classes: bytes) -> bytes:
    """A ``bytes.translate`` table: each byte in ``classes[c]`` becomes ``c``, every other byte ``x``."""
    table = bytearray(b"x" * 256)
    for cls, members in classes.items():
        for byte in members:
            table[byte] = ord(cls)
    return bytes(table)


_LOWER, _UPPER, _DIGIT = bytes(range(97, 123)), bytes(range(65, 91)), bytes(range(48, 58))
# ASCII punctuation and control characters other than blanks and line breaks; "_" is priced apart.
_PUNCT = bytes([*range(0, 9), *range(14, 32), *range(33, 48), *range(58, 65), *range(91, 95), 96,
                *range(123, 128)])
_LETTERS = _classes(a=_LOWER, A=_UPPER)
_DIGITS = _classes(d=_DIGIT)
_UNDERSCORES = _classes(_=b"_")
_BLANKS = _classes(s=b" \t")
_BLOB_CHARS = _classes(b=_LOWER + _UPPER + _DIGIT + b"+/")
_NOT_PUNCT = bytes(sorted(set(range(256)) - set(_PUNCT)))  # deleted, so the length left is the count
_ASCII = bytes(range(128))  # deleted, so the length left is the non-ASCII byte count
_BLOB_MIN = b"b" * 16

# The rules as one regular expression (each match is one unit); the counting below gives the same number
# without it, and tests/plugins/tokens/test_tokens.py checks that on random and real text.  Kept for blob runs (rare).
UNIT = re.compile(r"[A-Z]{1,2}(?![a-z])|[A-Za-z][a-z]{0,3}|[0-9]{1,2}|_{1,16}|\r\n|[\n\r\f\v]|[ \t]+"
                  r"|[\x00-\x08\x0e-\x1f!-/:-@\[-^`{-~\x7f]")
SINGLE_BLANK = re.compile(r"(?<![ \t])[ \t](?![ \t])")
RUN = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")  # maybe a hash, base64 or a key: checked by _is_blob
_TWO_DIGITS = re.compile(r"[0-9][^0-9]*[0-9]")
_UPPER_RE = re.compile(r"[A-Z]")


def _units(b: bytes) -> tuple[int, int]:
    """(units, lone blanks) of UTF-8 ``b``: the matches of ``UNIT`` and of ``SINGLE_BLANK``.

    Each class of characters is mapped to one letter with ``bytes.translate`` and its runs are priced
    with ``count``/``replace``, which run in C at a few ns a byte (a regex match costs ~150 ns).  A run
    of length L costs ceil(L/k) = floor(L/k) + (1 if L % k else 0): deleting every k-long piece gives
    the floors from the length lost and leaves one remainder per run whose length k does not divide.
    """
    # Words: a capital directly before lowercase letters starts that word ("Serv|er"), the other
    # capitals go in pairs.  A capital-led word of m lowercase letters costs ceil((m + 1) / 4) =
    # floor(m / 4) + 1; a lowercase-only word ceil(m / 4).
    s = b"x" + b.translate(_LETTERS)
    led = s.count(b"Aa")
    s4 = s.replace(b"aaaa", b"")
    words = (len(s) - len(s4)) // 4 + led + s4.count(b"xa")
    # Capital runs of K: ceil(K/2), or ceil((K-1)/2) = floor(K/2) when the last one leads a word.
    s2 = s.replace(b"AA", b"")
    caps = (len(s) - len(s2)) // 2 + s2.count(b"A") - s2.count(b"Aa")
    units = words + caps
    d = b.translate(_DIGITS)
    n = d.count(b"d")
    if n:  # ceil(L/2) = L - floor(L/2)
        units += n - d.count(b"dd")
    if b"_" in b:
        u = b.translate(_UNDERSCORES) + b"x"
        if b"_" * 17 in b:  # a run longer than one unit: pad each run by 15 so floor gives ceil
            units += u.replace(b"_x", b"_" * 16 + b"x").count(b"_" * 16)
        else:
            units += u.count(b"_x")
    units += b.count(b"\n")
    if b"\r" in b:
        units += b.count(b"\r") - b.count(b"\r\n")
    if b"\f" in b or b"\v" in b:
        units += b.count(b"\f") + b.count(b"\v")
    t = b.translate(_BLANKS) + b"x"
    blank_runs = t.count(b"sx")
    units += blank_runs + len(b.translate(None, _NOT_PUNCT))
    return units, blank_runs - t.count(b"ssx")


def _runs(b: bytes) -> list[str]:
    """``RUN.findall`` on the text: the runs of 16+ base64 characters (and up to two ``=``), found in
    the class string.  A run is ASCII, so its bytes are its characters whatever the rest of the text."""
    cls = b.translate(_BLOB_CHARS)
    out = []
    i = cls.find(_BLOB_MIN)
    while i >= 0:
        end = cls.find(b"x", i)
        end = len(b) if end < 0 else end
        end += 2 if b.startswith(b"==", end) else 1 if b.startswith(b"=", end) else 0
        out.append(b[i:end].decode("ascii"))
        i = cls.find(_BLOB_MIN, end)
    return out


def _is_blob(run: str) -> bool:
    if "+" in run or "/" in run or _TWO_DIGITS.search(run):
        return True
    upper = len(_UPPER_RE.findall(run))
    return upper >= 3 and len(run) - upper >= 3


def _blob_extra(run: str) -> int:
    """Units a run costs as random-looking text beyond its word chunks (0 if it looks like words):
    about 3 tokens per 4 characters."""
    return (3 * len(run) + 3) // 4 - UNIT.subn("", run)[1] if _is_blob(run) else 0


# Node ids (ULIDs) and paths are such runs, and compose counts a node's header once per form it tries.
_blob_extra_short = functools.lru_cache(maxsize=4096)(_blob_extra)


def estimate(text: str) -> int:
    if not text:
        return 0
    b = text.encode("utf-8", "surrogatepass")
    n, lone = _units(b)
    units = n - 0.5 * lone
    if len(b) != len(text):
        units += 0.75 * len(b.translate(None, _ASCII))
    for run in _runs(b):
        units += _blob_extra_short(run) if len(run) <= 128 else _blob_extra(run)
    return math.ceil(units * SAFETY)


class EstimatingCounter:
    name = "estimate"
    version = VERSION

    def count(self, text: str) -> int:
        return estimate(text) if text else 0


@hookimpl(trylast=True)
def memtree_token_counter(settings: Settings) -> EstimatingCounter:
    return EstimatingCounter()


class TokenCountsWalker:
    """Counts, under the app's counter, the nodes stored without a count from it: oldest first, behind a
    cursor, so a big store is walked once (``token_counts.fill``); each run stops after ``RUN_S``."""

    name = "token_counts"
    trigger = "event"
    RUN_S = 0.2  # per run: the store's lock is shared with the tools, one short transaction at a time
    INTERVAL_S = 1.0

    def interval_s(self, app: Context) -> float:
        return self.INTERVAL_S

    def has_work(self, app: Context) -> bool:
        store = app.store
        # The number the store's nodes.tokens_by holds for this counter's counts, if it has counted any.
        tag = store.get_meta(token_counts.TAG_PREFIX + token_counts.counter_key(app.plugins.token_counter))
        if tag is None:
            return store.query_one("SELECT 1 FROM nodes LIMIT 1") is not None
        newest = store.query_one("SELECT max(rowid) FROM nodes")
        return int((newest[0] or 0) if newest else 0) > int(store.get_meta(f"{token_counts.CURSOR_PREFIX}{tag}") or 0)

    def run(self, app: Context) -> dict[str, int]:
        counted, batches, done = 0, 0, False
        deadline = time.monotonic() + self.RUN_S
        while not done and time.monotonic() < deadline:
            n, done = token_counts.fill(app.store, app.plugins.token_counter)
            counted += n
            batches += 1
        return {"counted": counted, "batches": batches, "done": int(done)}


@hookimpl
def memtree_register_walkers(register: Register[Walker]) -> None:
    register(TokenCountsWalker())
