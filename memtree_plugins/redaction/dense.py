"""Lines too dense with secret keywords to judge: redacted whole, before any other rule sees them.

The rules judge each place a keyword occurs (``token: ``, ``KEY=``, ``AKIA``...) in Python: a few
microseconds each, nothing for real text, where keywords are a few per kilobyte.  A hostile line is made of
nothing else (``token: token: token: ...``, a megabyte of ``AKIA``): hundreds of thousands of places to
judge, seconds per megabyte, and an MCP ``read`` redacts whole files up to 20 MB.  No rule can be made
cheap enough there, so such a line is not judged at all: it is replaced by ``[REDACTED:dense-line]`` (its
line break kept, so line numbers still match the file), which fails closed — whatever secret it held is
gone with it — and leaves the rules after this one nothing to look at.

Which lines: at least :data:`MIN_LINE` characters long (shorter lines cost little however dense they are)
holding more occurrences than :func:`allowance` gives them, of two kinds counted apart (:data:`JUDGED`:
keywords of the rules that judge each value, and the environment's variable names; :data:`ANY`: every
keyword and vendor prefix of the shared scan, :mod:`.scan`).  The counts are taken block by block in C and
stopped as soon as the line is over its allowance, so even a hostile line costs a few milliseconds per
megabyte here.  Real long lines stay well under it (figures beside the limits), and what a line within its
allowance can cost the rules is bounded by it: ~50 ms per megabyte at worst (eval/bench/redaction.py).
"""

from __future__ import annotations

from memtree_plugins.redaction import scan
from memtree_plugins.redaction.engine import PatternRule, placeholder
from memtree_plugins.redaction.envdump import current_names

MIN_LINE = 4096  # characters; shorter lines are judged whatever they hold
BLOCK = 16384  # characters counted per call into the automata (a hostile block costs ~1 ms to count)

# Occurrences a line may hold and still be judged, per 4 KB on average and per line (for lines so long that
# it gives more, per 4 KB again); see allowance().  Two counts, as two costs:
# * judged: every keyword, the literals of rules that judge each value they find (context rules: ~10-40 us a
#   value) and the environment's variable names.  Real long lines: at most ~80 per 4 KB (rustdoc's
#   trait.Default.js, 29 KB of "Default"), ~14 in a 370 KB line, ~5 in a search index's megabytes.
JUDGED = (128, 1536, 6)
# * any: every keyword and vendor prefix (a token rule tries its regex once per prefix: ~1 us).  Real long
#   lines: at most ~185 per 4 KB (source maps, where "EAA" is a common segment), ~19 in megabyte lines.
ANY = (512, 16384, 32)

TAG = "dense-line"


def allowance(length: int, limits: tuple[int, int, int] = JUDGED) -> int:
    """How many occurrences a line of ``length`` characters may hold and still be judged: ``per_4k`` on
    average, at most ``per_line`` unless the line is so long that ``per_4k_long`` gives more."""
    per_4k, per_line, per_4k_long = limits
    units = length / 4096
    return int(min(per_4k * units, max(per_line, per_4k_long * units)))


_judged: tuple[scan.Needles, frozenset[str], scan.Needles] | None = None


def keywords_lower(needles: scan.Needles) -> bool:
    """The keywords are lower-case ASCII (as the scan's are): counted caseless, they are counted in the
    lower-cased text."""
    return all(k.isascii() and k == k.lower() for k in needles.keywords)


def judged_needles(needles: scan.Needles) -> scan.Needles:
    """What counts as judged: every keyword (the rules that have keywords are context rules, nearly all of
    which judge a value), the literals of the built-in rules that judge their values (``PASS``, ``TOKEN``...
    of the UPPER_SNAKE rules, not the vendor prefixes of the token shapes) and the environment's names."""
    global _judged
    names = current_names()
    cached = _judged
    if cached is None or cached[0] is not needles or cached[1] != names:
        from memtree_plugins.redaction.rules import RULES, not_masked

        rules = [r for r in RULES if isinstance(r, PatternRule) and (r.rewrite or r.check not in (None, not_masked))]
        judged = scan.Needles([*(s for r in rules for s in r.literals), *sorted(names)], needles.keywords,
                              use_hyperscan=False)
        cached = _judged = (needles, names, judged)
    return cached[2]


_counter: tuple[scan.Needles, scan.Needles, scan.ClassCounts] | None = None


def _one_pass(needles: scan.Needles, judged: scan.Needles) -> scan.ClassCounts | None:
    """The three counts of a block in one Hyperscan pass (literals, keywords caseless, judged literals)."""
    global _counter
    cached = _counter
    if cached is None or cached[0] is not needles or cached[1] is not judged:
        cached = _counter = (needles, judged, scan.ClassCounts(
            [(needles.literals, False), (needles.keywords, True), (judged.literals, False)]))
    return cached[2] if cached[2].db is not None else None


def _one_byte(line: str) -> bytes | None:
    """``line`` for :func:`_one_pass`, or None where that would not count what the automata count: keywords
    are counted in the lower-cased text, which caseless ASCII matching is for every character but the
    Kelvin sign (lower-cased to `k`) and "İ" (to two characters); lone surrogates stop the automata."""
    if line.isascii():
        return line.encode("ascii")
    if "\u212a" in line or "\u0130" in line:
        return None
    try:
        return scan.one_byte_per_char(line.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def too_dense(line: str, needles: scan.Needles) -> bool:
    """True once ``line`` holds more occurrences than its :func:`allowance`, of judged needles or of any.
    Per block, one Hyperscan pass counting all three kinds (:func:`_one_pass`), or three passes of an
    automaton: keywords (in the lower-cased text), literals, judged literals."""
    judged = judged_needles(needles)
    budget_judged, budget_any = allowance(len(line), JUDGED), allowance(len(line), ANY)
    seen_judged = seen_any = 0
    counter = _one_pass(needles, judged) if keywords_lower(needles) else None
    data = _one_byte(line) if counter is not None else None
    low = line.lower() if data is None else line
    exact = len(low) == len(line)  # else ("İ") each block is lowered on its own
    for at in range(0, len(line), BLOCK):
        # Blocks overlap by the longest needle, so one cut in two is still counted (once or twice: the
        # count only has to be right within a factor, not exact).
        end = at + BLOCK + max(needles.longest, judged.longest) - 1
        if data is not None and counter is not None:
            lit, kw, judged_lit = counter.counts(data[at:end])
            seen_judged += kw + judged_lit
            seen_any += kw + lit + judged_lit
            if seen_judged > budget_judged or seen_any > budget_any:
                return True
            continue
        block = line[at:end]
        try:
            lit, kw = needles.counts(block, low[at:end] if exact else block.lower())
            judged_lit, _ = judged.counts(block, "")  # its keywords are the needles' own, counted above
        except ValueError:  # lone surrogates: the automaton cannot read them, nor can the scan
            return False
        seen_judged += kw + judged_lit
        seen_any += kw + lit + judged_lit
        if seen_judged > budget_judged or seen_any > budget_any:
            return True
    return False


_HALF = MIN_LINE // 2


def _may_have_long_line(text: str) -> bool:
    """False when no line of ``text`` can reach MIN_LINE: every aligned stretch of MIN_LINE / 2 characters
    holds a line break (a line that long would hold one such stretch whole).  A few C-speed finds per
    100 KB, not a list of every line."""
    find = text.find
    return any(find("\n", i, i + _HALF) < 0 for i in range(0, len(text) - _HALF + 1, _HALF))


class DenseLines:
    """Satisfies :class:`memtree_core.types.RedactionRule`; registered before every other rule."""

    name = TAG
    description = "a line too dense with secret keywords to judge (a hostile input) is redacted whole"
    priority = 200  # before every rule, the decoded views' too (100): none of them need see such a line

    def redact(self, text: str) -> tuple[str, int]:
        if len(text) < MIN_LINE or not scan.available() or not _may_have_long_line(text):
            return text, 0
        lines = text.split("\n")
        if max(map(len, lines)) < MIN_LINE:
            return text, 0
        needles = scan.current_needles()
        hits = 0
        mark = placeholder(TAG)
        for i, line in enumerate(lines):
            if len(line) >= MIN_LINE and too_dense(line, needles):
                lines[i] = mark + ("\r" if line.endswith("\r") else "")
                hits += 1
        return ("\n".join(lines), hits) if hits else (text, 0)
