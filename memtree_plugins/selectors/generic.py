"""The fallback selector for any output: a short head, the error lines with a little context, a longer tail.

Build tools, linters and test runners put their verdict last and their causes wherever the error happened,
so a plain "first N lines" cut loses both.  This keeps, in order of importance: the last lines (summary,
exit message), the first lines (what ran), every line that looks like an error or a failure (first and
last occurrence before the ones between: the root cause and the final word), then fills with more tail
and more head.
"""

from __future__ import annotations

import re

from memtree_plugins.selectors.lines import Count, Pick, assemble, head_tail_picks, split, with_context

ERROR_LINE = re.compile(
    r"\b(error|errors|fatal|failed|failure|failures|exception|traceback|panic(?:ked)?|abort(?:ed)?|"
    r"segmentation fault|core dumped|undefined reference|cannot|could not|couldn't|not found|no such file|"
    r"permission denied|denied|refused|timed? ?out|assert(?:ion)?(?:error)?|critical)\b"
    r"|^E\s{2,}|^FAILED\b|^ERROR\b|^FAIL\b|✗|✕|×|npm ERR!|^\s*\^+\s*$",
    re.IGNORECASE,
)
WARNING_LINE = re.compile(r"\bwarn(?:ing)?s?\b|\bdeprecat", re.IGNORECASE)


def important_first(indexes: list[int]) -> list[int]:
    """First and last occurrence, then the rest in order."""
    if len(indexes) <= 2:
        return indexes
    return [indexes[0], indexes[-1], *indexes[1:-1]]


def error_picks(lines: list[str], pattern: re.Pattern[str] = ERROR_LINE) -> list[Pick]:
    hits = important_first([i for i, line in enumerate(lines) if pattern.search(line)])
    n = len(lines)
    return [Pick(i, i + 1) for i in hits] + with_context(hits, n)


def select_lines(text: str, budget: int, count: Count, priority: list[Pick] | None = None,
                 lines: list[str] | None = None) -> str:
    """Head/tail frame around ``priority`` picks (default: error lines), then fill."""
    lines = split(text) if lines is None else lines
    first, fill = head_tail_picks(len(lines), budget=budget)
    picks = priority if priority is not None else error_picks(lines)
    warnings = [Pick(i, i + 1) for i, line in enumerate(lines) if WARNING_LINE.search(line)][:50]
    return assemble(lines, [*first, *picks, *warnings, *fill], budget, count)


class GenericSelector:
    name = "generic"
    priority = 0

    def matches(self, tool: str, command: str) -> bool:
        return True

    def select(self, text: str, budget_tokens: int, count: Count) -> str:
        return select_lines(text, budget_tokens, count)
