"""The fallback chunker: fixed windows of 200 lines that tile any text file.

The ``chunkers`` plugin registers it (every path, lowest priority); the ``read`` tool falls back to it when
the chosen chunker fails or does not tile the file, whichever chunkers are loaded.
"""

from __future__ import annotations

from memtree_core.types import Chunk
from memtree_plugins.lib.lines import generic_outline, make_chunk, split_lines

WINDOW_LINES = 200


def window_chunks(lines: list[str], start: int, end: int, size: int = WINDOW_LINES,
                  kind: str = "window", symbol: str | None = None) -> list[Chunk]:
    """Tile lines ``start..end`` (1-based, inclusive) with windows of at most ``size`` lines."""
    out: list[Chunk] = []
    for a in range(start, end + 1, size):
        b = min(a + size - 1, end)
        out.append(make_chunk(lines, a, b, kind, symbol, generic_outline(lines[a - 1:b])))
    return out


class WindowChunker:
    """Matches every path at the lowest priority, so any language gets chunked."""

    name = "window"
    priority = 0

    def __init__(self, size: int = WINDOW_LINES) -> None:
        self.size = size

    def matches(self, path: str) -> bool:
        return True

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        return window_chunks(lines, 1, len(lines), self.size)
