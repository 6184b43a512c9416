"""Lines too dense with secret keywords to judge: redacted whole, before any other rule sees them.

The rules judge each place a keyword occurs (``token: ``, ``KEY=``, ``AKIA``...) in Python: a few
microseconds each, nothing for real text, where keywords are a few per kilobyte.  A hostile line is made of
nothing else (``token: token: token: ...``, a megabyte of ``AKIA``): hundreds of thousands of places to
judge, seconds per megabyte, and an MCP ``read`` redacts whole files up to 20 MB.  No rule can be made
cheap enough there, so such a line is not judged at all: it is replaced by ``[REDACTED:dense-line]`` (its
line break kept, so line numbers still match the file), which fails closed — whatever secret it held is
gone with it — and leaves the rules after this one nothing to look at.

Which lines: at least :data:`MIN_LINE` characters long (shorter lines cost little however dense they are)
holding more keyword occurrences than :func:`allowance` gives it: :data:`PER_4K` per 4 KB on average, at
most :data:`PER_LINE` in all unless the line is over a megabyte (then :data:`PER_4K_LONG` per 4 KB).  The count is the shared keyword scan's (:mod:`.scan`: every rule's keywords and literals,
overlapping occurrences included) plus the environment's variable names (:mod:`.envdump` looks for them), taken block by block in C and stopped as soon as the line is over its
allowance, so even a hostile line costs a few milliseconds per megabyte here.  Real long lines stay well
under it: minified JavaScript holds at most ~45 per 4 KB (rustdoc's bundles, lines of 4-80 KB), a
multi-megabyte search index ~5.  What a judged line can cost is bounded by the same allowance: ~50 ms per
megabyte at worst (eval/bench/redaction.py measures it).
"""

from __future__ import annotations

from memtree_plugins.redaction import scan
from memtree_plugins.redaction.engine import placeholder
from memtree_plugins.redaction.envdump import count_names

MIN_LINE = 4096  # characters; shorter lines are judged whatever they hold
BLOCK = 16384  # characters counted per call into the automata (a hostile block costs ~1 ms to count)
PER_4K = 64  # keyword occurrences per 4 KB a line may hold on average: 1 in 64 characters ...
PER_LINE = 3072  # ... up to this many in one line (~40 ms of judging at worst) ...
PER_4K_LONG = 16  # ... or, in a line longer than a megabyte, this many per 4 KB

TAG = "dense-line"


def allowance(length: int) -> int:
    """How many keyword occurrences a line of ``length`` characters may hold and still be judged."""
    units = length / 4096
    return int(min(PER_4K * units, max(PER_LINE, PER_4K_LONG * units)))


def too_dense(line: str, needles: scan.Needles) -> bool:
    """True once ``line`` holds more keyword occurrences than its :func:`allowance`."""
    budget = allowance(len(line))
    seen = 0
    low = line.lower()
    exact = len(low) == len(line)  # else ("İ") each block is lowered on its own
    for at in range(0, len(line), BLOCK):
        # Blocks overlap by the longest needle, so one cut in two is still counted (once or twice: the
        # count only has to be right within a factor, not exact).
        end = at + BLOCK + needles.longest - 1
        block = line[at:end]
        try:
            seen += needles.count(block, low[at:end] if exact else block.lower()) + count_names(block)
        except ValueError:  # lone surrogates: the automaton cannot read them, nor can the scan
            return False
        if seen > budget:
            return True
    return False


class DenseLines:
    """Satisfies :class:`memtree_core.types.RedactionRule`; registered before every other rule."""

    name = TAG
    description = "a line too dense with secret keywords to judge (a hostile input) is redacted whole"

    def redact(self, text: str) -> tuple[str, int]:
        if len(text) < MIN_LINE or not scan.available():
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
