"""cargo / rustc output: each ``error[...]`` block (message, ``-->`` location, the code it points at),
panics and failing tests, the ``test result:`` tally and ``could not compile``; warnings only after."""

from __future__ import annotations

import re

from memtree_plugins.selectors.generic import select_lines
from memtree_plugins.selectors.lines import Count, Pick, split

COMMAND = re.compile(r"(^|[\s/;&|(])(cargo|rustc|clippy-driver|cargo-\w+)\b")
ERROR = re.compile(r"^error(\[E\d+\])?:")
WARNING = re.compile(r"^warning(\[\w+\])?:")
FAILED_TEST = re.compile(r"^test .+ \.\.\. FAILED|^---- .+ stdout ----|panicked at|^failures:")
TALLY = re.compile(r"^test result:|could not compile|^error: could not|^\s*Finished |^error: test failed")


def block_end(lines: list[str], start: int) -> int:
    """A rustc diagnostic runs to the next blank line (its code excerpt and notes included)."""
    i = start + 1
    while i < len(lines) and lines[i].strip():
        i += 1
    return i


def cargo_picks(lines: list[str]) -> list[Pick]:
    idx = range(len(lines))
    picks = [Pick(i, i + 1) for i in idx if TALLY.search(lines[i])]
    errors = [i for i in idx if ERROR.search(lines[i])]
    picks += [Pick(i, i + 1) for i in errors]
    picks += [Pick(i, i + 1) for i in idx if FAILED_TEST.search(lines[i])]
    picks += [Pick(i, block_end(lines, i)) for i in errors]
    picks += [Pick(i, i + 1) for i in idx if WARNING.search(lines[i])]
    return picks


class CargoSelector:
    name = "cargo"
    priority = 10

    def matches(self, tool: str, command: str) -> bool:
        return tool == "Bash" and bool(COMMAND.search(command))

    def select(self, text: str, budget_tokens: int, count: Count) -> str:
        lines = split(text)
        return select_lines(text, budget_tokens, count, cargo_picks(lines), lines)
