"""npm / node / jest / vitest / tsc output: ``npm ERR!`` lines, failing test markers (``●``, ``✕``,
``FAIL``), ``error TS…`` diagnostics, thrown errors with their first stack frames, and the test tallies."""

from __future__ import annotations

import re

from memtree_plugins.selectors.generic import ERROR_LINE, select_lines
from memtree_plugins.selectors.lines import Count, Pick, split

COMMAND = re.compile(r"(^|[\s/;&|(])(npm|npx|pnpm|yarn|bun|node|deno|jest|vitest|mocha|tsc|eslint|next|vite)\b")
TALLY = re.compile(r"^\s*(Tests|Test Suites|Test Files|Snapshots|Duration):|^\s*\d+ (passing|failing|pending)\b"
                   r"|Found \d+ errors?|^npm (ERR!|error) code\b")
FAILURE = re.compile(r"^\s*●\s|^\s*(✕|×|✖)\s|^\s*FAIL\s|error TS\d+:|^npm (ERR!|error)\s|^\s*\d+\) ")
THROWN = re.compile(r"^\s*(\w*Error|Error|AssertionError \[\w+\])(:|\s\[)")
FRAME = re.compile(r"^\s+at\s")


def node_picks(lines: list[str]) -> list[Pick]:
    idx = range(len(lines))
    picks = [Pick(i, i + 1) for i in idx if TALLY.search(lines[i])]
    picks += [Pick(i, i + 1) for i in idx if FAILURE.search(lines[i])]
    thrown = [i for i in idx if THROWN.search(lines[i])]
    picks += [Pick(i, i + 1) for i in thrown]
    # The first two stack frames after each thrown error (where it happened), not the whole stack.
    for i in thrown:
        frames = [j for j in range(i + 1, min(len(lines), i + 12)) if FRAME.search(lines[j])][:2]
        picks += [Pick(j, j + 1) for j in frames]
    picks += [Pick(i, i + 1) for i in idx if ERROR_LINE.search(lines[i]) and not FRAME.search(lines[i])]
    return picks


class NodeSelector:
    name = "node"
    priority = 10

    def matches(self, tool: str, command: str) -> bool:
        return tool == "Bash" and bool(COMMAND.search(command))

    def select(self, text: str, budget_tokens: int, count: Count) -> str:
        lines = split(text)
        return select_lines(text, budget_tokens, count, node_picks(lines), lines)
