"""Where the rules' keywords and literals occur in a text: one multi-pattern pass, kept up to date as rules
redact it, so each :class:`~memtree_plugins.redaction.engine.PatternRule` knows whether to run and where
to try its regex without scanning the text itself.

Without this every rule did its own ``in`` tests and ``str.find`` loops (~250 substring scans of up to
100 KB per capture).  Here one Aho-Corasick pass (``ahocorasick_rs``, two automata: literals over the text,
keywords over its lower-cased form) finds every occurrence, overlapping ones included, exactly as the
per-rule ``find`` loops did.

Rules run one after another on the text the previous one produced.  When a rule redacts, its edits (old
span -> replacement) give the next version of the scan: occurrences that touch an edited span are dropped,
the others shift, and only a window around each replacement is searched again.  A needle's positions are
brought forward lazily, when a rule that uses the needle asks for them.

The scan must give the rules the same positions the per-rule search would; where that cannot be promised
(``str.lower`` changes the length, as for "İ"; lone surrogates that the automaton cannot encode; no
``ahocorasick_rs`` at all) :func:`scan_of` answers ``None`` and the rules search on their own as before.

Where the ``hyperscan`` module is there (as for the secret catalogue), text up to :data:`HS_MAX` characters
(every capture) is searched by one Hyperscan pass instead of the two automata (about three times faster on a
100 KB capture): literals byte for byte, keywords caseless, over the text with one byte per character (a
character beyond ASCII becomes the byte 0x80, which no needle holds: :func:`one_byte_per_char`).  The
needles are ASCII, so ASCII caseless is exactly matching them in the lower-cased text, for every character
but two: the Kelvin sign lower-cases to ``k`` and "İ" to two characters, so a text holding either goes to the
automata, as do lone surrogates and a longer text (whose automata pass checks the redaction's deadline).
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import accumulate
from operator import add, sub

from memtree_core.daemon.redacting import check_deadline

try:
    import ahocorasick_rs
except ImportError:  # declared in pyproject; without it the rules fall back to their own search
    ahocorasick_rs = None

try:
    import hyperscan
except ImportError:  # optional: the automata find the needles
    hyperscan = None


HS_MAX = 1 << 20

# UTF-8 lead bytes (and 0x80..0xff) to 0x80, continuation bytes (0x80..0xbf) deleted: see one_byte_per_char.
_LEAD_TO_80 = bytes(range(128)) + b"\x80" * 128
_CONTINUATION = bytes(range(0x80, 0xC0))


def one_byte_per_char(data: bytes) -> bytes:
    """``data``, a text's UTF-8 (surrogates passed), with one byte per character: ASCII as it is, every other
    character as the byte 0x80 (its lead byte kept and mapped, its continuation bytes dropped), so byte
    offsets are the text's character offsets.  One C-speed pass, whatever the number of such characters."""
    return data.translate(_LEAD_TO_80, _CONTINUATION)


class _HyperscanNeedles:
    """Every needle in one Hyperscan database (pattern id = needle id; keywords caseless)."""

    def __init__(self, literals: list[str], keywords: list[str]) -> None:
        exprs = [b"".join(b"\\x%02x" % c for c in s.encode("ascii")) for s in literals + keywords]
        flags = [0] * len(literals) + [hyperscan.HS_FLAG_CASELESS] * len(keywords)
        self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
        self.lengths = [len(s) for s in literals + keywords]
        self._local = threading.local()

    def find(self, text: str) -> dict[int, list[int]] | None:
        """Every occurrence, as :meth:`Needles.find`; None for text this pass does not take (see the module
        doc)."""
        if len(text) > HS_MAX:
            return None
        if text.isascii():
            data = text.encode("ascii")
        elif "\u212a" in text or "\u0130" in text:
            return None  # lower-cased, the Kelvin sign is `k` and "İ" two characters: the automata's
        else:
            try:
                data = one_byte_per_char(text.encode("utf-8"))
            except UnicodeEncodeError:
                return None  # lone surrogates: the automata refuse them
        try:
            scratch = self._local.scratch
        except AttributeError:  # one scratch per thread: Hyperscan's scratch space is not shared
            scratch = self._local.scratch = hyperscan.Scratch(self.db)
        found: dict[int, list[int]] = {}
        lengths = self.lengths

        def on_match(nid: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            pos = found.get(nid)
            if pos is None:
                found[nid] = [end - lengths[nid]]
            else:
                pos.append(end - lengths[nid])

        self.db.scan(data, match_event_handler=on_match, scratch=scratch)
        for pos in found.values():
            pos.sort()  # in order already (matches come by end, a needle's ends order its starts): a check
        return found


class DistinctLiterals:
    """How many distinct ones of a set of ASCII words occur in a text (overlapping occurrences count, case
    matters unless ``caseless``), or which: one Hyperscan pass reporting each word once.  It answers None
    where it cannot say (no ``hyperscan``; lone surrogates), and a caller then searches as before.  An upper
    bound for any search that reports only some occurrences (leftmost-longest): fewer distinct words here
    means fewer there."""

    def __init__(self, words: Iterable[str], caseless: bool = False) -> None:
        self.words = list(dict.fromkeys(words))
        self.db = None
        if hyperscan is not None and self.words and all(w and w.isascii() for w in self.words):
            exprs = [b"".join(b"\\x%02x" % c for c in w.encode("ascii")) for w in self.words]
            flag = hyperscan.HS_FLAG_SINGLEMATCH | (hyperscan.HS_FLAG_CASELESS if caseless else 0)
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            try:
                db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs),
                           flags=[flag] * len(exprs))
            except hyperscan.error:
                return
            self.db = db
            self._local = threading.local()

    def present(self, data: bytes) -> set[int]:
        """The indexes of the words that occur in ``data`` (one byte per character: ASCII, or
        :func:`one_byte_per_char`); needs :attr:`db`."""
        assert self.db is not None
        try:
            scratch = self._local.scratch
        except AttributeError:
            scratch = self._local.scratch = hyperscan.Scratch(self.db)
        seen: set[int] = set()
        self.db.scan(data, match_event_handler=lambda nid, *_: seen.add(nid), scratch=scratch)
        return seen

    def count(self, text: str) -> int | None:
        if self.db is None or len(text) > HS_MAX:
            return None
        try:
            data = text.encode("ascii") if text.isascii() else one_byte_per_char(text.encode("utf-8"))
        except UnicodeEncodeError:
            return None
        return len(self.present(data))


class ClassCounts:
    """Occurrences of several sets of ASCII words, each set counted apart (overlapping occurrences, a word in
    two sets counted in both; a set is case-sensitive or caseless): one Hyperscan pass per text, a Python step
    per occurrence, no list of them.  :attr:`db` is None without ``hyperscan``."""

    def __init__(self, sets: list[tuple[list[str], bool]]) -> None:
        self.db = None
        self.n = len(sets)
        words = [(w, k, caseless) for k, (ws, caseless) in enumerate(sets) for w in ws]
        if hyperscan is None or not words or not all(w and w.isascii() for w, _, _ in words):
            return
        exprs = [b"".join(b"\\x%02x" % c for c in w.encode("ascii")) for w, _, _ in words]
        flags = [hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, _, caseless in words]
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        try:
            db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
        except hyperscan.error:
            return
        self.db = db
        self.set_of = [k for _, k, _ in words]
        self._local = threading.local()

    def counts(self, data: bytes) -> list[int]:
        """Occurrences per set in ``data`` (one byte per character: ASCII, or :func:`one_byte_per_char`)."""
        assert self.db is not None
        try:
            scratch = self._local.scratch
        except AttributeError:
            scratch = self._local.scratch = hyperscan.Scratch(self.db)
        out = [0] * self.n
        set_of = self.set_of

        def on_match(i: int, *_: object) -> None:
            out[set_of[i]] += 1

        self.db.scan(data, match_event_handler=on_match, scratch=scratch)
        return out


class Needles:
    """Every known literal (case-sensitive, searched in the text) and keyword (lower-case, searched in the
    lower-cased text), numbered: literal ``i`` is id ``i``, keyword ``j`` is id ``len(literals) + j``."""

    def __init__(self, literals: Iterable[str], keywords: Iterable[str], use_hyperscan: bool = True) -> None:
        self.literals = list(dict.fromkeys(literals))
        self.keywords = list(dict.fromkeys(keywords))
        self.n_literals = len(self.literals)
        self.ids = {**{(False, s): i for i, s in enumerate(self.literals)},
                    **{(True, s): self.n_literals + j for j, s in enumerate(self.keywords)}}
        self.lengths = [len(s) for s in self.literals] + [len(s) for s in self.keywords]
        self.longest = max(self.lengths, default=1)
        used = set("".join(self.literals)) | set("".join(self.keywords))
        self.separator = next((c for c in "\x00\x01\x02\x03\n" if c not in used), None)
        dfa = ahocorasick_rs.Implementation.DFA
        self._lit = ahocorasick_rs.AhoCorasick(self.literals, implementation=dfa) if self.literals else None
        self._kw = ahocorasick_rs.AhoCorasick(self.keywords, implementation=dfa) if self.keywords else None
        self._hs: _HyperscanNeedles | None = None
        if (use_hyperscan and hyperscan is not None and (self.literals or self.keywords)
                and all(s.isascii() for s in self.literals)
                and all(k.isascii() and k == k.lower() for k in self.keywords)):
            try:
                self._hs = _HyperscanNeedles(self.literals, self.keywords)
            except hyperscan.error:
                self._hs = None

    def find(self, text: str, low: str | None = None) -> dict[int, list[int]]:
        """Every occurrence of every needle: id -> ascending start positions (``low``: ``text.lower()``, of
        the same length; needed only for text beyond ASCII).  Raises ValueError for text the automaton
        cannot take (lone surrogates)."""
        if self._hs is not None:
            found = self._hs.find(text)
            if found is not None:
                return found
        if low is None:
            low = text.lower()
        found = {}
        if self._lit is not None:
            for part in _parts(self._lit.find_matches_as_indexes(text, overlapping=True)):
                for i, start, _ in part:
                    found.setdefault(i, []).append(start)
        if self._kw is not None:
            base = self.n_literals
            for part in _parts(self._kw.find_matches_as_indexes(low, overlapping=True)):
                for j, start, _ in part:
                    found.setdefault(base + j, []).append(start)
        # Matches come in order of their end; one needle's ends (same length) order its starts.
        return found

    def count(self, text: str, low: str) -> int:
        """How many occurrences :meth:`find` would give, counted without a Python step per occurrence."""
        return sum(self.counts(text, low))

    def counts(self, text: str, low: str) -> tuple[int, int]:
        """:meth:`count` as (literals, keywords)."""
        lit = len(self._lit.find_matches_as_indexes(text, overlapping=True)) if self._lit is not None else 0
        kw = len(self._kw.find_matches_as_indexes(low, overlapping=True)) if self._kw is not None else 0
        return lit, kw


_PART = 1 << 16


def _parts(matches: list[tuple[int, int, int]]) -> Iterable[list[tuple[int, int, int]]]:
    """``matches`` in slices, the redaction's deadline checked before each (a hostile text has millions)."""
    if len(matches) <= _PART:
        yield matches
        return
    for at in range(0, len(matches), _PART):
        check_deadline()
        yield matches[at:at + _PART]


# A rule that redacts more than this in one text (a pathological input) makes the next rule scan afresh.
_MAX_EDITS = 64


class Scan:
    """The needles' positions in one version of a text, derived from the last full scan (the *base*):

    * ``_spans`` — the base spans replaced so far, merged where they touch: base start, base end, length of
      what stands there now.  A base occurrence that touches none survives, shifted by the edits before it.
    * ``_fresh`` — occurrences that touch a replaced span (found around each replacement when it was made),
      in this version's coordinates.

    Both are updated per version in a few list operations, whatever the number of needles; a needle's
    positions are computed from them only when a rule asks.  Each thread keeps its latest scan (see
    :func:`scan_of`) and a version is never changed after it is made, so deriving one is safe.
    """

    __slots__ = ("text", "needles", "present", "_base", "_bs", "_be", "_nl", "_cum", "_cur",
                 "_fpos", "_fnid", "_fcount", "_memo", "_rev")

    def __init__(self, text: str, needles: Needles, present: set[int], base: dict[int, list[int]]) -> None:
        self.text = text
        self.needles = needles
        self.present = present  # ids that may occur (a superset: shrinks as positions are computed)
        self._base = base  # id -> ascending positions in the base text
        self._bs: list[int] = []  # replaced base spans: start, end, current length (ascending, disjoint)
        self._be: list[int] = []
        self._nl: list[int] = []
        self._cum: list[int] = []  # total shift after span i
        self._cur: list[int] = []  # where span i starts in this version
        self._fpos: list[int] = []  # fresh occurrences, ascending, and their needle ids
        self._fnid: list[int] = []
        self._fcount: dict[int, int] = {}
        self._memo: dict[int, list[int]] = {}
        self._rev: str | None = None

    def positions(self, nid: int) -> list[int]:
        """Ascending start positions of needle ``nid`` in this version's text (lower-cased for keywords)."""
        pos = self._memo.get(nid)
        if pos is not None:
            return pos
        base = self._base.get(nid, ())
        be = self._be
        if not be:
            pos = list(base)
        else:
            bs, cum, length, n = self._bs, self._cum, self.needles.lengths[nid], len(be)
            pos = []
            for p in base:
                i = bisect_right(be, p)  # spans wholly before p (an insertion at p included)
                if i < n and bs[i] < p + length:
                    continue  # touches a replaced span
                pos.append(p + cum[i - 1] if i else p)
        if self._fcount.get(nid):
            pos = sorted(pos + [p for p, f in zip(self._fpos, self._fnid, strict=True) if f == nid])
        self._memo[nid] = pos
        if not pos:
            self.present.discard(nid)
        return pos

    @property
    def reversed_text(self) -> str:
        if self._rev is None:
            self._rev = self.text[::-1]
        return self._rev

    def after(self, new_text: str, edits: list[tuple[int, int, str]]) -> Scan | None:
        """The scan of ``new_text``, which is this text with ``edits`` ((start, end, replacement) in this
        text's coordinates, ascending, disjoint) applied; None if it cannot be derived exactly."""
        if len(edits) > _MAX_EDITS:
            return None  # merging them one by one would cost more than the next rule scanning afresh
        shift = sum(len(r) - (e - s) for s, e, r in edits)
        if len(new_text) != len(self.text) + shift:
            return None  # the edits do not describe new_text: let the next rule scan it afresh
        nxt = Scan(new_text, self.needles, set(self.present), self._base)
        nxt._merge_spans(self, edits)
        nxt._carry_fresh(self, edits)
        return nxt if nxt._find_fresh(edits) else None

    def _merge_spans(self, prev: Scan, edits: list[tuple[int, int, str]]) -> None:
        """prev's replaced spans plus the base spans ``edits`` cover (an edit touching a span joins it)."""
        bs, be, nl = list(prev._bs), list(prev._be), list(prev._nl)
        cum, cur = prev._cum, list(prev._cur)
        cur_end = list(map(add, cur, nl))
        for s, e, r in reversed(edits):  # right to left: the spans left of an edit keep their coordinates
            i0 = bisect_left(cur_end, s)  # the first span ending at or after s
            i1 = bisect_right(cur, e) - 1  # the last span starting at or before e
            before = cum[i0 - 1] if i0 else 0
            if i0 <= i1:
                lo, hi = min(s, cur[i0]), max(e, cur_end[i1])
                base_lo = bs[i0] if cur[i0] <= s else s - before
                base_hi = be[i1] if cur_end[i1] >= e else e - cum[i1]
            else:
                lo, hi, base_lo, base_hi = s, e, s - before, e - before
            length = hi - lo - (e - s) + len(r)
            bs[i0:i1 + 1] = [base_lo]
            be[i0:i1 + 1] = [base_hi]
            nl[i0:i1 + 1] = [length]
            cur[i0:i1 + 1] = [lo]
            cur_end[i0:i1 + 1] = [lo + length]
        # In C, not per span in Python: this runs for every rule that redacts something.
        deltas = list(map(add, nl, map(sub, bs, be)))  # n - (e - s)
        self._bs, self._be, self._nl = bs, be, nl
        self._cum = list(accumulate(deltas))
        self._cur = list(map(add, bs, map(sub, self._cum, deltas)))

    def _carry_fresh(self, prev: Scan, edits: list[tuple[int, int, str]]) -> None:
        """prev's fresh occurrences that no edit touches, shifted."""
        lengths, longest = self.needles.lengths, self.needles.longest
        fpos, fnid, count = list(prev._fpos), list(prev._fnid), dict(prev._fcount)
        for s, e, r in reversed(edits):  # right to left: positions left of an edit are still old ones
            j0 = bisect_right(fpos, s - longest)  # before: cannot reach s
            j1 = bisect_left(fpos, e)  # from here on: after the edit, shifted
            keep_p: list[int] = []
            keep_n: list[int] = []
            for p, nid in zip(fpos[j0:j1], fnid[j0:j1], strict=True):
                if p + lengths[nid] <= s:
                    keep_p.append(p)
                    keep_n.append(nid)
                else:
                    count[nid] -= 1
            delta = len(r) - (e - s)
            fpos[j0:] = keep_p + (list(map(delta.__add__, fpos[j1:])) if delta else fpos[j1:])
            fnid[j0:j1] = keep_n
        self._fpos, self._fnid, self._fcount = fpos, fnid, count

    def _find_fresh(self, edits: list[tuple[int, int, str]]) -> bool:
        """Search around each replacement for occurrences touching it."""
        needles, text = self.needles, self.text
        reach, lengths = needles.longest - 1, needles.lengths
        starts: list[int] = []
        ends: list[int] = []
        windows: list[tuple[int, int]] = []  # merged where they overlap
        shift = 0
        for s, e, r in edits:
            ns = s + shift
            starts.append(ns)
            ends.append(ns + len(r))
            lo, hi = max(0, ns - reach), ns + len(r) + reach
            if windows and lo <= windows[-1][1]:
                windows[-1] = (windows[-1][0], hi)
            else:
                windows.append((lo, hi))
            shift += len(r) - (e - s)
        sep = needles.separator
        if sep is not None and len(windows) > 1:
            chunks = [text[lo:hi] for lo, hi in windows]
            joined_at, at = [], 0
            for chunk in chunks:
                joined_at.append(at)
                at += len(chunk) + 1
            parts = [(sep.join(chunks), joined_at)]
        else:
            parts = [(text[lo:hi], None) for lo, hi in windows]
        w_lo = [lo for lo, _ in windows]
        new: list[tuple[int, int]] = []
        for idx, (window, joined_at) in enumerate(parts):
            low = window.lower()
            if len(low) != len(window):
                return False
            try:
                found = needles.find(window, low)
            except ValueError:
                return False
            for nid, ps in found.items():
                length = lengths[nid]
                for p in ps:
                    if joined_at is None:
                        p += w_lo[idx]
                    else:
                        w = bisect_right(joined_at, p) - 1
                        p += w_lo[w] - joined_at[w]
                    # New iff it touches a replacement: the last one starting before its end is the one.
                    k = bisect_left(starts, p + length) - 1
                    if k >= 0 and p < ends[k] and starts[k] < p + length:
                        new.append((p, nid))  # windows do not overlap: found once
        if new:
            merged = sorted([*zip(self._fpos, self._fnid, strict=True), *new])
            self._fpos = [p for p, _ in merged]
            self._fnid = [nid for _, nid in merged]
            for _, nid in new:
                self._fcount[nid] = self._fcount.get(nid, 0) + 1
                self.present.add(nid)
        return True


def full_scan(text: str, needles: Needles) -> Scan | None:
    low = None
    if not text.isascii():
        low = text.lower()
        if len(low) != len(text):
            return None  # positions in the lower-cased text would not be positions in the text
    try:
        found = needles.find(text, low)
    except ValueError:
        return None
    return Scan(text, needles, set(found), found)


# ---- the needles of every rule, and each thread's latest scan ----------------------------------------

_lock = threading.Lock()
_literals: dict[str, None] = {}
_keywords: dict[str, None] = {}
_current: Needles | None = None
_local = threading.local()


# False makes every rule search on its own, as before this module: the reference the tests compare the
# scan against, and the "before" figure of eval/bench/redaction.py.
enabled = True


def available() -> bool:
    return enabled and ahocorasick_rs is not None


def learn(literals: Iterable[str], keywords: Iterable[str]) -> None:
    """Add a rule's needles; the automata are rebuilt (once) before the next scan."""
    global _current
    new_lits = [s for s in literals if s not in _literals]
    new_kws = [s for s in keywords if s not in _keywords]
    if new_lits or new_kws:
        with _lock:
            _literals.update(dict.fromkeys(new_lits))
            _keywords.update(dict.fromkeys(new_kws))
            _current = None


def current_needles() -> Needles:
    global _current
    needles = _current
    if needles is None:
        with _lock:
            needles = _current
            if needles is None:
                needles = _current = Needles(list(_literals), list(_keywords))
    return needles


def scan_of(text: str, needles: Needles) -> Scan | None:
    """This thread's scan of ``text`` if it has one (rules pass the same str object along), else a new
    full scan (None when the scan cannot be exact for this text)."""
    entry = getattr(_local, "entry", None)
    if entry is not None and entry[0] is text and entry[1] is needles:
        return entry[2]
    scan = full_scan(text, needles)
    _local.entry = (text, needles, scan)
    return scan


def latest(text: str) -> Scan | None:
    """This thread's scan of ``text`` with the current needles if it has one, else None (without scanning:
    :func:`scan_of` does that)."""
    entry = getattr(_local, "entry", None)
    if entry is not None and entry[0] is text and entry[1] is _current:
        return entry[2]
    return None


def remember(scan: Scan | None) -> None:
    """Keep ``scan`` (derived from the previous version) as this thread's latest; None forgets it, so the
    next rule scans the new text afresh."""
    _local.entry = (scan.text, scan.needles, scan) if scan is not None else None
