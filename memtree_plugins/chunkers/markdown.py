"""Markdown by heading.

ATX (``## Title``) and setext (``Title`` over ``===``/``---``) headings start sections; lines inside
fenced code blocks (`````` ``` `````` or ``~~~``, closed by a fence of the same character at least as
long) and YAML front matter are never taken for headings, so a ``# comment`` in a shell snippet does not
split anything.

A section that fits in ``section_lines`` lines, subsections included, is one chunk whose outline lists
its headings; a longer one becomes its own text up to the first subsection, then its subsections, each
judged the same way.  A very long stretch without headings is cut into ~200-line pieces at blank lines
outside code fences.  Symbols are heading paths: ``Install > From source``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memtree_core.types import Chunk
from memtree_plugins.lib.lines import crop, make_chunk, split_lines
from memtree_plugins.lib.window import WINDOW_LINES, window_chunks

SECTION_LINES = 80

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_LIST_OR_QUOTE = re.compile(r"^ {0,3}(?:[-*+>]|\d{1,9}[.)])(?:\s|$)")


@dataclass
class _Heading:
    line: int
    level: int
    title: str
    end: int = 0  # last line of the section, subsections included
    own_end: int = 0  # last line before the first subsection
    children: list[_Heading] = field(default_factory=list)
    path: str = ""


def scan(lines: list[str]) -> tuple[list[_Heading], list[bool]]:
    """Headings in order, and for each line whether it sits inside a fence or front matter."""
    headings: list[_Heading] = []
    fenced = [False] * len(lines)
    fence: tuple[str, int] | None = None
    i = 0
    if lines and lines[0].rstrip() == "---":  # YAML front matter
        for j in range(1, len(lines)):
            if lines[j].rstrip() in ("---", "..."):
                for k in range(j + 1):
                    fenced[k] = True
                i = j + 1
                break
    prev_text = False  # previous line can be a setext heading's text
    while i < len(lines):
        raw = lines[i].rstrip("\r\n")
        if fence is not None:
            fenced[i] = True
            m = _FENCE.match(raw)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip():
                fence = None
            i += 1
            prev_text = False
            continue
        m = _FENCE.match(raw)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            fenced[i] = True
            i += 1
            prev_text = False
            continue
        m = _ATX.match(raw)
        if m:
            headings.append(_Heading(i + 1, len(m.group(1)), (m.group(2) or "").strip()))
            prev_text = False
        elif prev_text and _SETEXT.match(raw):
            level = 1 if raw.strip()[0] == "=" else 2
            headings.append(_Heading(i, level, lines[i - 1].strip()))
            prev_text = False
        else:
            prev_text = bool(raw.strip()) and not raw.startswith("    ") and not _LIST_OR_QUOTE.match(raw)
        i += 1
    return headings, fenced


def _tree(headings: list[_Heading], n_lines: int) -> list[_Heading]:
    roots: list[_Heading] = []
    stack: list[_Heading] = []
    for idx, h in enumerate(headings):
        h.own_end = headings[idx + 1].line - 1 if idx + 1 < len(headings) else n_lines
        while stack and stack[-1].level >= h.level:
            stack.pop()
        h.path = f"{stack[-1].path} > {h.title}" if stack else h.title
        (stack[-1].children if stack else roots).append(h)
        stack.append(h)

    def close(h: _Heading) -> int:
        h.end = close(h.children[-1]) if h.children else h.own_end
        for c in h.children[:-1]:
            close(c)
        return h.end

    for r in roots:
        close(r)
    return roots


def _first_prose(lines: list[str], start: int, end: int, fenced: list[bool], headings: set[int]) -> str:
    for n in range(start, end + 1):
        text = lines[n - 1].strip()
        if text and not fenced[n - 1] and n not in headings and not _SETEXT.match(text):
            return crop(text, 140)
    return ""


class MarkdownChunker:
    name = "markdown"
    priority = 100
    suffixes = (".md", ".markdown", ".mdown", ".mkd", ".mdx")

    def __init__(self, section_lines: int = SECTION_LINES, window: int = WINDOW_LINES) -> None:
        self.section_lines = section_lines
        self.window = window

    def matches(self, path: str) -> bool:
        return path.lower().endswith(self.suffixes)

    def chunk(self, path: str, text: str) -> list[Chunk]:
        lines = split_lines(text)
        if not lines:
            return []
        headings, fenced = scan(lines)
        if not headings:
            return self._long(lines, 1, len(lines), fenced, "document", None, "")
        heading_lines = {h.line for h in headings} | {h.line + 1 for h in headings if self._setext(lines, h)}
        out: list[Chunk] = []
        first = headings[0].line
        if first > 1:
            if any(ln.strip() for ln in lines[: first - 1]):
                out += self._long(lines, 1, first - 1, fenced, "preamble", None,
                                  _first_prose(lines, 1, first - 1, fenced, heading_lines))
            else:
                headings[0].line = 1  # leading blank lines join the first section
        for root in _tree(headings, len(lines)):
            out += self._emit(root, lines, fenced, heading_lines)
        return out

    @staticmethod
    def _setext(lines: list[str], h: _Heading) -> bool:
        return h.line < len(lines) and bool(_SETEXT.match(lines[h.line].rstrip("\r\n"))) and \
            not lines[h.line - 1].lstrip().startswith("#")

    def _outline(self, h: _Heading, lines: list[str], fenced: list[bool], heading_lines: set[int],
                 deep: bool) -> str:
        out = [f"{'#' * h.level} {crop(h.title, 140)}"]
        prose = _first_prose(lines, h.line + 1, h.own_end, fenced, heading_lines)
        if prose:
            out.append(prose)
        if deep:
            todo = list(h.children)
            while todo:
                c = todo.pop(0)
                out.append(f"{'#' * c.level} {crop(c.title, 140)}")
                todo[:0] = c.children
        return "\n".join(out[:24])

    def _emit(self, h: _Heading, lines: list[str], fenced: list[bool], heading_lines: set[int]) -> list[Chunk]:
        if h.end - h.line + 1 <= self.section_lines or not h.children:
            return self._long(lines, h.line, h.end, fenced, "section", h.path,
                              self._outline(h, lines, fenced, heading_lines, deep=True))
        out = self._long(lines, h.line, h.own_end, fenced, "section", h.path,
                         self._outline(h, lines, fenced, heading_lines, deep=False))
        for c in h.children:
            out += self._emit(c, lines, fenced, heading_lines)
        return out

    def _long(self, lines: list[str], start: int, end: int, fenced: list[bool], kind: str,
              symbol: str | None, outline: str) -> list[Chunk]:
        """One chunk, or ~window-line pieces cut at blank lines outside fences when it is very long."""
        if end - start + 1 <= 2 * self.window:
            return [make_chunk(lines, start, end, kind, symbol, outline)]
        if kind == "document":
            return window_chunks(lines, start, end, self.window)
        out: list[Chunk] = []
        a = start
        while a <= end:
            b = min(a + self.window - 1, end)
            if b < end:
                for cut in range(b, a + self.window // 2, -1):
                    if not lines[cut - 1].strip() and not fenced[cut - 1]:
                        b = cut
                        break
            out.append(make_chunk(lines, a, b, kind, symbol, outline if a == start else f"{outline}\n(continued)"))
            a = b + 1
        return out
