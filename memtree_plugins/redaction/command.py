"""``memtree redact [FILE|-] [--explain]``: what memtree would store for a file or standard input.

The text goes through the project's redaction exactly as a capture does (every rule the project's plugins
register, in order, the host's line keeping), so a plugin author can try a rule and a worried user can see
what a file would leave behind.  ``--explain`` lists each redacted span instead: where it was in the input
(line, columns, length) and the rule that fired, never the value itself.
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtree_core.commands._common import open_app, print_json

EXAMPLE = "memtree redact --explain .env"

_MARK = re.compile(r"\[REDACTED:([^\]\s]{1,100})\]")


def add_arguments(parser: Any) -> None:
    parser.add_argument("file", nargs="?", default="-", metavar="FILE",
                        help="the file to redact; '-' or nothing: standard input")
    parser.add_argument("--explain", action="store_true",
                        help="list each redacted span (line, columns, rule) instead of printing the text")
    parser.add_argument("--json", action="store_true", help="with --explain: print one JSON object")


@dataclass(frozen=True)
class Span:
    line: int  # 1-based
    start: int  # 1-based column in the input line
    end: int  # exclusive; a value folded from later lines ends at its line's end
    rule: str  # the tag of the mark: the rule id, or its family's
    continued: bool = False  # a line that held the rest of a value marked on an earlier line

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "start": self.start, "end": self.end, "chars": self.end - self.start,
                "rule": self.rule, **({"continued": True} if self.continued else {})}


def spans(original: str, redacted: str, lines: dict[int, list[str]]) -> list[Span]:
    """Where each mark of ``redacted`` stands in ``original``: the two texts have the same lines (the host
    keeps the line count), so each changed line is aligned character by character."""
    out: list[Span] = []
    before, after = original.split("\n"), redacted.split("\n")
    for n in sorted(lines):
        old, new = before[n - 1], after[n - 1]
        if all(tag.startswith("+") for tag in lines[n]):
            out.append(Span(n, 1, len(old) + 1, lines[n][0][1:], continued=True))
            continue
        marks = [m for m in _MARK.finditer(new)]
        ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        for m in marks:
            lo = hi = None
            for tag, i1, i2, j1, j2 in ops:
                if tag == "equal" or j2 <= m.start() or j1 >= m.end():
                    continue
                lo = i1 if lo is None else min(lo, i1)
                hi = i2 if hi is None else max(hi, i2)
            if lo is None:  # the mark was in the input already
                continue
            out.append(Span(n, lo + 1, (hi or lo) + 1, m.group(1)))
    return out


def _read(path: str) -> str:
    # the read tool's own cap: no bigger file is ever stored
    from memtree_plugins.lib.files import MAX_READ_BYTES as MAX_BYTES

    if path == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        with Path(path).open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"{'standard input' if path == '-' else path} is over {MAX_BYTES // 2**20} MB; "
                         f"redact a part of it (e.g. head -c 10M FILE | memtree redact)")
    return data.decode("utf-8", errors="replace")  # what a capture of it would hold


def run(args: Any) -> int:
    try:
        text = _read(args.file)
    except (OSError, ValueError) as exc:
        print(f"memtree redact: {exc}", file=sys.stderr)
        return 2
    app = open_app(args)
    from memtree_core.daemon.redaction_gate import RedactionUnavailable

    try:
        done = app.redact_lines(text)
    except RedactionUnavailable as exc:
        print(f"memtree redact: {exc}", file=sys.stderr)
        return 2
    if not args.explain:
        sys.stdout.write(done.text)
        return 0
    found = spans(text, done.text, done.lines)
    if args.json:
        print_json({"values": sum(done.hits.values()), "hits": done.hits, "spans": [s.as_dict() for s in found]})
        return 0
    for s in found:
        where = f"line {s.line}" if s.continued else f"line {s.line}, columns {s.start}-{s.end - 1}"
        what = "rest of the value above" if s.continued else f"{s.end - s.start} chars"
        print(f"{where}: {s.rule} ({what})")
    total = sum(done.hits.values())
    rules = ", ".join(f"{name} {n}" for name, n in sorted(done.hits.items()))
    print(f"{total} value{'s' if total != 1 else ''} redacted" + (f" by rule: {rules}" if rules else ""))
    return 0
