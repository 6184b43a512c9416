"""Printing to a terminal of any width: prose is wrapped at spaces, lines of code or output are cut with
an ellipsis (never leaving a bracket opened just before the cut)."""

from __future__ import annotations

import shutil
import textwrap

MIN_WIDTH = 40
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def terminal_width(fallback: int = 100) -> int:
    """The terminal's columns ($COLUMNS wins, then the tty; ``fallback`` when output is not a terminal)."""
    return max(MIN_WIDTH, shutil.get_terminal_size((fallback, 24)).columns)


def fit(line: str, width: int) -> str:
    """``line`` if it fits in ``width`` columns, else its start and '…' (at a word break when one is near)."""
    if len(line) <= width:
        return line
    room = max(1, width - 1)
    cut = line[:room]
    space = cut.rfind(" ")
    if space >= room * 2 // 3:
        cut = cut[:space]
    # "a note (cut mid-parenth…" reads as a typo: end before a bracket whose close was cut off instead.
    for opener, closer in _CLOSERS.items():
        at = cut.rfind(opener)
        if at > cut.rfind(closer) and at >= room // 2:
            cut = cut[:at]
    return cut.rstrip() + "…"


def wrap(text: str, width: int, indent: str = "") -> str:
    """Prose wrapped at spaces; paths and other long words are kept whole rather than broken."""
    return "\n".join(textwrap.fill(para, width, initial_indent=indent, subsequent_indent=indent + "  ",
                                   break_long_words=False, break_on_hyphens=False)
                     for para in text.splitlines() or [""])
