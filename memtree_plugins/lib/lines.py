"""Line helpers the chunkers and the wrapped tools share: one way to split text into numbered lines, and
outline cropping.

Lines are split on ``\\n`` only (``\\r\\n`` keeps its ``\\r`` on the line), which is how editors, ``grep -n``
and Python's own line numbers count; ``str.splitlines`` would also break on form feeds and U+2028 and
disagree with them.  Joining the pieces gives the text back exactly, so chunks that tile a file lose
nothing.
"""

from __future__ import annotations

import re

from memtree_core.types import Chunk, split_lines

__all__ = ["OUTLINE_LINE_CHARS", "crop", "generic_outline", "make_chunk", "split_lines"]

OUTLINE_LINE_CHARS = 160


def crop(line: str, limit: int = OUTLINE_LINE_CHARS) -> str:
    line = line.rstrip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def make_chunk(lines: list[str], start: int, end: int, kind: str, symbol: str | None, outline: str) -> Chunk:
    """A chunk for 1-based inclusive lines ``start..end`` of ``lines``."""
    return Chunk(start, end, "".join(lines[start - 1:end]), kind=kind, symbol=symbol, outline=outline)


# Lines that usually open a definition in common languages; the generic outline keeps them.
_DEFINITION = re.compile(
    r"^\s{0,8}(?:export\s+|pub(?:\([^)]*\))?\s+|public\s+|private\s+|protected\s+|static\s+|async\s+|"
    r"abstract\s+|final\s+|inline\s+|default\s+)*"
    r"(?:def|class|function|fn|func|struct|enum|interface|trait|impl|type|module|namespace|package|"
    r"object|record|sub|proc|macro_rules!|CREATE\s+(?:TABLE|VIEW|INDEX|FUNCTION))\b",
    re.IGNORECASE,
)


def generic_outline(lines: list[str], limit: int = 8) -> str:
    """First non-blank line plus definition-looking lines: a language-agnostic outline."""
    out: list[str] = []
    first = next((ln for ln in lines if ln.strip()), None)
    if first is not None:
        out.append(crop(first))
    for ln in lines:
        if len(out) >= limit:
            break
        if _DEFINITION.match(ln):
            c = crop(ln)
            if c not in out:
                out.append(c)
    return "\n".join(out)
