"""Redaction as the store and the tools need it: the whole text at once, line numbers kept, and a record
of which line lost which value to which rule.

Every stored or returned piece of text is cut from text that went through here whole (a key split
across two chunks, a grep hit on a key's body line, the tail of a long output are redacted with their
context, never on their own).  So that a piece cut by line numbers still lines up with the source, a
rule that folds several lines into one marker (a PEM block becomes ``[REDACTED:private-key]``) gets
the lost line breaks put back right after its marker: line N of the redacted text is line N of the
original, with the same number of lines.

:attr:`Redacted.lines` maps a 1-based line to the rules that redacted a value on it, once per value,
so a result can say "memtree redacted 2 values: line 14 (aws-access-key), …" and an agent never takes
``[REDACTED:…]`` for what the file holds (the wording is the redaction plugin's,
:mod:`memtree_plugins.lib.masking.marks`).  This is the pass the redaction gate runs every rule through, so it
is the host's: a plugin's rules get the same line keeping as the built-ins'.
"""

from __future__ import annotations

import re
import threading
import time
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field

from memtree_core.types import RedactionRule

MARK = "[REDACTED:"
CONTINUED = "+"  # prefix of a rule name in Redacted.lines: the line is part of a value marked above it


class TagHits(int):
    """A rule's hit count that also says how many values each tag (``[REDACTED:<tag>]``) took: a rule that
    stands for many, such as the secret catalogue (one tag per gitleaks rule id), returns one, and
    :attr:`Redacted.hits` (so ``memtree stats``) counts the tags instead of the rule's name."""

    by_tag: dict[str, int]

    def __new__(cls, by_tag: dict[str, int]) -> TagHits:
        self = super().__new__(cls, sum(by_tag.values()))
        self.by_tag = by_tag
        return self


@dataclass
class Redacted:
    text: str
    hits: dict[str, int] = field(default_factory=dict)  # rule name (or the tag it reports) -> values redacted
    # 1-based line -> the rule of each value redacted on it (``+rule``: the line held part of a value
    # that started on an earlier line; it is blank or cut now)
    lines: dict[int, list[str]] = field(default_factory=dict)


def _pad_after_marker(block: list[str], missing: int) -> list[str]:
    """Give ``block`` ``missing`` more lines: empty ones right after its last marker (inside the same
    string literal or comment the secret was in), or at its end when it holds no marker."""
    if not block:
        return [""] * missing
    for i in range(len(block) - 1, -1, -1):
        at = block[i].rfind(MARK)
        if at >= 0:
            end = block[i].find("]", at)
            end = len(block[i]) if end < 0 else end + 1
            line = block[i]
            return block[:i] + [line[:end]] + [""] * (missing - 1) + [line[end:]] + block[i + 1:]
    return block + [""] * missing


def _fold(block: list[str], extra: int) -> list[str]:
    """Take ``extra`` lines out of ``block`` by joining its last lines (a rule that added line breaks)."""
    keep = len(block) - extra
    if keep <= 0:
        return [" ".join(block)]
    return block[:keep - 1] + [" ".join(block[keep - 1:])]


SYNC_LINES = 4  # equal lines that mark where the old and new texts agree again after a change


def _resync(a: list[str], b: list[str], i: int, j: int, where: dict[str, list[int]]) -> tuple[int, int]:
    """After ``a[i] != b[j]``: the first ``(k, m)``, ``k > i``, ``m >= j``, from which ``a`` and ``b`` agree
    for :data:`SYNC_LINES` lines (or to their ends); ``(len(a), len(b))`` if they never do.  A rule only
    replaces spans in place, so the texts agree again right after each replacement."""
    for m in range(j, min(len(b), j + 1 + SYNC_LINES * 4) + 1):
        if m == len(b):
            return len(a), len(b)
        run = min(SYNC_LINES, len(b) - m)
        positions = where.get(b[m], [])
        for k in positions[bisect_right(positions, i):]:
            if len(a) - k >= run and a[k:k + run] == b[m:m + run] and (run == SYNC_LINES or len(a) - k == run):
                return k, m
    return len(a), len(b)


def realign(before: str, after: str) -> tuple[str, list[tuple[int, int, int, int]]]:
    """``after`` with as many lines as ``before``, and the changed regions ``(i1, i2, j1, j2)`` as
    0-based half-open line ranges of ``before`` and of the returned text."""
    a, b = before.split("\n"), after.split("\n")
    where: dict[str, list[int]] = {}
    for k, line in enumerate(a):
        where.setdefault(line, []).append(k)
    out: list[str] = []
    regions: list[tuple[int, int, int, int]] = []
    i = j = 0
    while i < len(a) or j < len(b):
        if i < len(a) and j < len(b) and a[i] == b[j]:
            out.append(b[j])
            i += 1
            j += 1
            continue
        k, m = _resync(a, b, i, j, where) if i < len(a) and j < len(b) else (len(a), len(b))
        block = b[j:m]
        want = k - i
        if len(block) < want:
            block = _pad_after_marker(block, want - len(block))
        elif len(block) > want:
            block = _fold(block, len(block) - want)
        regions.append((i, k, len(out), len(out) + len(block)))
        out += block
        i, j = k, m
    return "\n".join(out), regions


_MARKS = re.compile(re.escape(MARK) + r"([^\]\s]{1,64})\]")


def changed_lines(before: str, after: str) -> dict[int, list[str]]:
    """The lines of ``after`` (as many as ``before`` has) that differ, each with the tag of every mark
    new on it; a changed line with no new mark continues the value marked on the line above it."""
    lines: dict[int, list[str]] = {}
    last_tag = "redacted"
    for n, (old, new) in enumerate(zip(before.split("\n"), after.split("\n"), strict=False), 1):
        if old == new:
            continue
        tags = _MARKS.findall(new)
        for tag in _MARKS.findall(old):
            if tag in tags:
                tags.remove(tag)
        if tags:
            last_tag = tags[-1]
            lines[n] = tags
        else:
            lines[n] = [CONTINUED + (last_tag if n - 1 in lines else "redacted")]
    return lines


class TooSlow(Exception):
    """Redaction went past its deadline: the text must be neither stored nor returned."""


class _Deadline(threading.local):
    at: float | None = None  # this thread's redaction deadline (time.monotonic()), or none


_deadline = _Deadline()
_stopping = threading.Event()


def stop_all() -> None:
    """The daemon is stopping: every redaction still running gives up at its next check (:class:`TooSlow`)."""
    _stopping.set()


def stopping() -> bool:
    return _stopping.is_set()


def check_deadline() -> None:
    """Raise :class:`TooSlow` when the redaction running on this thread is past its deadline, or the daemon
    is stopping.  The host checks between rules; a rule with a long loop of its own may call this now and
    then to stop sooner."""
    at = _deadline.at
    if (at is not None and time.monotonic() > at) or _stopping.is_set():
        raise TooSlow


def redact(rules: Iterable[RedactionRule], text: str, deadline: float | None = None) -> Redacted:
    """Apply ``rules`` in order to the whole of ``text``, keeping its line count (see module doc).

    Per-line records name each rule by the tag of its mark (``[REDACTED:<tag>]``), which for the built-in
    rules is the rule's name or its family's.  ``deadline`` (``time.monotonic()``): raise :class:`TooSlow`
    past it, between rules or from a rule that calls :func:`check_deadline`."""
    previous = _deadline.at
    _deadline.at = deadline if previous is None or deadline is None else min(previous, deadline)
    try:
        return _redact(rules, text)
    finally:
        _deadline.at = previous


def _redact(rules: Iterable[RedactionRule], text: str) -> Redacted:
    out = Redacted(text)
    current = text
    newlines = text.count("\n")
    for rule in rules:
        check_deadline()
        new, n = rule.redact(current)
        if not n:
            continue
        # A rule standing for many (the secret catalogue) says how many values each of its tags took.
        for name, k in (n.by_tag if isinstance(n, TagHits) else {rule.name: n}).items():
            out.hits[name] = out.hits.get(name, 0) + k
        if new is current or new == current:
            continue
        if new.count("\n") != newlines:
            new, _regions = realign(current, new)
        current = new
    if current is not text and current != text:
        out.text = current
        out.lines = changed_lines(text, current)
    return out
