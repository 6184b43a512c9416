"""``git log``: one line per commit, short hash and subject, newest first as git prints them, as many as
fit — a long log reads as its list of commits, not as its first three with their diffs."""

from __future__ import annotations

import re

from memtree_plugins.selectors.lines import Count, Pick, assemble, split

COMMAND = re.compile(r"(^|[\s;&|(])git(\s+-\S+(\s+\S+)?)*\s+(log|reflog|shortlog)\b")
SUBJECT_CHARS = 72
COMMIT = re.compile(r"^commit [0-9a-f]{7,64}\b")


def subject_of(lines: list[str], start: int, end: int) -> int | None:
    """The subject is the first indented line after the headers (Author:, Date:, Merge:)."""
    for j in range(start + 1, end):
        if lines[j].startswith("    ") and lines[j].strip():
            return j
    return None


class GitLogSelector:
    name = "git-log"
    priority = 10

    def matches(self, tool: str, command: str) -> bool:
        return tool == "Bash" and bool(COMMAND.search(command))

    def select(self, text: str, budget_tokens: int, count: Count) -> str:
        lines = split(text)
        commits = [i for i, line in enumerate(lines) if COMMIT.match(line)]
        if not commits:  # --oneline and friends: one commit per line already, newest first
            return assemble(lines, [Pick(0, len(lines))], budget_tokens, count, gaps=False)
        # One line per commit, "<short hash> <subject>" (a full hash alone costs ~30 tokens), newest first;
        # bodies, stats and diffs stay in the node.
        short = []
        for a, b in zip(commits, [*commits[1:], len(lines)]):  # noqa: B905 - one more end than starts
            subject = subject_of(lines, a, b)
            text_of = lines[subject].strip() if subject is not None else ""
            if len(text_of) > SUBJECT_CHARS:  # a 300-character subject would cost ten commits' room
                text_of = text_of[: SUBJECT_CHARS - 1] + "…"
            short.append(f"{lines[a].split()[1][:12]} {text_of}\n")
        return assemble(short, [Pick(0, len(short))], budget_tokens, count, gaps=False)
