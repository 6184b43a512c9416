"""The machinery behind the redaction rules: a rule type, the prefilter, and the value judgements
(placeholder? code? random-looking?) that keep false positives low.

A :class:`PatternRule` is one regex plus the cheap checks that decide whether the regex runs at all:

* ``keywords`` — lower-case substrings; the regex runs only when one occurs in the text (case-insensitive).
* ``literals`` — the same, but case-sensitive (for prefixes such as ``AKIA`` whose lower-case form is common).

Every capture (up to 100 KB) passes through every rule, so the rules do not look for their keywords
themselves: one Aho-Corasick pass over the text finds all of them (:mod:`.scan`), kept up to date as rules
redact, and a rule runs only where its keywords are.  The result is the same as each rule's own search
(``applies``/``_starts``, still used when the scan cannot vouch for a text, for a subclass that overrides
them, and for rules whose needles it cannot search exactly); a rule without keywords or literals runs on
every text.

The secret is the named group ``secret`` when the pattern has one (the rest of the match — a key name, a
scheme, a host — is kept), else the whole match.  It is replaced by ``[REDACTED:<tag>]``.  A ``check``
callback can veto a match (placeholder, code, low entropy); vetoed matches are left byte-identical.

Patterns must not backtrack badly: bound every repetition that can overlap its neighbour, prefer
possessive quantifiers (``*+``, Python >= 3.11) after a literal anchor, never nest unbounded repeats.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from memtree_core.daemon.redacting import check_deadline
from memtree_plugins.redaction import scan

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


_last_newlines: tuple[str, list[int]] = ("", [])
_NEWLINE = re.compile("\n")
NEAR = 4096  # characters searched back for a line's start before the text's line index is built


def start_of_line(text: str, pos: int) -> int:
    """Where the line holding ``pos`` starts.  ``text.rfind("\\n", 0, pos)`` costs the line's length, once
    per match: on a megabyte-long line of matches that is quadratic.  Past :data:`NEAR` characters the
    text's newlines are indexed once (one-entry cache, as :func:`lowered`) and bisected."""
    i = text.rfind("\n", max(0, pos - NEAR), pos)
    if i >= 0 or pos <= NEAR:
        return i + 1
    global _last_newlines
    cached = _last_newlines
    if cached[0] is not text:
        cached = (text, [m.start() for m in _NEWLINE.finditer(text)])
        _last_newlines = cached
    k = bisect_left(cached[1], pos)
    return cached[1][k - 1] + 1 if k else 0


_QUOTED = re.compile(r"(\\{0,7})([\"'])(.*)\1\2", re.S)


def quoted_span(value: str) -> tuple[int, int] | None:
    """Where the inside of a quoted value is: ``"x"``, ``'x'``, or escaped once or more, as JSON inside a
    JSON string has it (``\\"x\\"``); None if ``value`` is not quoted."""
    if len(value) < 2 or value[-1] not in "\"'":
        return None
    m = _QUOTED.fullmatch(value)
    return (m.start(3), m.end(3)) if m else None


def placeholder(tag: str) -> str:
    return f"{MARK}{tag}]"


@lru_cache(maxsize=4096)  # values recur within a capture (the same key in every config block)
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
passphrase value
""".split())

_REPEATED = re.compile(r"^(.)\1*$|^[*xX.•#_-]+$")
# `%s` / `%(name)s` only as a whole value: a real password may well contain "%d!" (a URL-encoded one does).
_TEMPLATE = re.compile(r"\$\{|\$\(|\{\{|\}\}|^%\(\w+\)[sdr]$|^%[sdr]$|<[^<>]*>|^\$[A-Za-z_]|%[A-Z_]{2,}%|"
                       r"^\{[A-Za-z_]*\}$|(?:^|[./:_-])%[sd](?:$|[./:_-])")
_PLACEHOLDER_HINT = re.compile(
    r"(?i)your[_ -]?(?:own[_ -]?)?(?:api[_ -]?)?(?:key|token|secret|pass|password|pat)|_here$|^replace|"
    r"^insert|^enter[_ -]|^put[_ -]|example|placeholder|redacted|^x{3,}|x{6,}|\*{3,}|\.\.\.|…|"
    r"^<|>$|^\[.*\]$|^(?:my|some|a|the)[ _-]?(?:api[_-]?)?(?:secret|token|password|key)|"
    r"^(?:dev|development|test|testing|local|default|insecure)[ _-]?(?:key|secret|token|password)$|^fake|^dummy|"
    r"^value\.\.")


_HEX_RUN = re.compile(r"(?:[0-9a-fA-F]{2}){8,}")


def is_counting(value: str) -> bool:
    """A run that counts rather than varies: ``0123456789abcdef…``, ``abcdefgh``, or hex bytes stepping by a
    constant (``000102030405…``, a test vector's key).  Documentation, never a drawn secret."""
    if len(value) < 16:
        return False
    steps = sum(ord(b) - ord(a) == 1 for a, b in zip(value, value[1:], strict=False))
    if steps >= 0.8 * (len(value) - 1):
        return True
    if not _HEX_RUN.fullmatch(value):
        return False
    octets = bytes.fromhex(value)
    step = (octets[1] - octets[0]) % 256
    return step != 0 and all((b - a) % 256 == step for a, b in zip(octets, octets[1:], strict=False))


MAX_PLACEHOLDER = 1024


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret rather than being one: template references, markers,
    dummy words, masked runs, counting runs.  Used by the context rules only: a token with a vendor prefix
    is redacted even when it looks like documentation (redacting ``AKIA...EXAMPLE`` costs nothing)."""
    v = value.strip().strip("\"'`")
    if not v or v.startswith(MARK):
        return True
    if len(v) > MAX_PLACEHOLDER:
        return False  # placeholders are short; judging a megabyte "value" costs more than redacting it
    if v.lower() in _PLACEHOLDER_WORDS or _REPEATED.match(v):
        return True
    return bool(_TEMPLATE.search(v) or _PLACEHOLDER_HINT.search(v)) or is_counting(v)


_IDENT = r"[A-Za-z_$][\w$]*"
# A member after `.` may be a JS private field (`this.#cache`).
_MEMBER = rf"(?:\.|::|->|\?\.)#?{_IDENT}"
_CODE = re.compile(
    # a call, an index, a Rust macro (`try!(`, `vec![`)
    rf"^(?:await\s+|new\s+|!{{1,2}}|-)?{_IDENT}(?:{_MEMBER})*(?:!?[(\[]|\.\()|"  # `.(`: a Go type assertion
    rf"^{_IDENT}(?:{_MEMBER})+[,;)]?$|"  # dotted path: settings.API_KEY, os.environ
    # a tuple, list, dict or parenthesised expression, negated or not: `auth = (url.username, url.password)`,
    # `active = !(transport instanceof Remote)`
    r"^!{0,2}[(\[{]")
# A composite literal opening: Go `oauth2.Token{`, `Config{Key:`, Rust `Seed {` (the value ends at the brace).
_STRUCT_LITERAL = re.compile(rf"({_IDENT}(?:(?:\.|::){_IDENT})*)\{{(?:{_IDENT}:)?")
# A reference, pointer or dereference before an expression: `&ec::Seed`, `*key.bytes()`, `&mut buf`, `&[u8]`.
_REFERENCE = re.compile(r"[&*](?:[&*]|mut\b|const\b)*")
# A name as people write it: letters and underscores, a few digits at the end, no more camel steps than
# words.  The segments of a random token (`abc.DEF123xyz.QRS456tuv`, a bearer token with dots) are not.
_LETTERS_THEN_DIGITS = re.compile(r"[$_]*[A-Za-z][A-Za-z_$]*\d{0,3}")
_CAMEL_STEP = re.compile(r"[a-z][A-Z]")


_VOWELS = frozenset("aeiouAEIOU")


def is_wordy(segment: str) -> bool:
    if not _LETTERS_THEN_DIGITS.fullmatch(segment) or len(_CAMEL_STEP.findall(segment)) > 1 + len(segment) // 4:
        return False
    if len(segment) < 12:
        return True
    # Long names are made of words, and words have vowels; random letters have few (10 of 52).
    letters = [c for c in segment if c.isalpha()]
    return sum(c in _VOWELS for c in letters) >= 0.2 * len(letters)


# The pieces of an identifier: an acronym or a word (`PKCS`, `Private`, `check`, `sha`), each with the number
# it may end in (`PKCS7`, `X25519`, `Ed25519`, `sha256`).
_NAME_PIECE = re.compile(r"([A-Z]+(?![a-z])|[A-Z]?[a-z]+)(\d{0,6})")
_FIVE_CONSONANTS = re.compile(r"[^aeiouy]{5}")


def _is_word(letters: str) -> bool:
    low = letters.lower()
    return len(low) >= 3 and any(c in "aeiouy" for c in low[1:]) and not _FIVE_CONSONANTS.search(low)


def is_name(segment: str) -> bool:
    """An identifier built of words with numbers in it, as names of types and functions are
    (``PKCS7PrivateKeyTypes``, ``Ed25519PublicKey``, ``x25519_check_private_key_bytes``): two words or more
    (3+ letters with a vowel), no more acronyms than words, pieces 4+ characters long on average, and a
    number only after an acronym, a word or a short tag, followed by a new piece (``_``, a capital) or the
    end.  Random tokens break into short
    pieces and numbers glued to lower-case letters; a password of one word and a number (``Hunter2024``)
    has one word only."""
    if not segment or not (segment[0].isalpha() or segment[0] == "_"):
        return False
    words = acronyms = pieces = 0
    for part in segment.split("_"):
        pos = 0
        while pos < len(part):
            m = _NAME_PIECE.match(part, pos)
            if m is None:
                return False  # a piece that starts with a digit, or a character no identifier has
            letters, digits = m.groups()
            pos = m.end()
            pieces += 1
            if letters.isupper():
                if len(letters) > 6:
                    return False
                acronyms += 1
            elif _is_word(letters):
                words += 1
            elif not (digits and len(letters) <= 3):
                return False  # a short lower-case run that is neither a word nor a tag (`Ed25519`, `p256`)
            if digits and pos < len(part) and part[pos].islower():
                return False
    return words >= 2 and acronyms <= words and len(segment) - segment.count("_") >= 4 * pieces


# A path segment may also be a module named by an algorithm or a version: `ed25519`, `sha256`, `oauth2`.
_TAGGED_NAME = re.compile(r"[a-z]{1,8}\d{1,6}")


def _reads_as_name(segment: str) -> bool:
    return is_wordy(segment) or is_name(segment) or bool(_TAGGED_NAME.fullmatch(segment))


_NEGATION = re.compile(rf"(?:!{{1,2}}|\+|~)[$_]?{_IDENT}(?:\.{_IDENT})*[;,)]?$")
_PATH_SPLIT = re.compile(r"\.|::|->|\?\.")
_TYPE_NAMES = frozenset("""
str string bytes int bool float any none optional secretstr secretbytes char text varchar uuid object
""".split())


def looks_like_code(value: str) -> bool:
    """True for an unquoted value that is an expression, not a literal: ``getpass()``,
    ``os.environ["TOKEN"]``, ``settings.API_KEY``, a type annotation such as ``str``, a reference or
    pointer (``&ec::Seed``, ``*key``), a composite literal (``&oauth2.Token{``), a macro (``try!(``)."""
    v = value.strip()
    base = v.split("[", 1)[0].split("|", 1)[0].strip().lower()
    if base in _TYPE_NAMES:
        return True
    if _NEGATION.match(v):
        return True  # `!!config.withCredentials`, `!isSecure`
    ref = _REFERENCE.match(v)
    if ref is not None:
        # `&ec::Seed`, `*key.bytes()`, `&PRIVATE_KEY_OPS`: what follows the sigils must be code or a name.
        rest = v[ref.end():].strip()
        return bool(rest) and (looks_like_code(rest) or _reads_as_name(rest.rstrip(",;)")))
    lit = _STRUCT_LITERAL.fullmatch(v)
    if lit is not None:
        return all(_reads_as_name(seg) for seg in _PATH_SPLIT.split(lit.group(1)) if seg)
    m = _CODE.match(v)
    if m is None:
        return _is_arithmetic(v)
    head = v.lstrip("!")
    if head[:1] in "([{" and head != v:  # `!(transport instanceof Remote)`: negated code, not `!(` + a token
        inner = _IDENT_RX.match(head, 1)
        return inner is None or is_wordy(inner.group(0))
    if v[0] in "([{" or v[m.end() - 1] in "([":
        return True  # a tuple, a call, an index: no token has these
    # A dotted path: code only if its names read as names (a bearer token may have dots too).
    head = v[: m.end()].rstrip(",;)").strip()
    return all(_reads_as_name(seg.lstrip("#")) for seg in _PATH_SPLIT.split(head) if seg)


_OPERATOR = re.compile(r"[-+*/%|^]|&&?|<<|>>")
_NUMBER = re.compile(r"\d{1,12}(?:\.\d{1,12})?")


def _is_arithmetic(v: str) -> bool:
    """Operands joined by operators, one of them code: ``self.taken+len(self.tokens)``, ``n*key.size()``.
    Base64 has ``+`` and ``/`` too, but its pieces are neither names, numbers nor code."""
    operands = _OPERATOR.split(v)
    if len(operands) < 2 or len(operands) > 16:
        return False
    code = evident = False
    for op in operands:
        if not op:
            continue
        if _NUMBER.fullmatch(op) or (_IDENT_RX.fullmatch(op) and is_wordy(op)):
            evident = evident or op[0].isdigit()
            continue
        if _OPERATOR.search(op) is None and looks_like_code(op):
            code = True
            evident = evident or "(" in op or "[" in op
            continue
        return False
    # Names and dots joined by `-` with no call, index or number (`XoNRJ4.SEy-QEHxwCIA_`) read as a token.
    return code and evident


_IDENT_RX = re.compile(_IDENT)


ENTROPY_BITS = 3.0  # bits/char; see rules.py "How values are judged"
MIN_RANDOM_LEN = 8


def is_random_looking(value: str, min_len: int = MIN_RANDOM_LEN, bits: float = ENTROPY_BITS) -> bool:
    return len(value) >= min_len and shannon_entropy(value) >= bits


_NUMBER_OR_BOOL = re.compile(r"(?i)^(?:[-+]?\d+(?:\.\d+)?[smhdkKMG]?|0x[0-9a-f]+|true|false|yes|no|on|off|null|none|nil)$")


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


_CHECK_EVERY = 1023  # matches tried between two looks at the deadline (memtree_core.daemon.redacting)


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
    # Windowed rules (``lines_after`` >= 0) search the regex only from the start of a keyword's or literal's
    # line to the end of the line ``lines_after`` below it: for a match that holds the keyword but need not
    # start at it, this spares a regex attempt at every offset of a text that has the keyword once.
    lines_after: int = -1

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

    def __post_init__(self) -> None:
        # The shared scan (scan.py) may stand in for applies()/_starts() only for this class's own search,
        # and only for needles it finds exactly where `in`/`find` would: non-empty, keywords ASCII (a
        # lower-cased window then equals that slice of the lower-cased text).
        cls = type(self)
        scanned = (cls.applies is PatternRule.applies and cls._starts is PatternRule._starts
                   and all(self.literals) and all(k and k.isascii() for k in self.keywords))
        object.__setattr__(self, "_scanned", scanned)
        object.__setattr__(self, "_plan", None)
        if scanned:
            scan.learn(self.literals, self.keywords)

    def redact(self, text: str) -> tuple[str, int]:
        if not text:
            return text, 0
        if self._scanned and scan.available():
            # Most rules' needles are in no given text: answered from this thread's scan of it in a few
            # lookups (this runs ~130 times per text, and again on each decoded view).
            plan, sc = self._plan, scan.latest(text)
            if sc is not None and plan is not None and plan[0] is sc.needles and plan[2] \
                    and plan[1].isdisjoint(sc.present):
                return text, 0
            done = self._redact_scanned(text)
            if done is not None:
                return done
        if not self.applies(text):
            return text, 0
        if self.lines_after >= 0:
            new, hits, _ = self._apply(text, None, self._windows(text, self._starts(text)))
        else:
            new, hits, _ = self._apply(text, self._starts(text) if self.anchored else None)
        return new, hits

    def _needle_ids(self, needles: scan.Needles) -> tuple[int, ...]:
        plan = self._plan
        if plan is None or plan[0] is not needles:
            ids = {needles.ids[(False, s)] for s in self.literals} | {needles.ids[(True, s)] for s in self.keywords}
            plan = (needles, frozenset(ids), tuple(sorted(ids)))
            object.__setattr__(self, "_plan", plan)
        return plan[1], plan[2]

    def _redact_scanned(self, text: str) -> tuple[str, int] | None:
        """redact() with applies()/_starts() answered by the shared scan; None if there is none."""
        needles = scan.current_needles()
        sc = scan.scan_of(text, needles)
        if sc is None:
            return None
        idset, ids = self._needle_ids(needles)
        lists: list[list[int]] = []
        if ids:
            if idset.isdisjoint(sc.present):
                return text, 0
            lists = [pos for nid in ids if (pos := sc.positions(nid))]
            if not lists:
                return text, 0
        starts = windows = None
        if self.lines_after >= 0 and lists:
            windows = self._windows(text, lists[0] if len(lists) == 1 else sorted(set().union(*lists)))
        elif self.anchored:
            if not lists:
                return text, 0  # an anchored rule without needles has nowhere to start
            starts = lists[0] if len(lists) == 1 else sorted(set().union(*lists))
            if self.back_over:
                rev, back, n = sc.reversed_text, _back_pattern(self.back_over), len(text)
                starts = sorted({i - back.match(rev, n - i).end() + (n - i) for i in starts})
        new, hits, edits = self._apply(text, starts, windows)
        if edits:
            scan.remember(sc.after(new, edits))
        return new, hits

    def _judge(self, m: re.Match[str], text: str, mark: str, has_group: bool) -> tuple[int, int, str | None, int]:
        """How one match is redacted: ``(lo, hi, replacement, hits)``, ``text[lo:hi]`` becoming
        ``replacement`` (None: the match stays as it is), ``m.start() <= lo <= hi <= m.end()``."""
        if self.rewrite is not None:
            whole = m.group(0)
            new, n = self.rewrite(whole)
            return m.start(), m.end(), (None if new == whole else new), n
        start, end = m.span("secret") if has_group else (-1, -1)
        if start < 0:  # no secret group, or it did not take part: the whole match is the secret
            start, end = m.span()
        secret = text[start:end]
        if len(secret) >= 2 and secret[0] in "\"'\\":
            q = quoted_span(secret)
            if q is not None:  # keep the quotes (escaped ones too: JSON inside a JSON string) around it
                start, end, secret = start + q[0], start + q[1], secret[q[0]:q[1]]
        if not secret or secret.startswith(MARK) or (self.check is not None and not self.check(m)):
            return start, end, None, 0
        base, stop = m.span()
        if base <= start and end <= stop:
            return start, end, mark, 1
        # A secret group outside the match (in a lookaround): the match becomes what slicing it gives.
        whole = m.group(0)
        new = whole[: start - base] + mark + whole[end - base:]
        return base, stop, (None if new == whole else new), 1

    def _windows(self, text: str, positions: list[int]) -> list[tuple[int, int]]:
        """The windows of a windowed rule: from the line start of each position (in order) to the end of the
        line ``lines_after`` below it, overlapping ones merged."""
        out: list[tuple[int, int]] = []
        for pos in positions:
            hi = text.find("\n", pos)
            for _ in range(self.lines_after):
                if hi < 0:
                    break
                hi = text.find("\n", hi + 1)
            hi = len(text) if hi < 0 else hi
            lo = start_of_line(text, pos)
            if out and lo <= out[-1][1]:
                out[-1] = (out[-1][0], max(hi, out[-1][1]))
            else:
                out.append((lo, hi))
        return out

    def _matches(self, text: str, starts: list[int] | None) -> Iterator[re.Match[str]]:
        """The matches at ``starts``, none inside the one before (as ``re.sub`` would skip them)."""
        match = self.pattern.match
        resume = tried = 0
        for pos in starts or ():
            if pos < resume:
                continue
            tried += 1
            if not tried & _CHECK_EVERY:
                check_deadline()
            m = match(text, pos)
            if m is not None and m.end() > pos:
                resume = m.end()
                yield m

    def _found(self, text: str, windows: list[tuple[int, int]]) -> Iterator[re.Match[str]]:
        finditer = self.pattern.finditer
        for tried, (lo, hi) in enumerate(windows, 1):
            if not tried & _CHECK_EVERY:
                check_deadline()
            yield from finditer(text, lo, hi)

    def _apply(self, text: str, starts: list[int] | None,
               windows: list[tuple[int, int]] | None = None) -> tuple[str, int, list[tuple[int, int, str]]]:
        """Redact the matches tried at ``starts`` (an anchored rule), found in ``windows`` (a windowed one), or
        everywhere as ``re.sub`` finds them: the new text, the hits, and the edits made as ``(start, end,
        replacement)`` in ``text``."""
        mark = placeholder(self.tag or self.name)
        has_group = "secret" in self.pattern.groupindex
        judge = self._judge
        edits: list[tuple[int, int, str]] = []
        hits = tried = 0
        if starts is None and windows is None:
            def replace(m: re.Match[str]) -> str:
                nonlocal hits, tried
                tried += 1
                if not tried & _CHECK_EVERY:
                    check_deadline()
                lo, hi, new, n = judge(m, text, mark, has_group)
                hits += n
                if new is None:
                    return m.group(0)
                edits.append((lo, hi, new))
                return text[m.start():lo] + new + text[hi:m.end()]

            out = self.pattern.sub(replace, text)
            return (out, hits, edits) if hits else (text, 0, [])

        pieces: list[str] = []
        emitted = resume = 0
        for m in self._matches(text, starts) if windows is None else self._found(text, windows):
            if m.start() < resume or m.end() == m.start():  # inside the match before, or empty
                continue
            tried += 1
            if not tried & _CHECK_EVERY:
                check_deadline()
            resume = m.end()
            lo, hi, new, n = judge(m, text, mark, has_group)
            hits += n
            if new is not None:
                pieces.append(text[emitted:lo])
                pieces.append(new)
                emitted = hi
                edits.append((lo, hi, new))
        if not hits:
            return text, 0, []
        if not edits:
            return text, hits, []
        pieces.append(text[emitted:])
        return "".join(pieces), hits, edits
