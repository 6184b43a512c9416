"""Secret catalogues as data: gitleaks' default rules (``gitleaks.toml``, MIT, notice in ``LICENSE.gitleaks``,
source commit in ``SOURCE.gitleaks``) and any rule file a user or a plugin adds in the same TOML schema.

A catalogue is read here into :class:`Catalogue` (rules + global allowlists), honouring what gitleaks
honours for a text:

* ``id`` (the tag of the mark: ``[REDACTED:<id>]``), ``regex`` (Go RE2 syntax, compiled by google-re2, so
  mid-pattern ``(?i)``, ``\\z`` and ``[[:alnum:]]`` mean what they mean to gitleaks), ``keywords`` (the rule
  runs only when one occurs in the lower-cased text; none: always), ``secretGroup`` (the group that is
  the secret; 0: the first non-empty group, or the whole match), ``entropy`` (the secret must have more
  Shannon bits per character than this);
* ``[[rules.allowlists]]`` (and the older single ``[rules.allowlist]``) and the global ``[allowlist]`` /
  ``[[allowlists]]``: ``regexes`` against ``regexTarget`` (``secret``, the default, ``match`` or
  ``line``), ``stopwords`` (contained in the lower-cased secret), ``condition`` ``OR`` (default) or
  ``AND``.  ``paths`` and ``commits`` name files and commits, which a text has none of: they never allow,
  so an ``AND`` allowlist that needs a path never vetoes a finding (fail closed), and an ``OR`` one
  vetoes by its regexes and stopwords alone.
* A rule's ``path`` (it applies to files of that name only) cannot be checked on a text: the rule runs on
  every text, and memtree judges its values as it judges the ``generic-*`` rules' (:mod:`.matcher`).  A
  rule with a ``path`` and no ``regex`` (a file-name-only rule such as ``pkcs12-file``) has nothing to
  look for in a text and is listed in :attr:`Catalogue.skipped`.

What the engines reject, and how it is handled: RE2 compiles every regex of the shipped catalogue (a rule it
rejects is an error naming the rule: ``refresh`` refuses such a catalogue, a user's file stops storing until
fixed); Hyperscan, the optional prefilter, compiles them all too (one it rejects runs under RE2 on every
text, :mod:`.hyperscan_db`); ``pkcs12-file`` names files only and is skipped.  ``eval/bench/catalogue.py``
prints the lists.

Every error names the file, the rule and the fix (:class:`CatalogueError`).  The matching itself is
:mod:`.matcher`; refreshing ``gitleaks.toml`` from a newer gitleaks release is :mod:`.refresh`.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GITLEAKS = HERE / "gitleaks.toml"

_RULE_KEYS = {"id", "description", "regex", "secretGroup", "entropy", "keywords", "path", "tags",
              "allowlists", "allowlist"}
_ALLOW_KEYS = {"description", "condition", "regexTarget", "regexes", "stopwords", "paths", "commits"}
_TOP_KEYS = {"title", "minVersion", "description", "rules", "allowlist", "allowlists"}


class CatalogueError(ValueError):
    """A catalogue or rule file cannot be used; the message names the file, the rule and the fix."""


@dataclass(frozen=True)
class Allowlist:
    regexes: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()  # lower-case
    target: str = "secret"  # what the regexes are searched in: secret, match or line
    all_of: bool = False  # condition = "AND"
    needs_path: bool = False  # has paths or commits: an AND allowlist then never applies to a text


@dataclass(frozen=True)
class Rule:
    id: str
    regex: str
    keywords: tuple[str, ...] = ()  # lower-case
    secret_group: int = 0
    entropy: float = 0.0
    allowlists: tuple[Allowlist, ...] = ()
    description: str = ""
    source: str = ""  # the file it came from
    path: str = ""  # the files gitleaks runs it on (a text has no file name: memtree judges its values)


@dataclass
class Catalogue:
    rules: list[Rule] = field(default_factory=list)
    allowlists: list[Allowlist] = field(default_factory=list)  # global: apply to every rule of the file
    skipped: dict[str, str] = field(default_factory=dict)  # rule id -> why it does not run on text
    digest: str = ""  # sha256 of the source bytes

    def extend(self, other: Catalogue) -> None:
        """Add ``other``'s rules (one with an id already here replaces it) and global allowlists.  A global
        allowlist stays with the rules of its own file: it is copied into each of them."""
        own = {r.id: i for i, r in enumerate(self.rules)}
        for rule in other.rules:
            rule = Rule(rule.id, rule.regex, rule.keywords, rule.secret_group, rule.entropy,
                        rule.allowlists + tuple(other.allowlists), rule.description, rule.source, rule.path)
            if rule.id in own:
                self.rules[own[rule.id]] = rule
            else:
                own[rule.id] = len(self.rules)
                self.rules.append(rule)
        self.skipped.update(other.skipped)
        self.digest = hashlib.sha256((self.digest + other.digest).encode()).hexdigest()


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CatalogueError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def _allowlist(raw: Any, where: str) -> Allowlist:
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: an allowlist must be a table")
    unknown = set(raw) - _ALLOW_KEYS
    if unknown:
        raise CatalogueError(f"{where}: unknown allowlist key(s) {sorted(unknown)}; "
                             f"the keys are {sorted(_ALLOW_KEYS)}")
    condition = str(raw.get("condition", "OR")).upper()
    if condition not in ("OR", "AND"):
        raise CatalogueError(f"{where}: condition must be \"OR\" or \"AND\", not {raw['condition']!r}")
    target = raw.get("regexTarget", "secret") or "secret"
    if target not in ("secret", "match", "line"):
        raise CatalogueError(f"{where}: regexTarget must be \"secret\", \"match\" or \"line\", not {target!r}")
    return Allowlist(
        regexes=_strings(raw.get("regexes", []), where, "regexes"),
        stopwords=tuple(w.lower() for w in _strings(raw.get("stopwords", []), where, "stopwords")),
        target=target, all_of=condition == "AND",
        needs_path=bool(raw.get("paths") or raw.get("commits")))


def _rule_allowlists(raw: dict[str, Any], where: str) -> tuple[Allowlist, ...]:
    found = raw.get("allowlists", [])
    if not isinstance(found, list):
        raise CatalogueError(f"{where}: allowlists must be an array of tables ([[rules.allowlists]])")
    if "allowlist" in raw:
        found = [*found, raw["allowlist"]]
    return tuple(_allowlist(a, f"{where} allowlist {i + 1}") for i, a in enumerate(found))


def parse(data: bytes, source: str) -> Catalogue:
    """Read a catalogue in gitleaks' schema; raise :class:`CatalogueError` naming what to fix."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{source}: not a valid TOML file ({exc}); fix its syntax") from exc
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise CatalogueError(f"{source}: unknown top-level key(s) {sorted(unknown)} (\"extend\" is not supported: "
                             f"list the rules themselves); the keys are {sorted(_TOP_KEYS)}")
    out = Catalogue(digest=hashlib.sha256(data).hexdigest())
    glob = doc.get("allowlists", [])
    if "allowlist" in doc:
        glob = [*glob, doc["allowlist"]]
    out.allowlists = [_allowlist(a, f"{source}: global allowlist") for a in glob]
    rules = doc.get("rules", [])
    if not isinstance(rules, list):
        raise CatalogueError(f"{source}: rules must be an array of tables ([[rules]])")
    seen: set[str] = set()
    for n, raw in enumerate(rules, 1):
        if not isinstance(raw, dict):
            raise CatalogueError(f"{source}: rule {n} must be a table ([[rules]])")
        rid = raw.get("id")
        where = f"{source}: rule {rid or n}"
        if not isinstance(rid, str) or not rid or any(c.isspace() or c == "]" for c in rid) or len(rid) > 64:
            raise CatalogueError(f"{where}: needs an id (1-64 characters, no spaces or ']')")
        if rid in seen:
            raise CatalogueError(f"{where}: the id is used twice; give each rule its own id")
        seen.add(rid)
        unknown = set(raw) - _RULE_KEYS
        if unknown:
            raise CatalogueError(f"{where}: unknown key(s) {sorted(unknown)}; the keys are {sorted(_RULE_KEYS)}")
        regex = raw.get("regex")
        if regex is None:
            if "path" in raw:
                out.skipped[rid] = "a file-name rule (path only, no regex): a text has no file name to match"
                continue
            raise CatalogueError(f"{where}: needs a regex")
        if not isinstance(regex, str) or not regex:
            raise CatalogueError(f"{where}: regex must be a non-empty string")
        group = raw.get("secretGroup", 0)
        entropy = raw.get("entropy", 0.0)
        if not isinstance(group, int) or isinstance(group, bool) or group < 0:
            raise CatalogueError(f"{where}: secretGroup must be a whole number >= 0")
        if not isinstance(entropy, int | float) or isinstance(entropy, bool) or entropy < 0:
            raise CatalogueError(f"{where}: entropy must be a number >= 0 (bits per character)")
        keywords = tuple(k.lower() for k in _strings(raw.get("keywords", []), where, "keywords") if k)
        out.rules.append(Rule(rid, regex, keywords, group, float(entropy), _rule_allowlists(raw, where),
                              str(raw.get("description", "")), source, str(raw.get("path", ""))))
    return out


def load(path: Path) -> Catalogue:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogueError(f"{path}: cannot read the rule file ({exc.strerror or exc}); fix the path in "
                             f"redaction.ruleFiles or the file's permissions") from exc
    return parse(data, str(path))


def builtin() -> Catalogue:
    """gitleaks' default catalogue as shipped."""
    return load(GITLEAKS)
