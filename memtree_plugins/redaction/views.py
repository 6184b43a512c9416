"""Secrets hidden by an encoding: decoded views of a text, run through every other rule, mapped back.

A secret the rules would find can reach a capture in a shape no rule matches:

* **folded** across lines (``fold -w 20``, a terminal or a tool wrapping at a fixed width): lines of one
  width, each cut mid-token, joined back;
* **continued** with backslash-newline (``export T=ghp_abc\\`` then ``def`` on the next line): the
  ``\\`` + line break removed, as the shell and C do;
* **hex-encoded**: ``xxd -p`` blocks, plain hex runs (``6768705f...``), spaced or colon-separated hex bytes
  (``od -t x1 -A n``), and hex dumps (``xxd``, ``hexdump -C``, ``od -A x -t x1z``) decoded, when they decode
  to printable text;
* **escaped** inside a JSON string: ``\\u00XX`` (a printable ASCII character of the token spelled as an
  escape) and ``\\/`` (``https:\\/\\/joe:pass@host\\/x``, as PHP's ``json_encode`` writes URLs) decoded.

:class:`DecodedViews` finds these places (a few C-speed scans; nothing else when none is there), builds one
*view*: the windows of text around them (the lines involved) with the encodings undone, joined by blank
lines, and runs every other registered rule over it, the built-ins, the catalogue and a plugin's alike (the
registry is read at each call, so a rule registered or replaced later is run too).  Each span the rules redacted in the view is mapped
back onto the original: a copied character to itself, a decoded one to the whole encoded run it came from
(an escape, a hex run or dump block), a removed line break to itself when the span runs across it.  The
whole original span is then replaced by the rule's own mark (``[REDACTED:github-pat]``), followed by as many
line breaks as it held, so line numbers stay as they were.

Only what the encoding hid is redacted here.  A span that runs across a removed line break or touches a
decoded run is new by construction; any other span the view yields (a URL password whose ``//`` was
``\\/\\/``) is kept only when the same rules over the same windows as they stand do not redact it: all the
rest is left to the rules that run next on the whole text.  So ordinary code and logs, git SHAs and sha256
sums (random bytes, never printable text) come back byte-identical.

This rule runs first (``priority``): a rule that ran before it could redact half of a folded or continued
token and take the line break with it, leaving the other half with nothing to join.

Cost is bounded: at most :data:`MAX_VIEW` characters of windows per text (a capture at the default
``capture.maxBytes``, plus its margin, always fits; a whole file read through MCP may not).  Past that, hex
runs that decode to printable text are redacted whole without asking the rules (fail closed); folds,
continuations and escapes are left as they are (the rules still see the text as it is), as are the folds and
continuations past the first :data:`MAX_SEAMS` of each and the escapes past the first :data:`MAX_ESCAPES`.
Text with nothing to undo costs a few C-speed scans: under 1 ms per 100 KB of code or logs, a few
microseconds for a typical capture (``python eval/bench/decoded_views.py``).
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import accumulate, compress
from operator import eq
from typing import TYPE_CHECKING, Any

from memtree_plugins.redaction.engine import MARK, placeholder

if TYPE_CHECKING:
    from memtree_core.context import Context

MIN_TEXT = 16
MIN_WIDTH = 16  # narrowest line width taken for a fold
MIN_HEX = 16  # shortest hex run decoded (8 bytes)
LINE_CAP = 4096  # a longer line is cut to CONTEXT characters either side of an escape
CONTEXT = 1024
MAX_VIEW = 512 * 1024
MAX_SEAMS = 4096  # line breaks joined per kind (fold, continuation) and text; the rest stay as they are
MAX_ESCAPES = 16384  # escapes decoded per text (JSON with a URL every line has a few thousand per 100 KB)
SEPARATOR = "\n\n"  # between windows: a blank line, which no rule's context crosses
NAME = "decoded-view"

_MARKS = re.compile(re.escape(MARK) + r"([^\]\s]{1,64})\]")

# -- finding the encoded places ----------------------------------------------------------------------------
# An edit undoes one encoding: original span -> view text.  KIND_SEAM edits remove a line break (the view
# text is empty); KIND_DECODED edits stand for a whole encoded run; both are "encoded" for the mapping.
KIND_COPY, KIND_DECODED, KIND_SEAM, KIND_SEPARATOR, KIND_ESCAPED = 0, 1, 2, 3, 4
Edit = tuple[int, int, str, int]  # start, end, view text, kind

_HEX_DIGITS = "0123456789abcdefABCDEF"
# hex digits -> "x", line breaks and blanks kept, everything else "." (bytes.translate: C speed)
_HEXMAP = bytes(ord("x") if chr(i) in _HEX_DIGITS else i if chr(i) in "\n :" else ord(".") for i in range(256))
_X_RUN = re.compile(rb"x+")
_WORDISH = re.compile(r"[0-9A-Za-z_]")
_HEX_LETTER = re.compile(r"[a-fA-F]")
_SPACED_HEX = re.compile(r"(?<![0-9A-Za-z_:])[0-9a-fA-F]{2}(?:(?:[ :]|\r?\n[ \t]{0,8})[0-9a-fA-F]{2}){7,}+(?![0-9A-Za-z_])")
_NOT_HEX = re.compile(r"[^0-9a-fA-F]")
# a hex dump line: offset, bytes in groups, the printable column (|...| >...< or bare)
_DUMP_LINE = re.compile(r"(?m)^[0-9a-fA-F]{6,8}:?[ \t]+(?P<hex>[0-9a-fA-F]{2}(?:[ \t]{0,2}[0-9a-fA-F]{2}){0,63})"
                        r"[ \t]{1,64}(?P<text>\|.{1,64}\||>.{1,64}<|\S.{0,63}?)\r?$")
_BACKSLASHED = re.compile(r"\\(?:\r?\n|u00[2-7]|/)")  # a literal start: searched at C speed
_DUMP_HINT = re.compile(rb"\nx{6,8}:? {1,2}xx(?: |xx )")  # over ``mapped``: an offset, then the first bytes
_ESCAPE = re.compile(r"\\\\|\\u00([2-7][0-9a-fA-F])|\\/")
_PRINTABLE_GONE = str.maketrans("", "", "\n\r\t")
_BLANK = re.compile(r"\s")
_TRAILING = re.compile(r"\S+\Z")
_LEADING = re.compile(r"\S+")
# A whole line of MIN_WIDTH or more non-blanks, not all hex digits, unless the next line starts with the same
# three characters (a listing: paths, sums, rows); the lines of a listing are never looked at one by one.  Nor
# is a heading under an empty line (``ls -R``'s directories): no fold either way (see _fold_edits).
_SOLID_LINE = re.compile(r"\n(?![0-9a-fA-F]++\r?(?:\n|\Z))(?!(?<=\n\n)[^\s]*:\r?\n[^\n]*[ \t])(?P<p>[^\s]{3})[^\s]{"
                         + str(MIN_WIDTH - 3) + r",}+(?=\r?(?:\n(?!(?P=p))|\Z))")
# A line that starts a record (a comment, a prompt, `name=value`, `name: value`, a call): not the rest of a cut
# token.  `abc==` is the padded end of base64, no record.
_RECORD = re.compile(r"[ \t]*(?:[#;!]|//|--|[$>%] |[A-Za-z_$][\w.$-]{0,127}[ \t]*(?:=(?!=)|:|\())")


def _as_text(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.strip() and text.translate(_PRINTABLE_GONE).isprintable() else None


def _line_span(text: str, start: int, end: int | None = None) -> tuple[int, int]:
    """The whole lines around ``text[start:end]``."""
    end = start if end is None else end
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", end)
    return lo, len(text) if hi < 0 else hi


def _clipped(text: str, start: int, end: int) -> tuple[int, int]:
    """The line(s) around ``text[start:end]``; on a long line, CONTEXT characters either side."""
    lo, hi = _line_span(text, start, end)
    if hi - lo <= LINE_CAP:
        return lo, hi
    return max(lo, start - CONTEXT), min(hi, end + CONTEXT)


def _hex_runs(text: str, raw: bytes, mapped: bytes, resume: list[int]) -> Iterator[tuple[int, int, int]]:
    """Runs of MIN_HEX or more hex digits not glued to a word (an ``0x`` before is allowed) whose first 8
    bytes would be ASCII (random bytes pass once in 256: a git SHA or a sha256 sum is dropped here): where
    the run starts (``0x`` included), where its digits start and end.  ``bytes.find`` over ``mapped`` finds
    the runs at C speed; on text that is not ASCII a run's offset is found again in ``text``.  On ASCII text
    the search goes on from ``resume[0]`` when the caller moved it past a block it took whole."""
    needle, n, pos, at = b"x" * MIN_HEX, len(text), 0, 0
    ascii_only = len(raw) == n
    while (p := mapped.find(needle, max(pos, resume[0]) if ascii_only else pos)) >= 0:
        e = _X_RUN.match(mapped, p).end()  # type: ignore[union-attr]
        pos = e
        if not ascii_only:  # byte offsets are not character offsets: find the run (the first one after the last)
            run = raw[p:e].decode("ascii")
            p = text.find(run, at)
            e = p + len(run)
            at = e
        if text[p:p + 16:2].strip("01234567") or (e < n and _WORDISH.match(text, e)):
            continue
        if p and _WORDISH.match(text, p - 1):
            if not (text[p - 1] in "xX" and p >= 2 and text[p - 2] == "0" and (p == 2 or not _WORDISH.match(text, p - 3))):
                continue
            yield p - 2, p, e
        else:
            yield p, p, e


@lru_cache(maxsize=64)
def _hex_block(width: int) -> re.Pattern[str]:
    """Lines of ``width`` hex digits, then a last one no longer: an ``xxd -p`` block (one C-speed match)."""
    return re.compile(r"(?:[0-9a-fA-F]{%d}\r?\n)*[0-9a-fA-F]{1,%d}" % (width, width))  # noqa: UP031


def _hex_edits(text: str, raw: bytes, mapped: bytes) -> list[tuple[Edit, tuple[int, int]]]:
    """xxd -p blocks and plain hex runs that decode to printable text."""
    if b"x" * MIN_HEX not in mapped:
        return []
    out: list[tuple[Edit, tuple[int, int]]] = []
    resume = [0]
    for first, start, end in _hex_runs(text, raw, mapped, resume):
        if start < resume[0]:
            continue
        line_lo, line_hi = _line_span(text, start, end)
        if first == line_lo and (end == line_hi or text[end:line_hi] == "\r"):
            # a whole line of hex: an xxd -p block goes on over lines of one width, the last one shorter
            end = _hex_block(end - start).match(text, start).end()  # type: ignore[union-attr]
            joined = _NOT_HEX.sub("", text[start:end])
        else:
            joined = text[start:end]
        resume[0] = end
        if not _HEX_LETTER.search(joined):
            continue  # digits only: a number
        if len(joined) % 2:
            joined = joined[:-1]  # the bytes before a half one
        decoded = _as_text(bytes.fromhex(joined))
        if decoded is not None:
            out.append(((start, end, decoded, KIND_DECODED), _clipped(text, start, end)))
    return out


def _spaced_hex_edits(text: str, mapped: bytes) -> list[tuple[Edit, tuple[int, int]]]:
    """Bytes written as spaced or colon-separated hex pairs (``od -t x1 -A n``, ``bytes.hex(" ")``, a
    packet dump), over lines too, that decode to printable text; 8 bytes at least (a MAC address is 6)."""
    if b"xx xx xx xx xx xx xx xx" not in mapped and b"xx:xx:xx:xx:xx:xx:xx:xx" not in mapped:
        return []
    out: list[tuple[Edit, tuple[int, int]]] = []
    for m in _SPACED_HEX.finditer(text):
        joined = _NOT_HEX.sub("", m.group(0))
        if joined[:16:2].strip("01234567") or not _HEX_LETTER.search(joined):
            continue  # random bytes (a fingerprint, a key), or digits only
        decoded = _as_text(bytes.fromhex(joined))
        if decoded is not None:
            out.append(((m.start(), m.end(), decoded, KIND_DECODED), _clipped(text, m.start(), m.end())))
    return out


def _dump_edits(text: str, mapped: bytes) -> list[tuple[Edit, tuple[int, int]]]:
    """Blocks of hex dump lines (xxd, hexdump -C, od -A x -t x1z), decoded whole."""
    if _DUMP_HINT.search(b"\n" + mapped) is None:
        return []
    out: list[tuple[Edit, tuple[int, int]]] = []
    block: list[bytes] = []
    first = last = -1
    for m in _DUMP_LINE.finditer(text):
        raw = bytes.fromhex(re.sub(r"[ \t]", "", m.group("hex")))
        shown = m.group("text")
        if shown[0] in "|>" and len(shown) >= 2:
            shown = shown[1:-1]
        if len(shown) != len(raw):  # the printable column shows one character per byte
            continue
        if block and m.start() == last + 1:
            block.append(raw)
            last = m.end()
            continue
        if block:
            out += _dump_block(text, first, last, block)
        block, first, last = [raw], m.start(), m.end()
    if block:
        out += _dump_block(text, first, last, block)
    return out


def _dump_block(text: str, first: int, last: int, block: list[bytes]) -> list[tuple[Edit, tuple[int, int]]]:
    decoded = _as_text(b"".join(block)) if len(block) > 1 or len(block[0]) >= MIN_HEX // 2 else None
    return [] if decoded is None else [((first, last, decoded, KIND_DECODED), (first, last))]


class Escaped(str):
    """A stretch of text with its escapes decoded, and where each decoded character came from: ``view`` (its
    offset in this string), ``orig`` (the escape's offset in the stretch of original text), ``size`` (the
    escape's length).  The rest maps one to one."""

    view: list[int]
    orig: list[int]
    size: list[int]

    def original(self, a: int, b: int) -> tuple[int, int, bool]:
        """Offsets ``[a, b)`` of this string as offsets of the original stretch, and whether they hold a
        decoded character (then its whole escape is in the span)."""
        k = bisect_right(self.view, a) - 1
        lo = self.orig[k] if k >= 0 and self.view[k] == a else a + (self._shift(k) if k >= 0 else 0)
        k = bisect_right(self.view, b - 1) - 1
        hi = (self.orig[k] + self.size[k] if k >= 0 and self.view[k] == b - 1
              else b + (self._shift(k) if k >= 0 else 0))
        j = bisect_left(self.view, a)
        return lo, hi, j < len(self.view) and self.view[j] < b

    def _shift(self, k: int) -> int:
        return self.orig[k] + self.size[k] - self.view[k] - 1


def _escape_edits(text: str) -> list[tuple[Edit, tuple[int, int]]]:
    """``\\u00XX`` escapes of printable ASCII and ``\\/`` (JSON), decoded; other characters are no part of a
    token, so their escapes are left as they are.  Escapes close together make one edit (an :class:`Escaped`
    stretch), so a JSON document full of them costs one regex pass and a list append per escape."""
    out: list[tuple[Edit, tuple[int, int]]] = []
    group: list[re.Match[str]] = []
    line = (-1, -1)

    def flush() -> None:
        lo, hi = group[0].start(), group[-1].end()
        parts, view, orig, size, pos, v = [], [], [], [], lo, 0
        for m in group:
            parts.append(text[pos:m.start()])
            v += m.start() - pos
            code = m.group(1)
            parts.append(chr(int(code, 16)) if code else "/")
            view.append(v)
            orig.append(m.start() - lo)
            size.append(m.end() - m.start())
            v += 1
            pos = m.end()
        stretch = Escaped("".join(parts))
        stretch.view, stretch.orig, stretch.size = view, orig, size
        window = line if line[1] - line[0] <= LINE_CAP else (max(line[0], lo - CONTEXT), min(line[1], hi + CONTEXT))
        out.append(((lo, hi, stretch, KIND_ESCAPED), window))
        group.clear()

    count = 0
    for m in _ESCAPE.finditer(text):
        if m.group(1) is None and m.group(0) != "\\/":
            continue  # an escaped backslash: what follows it is no escape
        count += 1
        if count > MAX_ESCAPES:
            break
        start = m.start()
        if group and (start >= line[1] or start - group[-1].end() > CONTEXT):
            flush()
        if not line[0] <= start < line[1]:
            line = _line_span(text, start, m.end())
        group.append(m)
    if group:
        flush()
    return out


def _continuation_edits(text: str) -> list[tuple[Edit, tuple[int, int]]]:
    """Backslash-newline inside a token (a non-blank either side) is removed: one token again."""
    out: list[tuple[Edit, tuple[int, int]]] = []
    for needle in ("\\\n", "\\\r\n"):
        i = text.find(needle)
        while i >= 0 and len(out) < MAX_SEAMS:
            end = i + len(needle)
            if (i > 0 and not text[i - 1].isspace() and text[i - 1] != "\\" and end < len(text)
                    and not text[end].isspace()):
                out.append(((i, end, "", KIND_SEAM), _clipped(text, i, end)))
            i = text.find(needle, end)
    return out


def _seam_ok(left: str, right: str) -> bool:
    if not left or not right:
        return False
    return _chars_join(left[-1], right[0])


def _chars_join(a: str, b: str) -> bool:
    """The characters either side of a cut could be inside one token: neither blank, one a letter or digit."""
    return not a.isspace() and not b.isspace() and (a.isalnum() or b.isalnum())


def _in_run(text: str, lo: int, width: int) -> bool:
    """The line above the one starting at ``lo`` has its ``width`` (the middle of a fold run)."""
    if lo <= 0:
        return False
    above = text.rfind("\n", 0, max(0, lo - 1)) + 1
    return (lo - 1) - above - (text[lo - 2] == "\r" if lo >= 2 else 0) == width


def _fold_edits(text: str) -> list[tuple[Edit, tuple[int, int]]]:
    """Line breaks of a fold: a line of width ``W`` cut mid-token (a non-blank either side), the next line
    no longer, and a token on one side of the cut: a whole line without a blank, at least MIN_WIDTH long
    and not all hex digits (a long token cut in pieces, the middle or the end of one; hex is the hex view's).
    Two lines of ``NAME: type`` of one width, a statement followed by ``else:``, ``Key=value`` records of
    one width are common in code and config files and are no fold; nor are lines that start alike (paths,
    a listing's rows): the two halves of a cut token do not; nor are headings over their content (``ls -R``'s
    directories); nor are PEM bodies (the PEM rules').

    Found from the lines without a blank (one regex with a literal start: text with none costs one C-speed
    pass), each looked at with its neighbours."""
    padded = "\n" + text  # offsets in padded are one more than in text: a match's start is its line's in text
    armour = _armoured(text) if "-----BEGIN " in text else []
    seams: list[tuple[Edit, tuple[int, int]]] = []
    add = seams.append
    n, pos = len(text), 0
    # Bound once: this loop runs for every solid line (a directory listing has one per directory).
    search, blank, find, rfind = _SOLID_LINE.search, _BLANK.search, text.find, text.rfind
    prev = -1  # where the line after the solid line before starts: its line above has no blank
    below_record = (-1, False)  # the record check of the line below the one before (the next line's own)
    while len(seams) < MAX_SEAMS and (m := search(padded, pos)) is not None:
        lo, pos = m.span()
        hi = pos - 1
        if armour:
            inside = next((e for b, e in armour if b <= lo < e), None)
            if inside is not None:
                pos = inside + 1
                continue
        nl = hi + 1 if hi < n and text[hi] == "\r" else hi  # the line break after it (or n)
        width = hi - lo
        # whether the line is a record (`KEY=value`), looked up once if needed
        is_record = below_record[1] if below_record[0] == lo else None
        # The line above, if it has a blank (a line without one is such a line itself; the solid line before
        # has none).
        if lo > 0 and lo != prev:
            up = rfind("\n", 0, lo - 1) + 1
            up_hi = lo - 2 if lo >= 2 and text[lo - 2] == "\r" else lo - 1
            if (up_hi - up >= width and blank(text, up, up_hi) and text[up:up + 3] != text[lo:lo + 3]
                    and _chars_join(text[up_hi - 1], text[lo])
                    and not (is_record := _is_record(text, lo, hi) if is_record is None else is_record)):
                add(((up_hi, lo, "", KIND_SEAM), (up, hi)))
        prev = nl + 1  # where the line after this one starts
        # The line below: not empty, its first character joins this line's last as in _chars_join (which is
        # no blank: an empty line's "first character" is its line break, a blank), and no longer.
        # A record alone (`KEY=value`, then a line of prose: a .env file) is no fold, unless the line above
        # has its width (the middle of a fold run: `AWS_ACCESS_KEY_I` / `D=AKIA...`).
        # A heading (`ls -R`'s `/usr/lib/x:` over `total 8`, a label over its content: a line ending in `:`
        # over a line with a blank) is no fold either, unless the line above has its width.
        if (nl + 1 < n and not (first := text[nl + 1]).isspace() and (first.isalnum() or text[hi - 1].isalnum())):
            down = find("\n", nl + 1)
            down = n if down < 0 else down
            down_hi = down - 1 if text[down - 1] == "\r" else down
            if down_hi - nl - 1 <= width:
                below_record = (nl + 1, _is_record(text, nl + 1, down_hi))
                if below_record[1]:
                    continue
                if is_record is None:
                    is_record = _is_record(text, lo, hi)
                heading = text[hi - 1] == ":" and blank(text, nl + 1, down_hi) is not None
                if not (is_record or heading) or _in_run(text, lo, width):
                    add(((hi, nl + 1, "", KIND_SEAM), (lo, down_hi)))
    if "\n" in text:
        seams += _repeated_width_seams(text, armour)
    if len(seams) > 1:  # one cut may be found both ways
        seams = sorted({edit[0]: (edit, window) for edit, window in seams}.values())
    return seams


def _is_record(text: str, lo: int, hi: int) -> bool:
    """``text[lo:hi]`` starts a record (:data:`_RECORD`).  The regex runs only when a character it needs is
    there: on a long name without one (a listing's file names) it tries every length of the name first."""
    line = text[lo:hi]
    return (("=" in line or ":" in line or "(" in line or line.lstrip(" \t")[:1] in "#;!/-$>%")
            and _RECORD.match(line) is not None)


def _run_of_width(lens: list[int], i: int) -> int:
    """How many lines of line ``i``'s width stand together around it (at most 3 looked at either way)."""
    n, w = 1, lens[i]
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(lens) and lens[j] == w and abs(j - i) <= 3:
            n += 1
            j += step
    return n


def _repeated_width_seams(text: str, armour: list[tuple[int, int]]) -> list[tuple[Edit, tuple[int, int]]]:
    """Cuts between lines of a fold that have blanks in them (``fold -w 32`` of a log line with a token in
    it): two lines of one width ``W`` >= MIN_WIDTH, then the cut after each of them into a line no longer,
    each cut inside a run of MIN_WIDTH or more non-blanks (a token), into a line that starts no record (unless
    three lines of one width say fold and the cut line has no blank: a name cut in two) and not like the line
    before it, with its blanks elsewhere (rows of a table line up).  Line widths are
    compared at C speed (``map``), so text without two such lines costs no more."""
    lines = text.split("\n")
    lens = list(map(len, lines))
    pairs = [i for i in compress(range(len(lens) - 1), map(eq, lens, lens[1:])) if lens[i] >= MIN_WIDTH]
    if not pairs:
        return []
    acc: list[int] = []  # line i starts at acc[i] + i (summed once a cut is found: most texts have none)
    out: list[tuple[Edit, tuple[int, int]]] = []
    for i in sorted({j for p in pairs[:MAX_SEAMS] for j in (p, p + 1) if j + 1 < len(lines)}):
        left, right = lines[i].removesuffix("\r"), lines[i + 1].removesuffix("\r")
        if not right or right[0].isspace() or left[:3] == right[:3] or not 0 < len(right) <= len(left):
            continue
        if not _seam_ok(left, right) or left.find(" ") == right.find(" ") or left.rfind(" ") == right.rfind(" "):
            continue  # columns that line up: a table's rows (sha256sum, ls -l, ps), not a cut line
        tail, head = _TRAILING.search(left), _LEADING.match(right)
        if tail is None or head is None or len(tail.group(0)) + len(head.group(0)) < MIN_WIDTH:
            continue
        if _is_record(right, 0, len(right)) and (_BLANK.search(left) or _run_of_width(lens, i) < 3):
            continue  # a record, unless three lines of one width and no blank say fold (a name cut: `ke` / `y = v`)
        if not acc:
            acc = list(accumulate(lens, initial=0))
        lo, nxt = acc[i] + i, acc[i + 1] + i + 1
        if any(b <= lo < e for b, e in armour):
            continue
        out.append(((lo + len(left), nxt, "", KIND_SEAM), (lo, nxt + len(right))))
    return out


def _armoured(text: str) -> list[tuple[int, int]]:
    """The PEM blocks (BEGIN to END): key and certificate bodies are the PEM rules' (a private key is
    redacted whole), never a fold of a token."""
    out, pos = [], 0
    while (begin := text.find("-----BEGIN ", pos)) >= 0:
        end = text.find("-----END ", begin)
        if end < 0:
            out.append((begin, len(text)))
            break
        out.append((begin, end))
        pos = end + 1
        if len(out) > 4096:  # a text of nothing but armour lines: the rest is not skipped
            break
    return out


# What the kinds' own first checks look for, over the text's UTF-8 in one Hyperscan pass (each reported once):
# a hex dump's first line (_DUMP_HINT), a run of MIN_HEX hex digits (_hex_edits), eight spaced or
# colon-separated hex pairs (_spaced_hex_edits), a backslash escape or continuation (_BACKSLASHED).  Hex
# digits are what _HEXMAP turns into `x`; ASCII bytes are the characters they encode.
_HEX = b"[0-9a-fA-F]"
_HINTS = {
    "dump": rb"(?:^|\n)" + _HEX + rb"{6,8}:? {1,2}" + _HEX + rb"{2}(?: |" + _HEX + rb"{2} )",
    "hex": _HEX + rb"{%d}" % MIN_HEX,
    "spaced": _HEX + rb"{2}(?: " + _HEX + rb"{2}){7}",
    "colon": _HEX + rb"{2}(?::" + _HEX + rb"{2}){7}",
    "backslash": rb"\\(?:\r?\n|u00[2-7]|/)",
}
_hints_db: list[Any] = []  # [database] once built, [None] without hyperscan
_hints_local = threading.local()  # each thread's Hyperscan scratch space (never shared between scans)


def _hints(raw: bytes) -> set[str] | None:
    """Which of :data:`_HINTS` occur in ``raw``; None without the ``hyperscan`` module."""
    if not _hints_db:
        try:
            import hyperscan

            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(expressions=list(_HINTS.values()), ids=list(range(len(_HINTS))), elements=len(_HINTS),
                       flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(_HINTS))
            _hints_db.append(db)
        except Exception:  # no module, or it refused a pattern: the checks below run as before
            _hints_db.append(None)
    db = _hints_db[0]
    if db is None:
        return None
    try:
        scratch = _hints_local.scratch
    except AttributeError:  # this thread's first scan: a scratch space of its own
        import hyperscan

        scratch = _hints_local.scratch = hyperscan.Scratch(db)
    names = list(_HINTS)
    seen: set[str] = set()
    db.scan(raw, match_event_handler=lambda i, *_: seen.add(names[i]), scratch=scratch)
    return seen


def find_edits(text: str) -> list[tuple[Edit, tuple[int, int]]]:
    """Every place a view undoes, each with its window, without overlaps: where two would overlap (the
    line breaks of an xxd -p block also look like a fold) the earlier kind below wins.  Text without any
    kind's hint (:func:`_hints`) goes straight to the folds."""
    raw = text.encode("utf-8", "surrogatepass")
    hints = _hints(raw)
    if hints is None:
        hints = set(_HINTS)  # every kind runs its own check
        backslashed = _BACKSLASHED.search(text) is not None
    else:
        backslashed = "backslash" in hints
    found: list[tuple[Edit, tuple[int, int]]] = []
    if hints & {"dump", "hex", "spaced", "colon"}:  # each kind only where its hint is (its own first check)
        mapped = raw.translate(_HEXMAP)
        found = ((_dump_edits(text, mapped) if "dump" in hints else [])
                 + (_hex_edits(text, raw, mapped) if "hex" in hints else [])
                 + (_spaced_hex_edits(text, mapped) if hints & {"spaced", "colon"} else []))
    found += (_escape_edits(text) + _continuation_edits(text) if backslashed else []) + _fold_edits(text)
    if not found:
        return []
    return _without_overlaps(found)


def _without_overlaps(found: list[tuple[Edit, tuple[int, int]]]) -> list[tuple[Edit, tuple[int, int]]]:
    """``found`` in order of start, an edit dropped where it overlaps one before it in ``found``."""
    order = sorted(range(len(found)), key=lambda k: (found[k][0][0], k))
    kept: list[int] = []
    for k in order:
        s = found[k][0][0]
        # the kept edit just before (by start) is the only one that can overlap, once those before it are kept
        while kept and found[kept[-1]][0][1] > s:
            if kept[-1] < k:  # the earlier one in found wins
                break
            kept.pop()
        else:
            kept.append(k)
    return [found[k] for k in kept]


# -- the view ------------------------------------------------------------------------------------------------
def view_text(text: str, edits: Sequence[Edit], windows: Sequence[tuple[int, int]]) -> str:
    """What ``View(text, edits, windows).text`` is, without the segments that map it back."""
    parts: list[str] = []
    k = 0
    for w, (lo, hi) in enumerate(windows):
        if w:
            parts.append(SEPARATOR)
        pos = lo
        while k < len(edits) and edits[k][0] < hi:
            s, e, new, _kind = edits[k]
            k += 1
            if s > pos:
                parts.append(text[pos:s])
            parts.append(new)
            pos = e
        if hi > pos:
            parts.append(text[pos:hi])
    return "".join(parts)


class View:
    """Windows of ``text`` with the edits inside them applied, joined by SEPARATOR; segments map each
    stretch of the view back to the original (``copy`` one to one, the rest whole)."""

    def __init__(self, text: str, edits: Sequence[Edit], windows: Sequence[tuple[int, int]],
                 apply: bool = True) -> None:
        self.windows = list(windows)
        parts: list[str] = []
        self.v0: list[int] = []
        self.v1: list[int] = []
        self.o0: list[int] = []
        self.o1: list[int] = []
        self.kind: list[int] = []
        self.stretch: dict[int, Escaped] = {}  # segment index -> its escapes
        self.window_of: list[int] = []
        v = 0
        k = 0
        for w, (lo, hi) in enumerate(self.windows):
            if w:
                self._seg(v, v + len(SEPARATOR), -1, -1, KIND_SEPARATOR, w)
                parts.append(SEPARATOR)
                v += len(SEPARATOR)
            pos = lo
            while k < len(edits) and edits[k][0] < hi:
                s, e, new, kind = edits[k]
                k += 1
                if not apply:
                    continue
                if s > pos:
                    self._seg(v, v + s - pos, pos, s, KIND_COPY, w)
                    parts.append(text[pos:s])
                    v += s - pos
                if kind == KIND_ESCAPED:
                    self.stretch[len(self.v0)] = new  # type: ignore[assignment]
                self._seg(v, v + len(new), s, e, kind, w)
                parts.append(new)
                v += len(new)
                pos = e
            if hi > pos:
                self._seg(v, v + hi - pos, pos, hi, KIND_COPY, w)
                parts.append(text[pos:hi])
                v += hi - pos
        self.text = "".join(parts)

    def _seg(self, v0: int, v1: int, o0: int, o1: int, kind: int, w: int) -> None:
        self.v0.append(v0)
        self.v1.append(v1)
        self.o0.append(o0)
        self.o1.append(o1)
        self.kind.append(kind)
        self.window_of.append(w)

    def original(self, a: int, b: int) -> list[tuple[int, int, bool]]:
        """The original spans of view span ``[a, b)``, one per window it touches: ``(start, end, encoded)``,
        encoded when it touches a decoded run or runs across a removed line break."""
        spans: dict[int, list[Any]] = {}
        i = max(0, bisect_right(self.v1, a) - 1)
        while i < len(self.v0) and self.v0[i] <= b:
            v0, v1, kind = self.v0[i], self.v1[i], self.kind[i]
            lo = hi = -1
            if kind == KIND_COPY and v0 < b and v1 > a:
                lo, hi = self.o0[i] + max(a, v0) - v0, self.o0[i] + min(b, v1) - v0
            elif kind == KIND_DECODED and v0 < b and v1 > a:
                lo, hi = self.o0[i], self.o1[i]
            elif kind == KIND_SEAM and a < v0 < b:
                lo, hi = self.o0[i], self.o1[i]
            elif kind == KIND_ESCAPED and v0 < b and v1 > a:
                lo, hi, decoded = self.stretch[i].original(max(a, v0) - v0, min(b, v1) - v0)
                lo, hi = lo + self.o0[i], hi + self.o0[i]
                if not decoded:
                    kind = KIND_COPY  # a stretch between its escapes: one to one
            if lo >= 0:
                got = spans.setdefault(self.window_of[i], [lo, hi, False])
                got[0], got[1] = min(got[0], lo), max(got[1], hi)
                got[2] = got[2] or kind != KIND_COPY
            i += 1
        return [(lo, hi, enc) for lo, hi, enc in spans.values()]


def covers(before: str, after: str) -> list[tuple[int, int, str]]:
    """The spans of ``before`` that the rules replaced by marks in ``after``, each with its mark's tag.

    ``after`` is ``before`` with spans replaced by marks: the text between marks is found in ``before``
    at its earliest possible place (forward) and its latest (backward); a replaced span lies between the
    earliest end of the text before it and the latest start of the text after it, so the span given covers
    it whatever the true alignment.  When ``after`` is not of that form, one span from the first to the last
    changed character."""
    marks = list(_MARKS.finditer(after))
    pieces, p = [], 0
    for m in marks:
        pieces.append(after[p:m.start()])
        p = m.end()
    pieces.append(after[p:])
    k = len(marks)
    n = len(before)
    if not before.startswith(pieces[0]) or not before.endswith(pieces[-1]):
        return _changed(before, after)
    fwd = [0] * (k + 1)
    pos = len(pieces[0])
    for i in range(1, k + 1):
        piece = pieces[i]
        at = n - len(piece) if i == k else before.find(piece, pos + 1)
        if at < pos + 1:
            return _changed(before, after)
        fwd[i] = at
        pos = at + len(piece)
    bwd = [0] * (k + 1)
    bwd[k] = n - len(pieces[k])
    for i in range(k - 1, 0, -1):
        piece = pieces[i]
        at = before.rfind(piece, 0, bwd[i + 1] - 1)
        if at < 0:
            return _changed(before, after)
        bwd[i] = at
    out = []
    for i in range(1, k + 1):
        lo, hi = fwd[i - 1] + len(pieces[i - 1]), bwd[i]
        if hi <= lo:
            return _changed(before, after)
        if before[lo:hi] != marks[i - 1].group(0):  # a mark already there stays what it was
            out.append((lo, hi, marks[i - 1].group(1)))
    return out


def _changed(before: str, after: str) -> list[tuple[int, int, str]]:
    n = min(len(before), len(after))
    lo = next((i for i in range(n) if before[i] != after[i]), n)
    hi = 0
    while hi < n - lo and before[-1 - hi] == after[-1 - hi]:
        hi += 1
    tags = _MARKS.findall(after[lo:len(after) - hi])
    return [(lo, max(lo + 1, len(before) - hi), tags[0] if tags else NAME)]


# -- the rule ------------------------------------------------------------------------------------------------
def _unconfigured() -> Sequence[Any]:
    # Fail closed: without the project's rules a view cannot be judged, so the text is refused, never passed.
    raise RuntimeError("the decoded-view rule was not configured with the project's rules")


class DecodedViews:
    """Satisfies :class:`memtree_core.types.RedactionRule`."""

    name = NAME
    description = ("secrets hidden by an encoding: folded or backslash-continued lines, hex (xxd -p, runs, "
                   "dumps), JSON \\u and \\/ escapes; every other rule runs on the decoded view")
    priority = 100  # before every other rule (see the module doc)

    def __init__(self, rules: Callable[[], Sequence[Any]] | None = None) -> None:
        self._rules = rules or _unconfigured  # every registered rule, looked up at each call

    def configure(self, settings: Any, app: Context) -> None:
        """The host hands every item its context: the rules are whatever the project registers (a plugin's
        too, a replaced built-in's replacement), read at each call."""
        registry = app.plugins.registries["redaction_rules"]
        self._rules = lambda: [entry.item for entry in registry.entries()]

    def _run(self, text: str) -> str:
        for rule in self._rules():
            if rule is not self and not isinstance(rule, DecodedViews):
                try:
                    text, _ = rule.redact(text)
                except Exception as exc:  # the gate refuses the text; say which rule it was
                    raise RuntimeError(f"rule {getattr(rule, 'name', rule)!r} failed on a decoded view: "
                                       f"{type(exc).__name__}: {exc}") from exc
        return text

    def redact(self, text: str) -> tuple[str, int]:
        if len(text) < MIN_TEXT:
            return text, 0
        found = find_edits(text)
        if not found:
            return text, 0
        edits: list[Edit] = []
        windows: list[tuple[int, int]] = []
        strict: list[tuple[int, int, str]] = []
        budget = MAX_VIEW
        for edit, (lo, hi) in sorted(found, key=lambda f: f[1][0]):
            if windows and lo <= windows[-1][1]:
                extra = max(0, hi - windows[-1][1])
                if extra > budget:
                    strict += _strict(edit)
                    continue
                budget -= extra
                windows[-1] = (windows[-1][0], max(windows[-1][1], hi))
            else:
                if hi - lo > budget:
                    strict += _strict(edit)
                    continue
                budget -= hi - lo
                windows.append((lo, hi))
            edits.append(edit)
        edits.sort()
        spans = self._new_spans(text, edits, windows) if edits else []
        return _replace(text, spans + strict)

    def _new_spans(self, text: str, edits: list[Edit], windows: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
        # The view's text alone first: nearly always the rules find nothing in it, and then the map back to the
        # original (a segment per stretch) is never needed.
        seen = view_text(text, edits, windows)
        after = self._run(seen)
        if after == seen:
            return []
        view = View(text, edits, windows)
        found: list[tuple[int, int, str]] = []
        plain: list[tuple[int, int, str]] = []
        for a, b, tag in covers(view.text, after):
            for lo, hi, encoded in view.original(a, b):
                (found if encoded else plain).append((lo, hi, tag))
        if plain:
            # Found by the rules in the view but not in any decoded part: new only if the same rules over
            # the same windows as they stand do not redact it too (then the rules after this one will).
            raw = View(text, edits, windows, apply=False)
            raw_after = self._run(raw.text)
            redacted = _merged([(lo, hi) for a, b, _ in (covers(raw.text, raw_after) if raw_after != raw.text else [])
                                for lo, hi, _ in raw.original(a, b)])
            starts = [s for s, _ in redacted]
            for lo, hi, tag in plain:
                k = bisect_right(starts, lo) - 1
                if k < 0 or redacted[k][1] < hi:
                    found.append((lo, hi, tag))
        return found


def _strict(edit: Edit) -> list[tuple[int, int, str]]:
    """Past the view budget: a decoded run is redacted whole; a removed line break is left alone."""
    s, e, _, kind = edit
    return [(s, e, NAME)] if kind == KIND_DECODED and e - s > 2 else []


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _replace(text: str, spans: list[tuple[int, int, str]]) -> tuple[str, int]:
    if not spans:
        return text, 0
    merged: list[list[Any]] = []
    for lo, hi, tag in sorted(spans):
        if merged and lo < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi, tag])
    out, last = [], 0
    for lo, hi, tag in merged:
        out.append(text[last:lo])
        out.append(placeholder(tag) + "\n" * text.count("\n", lo, hi))
        last = hi
    out.append(text[last:])
    return "".join(out), len(merged)
