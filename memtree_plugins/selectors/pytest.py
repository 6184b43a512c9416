"""pytest output: the final tally, the short summary's FAILED/ERROR lines, then each failure's header,
``E`` lines and location, then the tracebacks; head and tail fill what is left."""

from __future__ import annotations

import re

from memtree_plugins.selectors.generic import ERROR_LINE, select_lines
from memtree_plugins.selectors.lines import Count, Pick, split

COMMAND = re.compile(r"(^|[\s/;&|(])(py\.?test|pytest-\w+|tox|nox|hatch test)\b|-m\s+pytest\b")
TALLY = re.compile(r"^=+ .*\b(passed|failed|error|errors|skipped|xfailed|no tests ran)\b.* =+\s*$")
SUMMARY = re.compile(r"^(FAILED|ERROR|XPASS)\s")
HEADER = re.compile(r"^_{3,} .+ _{3,}\s*$")
E_LINE = re.compile(r"^E\s")
LOCATION = re.compile(r"^[\w./\\-]+\.py:\d+: \w")


def pytest_picks(lines: list[str]) -> list[Pick]:
    def where(rx: re.Pattern[str]) -> list[int]:
        return [i for i, line in enumerate(lines) if rx.search(line)]

    picks = [Pick(i, i + 1) for i in where(TALLY)]
    picks += [Pick(i, i + 1) for i in where(SUMMARY)]
    for rx in (HEADER, E_LINE, LOCATION):
        picks += [Pick(i, i + 1) for i in where(rx)]
    # Then each failure block whole (header down to the next header), first lines first.
    headers = where(HEADER)
    for a, b in zip(headers, [*headers[1:], len(lines)]):  # noqa: B905 - one more end than starts
        picks.append(Pick(a, b))
    picks += [Pick(i, i + 1) for i in where(ERROR_LINE)]
    return picks


class PytestSelector:
    name = "pytest"
    priority = 10

    def matches(self, tool: str, command: str) -> bool:
        return tool == "Bash" and bool(COMMAND.search(command))

    def select(self, text: str, budget_tokens: int, count: Count) -> str:
        lines = split(text)
        return select_lines(text, budget_tokens, count, pytest_picks(lines), lines)
