"""The catalogue run as one redaction rule: a keyword prefilter, then google-re2 (linear time), then what
gitleaks checks on each finding (secret group, entropy, allowlists), then memtree's own judgement of the
generic rules' values.

How a text is scanned (:meth:`Engine.findings`):

1. One Aho-Corasick pass over the lower-cased text finds every rule keyword; a rule runs only when one of
   its keywords occurs (a rule without keywords always runs), as gitleaks does.
2. Each selected rule's regex runs over the UTF-8 bytes of the whole text with google-re2 (RE2: time
   linear in the text, no backtracking, the syntax gitleaks' Go regexes are written in: every regex of
   the shipped catalogue compiles as is; a user rule that RE2 rejects is an error naming the rule).
   Once a Hyperscan database of the catalogue is cached (:mod:`.hyperscan_db`, built in the background,
   never on the capture path), one Hyperscan pass first tells which rules can match at all, and only
   those whose keywords occur run under RE2.
3. A finding's secret is its ``secretGroup`` (else the first non-empty group, else the whole match, as
   gitleaks takes it); it must have more entropy than the rule's ``entropy`` and pass the global and the
   rule's allowlists.  For the ``generic-*`` rules and those gitleaks keeps to one kind of file (a text
   has no file name) memtree also vetoes a placeholder (``your_api_key``, ``${TOKEN}``), plain words and,
   unquoted, code or a name (``settings.API_KEY_V2``, ``Ed448PrivateKey``): :func:`_vetoed`.
4. Secrets that overlap are merged and replaced once, tagged with the most specific rule (a vendor rule
   over a generic one).  A value already replaced by an earlier rule (``[REDACTED:...]``) is left alone.

The rule reports its hits per tag (:class:`memtree_core.daemon.redacting.TagHits`), so ``memtree stats``
counts each gitleaks id.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree_core.daemon.redacting import TagHits
from memtree_plugins.redaction import scan
from memtree_plugins.redaction.catalogue import (
    GITLEAKS,
    Allowlist,
    Catalogue,
    CatalogueError,
    Rule,
    builtin,
    load,
)
from memtree_plugins.redaction.engine import MARK, is_placeholder, looks_like_code, lowered, shannon_entropy
from memtree_plugins.redaction.rules import is_words, qualified_not_secret
from memtree_plugins.redaction.scan import one_byte_per_char

if TYPE_CHECKING:
    from memtree_core.context import Context

_MARK_B = MARK.encode()
BUSY_BYTES = 4 << 20  # scanned without a Hyperscan database: then one is built (hyperscan_db.py)
_QUOTES = b"\"'`"


@dataclass(frozen=True)
class _Allow:
    regexes: Any  # one compiled re2 alternation, or None
    stopwords: tuple[str, ...]
    target: str
    all_of: bool
    needs_path: bool
    stop_scan: Any = None  # an Aho-Corasick automaton of the stopwords (generic-api-key has ~1,500), or None

    def allows(self, secret: str, match: str, line: str) -> bool:
        """gitleaks' checkFindingAllowed for one allowlist, with no file path or commit to match."""
        target = match if self.target == "match" else line if self.target == "line" else secret
        regex_ok = bool(self.regexes is not None and target and self.regexes.search(target))
        low = secret.lower()
        if self.stop_scan is not None:
            stop_ok = bool(secret) and bool(self.stop_scan.find_matches_as_indexes(low))
        else:
            stop_ok = bool(secret) and any(w in low for w in self.stopwords)
        if not self.all_of:
            return regex_ok or stop_ok
        if self.needs_path:
            return False
        checks = ([regex_ok] if self.regexes is not None else []) + ([stop_ok] if self.stopwords else [])
        return bool(checks) and all(checks)


def _compile_allow(a: Allowlist, where: str) -> _Allow:
    import re2

    rx = None
    if a.regexes:
        try:
            # Go's MatchString on any of them: one alternation of non-capturing groups.
            rx = re2.compile("|".join(f"(?:{r})" for r in a.regexes))
        except re2.error as exc:
            raise CatalogueError(f"{where}: an allowlist regex does not compile under RE2 ({exc}); fix it") from exc
    return _Allow(rx, a.stopwords, a.target, a.all_of, a.needs_path, _stopword_scan(a.stopwords))


def _stopword_scan(stopwords: tuple[str, ...]) -> Any:
    """One pass for "is any stopword in the secret" instead of a substring test per stopword."""
    if len(stopwords) < 16 or not all(stopwords):
        return None  # a few are as quick one by one; an empty stopword is in every secret
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    return ahocorasick_rs.AhoCorasick(list(stopwords))


class _Compiled:
    """One rule as the engine runs it.  Its regex and allowlists are compiled on first use (:meth:`ready`):
    a capture selects a few rules of ~220, and compiling them all costs a daemon's start ~100 ms."""

    __slots__ = ("rule", "generic", "judged", "_glob", "_ready", "regex", "groups", "allows", "needs_line", "raw")

    def __init__(self, rule: Rule, glob: tuple[_Allow, ...]) -> None:
        self.rule = rule
        self.generic = rule.id.startswith("generic")  # a generic-* rule
        # memtree judges its values: a generic rule, or one gitleaks keeps to a kind of file
        self.judged = self.generic or bool(rule.path)
        self._glob = glob
        self._ready = False
        self.regex: Any = None  # re2 pattern over bytes
        self.groups = 0
        self.allows: tuple[_Allow, ...] = ()
        self.needs_line = False  # an allowlist looks at the line
        self.raw: Any = None  # the RE2 object under the binding's pattern (its C++ Match), or None: finditer

    def ready(self) -> _Compiled:
        """Compiled (raises :class:`CatalogueError` naming the rule when it cannot be)."""
        if self._ready:
            return self
        import re2

        rule = self.rule
        where = f"{rule.source}: rule {rule.id}"
        try:
            regex = re2.compile(rule.regex.encode("utf-8"))
        except re2.error as exc:
            raise CatalogueError(f"{where}: the regex does not compile under RE2 (Go syntax, no "
                                 f"lookaround or backreference): {exc}; rewrite it") from exc
        if rule.secret_group > regex.groups:
            raise CatalogueError(f"{where}: secretGroup {rule.secret_group} but the regex has only "
                                 f"{regex.groups} group(s)")
        allows = self._glob + tuple(_compile_allow(a, where) for a in rule.allowlists)
        self.regex, self.groups, self.allows, self.raw = regex, regex.groups, allows, _raw(regex)
        self.needs_line = any(a.target == "line" for a in allows)
        self._ready = True
        return self


_UNANCHORED: Any = None


def _raw(regex: Any) -> Any:
    """The binding's C++ RE2 object, whose ``Match`` gives a match's spans without a Python match object
    (google-re2's own finditer makes one per match); None if this binding has none."""
    global _UNANCHORED
    try:
        import re2

        raw = regex._regexp
        _UNANCHORED = re2._re2.RE2.Anchor.UNANCHORED
        spans = raw.Match(_UNANCHORED, b"", 0, 0)
        if not (isinstance(spans, list | tuple) and len(spans) == regex.groups + 1):
            return None
    except Exception:
        return None
    return raw


class Engine:
    """A catalogue compiled for matching; immutable, shared by threads."""

    def __init__(self, catalogue: Catalogue, compile_all: bool = False) -> None:
        """``compile_all``: compile every rule now (a refresh's check); otherwise the shipped catalogue's rules
        compile on first use, and only rules from other files (the user's, few) compile now, so that a bad
        one is reported before anything is stored."""
        import ahocorasick_rs

        self.catalogue = catalogue
        glob = tuple(_compile_allow(a, "global allowlist") for a in catalogue.allowlists)
        compiled = [_Compiled(rule, glob) for rule in catalogue.rules]
        shipped = str(GITLEAKS)
        for c in compiled:
            if compile_all or c.rule.source != shipped:
                c.ready()
        self.rules = compiled
        self.every = list(range(len(compiled)))
        # Text beyond ASCII goes to Hyperscan with one byte per character (_one_byte) unless a rule asks for
        # Unicode classes, which that byte cannot stand for.
        self.hs_any_text = not any("\\p" in c.rule.regex or "\\P" in c.rule.regex for c in compiled)
        self.always = [i for i, c in enumerate(compiled) if not c.rule.keywords]
        words = sorted({k for c in compiled for k in c.rule.keywords})
        self.keyword_rules: list[list[int]] = [[] for _ in words]
        index = {w: i for i, w in enumerate(words)}
        for i, c in enumerate(compiled):
            for k in set(c.rule.keywords):
                self.keyword_rules[index[k]].append(i)
        self._ac = ahocorasick_rs.AhoCorasick(words, implementation=ahocorasick_rs.Implementation.DFA) \
            if words else None
        self._keyword_words = words
        self._keyword_pass_ = None  # built on first use (scan.DistinctLiterals, caseless), False without one
        self.prefilter: Callable[[bytes, list[int]], list[int]] | None = None  # Hyperscan, when cached
        # Called once after BUSY_BYTES scanned without a prefilter: builds one in the background.
        self.when_busy: Callable[[], object] | None = None
        self.scanned = 0

    @property
    def _keyword_pass(self) -> scan.DistinctLiterals | None:
        if self._keyword_pass_ is None:
            words = self._keyword_words
            one = scan.DistinctLiterals(words, caseless=True) if all(w == w.lower() for w in words) else None
            self._keyword_pass_ = one if one is not None and one.db is not None else False
        return self._keyword_pass_ or None

    def candidates(self, text: str) -> list[int]:
        """The rules whose keywords occur in ``text`` (case-insensitive), and those without keywords."""
        found = set(self.always)
        if self._ac is not None:
            low = lowered(text)
            try:
                hits = self._ac.find_matches_as_indexes(low, overlapping=True)
            except ValueError:  # lone surrogates: the automaton cannot take them; run every rule
                return list(range(len(self.rules)))
            for nid in {h[0] for h in hits}:
                found.update(self.keyword_rules[nid])
        return sorted(found)

    def _with_keywords(self, selected: list[int], text: str, hs_data: bytes) -> list[int]:
        """The rules of ``selected`` without keywords or with one in the lower-cased text.  Many keywords to
        look for (a text dense with near-secrets selects many rules): one caseless Hyperscan pass over
        ``hs_data`` (ASCII caseless is lower-casing for every character but "İ", which takes the per-keyword
        path, as do the Kelvin sign and the long s, which never reach here); else a substring test each."""
        wanted = sum(len(self.rules[i].rule.keywords) for i in selected)
        if wanted >= KEYWORDS_ONE_PASS and self._keyword_pass is not None and "\u0130" not in text:
            ok: set[int] = set()
            for w in self._keyword_pass.present(hs_data):
                ok.update(self.keyword_rules[w])
            return [i for i in selected if not self.rules[i].rule.keywords or i in ok]
        low = lowered(text)
        return [i for i in selected
                if not self.rules[i].rule.keywords or any(k in low for k in self.rules[i].rule.keywords)]

    def findings(self, text: str) -> list[tuple[int, int, int]]:
        """Every finding as ``(start, end, rule index)``: the secret's span in ``text`` (characters)."""
        if not text:
            return []
        data = text.encode("utf-8", "surrogatepass")
        prefilter = self.prefilter
        if prefilter is None and self.when_busy is not None:
            self.scanned += len(data)
            if self.scanned > BUSY_BYTES:
                busy, self.when_busy = self.when_busy, None
                busy()
        hs_data = None
        if prefilter is not None:
            if len(data) == len(text):
                hs_data = data
            elif self.hs_any_text and "\u212a" not in text and "\u017f" not in text:
                hs_data = _one_byte(data)
        if prefilter is not None and hs_data is not None:
            # Hyperscan first (which rules match at all), then the keywords of those few only.
            selected = prefilter(hs_data, self.every)
            if selected:
                selected = self._with_keywords(selected, text, hs_data)
        else:
            selected = self.candidates(text)
        if not selected:
            return []
        marks = _mark_spans(data)
        out: list[tuple[int, int, int]] = []
        for i in selected:
            c = self.rules[i].ready()
            seen = 0
            for spans in _matches(c, data):
                seen += 1
                if seen <= JUDGE_LIMIT:
                    span = self._judge(c, spans, data, marks)
                elif seen <= DENSE_LIMIT:  # a text dense with one rule's matches: redacted unjudged
                    span = _secret_span(c, spans, data)
                    if span is not None and _overlaps(marks, *span):
                        span = None
                else:  # too dense to go match by match: the rest of the text goes, from this match on
                    out.append((spans[0][0], len(data), i))
                    break
                if span is not None:
                    out.append((span[0], span[1], i))
        if out and len(data) != len(text):
            out = [(_chars(data, s, floor=True), _chars(data, e, floor=False), i) for s, e, i in out]
        return out

    def _judge(self, c: _Compiled, spans: Any, data: bytes, marks: tuple[list[int], list[int]]
               ) -> tuple[int, int] | None:
        found = _secret_span(c, spans, data)
        if found is None:
            return None
        s, e = found
        ms, me = spans[0]
        secret = data[s:e].decode("utf-8", "replace")
        if c.rule.entropy and shannon_entropy(secret) <= c.rule.entropy:
            return None
        if _overlaps(marks, s, e):
            return None  # an earlier rule replaced (part of) it already
        if c.allows:
            match = data[ms:me].decode("utf-8", "replace")
            line = ""
            if c.needs_line:  # the line around the match, at most LINE_WINDOW bytes either side
                lo = max(0, ms - LINE_WINDOW)
                start = data.rfind(b"\n", lo, ms)
                start = lo if start < 0 else start + 1
                hi = min(len(data), me + LINE_WINDOW)
                end = data.find(b"\n", me, hi)
                line = data[start: hi if end < 0 else end].decode("utf-8", "replace")
            if any(a.allows(secret, match, line) for a in c.allows):
                return None
        if c.judged and _vetoed(secret, data[max(ms, s - 120):s].decode("utf-8", "replace"),
                                s > 0 and data[s - 1] in _QUOTES, c.generic):
            return None
        return s, e


KEYWORDS_ONE_PASS = 8  # keywords to look for from which one Hyperscan pass beats a substring test each
JUDGE_LIMIT = 256  # matches of one rule judged per text; past it the rest are redacted unjudged,
DENSE_LIMIT = 4096  # and past this many the rest of the text is redacted whole (fail closed, bounded time)
LINE_WINDOW = 1024  # bytes of a line either side of a match that a "line" allowlist sees (fewer: fewer vetoes)


def _matches(c: _Compiled, data: bytes) -> Any:
    """Each match's spans (whole match, then every group), from RE2 directly when the binding allows."""
    raw = c.raw
    if raw is None:
        for m in c.regex.finditer(data):
            yield [m.span(g) for g in range(c.groups + 1)]
        return
    pos, end = 0, len(data)
    while pos <= end:
        spans = raw.Match(_UNANCHORED, data, pos, end)
        if spans[0][0] < 0:
            return
        yield spans
        pos = spans[0][1] if spans[0][1] > pos else pos + 1


def _secret_span(c: _Compiled, spans: Any, data: bytes) -> tuple[int, int] | None:
    """gitleaks' secret: the ``secretGroup``, else the first non-empty group, else the match (line breaks
    trimmed off its ends); None when that is empty."""
    ms, me = spans[0]
    while ms < me and data[ms] == 10:
        ms += 1
    while me > ms and data[me - 1] == 10:
        me -= 1
    if me <= ms:
        return None
    if not c.groups:
        return ms, me
    if c.rule.secret_group:
        s, e = spans[c.rule.secret_group]
    else:
        s = e = -1
        for gs, ge in spans[1:]:
            if ge > gs:
                s, e = gs, ge
                break
    return (s, e) if 0 <= s < e else None


def _overlaps(marks: tuple[list[int], list[int]], s: int, e: int) -> bool:
    starts, ends = marks
    i = bisect_left(starts, e) - 1  # the last mark starting before e
    return i >= 0 and ends[i] > s


# The name a generic value is assigned to: the identifier before the operator the generic rules allow.
_NAME_BEFORE = re.compile(r"([\w.$-]+)[\s'\"`]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[`'\"\s=]{0,5}$")


_NAME_PARTS = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]|\d+")
_NAME_CHARS = re.compile(r"[A-Za-z][\w.=-]*")
_VOWEL_SET = frozenset("aeiouyAEIOUY")


def reads_as_name(value: str) -> bool:
    """True for what code names things with: words in any case convention, joined by ``_ - . =``, with at
    most two runs of digits (``Ed25519PrivateKey``, ``column_bytes16``, ``rsa-2048-private-key.pk8``,
    ``skip_if_logged_in=not``).  A token's random letters make one-letter or vowel-less pieces instead."""
    if not _NAME_CHARS.fullmatch(value):
        return False
    parts = _NAME_PARTS.findall(value)
    words = [p for p in parts if not p.isdigit()]
    if sum(p.isdigit() for p in parts) > 2 or sum(len(w) == 1 for w in words) > 1:
        return False
    if not any(len(w) >= 3 for w in words):
        return False
    # a long piece reads as a word when a fifth of its letters are vowels; short ones (id, pk, rsa) pass
    return all(len(w) <= 3 or sum(c in _VOWEL_SET for c in w) >= 0.2 * len(w) for w in words)


def _vetoed(secret: str, before: str, quoted: bool, generic: bool) -> bool:
    """memtree's judgement of a context rule's value (the ``generic-*`` rules, and those gitleaks keeps to
    files of one kind): plain words, code or a name when unquoted (the engine's judgements,
    :func:`reads_as_name`), the value of a name that says it holds no secret (``token_id``, ``key_path``:
    rules.py), and for the generic rules a placeholder (``your_api_key_here``, ``${TOKEN}``, ``...``; the
    others' shapes, such as nuget's ``<add key="Password" value="...">``, say more than a value can)."""
    inner = secret.strip("\"'`")
    if is_words(inner) or (generic and is_placeholder(inner)):
        return True
    if not quoted and inner == secret and (looks_like_code(secret) or reads_as_name(secret)):
        return True
    m = _NAME_BEFORE.search(before)
    return bool(m and qualified_not_secret(m.group(1)))


def _one_byte(data: bytes) -> bytes:
    """Each character beyond ASCII as the byte 0x80 (:func:`~memtree_plugins.redaction.scan.one_byte_per_char`):
    to Hyperscan (byte-wise, ASCII classes) it is what such a character is to RE2 (one character; matched by
    ``.``, ``[^...]``, ``\\S``, ``\\W``, never by an ASCII class or a word character), so Hyperscan still finds
    every rule RE2 can match.  The exceptions, the Kelvin sign and the long s that RE2 folds to ``k`` and
    ``s`` under ``(?i)``, keep a text off Hyperscan."""
    return one_byte_per_char(data)


def _mark_spans(data: bytes) -> tuple[list[int], list[int]]:
    """Where earlier rules' marks are: their starts and ends, ascending."""
    starts: list[int] = []
    ends: list[int] = []
    at = data.find(_MARK_B)
    while at >= 0:
        end = data.find(b"]", at)
        end = len(data) if end < 0 else end + 1
        starts.append(at)
        ends.append(end)
        at = data.find(_MARK_B, end)
    return starts, ends


def _chars(data: bytes, at: int, floor: bool) -> int:
    """The character offset of byte offset ``at``; inside a character, the one before (``floor``) or after."""
    try:
        return len(data[:at].decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError:
        return len(data[:at].decode("utf-8", "ignore" if floor else "replace"))


def merge(findings: Iterable[tuple[int, int, int]], engine: Engine) -> list[tuple[int, int, str]]:
    """Overlapping secrets as one span each, tagged with the most specific rule that found part of it."""
    spans: list[tuple[int, int, str]] = []
    best: tuple[bool, int] | None = None
    cur_s = cur_e = -1
    tag = ""
    for s, e, i in sorted(findings):
        c = engine.rules[i]
        rank = (not c.generic, e - s)
        if s < cur_e:
            cur_e = max(cur_e, e)
            if best is None or rank > best:
                best, tag = rank, c.rule.id
            continue
        if cur_e > cur_s >= 0:
            spans.append((cur_s, cur_e, tag))
        cur_s, cur_e, best, tag = s, e, rank, c.rule.id
    if cur_e > cur_s >= 0:
        spans.append((cur_s, cur_e, tag))
    return spans


_MARK_RX = re.compile(re.escape(MARK) + r"[^\]\s]{1,64}\]")
MIN_REMNANT = 3  # a piece of a secret left beside an earlier rule's mark is redacted from this length on


def align(old: str, new: str) -> list[tuple[int, int, int]] | None:
    """The stretches of ``old`` (one line) kept in ``new`` (the same line after rules replaced spans of it by
    marks): ``(start in old, start in new, length)``, in order; a character in none of them was replaced.
    None when ``new`` is not ``old`` with spans replaced (the text is not the one the scan saw).  Stretches,
    not a map per character: a megabyte line costs one entry per mark, not a megabyte list."""
    kept: list[tuple[int, int, int]] = []
    pos = 0
    at = 0
    first = True
    for m in [*_MARK_RX.finditer(new), None]:
        end = len(new) if m is None else m.start()
        piece = new[at:end]
        if piece:
            # the first piece starts the line, the last ends it, one between follows the previous piece
            j = pos if first else len(old) - len(piece) if m is None else old.find(piece, pos)
            if j < pos or not old.startswith(piece, j) or (m is None and j + len(piece) != len(old)):
                return None
            kept.append((j, at, len(piece)))
            pos = j + len(piece)
        first = False
        if m is None:
            break
        at = m.end()
    return kept


def _kept_runs(kept: list[tuple[int, int, int]], lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """Where the columns ``[lo, hi)`` of the old line that were kept are in the new one, stretch by stretch."""
    k = max(0, bisect_right(kept, (lo, 1 << 62)) - 1)
    while k < len(kept) and kept[k][0] < hi:
        j, at, n = kept[k]
        a, b = max(lo, j), min(hi, j + n)
        if a < b:
            yield at + a - j, at + b - j
        k += 1


@dataclass
class _Seen:
    """What the scan before every other rule found in the text as it came in."""

    text: str
    findings: list[tuple[int, int, int]]
    engine: Engine


class _Shared:
    """The engine both halves of the catalogue use, and the last scan per thread (the rules of one text run
    one after another on one thread: :func:`memtree_core.daemon.redacting.redact`)."""

    def __init__(self, base: Callable[[], Catalogue], files: Iterable[str | Path]) -> None:
        self.base = base
        self.files = [Path(f) for f in files]
        self.cache_dir: Path | None = None  # where the Hyperscan database is cached (hyperscan_db.py)
        self.lock = threading.Lock()
        self.engine_: Engine | None = None
        self.error: str | None = None
        self.local = threading.local()

    def engine(self) -> Engine:
        engine = self.engine_
        if engine is not None:
            return engine
        with self.lock:
            if self.engine_ is None and self.error is None:
                try:
                    cat = self.base()
                    for f in self.files:
                        cat.extend(load(f))
                    engine = Engine(cat)
                    from memtree_plugins.redaction.catalogue import hyperscan_db
                    cache = self.cache_dir
                    hyperscan_db.ensure(engine, cache, build_it=False)  # the cached database, if any
                    engine.when_busy = lambda: hyperscan_db.ensure(engine, cache)  # else built in the background
                    self.engine_ = engine
                except ImportError as exc:
                    self.error = (f"the secret catalogue needs {exc.name or exc}, which is not installed; "
                                  f"reinstall memtree (pip install memtree-mcp)")
                except CatalogueError as exc:
                    self.error = str(exc)
            if self.error is not None:
                raise CatalogueError(self.error)
            assert self.engine_ is not None
            return self.engine_


class CatalogueScan:
    """The first half of the catalogue: registered before every other rule, it finds the catalogue's secrets
    in the text as it came in and changes nothing.  The second half (:class:`CatalogueRule`, registered
    last) redacts them where the rules in between left them, and the pieces of them those rules left:
    a rule that took the password of ``http://user:pass@host`` (url-credentials) leaves the user, which
    gitleaks' sidekiq rule counts as part of the secret; a shorter token shape leaves a token's tail."""

    def __init__(self, shared: _Shared, name: str = "gitleaks-scan") -> None:
        self.name = name
        self._shared = shared


    def redact(self, text: str) -> tuple[str, int]:
        engine = self._shared.engine()
        self._shared.local.seen = _Seen(text, engine.findings(text), engine)
        return text, 0


class CatalogueRule:
    """The catalogue (gitleaks' defaults plus the user's ``redaction.ruleFiles``) as a
    :class:`~memtree_core.types.RedactionRule`; :meth:`scanner` is the half that runs first.  It fails closed:
    when the catalogue or a rule file cannot be loaded, :meth:`availability` says why (``memtree info``
    shows it) and :meth:`redact` raises, so the redaction gate stores nothing."""

    def __init__(self, name: str = "gitleaks", base: Callable[[], Catalogue] = builtin,
                 files: Iterable[str | Path] = ()) -> None:
        self.name = name
        self._shared = _Shared(base, files)

    def scanner(self) -> CatalogueScan:
        return CatalogueScan(self._shared, f"{self.name}-scan")

    def configure(self, settings: Any, app: Context) -> None:
        """Take the user's rule files (``redaction.ruleFiles``: redaction/settings.py) and the cache directory
        under ``$MEMTREE_HOME``; the engine is rebuilt on next use."""
        from memtree_plugins.redaction.settings import RedactionSettings

        # the built-in plugin's settings; a plugin registering its own instance passes its files instead
        files = settings.redaction.rule_files if isinstance(settings, RedactionSettings) else self._shared.files
        with self._shared.lock:
            self._shared.files = [Path(f).expanduser() for f in files]
            self._shared.cache_dir = Path(app.paths.home) / "cache" / "hyperscan"
            self._shared.engine_, self._shared.error = None, None

    def engine(self) -> Engine:
        """The compiled catalogue, built once (raises :class:`CatalogueError` when it cannot be)."""
        return self._shared.engine()

    def availability(self) -> dict[str, str | None]:
        """Whether the catalogue can run (:class:`~memtree_core.types.ReportsAvailability`): None, or why not."""
        try:
            self.engine()
        except CatalogueError as exc:
            return {self.name: f"the secret catalogue ({self.name}) cannot load: {exc}"}
        return {self.name: None}

    @property
    def unavailable(self) -> str | None:
        """Why the catalogue cannot run, or None."""
        return self.availability()[self.name]

    def _carried(self, seen: _Seen, text: str) -> list[tuple[int, int, int]] | None:
        """The first half's findings where they are in ``text``: what is left of each secret after the rules
        in between, in pieces of :data:`MIN_REMNANT` characters or more.  None when ``text`` is not that
        text with spans replaced (another text, or one a rule reshaped): then it is scanned afresh."""
        if text is seen.text or not seen.findings:
            return list(seen.findings)
        old_lines, new_lines = seen.text.split("\n"), text.split("\n")
        if len(old_lines) != len(new_lines):
            return None
        old_at = list(accumulate(map(len, old_lines), lambda a, n: a + n + 1, initial=0))
        new_at = list(accumulate(map(len, new_lines), lambda a, n: a + n + 1, initial=0))
        out: list[tuple[int, int, int]] = []
        maps: dict[int, list[tuple[int, int, int]] | None] = {}
        for s, e, i in seen.findings:
            n = bisect_right(old_at, s) - 1
            while s < e:
                line_end = old_at[n + 1] - 1
                piece_end = min(e, line_end)
                o, ol = old_lines[n], s - old_at[n]
                if o == new_lines[n]:
                    out.append((new_at[n] + ol, new_at[n] + piece_end - old_at[n], i))
                else:
                    if n not in maps:
                        maps[n] = align(o, new_lines[n])
                    kept = maps[n]
                    if kept is None:
                        return None
                    for a, b in _kept_runs(kept, ol, piece_end - old_at[n]):
                        if b - a >= MIN_REMNANT:
                            out.append((new_at[n] + a, new_at[n] + b, i))
                s = old_at[n + 1]
                n += 1
        return out

    def redact(self, text: str) -> tuple[str, int]:
        engine = self.engine()
        try:
            seen = self._shared.local.seen
        except AttributeError:  # no scan on this thread yet (the first half was removed, or never ran)
            seen = None
        self._shared.local.seen = None
        found = None
        if seen is not None and seen.engine is engine:
            found = self._carried(seen, text)
        if found is None:
            found = engine.findings(text)
        spans = merge(found, engine)
        if not spans:
            return text, 0
        pieces: list[str] = []
        done = 0
        by_tag: dict[str, int] = {}
        for s, e, tag in spans:
            pieces += [text[done:s], f"{MARK}{tag}]"]
            done = e
            by_tag[tag] = by_tag.get(tag, 0) + 1
        pieces.append(text[done:])
        return "".join(pieces), TagHits(by_tag)
