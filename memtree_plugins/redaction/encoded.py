"""Secrets that show only once decoded, and private-key material seen without its BEGIN line.

* A base64 blob that decodes to text holding a secret (``base64 .env``, a Kubernetes Secret's ``data:``
  value, a docker ``auth`` field, a config passed through an env var) is redacted whole when the other
  rules find a secret in its decoded text (trufflehog's approach).  Blobs wrapped over several lines
  (``base64`` wraps at 76 columns) are joined before decoding.
* Lines of PEM key material (64 or 70 columns of random base64) without a visible ``BEGIN`` line — a chunk
  cut out of a key file, a ``grep`` hit on key lines — are redacted as ``private-key`` unless an open
  ``BEGIN CERTIFICATE`` / ``PUBLIC KEY`` block above says they are public.

Cost is bounded: one ``str.split()`` (C speed) finds the whitespace-separated tokens of 20+ characters;
only those are searched for base64 runs, at most :data:`MAX_CANDIDATES` runs are looked at and at most
:data:`MAX_DECODED` bytes decoded per text, and a decoded blob is scanned only if it is printable text.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from itertools import compress, islice
from operator import itemgetter, or_

from memtree_plugins.redaction.engine import placeholder, shannon_entropy, start_of_line

MIN_RUN = 20
MAX_ALONE = 32  # blobs judged one by one when the joined pass cannot be split back
_SEPARATOR = "\n\x00\n"
MAX_CANDIDATES = 2000
MAX_DECODED = 256 * 1024
MAX_BLOB = 64 * 1024
KEY_LINE_WIDTHS = (64, 70)  # PEM bodies, OpenSSH private keys
WRAP_WIDTHS = (60, 64, 70, 76)  # line widths of wrapped base64 output

_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
# bytes.translate turns the base64 alphabet into `a` and everything else into a blank; the long runs are then
# found by bytes.find at C speed (a needle of MIN_RUN `a`s skips ahead by up to its length), a Python step
# per run only: not from every offset, and without a Python object for every short word (a megabyte of
# `a b c ...` made 500 000 of them).
_RUN_MAP = bytes(ord("a") if chr(i) in _B64_CHARS else 32 for i in range(256))
_RUN = b"a" * MIN_RUN
# Base64 of ASCII text: the first character of every 4 encodes a byte's top 6 bits, 8..31 for printable
# ASCII, i.e. one of these.  Random or binary data passes 12 such checks once in ~100 000.
_TEXT_LEADS = b"IJKLMNOPQRSTUVWXYZabcdef"
_TEXT_LEAD_CHARS = frozenset(_TEXT_LEADS.decode())


def candidates(text: str) -> dict[str, None]:
    """The distinct runs of base64 characters of at least MIN_RUN, in order of first appearance (a leading
    ``+``, a diff's, is dropped: blobs whose first character is ``+`` are rare)."""
    data = text.encode("utf-8", "surrogatepass")
    mapped = data.translate(_RUN_MAP)
    runs: list[bytes] = []
    i = mapped.find(_RUN)
    while i >= 0:  # the first MIN_RUN `a`s after a blank start a run (a longer run would have started earlier)
        end = mapped.find(b" ", i + MIN_RUN)
        if end < 0:
            runs.append(data[i:])
            break
        runs.append(data[i:end])
        i = mapped.find(_RUN, end)
    return dict.fromkeys(r.decode("ascii").removeprefix("+") for r in runs)


def _may_be_text(run: str) -> bool:
    """Cheap: could ``run`` be base64 of ASCII text (the lead of each 4-character group)?"""
    return not run[0:48:4].encode("ascii").translate(None, _TEXT_LEADS)
# A line holding nothing but base64, behind whatever gutter a tool prints (Read's `12→`, grep's `path:12:`).
_B64_LINE = re.compile(r"(?:[ \t]*\d{1,9}(?:→|\t)|[^\s:]{1,256}[:-]\d{1,9}[:-]|[+-]|[\w.-]{1,64}[ \t]+\|)?[ \t\"']*"
                       r"(?P<b>[A-Za-z0-9+/]{4,}={0,2})[ \t\"',]*\r?")
_HEX = re.compile(r"[0-9a-fA-F]+")
_PUBLIC_BLOCK = re.compile(r"-----(BEGIN|END) ([A-Z0-9 ]{1,40})-----")


def _decode(blob: str) -> bytes | None:
    blob = blob.rstrip("=")
    if len(blob) % 4 == 1:
        return None
    try:
        return base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _as_text(raw: bytes) -> str | None:
    """The decoded bytes as text, if they are text (UTF-8, nearly all printable)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text or not text.translate(_WHITESPACE_GONE).isprintable():
        return None
    return text


_WHITESPACE_GONE = str.maketrans("", "", "\n\r\t")


def _looks_like_key_line(run: str) -> bool:
    """A full-width line of random base64 that decodes to binary: what a key body is made of."""
    if not (len(run) in KEY_LINE_WIDTHS and not _HEX.fullmatch(run) and any(c.isupper() for c in run)
            and any(c.islower() for c in run) and any(c.isdigit() for c in run) and shannon_entropy(run) >= 4.5):
        return False
    raw = _decode(run)
    return raw is not None and _as_text(raw) is None


def _inside_public_block(text: str, pos: int) -> bool:
    """True when the nearest PEM armour line above ``pos`` opens a certificate / public key / signature."""
    armour = list(_PUBLIC_BLOCK.finditer(text, max(0, pos - 65536), pos))
    last = armour[-1] if armour else None
    if last is None or last.group(1) == "END":
        return False
    return "PRIVATE" not in last.group(2)


class EncodedSecrets:
    """Satisfies :class:`memtree_core.types.RedactionRule`."""

    name = "base64-secret"
    description = "base64 blobs whose decoded text holds a secret; PEM key body lines without BEGIN"

    def __init__(self, inner: Callable[[], Sequence[object]]) -> None:
        self._inner = inner  # the rules to run on decoded text (all but this one), looked up when needed

    def _redact_inner(self, text: str) -> str:
        for rule in self._inner():
            if rule is not self:
                text, _ = rule.redact(text)  # type: ignore[attr-defined]
        return text

    def _hold_secrets(self, decoded: list[str]) -> list[bool]:
        """Which decoded texts hold a secret.  One pass of the rules over all of them, joined by a separator
        no rule matches across (a pass per blob would cost the rules' fixed overhead thousands of times)."""
        if not decoded:
            return []
        clean = [d.replace("\x00", " ") for d in decoded]
        pieces = self._redact_inner(_SEPARATOR.join(clean)).split(_SEPARATOR)
        if len(pieces) != len(clean):  # a rule matched across a separator: judge the first few one by one
            return [i < MAX_ALONE and self._redact_inner(c) != c for i, c in enumerate(clean)]
        return [p != c or "PRIVATE KEY" in c for p, c in zip(pieces, clean, strict=True)]

    def _block(self, text: str, at: int) -> tuple[list[tuple[int, int]], str]:
        """The wrapped block of base64 lines around the run at ``at``: each line's run span, and the joined
        base64."""
        line_start = start_of_line(text, at)
        spans: list[tuple[int, int]] = []
        # up: earlier full-width lines
        start = line_start
        while start > 0 and len(spans) < 4096:
            prev = text.rfind("\n", 0, start - 1) + 1
            m = _B64_LINE.fullmatch(text, prev, start - 1)
            if m is None or len(m.group("b")) not in WRAP_WIDTHS or m.group("b").endswith("="):
                break  # not base64, or the padded last line of another blob
            spans.insert(0, m.span("b"))
            start = prev
        width = None
        pos = line_start
        while pos < len(text) and len(spans) < 8192:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            m = _B64_LINE.fullmatch(text, pos, end)
            if m is None:
                break
            b = m.group("b")
            spans.append(m.span("b"))
            width = width or len(b)
            if len(b) != width or b.endswith("="):
                break  # the last, shorter line of the block
            pos = end + 1
        return spans, "".join(text[s:e] for s, e in spans)

    def _occurrences(self, text: str, run: str) -> list[int]:
        """Where ``run`` stands in ``text`` as a whole base64 run (not inside a longer one; a diff's ``+`` at
        the start of the line is not part of it)."""
        out, i = [], text.find(run)
        while i >= 0:
            j = i + len(run)
            left_ok = i == 0 or text[i - 1] not in _B64_CHARS or (text[i - 1] == "+" and (i == 1 or text[i - 2] == "\n"))
            if left_ok and (j == len(text) or text[j] not in _B64_CHARS):
                out.append(i)
            i = text.find(run, j)
        return out

    def redact(self, text: str) -> tuple[str, int]:
        if len(text) < MIN_RUN:
            return text, 0
        edits: dict[tuple[int, int], str] = {}
        budget = MAX_DECODED
        seen_blocks: set[int] = set()
        pending: list[tuple[str, list[tuple[int, int]] | str]] = []  # decoded text, spans (or the run) to redact
        runs = list(islice(candidates(text), MAX_CANDIDATES))
        # Only a run of a wrapped block's width, or one whose first character could lead base64 of text
        # (_may_be_text), goes further: the rest are dropped here at C speed, not one by one below.
        wanted = map(or_, map(WRAP_WIDTHS.__contains__, map(len, runs)),
                     map(_TEXT_LEAD_CHARS.__contains__, map(itemgetter(0), runs)))
        for run in compress(runs, wanted):
            if budget <= 0:
                break
            if run.startswith("LS0tLS1CRUdJTi"):
                continue  # base64 of a PEM block: the private-key-base64 rule's
            if len(run) not in WRAP_WIDTHS:
                if len(run) > MAX_BLOB or not _may_be_text(run):
                    continue
                budget -= len(run)
                raw = _decode(run)
                decoded = _as_text(raw) if raw else None
                if decoded is not None:
                    pending.append((decoded, run))  # where it occurs is looked up only if it holds a secret
                continue
            key_line = _looks_like_key_line(run)
            if not key_line and not _may_be_text(run):
                continue
            for i in self._occurrences(text, run):
                if i in seen_blocks:
                    continue
                spans, joined = self._block(text, i)
                if not spans:  # not on a line of its own (inside a JSON string, a log line): the run alone
                    spans, joined = [(i, i + len(run))], run
                seen_blocks.update(s for s, _ in spans)
                if not spans or len(joined) > MAX_BLOB:
                    continue
                budget -= len(joined)
                raw = _decode(joined)
                decoded = _as_text(raw) if raw else None
                if decoded is not None:
                    pending.append((decoded, spans))
                elif key_line and not _inside_public_block(text, i):
                    for span in spans:
                        edits[span] = placeholder("private-key")
        for (_, where), secret in zip(pending, self._hold_secrets([d for d, _ in pending]), strict=True):
            if secret:
                spans = [(i, i + len(where)) for i in self._occurrences(text, where)] if isinstance(where, str) else where
                for span in spans:
                    edits[span] = placeholder(self.name)
        if not edits:
            return text, 0
        out, last = [], 0
        for (s, e), mark in sorted(edits.items()):
            if s < last:
                continue
            out.append(text[last:s])
            out.append(mark)
            last = e
        out.append(text[last:])
        return "".join(out), len(edits)
