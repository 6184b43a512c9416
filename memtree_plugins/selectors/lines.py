"""Keep the lines that matter of a long output, within a token budget, in their original order.

Every built-in selector works the same way: it splits the text into lines, names *picks* (ranges of lines)
in order of importance — the final summary, the failing tests, the error blocks, then head and tail to
fill — and :func:`assemble` takes them greedily while they fit, rendering the kept lines in their original
order with one omission marker per gap.  A pick may be taken partly (from its start, or from its end for a
tail), so a long error block still shows its first lines.

Cost: each line is counted once, and only when it is considered, so cutting a 100k-line log to 800 tokens
counts a few hundred lines, not the log.  Per-line counts are summed, plus a reserve for the markers; the
rendered answer is counted once more at the end and picks are dropped from the least important end until
it fits, so the budget holds even for a counter that does not add up line by line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

Count = Callable[[str], int]

# A line longer than this is shown cut (its end marked), so one minified blob cannot eat the budget.
MAX_LINE_CHARS = 600


@dataclass(frozen=True)
class Pick:
    """Lines ``start``..``end`` (exclusive) to keep; ``from_end`` takes a partial pick from its end."""

    start: int
    end: int
    from_end: bool = False
    max_tokens: int | None = None  # cap for this pick (e.g. "the tail gets at most a quarter")


def marker(lines: int) -> str:
    return f"[… {lines:,} line{'s' if lines != 1 else ''} omitted …]\n"


def split(text: str) -> list[str]:
    """Lines with their endings; a last line without one gets one (so rendering joins cleanly)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    return lines


def shown(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}…[+{len(line) - MAX_LINE_CHARS:,} chars]\n"


def render(lines: list[str], kept: Iterable[int], gaps: bool = True) -> str:
    """Kept lines in order; a marker per gap, or (``gaps=False``) one marker at the end for them all."""
    out: list[str] = []
    prev = -1
    chosen = sorted(set(kept))
    if not gaps:
        out = [shown(lines[i]) for i in chosen]
        if len(chosen) < len(lines) and out:
            out.append(marker(len(lines) - len(chosen)))
        return "".join(out)
    for i in chosen:
        if i - prev > 1:
            out.append(marker(i - prev - 1))
        out.append(shown(lines[i]))
        prev = i
    if prev < len(lines) - 1 and out:
        out.append(marker(len(lines) - 1 - prev))
    return "".join(out)


def assemble(lines: list[str], picks: Iterable[Pick], budget: int, count: Count, gaps: bool = True) -> str:
    """Take ``picks`` in order while they fit ``budget`` tokens; render the kept lines in order.

    ``gaps=False``: no marker between kept lines (for self-describing lines such as ``path:12:text``),
    one at the end saying how many were left out.
    """
    if budget <= 0 or not lines:
        return ""
    cost: dict[int, int] = {}

    def line_cost(i: int) -> int:
        c = cost.get(i)
        if c is None:
            c = cost[i] = count(shown(lines[i]))
        return c

    per_marker = count(marker(len(lines)))
    kept: list[int] = []  # in the order taken, so the least important can be given back
    taken: set[int] = set()
    used = per_marker  # a trailing (or leading) gap
    for pick in picks:
        start, end = max(0, pick.start), min(len(lines), pick.end)
        order = range(end - 1, start - 1, -1) if pick.from_end else range(start, end)
        spent = 0
        for i in order:
            if i in taken:
                continue
            # A line next to a kept one extends a run; any other starts one, and may open a gap (a marker).
            new_run = gaps and (i - 1) not in taken and (i + 1) not in taken
            c = line_cost(i) + (per_marker if new_run else 0)
            if used + c > budget or (pick.max_tokens is not None and spent + c > pick.max_tokens):
                break
            used += c
            spent += c
            kept.append(i)
            taken.add(i)
        if used >= budget:
            break
    text = render(lines, kept, gaps)
    while kept and count(text) > budget:  # the counter did not add up: give back the least important
        kept = kept[: len(kept) - max(1, len(kept) // 16)]
        text = render(lines, kept, gaps)
    return text


def head_tail_picks(n: int, *, head: int = 5, tail: int = 15, budget: int) -> tuple[list[Pick], list[Pick]]:
    """The usual frame: a short head and a longer tail first, then more of both to fill what is left."""
    first = [Pick(0, min(head, n), max_tokens=budget // 8), Pick(max(0, n - tail), n, from_end=True,
                                                                  max_tokens=budget // 4)]
    fill = [Pick(0, n, from_end=True, max_tokens=budget // 2), Pick(0, n)]
    return first, fill


def with_context(indexes: Iterable[int], n: int, before: int = 1, after: int = 2) -> list[Pick]:
    return [Pick(max(0, i - before), min(n, i + after + 1)) for i in indexes]
