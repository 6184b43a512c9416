"""Redact a captured slice of a file in the context of the whole file.

A Read capture holds lines ``startLine..`` of a file.  Redacted on its own, a slice that starts inside
a private key (lines 200-300 of a file whose key is at 187-237) holds key lines with no ``BEGIN`` line
to show what they are.  So when the file on disk still holds exactly those lines, the whole file is
redacted and the slice is cut from that (redaction keeps line numbers, see
:mod:`memtree_core.daemon.redacting`).  Otherwise (file gone, changed, too big, binary) the caller redacts
the slice alone, as before.  Grep captures get the same treatment line by line
(:func:`redact_grep_lines`).
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING

from memtree_core.daemon.redacting import CONTINUED, Redacted

if TYPE_CHECKING:
    from memtree_core.context import Context

FILE_BYTES = 4 * 1024 * 1024  # a bigger file is not read again for a capture; the slice is redacted alone


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _read(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO planted there must not hang the server
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > FILE_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > FILE_BYTES or b"\x00" in data:
        return None
    return data.decode("utf-8", "replace")


def redact_slice(app: Context, path: str, start: int, content: str) -> Redacted | None:
    """``content`` (lines ``start..`` of ``path``) cut from the redacted whole file, or None when the file
    on disk does not hold those lines now."""
    if start <= 1 or not content:
        return None  # a slice from line 1 has everything before it: redacted alone, it loses nothing
    text = _read(path)
    if text is None:
        return None
    want = _lines(content)
    lines = _lines(text)
    lo, hi = start - 1, start - 1 + len(want)
    if hi > len(lines) or "".join(lines[lo:hi]).rstrip("\r\n") != content.rstrip("\r\n"):
        return None
    done = app.redact_lines(text)
    clean = _lines(done.text)
    if len(clean) != len(lines):
        return None
    piece = "".join(clean[lo:hi])
    if not content.endswith("\n") and piece.endswith("\n"):
        piece = piece[:-1]
    hits: dict[str, int] = {}
    kept = {n - lo: r for n, r in done.lines.items() if lo < n <= hi}
    for rules in kept.values():
        for r in rules:
            if not r.startswith(CONTINUED):
                hits[r] = hits.get(r, 0) + 1
    return Redacted(piece, hits, kept)


# ``path:12:text`` (a match) / ``path-12-text`` (context), as Claude Code's Grep prints with -n.
_GREP_LINES = (re.compile(r"^(?P<path>[^\n]+?):(?P<n>\d{1,9}):(?P<text>[^\n]*)$"),
               re.compile(r"^(?P<path>[^\n]+?)-(?P<n>\d{1,9})-(?P<text>[^\n]*)$"))


class _Files:
    """Files a grep capture names, each read and redacted whole once (bounded like :func:`redact_slice`)."""

    def __init__(self, app: Context, cwd: str) -> None:
        self.app = app
        self.cwd = cwd
        self.budget = 2 * FILE_BYTES  # the ack waits for this: bounded, then lines are redacted as they are
        self.seen: dict[str, tuple[list[str], list[str]] | None] = {}

    def lines(self, path: str) -> tuple[list[str], list[str]] | None:
        if path in self.seen:
            return self.seen[path]
        got = None
        full = os.path.join(self.cwd, path) if self.cwd else path
        text = _read(full) if os.path.isabs(full) and self.budget > 0 else None
        if text is not None:
            self.budget -= len(text)
            raw = [ln.rstrip("\r\n") for ln in _lines(text)]
            clean = [ln.rstrip("\r\n") for ln in _lines(self.app.redact_lines(text).text)]
            got = (raw, clean) if len(raw) == len(clean) else None
        self.seen[path] = got
        return got


def redact_grep_lines(app: Context, content: str, cwd: str) -> str:
    """A Grep capture's ``path:N:text`` lines with each ``text`` taken from its redacted whole file when
    the file still holds it there (a key body line matched by the pattern has no BEGIN line beside it);
    other lines are left as they are (the whole capture is redacted afterwards either way)."""
    files = _Files(app, cwd)
    out = []
    for line in content.split("\n"):
        for shape in _GREP_LINES:
            m = shape.match(line)
            got = files.lines(m.group("path")) if m else None
            if m is None or got is None:
                continue
            raw, clean = got
            n = int(m.group("n"))
            if 1 <= n <= len(raw) and raw[n - 1] == m.group("text"):
                line = line[:m.start("text")] + clean[n - 1]
                break
        out.append(line)
    return "\n".join(out)
