"""The last rule: a bare random token no other rule knows, as a log line or an output prints it.

Vendor rules know a token by its prefix and the context rules by the name it is assigned to; a token of an
unknown service printed on its own (``session a8Fk29dJqL0xVb7TcE4mNw2Rz6YpHs1G opened``) has neither.
This rule takes a run of 32 to 160 characters of the URL-safe token alphabet (``A-Z a-z 0-9 _ -``), standing
on its own (not part of a path, a base64 blob, a dotted name or a longer run), and redacts it when it reads as
random rather than as a name:

* it mixes upper case, lower case and at least two digits (hex digests, UUIDs, ULIDs and ``snake_case`` or
  ``kebab-case`` names do not);
* its characters carry at least 4.0 bits each (a 32-character random token carries ~4.6; names and
  ``CamelCaseIdentifiers1234`` less);
* it does not read as a name: its ``_``/``-`` pieces do not each keep one naming style (``TLS1``,
  ``SHA256``, ``Camellia``), its character class (upper, lower, digit) changes at least every 2.5 characters
  (~1.6 for random tokens), it is not camel case (``xmlSecGnuTLSKeyDataRawX509CertId``), and pieces that
  read as words cover less than half of it;
* it is not a line of a block of base64 data, an SSH public key, nor an alphabet (``ABC...xyz0123456789``, a codec's table) nor base64 of printable text (a JWT header,
  a sentence: :mod:`.encoded` decodes base64 and judges what it holds).

Measured on real library code it fires well under once per 10,000 lines; what it finds in output is nearly
always a credential or a session identifier, which is worth a mark either way.
"""

from __future__ import annotations

import base64
import binascii
import re

from memtree_plugins.redaction.engine import PatternRule, shannon_entropy

MIN_LEN, MAX_LEN = 32, 160
MIN_BITS = 4.0
# A maximal run (possessive: one attempt per run, linear in the text), not glued to path, base64, dotted-name
# or assignment characters on either side.
TOKEN = re.compile(r"(?<![A-Za-z0-9_\-+/.\\%$])[A-Za-z0-9_-]{32,}+(?![+/=]|[.%\\][A-Za-z0-9_\-+/])")
_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# One naming style per piece between separators: `TLS1`, `SHA256`, `Camellia`, `bytes`, `128`.
_NAME_PIECE = re.compile(r"[A-Z]*\d*|[a-z]*\d*|[A-Z][a-z]+\d*|\d+[A-Za-z]?|[0-9a-f]+|[0-9A-F]+")
_SEPARATORS = re.compile(r"[_-]+")
# A camel-case name: words of a capital and 2+ small letters, acronyms, numbers (`xmlSecGnuTLSKeyDataRawX509CertId`).
_CAMEL_NAME = re.compile(r"[a-z]{0,12}(?:[A-Z][a-z]{2,}|[A-Z]{1,8}(?=[A-Z][a-z]|\d|$)|\d{1,6})*(?:[A-Z][a-z])?")
_VOWELS = frozenset("aeiouyAEIOUY")


def _wordy_share(token: str) -> float:
    """The share of ``token`` made of pieces that read as words: 4+ letters, a fifth of them vowels."""
    wordy = 0
    for piece in _PIECE.findall(token):
        if len(piece) >= 4 and piece.isalpha() and sum(c in _VOWELS for c in piece) * 5 >= len(piece):
            wordy += len(piece)
    return wordy / len(token)


def _class_changes(token: str) -> float:
    """How often the next character is of another class (upper, lower, digit): ~0.64 for a random token of
    this alphabet, 0.1-0.3 for names (``NFCISO15693CustomCommandConfiguration``)."""
    kinds = ["u" if c.isupper() else "l" if c.islower() else "d" for c in token if c.isalnum()]
    changes = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    return changes / max(1, len(kinds) - 1)


def _is_alphabet(token: str) -> bool:
    steps = sum(ord(b) - ord(a) == 1 for a, b in zip(token, token[1:], strict=False))
    return steps * 3 >= len(token)


def _decodes_to_text(token: str) -> bool:
    body = token.replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return bool(raw) and all(32 <= b < 127 or b in (9, 10, 13) for b in raw)


_PUBLIC_KEY_TYPE = re.compile(r"(?:ssh|ecdsa|sk)-[\w@.-]{2,40} $")


_DATA_LINE = re.compile(r"[A-Za-z0-9+/=_-]{24,}\r?")


def _in_a_data_block(m: re.Match[str]) -> bool:
    """A whole line beside another whole line of base64 characters: a block of encoded data (a certificate,
    an attachment, ``base64`` output), whose lines of exactly the token alphabet are chance, not tokens."""
    text, lo, hi = m.string, m.start(), m.end()
    start = text.rfind("\n", 0, lo) + 1
    end = text.find("\n", hi)
    end = len(text) if end < 0 else end
    if text[start:lo].strip() or text[hi:end].strip():
        return False
    above = text.rfind("\n", 0, max(0, start - 1)) + 1 if start else -1
    below = text.find("\n", end + 1) if end < len(text) else -1
    near = ([text[above:start - 1]] if start else []) + (
        [text[end + 1:below if below >= 0 else len(text)]] if end < len(text) else [])
    return any(_DATA_LINE.fullmatch(line.strip()) and len(line.strip()) >= len(m.group(0)) - 8 for line in near)


def random_token(m: re.Match[str]) -> bool:
    token = m.group(0)
    if _PUBLIC_KEY_TYPE.search(m.string, max(0, m.start() - 48), m.start()):
        return False  # an SSH public key (`ssh-ed25519 AAAAC3...`): public by design
    if len(token) >= 40 and _in_a_data_block(m):
        return False
    if not MIN_LEN <= len(token) <= MAX_LEN:
        return False
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)):
        return False
    if sum(c.isdigit() for c in token) < 2 or shannon_entropy(token) < MIN_BITS:
        return False
    if all(_NAME_PIECE.fullmatch(piece) or _CAMEL_NAME.fullmatch(piece) for piece in _SEPARATORS.split(token)):
        return False  # `TLS1_CK_ADH_WITH_AES_128_SHA256`, `v2-Build-20240101-x86_64`
    if _class_changes(token) < 0.4 or _wordy_share(token) >= 0.5:
        return False
    return not (_is_alphabet(token) or _decodes_to_text(token))


# Every byte of the token alphabet to `a`, every other to a blank: a run of MIN_LEN `a`s is then found by
# bytes.find at C speed.  Text is encoded with one byte per character (`?` for a non-ASCII one, which is no
# token character), so byte offsets are character offsets.
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_RUNS = bytes(ord("a") if b in _ALPHABET else ord(" ") for b in range(256))
_RUN = b"a" * MIN_LEN


class TokenRule(PatternRule):
    """The token regex tried only where a run of MIN_LEN token characters starts, instead of at every offset
    (the regex's lookbehind then decides, as it would have there)."""

    def applies(self, text: str) -> bool:
        return len(text) >= MIN_LEN

    def _starts(self, text: str) -> list[int]:
        mapped = text.encode("ascii", "replace").translate(_RUNS)
        out: list[int] = []
        i = mapped.find(_RUN)
        while i >= 0:
            out.append(i)
            end = mapped.find(b" ", i + MIN_LEN)
            if end < 0:
                break
            i = mapped.find(_RUN, end)
        return out


RULE = TokenRule("high-entropy-token", TOKEN, check=random_token, anchored=True,
                 description="a bare random token of 32+ characters no other rule knows (logs, output)")
