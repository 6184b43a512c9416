"""Two chunkers: INI/TOML files by section, and a replacement for memtree's built-in ``window`` chunker.

A chunker turns a file into :class:`memtree_core.types.Chunk` objects (1-based inclusive line ranges, the
text, a kind, a symbol and a short outline).  For each file memtree uses the highest-``priority`` chunker
whose ``matches(path)`` is true.  Chunks must tile the file: every line in exactly one chunk, in order, so
joining their texts gives the file back.
"""

from __future__ import annotations

import re

from memtree_core.types import Chunk, split_lines  # the host's own line split: what its tiling rule counts

# `[section]`, `[a.b."c d"]`, `[[array.of.tables]]`; a trailing comment is allowed.  Only at column 0:
# an indented `[1, 2]` is far more often the last row of a multi-line TOML array than a header.
HEADER = re.compile(r"^(\[\[?)\s*([^\[\]]+?)\s*(\]\]?)\s*(?:[#;].*)?$")
KEY = re.compile(r"^\s*([A-Za-z0-9_.\-\"' ]+?)\s*[=:]")
MAX_SECTION_LINES = 200  # a longer section is cut into windows that keep the section as their symbol
OUTLINE_KEYS = 6


def _outline(header: str | None, lines: list[str]) -> str:
    keys = []
    for line in lines:
        m = KEY.match(line)
        if m and not line.lstrip().startswith(("#", ";")):
            keys.append(m.group(1).strip())
        if len(keys) == OUTLINE_KEYS:
            keys.append("…")
            break
    head = header.strip() if header else "(top level)"
    return head + (": " + ", ".join(keys) if keys else "")


class SectionChunker:
    """INI / TOML / .cfg / .conf files: one chunk per ``[section]`` (plus the lines before the first one)."""

    name = "acme-sections"
    priority = 50  # above the window fallback (0), below language chunkers such as Python's (100)
    suffixes = (".ini", ".toml", ".cfg", ".conf", ".editorconfig")

    def matches(self, path: str) -> bool:
        return path.lower().endswith(self.suffixes)

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        starts: list[tuple[int, str | None, str | None]] = [(1, None, None)]  # (line, symbol, header line)
        for number, line in enumerate(lines, start=1):
            m = HEADER.match(line)
            if m and len(m.group(1)) == len(m.group(3)):  # `[x]` or `[[x]]`, not `[x]]`
                if number == 1:
                    starts[0] = (1, m.group(2), line)
                else:
                    starts.append((number, m.group(2), line))
        chunks: list[Chunk] = []
        for i, (start, symbol, header) in enumerate(starts):
            end = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
            if end < start:
                continue
            kind = "section" if symbol is not None else "preamble"
            for a in range(start, end + 1, MAX_SECTION_LINES):
                b = min(a + MAX_SECTION_LINES - 1, end)
                body = lines[a - 1:b]
                chunks.append(Chunk(a, b, "".join(body), kind=kind, symbol=symbol,
                                    outline=_outline(header, body)))
        return chunks


class ShortWindowChunker:
    """Replaces the built-in ``window`` chunker (same name, same role: the fallback for any file) with
    windows of 100 lines instead of 200: ACME's generated files are dense, and smaller windows make a
    search hit cost fewer tokens to read."""

    name = "window"
    priority = 0
    size = 100

    def matches(self, path: str) -> bool:
        return True

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        out = []
        for a in range(1, len(lines) + 1, self.size):
            b = min(a + self.size - 1, len(lines))
            body = lines[a - 1:b]
            first = next((ln.strip() for ln in body if ln.strip()), "")
            out.append(Chunk(a, b, "".join(body), kind="window", outline=first[:160]))
        return out
