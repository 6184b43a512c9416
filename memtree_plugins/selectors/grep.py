"""grep / ripgrep output (the Grep tool in content or count mode, ``rg``/``grep``/``git grep`` in Bash).

A long hit list read top-down shows the first two files and nothing of the rest.  This keeps, round-robin
across files in their original order: each file's first match line, then each file's second, and so on;
context lines (``path-12-…``) and ``--`` separators only after every match line that fits.  Lines name
their file and line, so there is one omission marker at the end, not one per gap.  So the answer shows
which files matched and their best hits, and the footer's node holds all of them.
"""

from __future__ import annotations

import re

from memtree_plugins.selectors.lines import Count, Pick, assemble, split

COMMAND = re.compile(r"(^|[\s/;&|(])(rg|grep|egrep|fgrep|ag|ack|git\s+grep)\b")
MATCH_N = re.compile(r"^(.+?):(\d+):")  # path:12:text  (with -n)
CONTEXT_N = re.compile(r"^(.+?)-(\d+)-")  # path-12-text  (context line)
MATCH = re.compile(r"^([^:\n]+):")  # path:text  (without -n, or count mode's path:N)


def classify(line: str) -> tuple[str, str]:
    """(file, "match"|"context"|"sep"); file is "" when the line names none."""
    if line.strip() == "--":
        return "", "sep"
    m = MATCH_N.match(line)
    if m:
        return m.group(1), "match"
    m = CONTEXT_N.match(line)
    if m:
        return m.group(1), "context"
    m = MATCH.match(line)
    if m:
        return m.group(1), "match"
    return "", "match"


def grep_picks(lines: list[str]) -> list[Pick]:
    per_file: dict[str, list[int]] = {}
    context: list[int] = []
    for i, line in enumerate(lines):
        file, kind = classify(line)
        if kind == "match":
            per_file.setdefault(file, []).append(i)
        else:
            context.append(i)
    picks: list[Pick] = []
    depth = 0
    while True:
        layer = [hits[depth] for hits in per_file.values() if depth < len(hits)]
        if not layer:
            break
        picks += [Pick(i, i + 1) for i in layer]
        depth += 1
    picks += [Pick(i, i + 1) for i in context]
    return picks


class GrepSelector:
    name = "grep"
    priority = 10

    def matches(self, tool: str, command: str) -> bool:
        return tool == "Grep" or (tool == "Bash" and bool(COMMAND.search(command)))

    def select(self, text: str, budget_tokens: int, count: Count) -> str:
        lines = split(text)
        return assemble(lines, grep_picks(lines), budget_tokens, count, gaps=False)
