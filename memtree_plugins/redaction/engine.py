"""The machinery behind the redaction rules: a rule type, the prefilter, and the value judgements
(placeholder? code? random-looking?) that keep false positives low.

A :class:`PatternRule` is one regex plus the cheap checks that decide whether the regex runs at all:

* ``keywords`` — lower-case substrings; the regex runs only when one occurs in the text (case-insensitive).
  Every capture (up to 100 KB) passes through every rule, so on clean text most rules cost one ``in`` test.
* ``literals`` — the same, but case-sensitive (for prefixes such as ``AKIA`` whose lower-case form is common).

The secret is the named group ``secret`` when the pattern has one (the rest of the match — a key name, a
scheme, a host — is kept), else the whole match.  It is replaced by ``[REDACTED:<tag>]``.  A ``check``
callback can veto a match (placeholder, code, low entropy); vetoed matches are left byte-identical.

Patterns must not backtrack badly: bound every repetition that can overlap its neighbour, prefer
possessive quantifiers (``*+``, Python >= 3.11) after a literal anchor, never nest unbounded repeats.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

MARK = "[REDACTED:"

# One-entry cache of the lower-cased text: rules run one after another on the same string object, and
# only a rule that redacts something makes a new one.  A tuple is swapped in atomically, so threads
# sharing it at worst recompute.
_last_lower: tuple[str, str] = ("", "")


def lowered(text: str) -> str:
    global _last_lower
    cached = _last_lower
    if cached[0] is text:
        return cached[1]
    low = text.lower()
    _last_lower = (text, low)
    return low


def placeholder(tag: str) -> str:
    return f"{MARK}{tag}]"


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s own character distribution (0 for empty)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


# ---- value judgements --------------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset("""
changeme change_me change-me changeit password passwd pass secret token apikey api_key api-key key
example sample dummy fake test testing placeholder redacted hidden masked removed omitted none null nil
undefined true false yes no on off todo tbd fixme xxx foo bar baz foobar qwerty letmein default empty
required optional string str bytes int your_token your_key your_secret your_password mypassword
mysecret mytoken sometoken somesecret somepassword notasecret not_a_secret secretpassword supersecret
""".split())

_REPEATED = re.compile(r"^(.)\1*$|^[*xX.•#_-]+$")
_TEMPLATE = re.compile(r"\$\{|\$\(|\{\{|\}\}|%\(|%[sd]\b|<[^<>]*>|^\$[A-Za-z_]|^%[A-Za-z_]+%$|^\{[A-Za-z_]*\}$")
_PLACEHOLDER_HINT = re.compile(
    r"(?i)your[_ -]?(?:own[_ -]?)?(?:api[_ -]?)?(?:key|token|secret|pass|password|pat)|_here$|^replace|"
    r"^insert|^enter[_ -]|^put[_ -]|example|placeholder|redacted|^x{3,}|x{6,}|\*{3,}|\.\.\.|…|"
    r"^<|>$|^\[.*\]$|^(?:my|some|a|the)[_-]?(?:api[_-]?)?(?:secret|token|password|key)")


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret rather than being one: template references, markers,
    dummy words, masked runs.  Used by the context rules only: a token with a vendor prefix is
    redacted even when it looks like documentation (redacting ``AKIA...EXAMPLE`` costs nothing)."""
    v = value.strip().strip("\"'`")
    if not v or v.startswith(MARK):
        return True
    if v.lower() in _PLACEHOLDER_WORDS or _REPEATED.match(v):
        return True
    return bool(_TEMPLATE.search(v) or _PLACEHOLDER_HINT.search(v))


_IDENT = r"[A-Za-z_$][\w$]*"
_CODE = re.compile(
    rf"^(?:await\s+|new\s+|!)?{_IDENT}(?:(?:\.|::|->|\?\.){_IDENT})*(?:\(|\[|\.$)|"  # call, index
    rf"^{_IDENT}(?:(?:\.|::|->|\?\.){_IDENT})+[,;)]?$")  # dotted path: settings.API_KEY, os.environ
_TYPE_NAMES = frozenset("""
str string bytes int bool float any none optional secretstr secretbytes char text varchar uuid object
""".split())


def looks_like_code(value: str) -> bool:
    """True for an unquoted value that is an expression, not a literal: ``getpass()``,
    ``os.environ["TOKEN"]``, ``settings.API_KEY``, a type annotation such as ``str``."""
    v = value.strip()
    base = v.split("[", 1)[0].split("|", 1)[0].strip().lower()
    if base in _TYPE_NAMES:
        return True
    return bool(_CODE.match(v))


ENTROPY_BITS = 3.0  # bits/char; see rules.py "How values are judged"
MIN_RANDOM_LEN = 8


def is_random_looking(value: str, min_len: int = MIN_RANDOM_LEN, bits: float = ENTROPY_BITS) -> bool:
    return len(value) >= min_len and shannon_entropy(value) >= bits


_NUMBER_OR_BOOL = re.compile(r"(?i)^(?:[-+]?\d+(?:\.\d+)?[smhdkKMG]?|true|false|yes|no|on|off|null|none|nil)$")


def is_number_or_flag(value: str) -> bool:
    return bool(_NUMBER_OR_BOOL.match(value.strip().strip("\"'")))


_PATHLIKE = re.compile(r"^(?:~?/|\.\.?/|[A-Za-z]:\\|file:|https?://[^\s:@/]+(?:[/:?#]|$))")


def is_pathlike(value: str) -> bool:
    """Paths and credential-free URLs are not secrets (a URL with ``user:pass@`` is the url rule's job)."""
    v = value.strip().strip("\"'")
    return bool(_PATHLIKE.match(v)) and "@" not in v


_BACK: dict[str, re.Pattern[str]] = {}


def _back_pattern(chars: str) -> re.Pattern[str]:
    pat = _BACK.get(chars)
    if pat is None:
        pat = _BACK[chars] = re.compile(f"[{re.escape(chars)}]{{0,128}}")
    return pat


# ---- the rule type -----------------------------------------------------------------------------------

Check = Callable[[re.Match[str]], bool]


@dataclass(frozen=True)
class PatternRule:
    """One redaction rule: ``[REDACTED:<tag>]`` replaces each match's ``secret`` group (or the whole
    match) unless ``check`` vetoes it.  Satisfies :class:`memtree_core.types.RedactionRule`."""

    name: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...] = ()
    literals: tuple[str, ...] = ()
    check: Check | None = None
    rewrite: Callable[[str], tuple[str, int]] | None = None  # redacts inside the match itself
    tag: str = ""
    description: str = ""
    # Anchored rules try the regex only where a keyword/literal occurs (after stepping back over
    # ``back_over`` characters, at most 128), instead of at every position of the text: a keyword
    # search is a C-speed substring scan, a regex attempt at every offset is not.  Only valid when every
    # match starts there.
    anchored: bool = False
    back_over: str = ""

    def applies(self, text: str) -> bool:
        if not (self.keywords or self.literals):
            return True
        if any(lit in text for lit in self.literals):
            return True
        if self.keywords:
            low = lowered(text)
            return any(k in low for k in self.keywords)
        return False

    def _starts(self, text: str) -> list[int]:
        found: set[int] = set()
        for hay, needles in ((text, self.literals), (lowered(text) if self.keywords else "", self.keywords)):
            for needle in needles:
                i = hay.find(needle)
                while i >= 0:
                    found.add(i)
                    i = hay.find(needle, i + 1)
        if not self.back_over or not found:
            return sorted(found)
        # Step back over the allowed characters with one C-level match on the reversed text.
        rev = text[::-1]
        back = _back_pattern(self.back_over)
        n = len(text)
        return sorted({i - back.match(rev, n - i).end() + (n - i) for i in found})

    def redact(self, text: str) -> tuple[str, int]:
        if not text or not self.applies(text):
            return text, 0
        hits = 0
        mark = placeholder(self.tag or self.name)
        has_group = "secret" in self.pattern.groupindex

        def replace(m: re.Match[str]) -> str:
            nonlocal hits
            whole = m.group(0)
            if self.rewrite is not None:
                new, n = self.rewrite(whole)
                hits += n
                return new
            start, end = m.span("secret") if has_group else (-1, -1)
            if start < 0:  # no secret group, or it did not take part: the whole match is the secret
                start, end = m.span()
            secret = text[start:end]
            if len(secret) >= 2 and secret[0] in "\"'" and secret[-1] == secret[0]:
                start, end, secret = start + 1, end - 1, secret[1:-1]  # keep the quotes around it
            if not secret or secret.startswith(MARK) or (self.check is not None and not self.check(m)):
                return whole
            hits += 1
            base = m.start()
            return whole[: start - base] + mark + whole[end - base:]

        if self.anchored:
            pieces: list[str] = []
            emitted = resume = 0
            for pos in self._starts(text):
                if pos < resume:  # inside the previous match, as re.sub would skip it
                    continue
                m = self.pattern.match(text, pos)
                if m is None or m.end() == pos:
                    continue
                resume = m.end()
                new = replace(m)
                if new != m.group(0):
                    pieces.append(text[emitted:pos])
                    pieces.append(new)
                    emitted = m.end()
            if not hits:
                return text, 0
            pieces.append(text[emitted:])
            return "".join(pieces), hits

        out = self.pattern.sub(replace, text)
        return (out, hits) if hits else (text, 0)
