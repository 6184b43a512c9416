"""How a result tells the agent what memtree redacted: which lines lost which values to which rules.

The records come from the host's line-keeping pass (:class:`memtree_core.daemon.redacting.Redacted`); the tools
(``read``, ``get``, ``grep``) turn them into one sentence, so an agent never takes ``[REDACTED:…]`` for what
the file holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from memtree_core.daemon.redacting import CONTINUED, MARK

__all__ = ["MARK", "count_marks", "describe", "within"]

_MARK_TAG = re.compile(r"\[REDACTED:([^\]\s]+)\]")


def count_marks(text: str) -> dict[str, int]:
    """Marks per tag in an already redacted text: the count of a piece cut from a whole text that was
    redacted earlier (a grep listing whose lines come from redacted files)."""
    out: dict[str, int] = {}
    for m in _MARK_TAG.finditer(text):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def _ranges(lines: Mapping[int, list[str]]) -> list[tuple[int, int, list[str]]]:
    """Consecutive lines redacted by the same rules, as ``(first, last, rules of one line)``."""
    out: list[tuple[int, int, list[str]]] = []
    for line in sorted(lines):
        rules = lines[line]
        if out and out[-1][1] == line - 1 and (out[-1][2] == rules or all(
                r.startswith(CONTINUED) and r[1:] in out[-1][2] for r in rules)):
            out[-1] = (out[-1][0], line, rules)
        else:
            out.append((line, line, rules))
    return out


def _rules_label(rules: list[str]) -> str:
    counts: dict[str, int] = {}
    for r in rules:
        r = r.removeprefix(CONTINUED)
        counts[r] = counts.get(r, 0) + 1
    return ", ".join(f"{n} {r}" if n > 1 else r for r, n in counts.items())


def describe(lines: Mapping[int, list[str]], *, source: str = "the file on disk", numbered: str = "",
             limit: int = 8) -> str:
    """One sentence naming the lines and rules, e.g. ``memtree redacted 2 values: line 14 (aws-access-key),
    line 15 (secret-assignment); …``.  ``numbered``: what the line numbers count, e.g. " of this node"."""
    if not lines:
        return ""
    values = sum(1 for rules in lines.values() for r in rules if not r.startswith(CONTINUED))
    parts = []
    spans = _ranges(lines)
    for first, last, rules in spans[:limit]:
        where = (f"line {first}" if first == last else f"lines {first}-{last}") + numbered
        parts.append(f"{where} ({_rules_label(rules)})")
    if len(spans) > limit:
        parts.append(f"{len(spans) - limit} more places")
    noun = "value" if values == 1 else "values"
    if not values:  # a range that holds only the continuation of a value marked before it
        return ("memtree redacted a value that covers " + ", ".join(parts)
                + f"; {source} is unchanged")
    return (f"memtree redacted {values} {noun}: " + ", ".join(parts)
            + f"; the [REDACTED:rule] marks are memtree's, {source} is unchanged")


def within(lines: Mapping[int, list[str]], first: int, last: int, shift: int = 0) -> dict[int, list[str]]:
    """The entries of ``lines`` from ``first`` to ``last`` (inclusive), renumbered by ``shift``."""
    return {n + shift: r for n, r in lines.items() if first <= n <= last}
