"""Recall of redaction against an independent catalogue: gitleaks' default rules.

For every rule of gitleaks' ``config/gitleaks.toml`` (a frozen copy in eval/catalogue/, so the measurement
does not depend on the catalogue the engine under test ships), strings are generated from the rule's own
regex and kept only when gitleaks itself would report them: the rule's keywords occur, its regex (google-re2,
the RE2 syntax gitleaks uses) matches, the secret (``secretGroup``, else the first non-empty group, else the
match) has more than the rule's entropy, and neither the global nor the rule's allowlists (regexes on
secret/match/line, stopwords, AND/OR conditions, paths) allow it.  Each kept sample is seen two ways:

* **view A**: the line the rule describes, in a small config file the agent reads (a ``Read`` capture);
  the file's name is one the rule's ``path`` accepts when it has one;
* **view B**: the bare secret inside a log line a command prints (a ``Bash`` capture), only where gitleaks'
  own rule still finds that bare token in that line (tokens that name themselves: ``ghp_…``, ``SG.…``);
  rules whose regex needs the context (a keyword, an assignment) have no view B and are listed as such.

The generator (``generate``) walks the regex's parse tree (Python's ``re._parser`` after a translation of the
Go-only syntax: mid-pattern ``(?i)`` becomes a scoped group, ``\\z``, ``[[:alnum:]]``, ``(?<name>``) with a
``random.Random`` seeded by ``SEED`` and the rule id, the same policy for every rule (never tuned per sample):
a branch is chosen uniformly; a repeat takes its minimum one time in three, else a count uniform up to 24
above it; a character class draws from its printable-ASCII members (its other members only when it has no
printable one), case-folded under ``(?i)`` in half the samples; an unescaped dot is itself half the time;
when the line holds none of the rule's keywords, a comment naming the first one stands above it; anchors and boundaries emit nothing (the
gitleaks check decides).  The samples are frozen in eval/catalogue/samples.jsonl, regenerated only on purpose.

Delivery and scoring (``measure``): every sample goes through the real capture hook (plugin/hooks/hooks.json)
to a real daemon over its socket into a real store, as the acceptance harness does.  A sample leaks when its
secret, or any piece of it of at least max(8, half its length) characters, is left anywhere in the store
rows of that capture (content, metadata, source_uri) or the daemon's log.

Run it::

    python -m eval.catalogue_recall generate            # regenerate and compare with the frozen set
    python -m eval.catalogue_recall generate --write    # rewrite eval/catalogue/samples.jsonl (on purpose)
    python -m eval.catalogue_recall measure             # both views through hook -> socket -> daemon
    python -m eval.catalogue_recall measure --view B --rules 'github-*,sendgrid-api-token' -v
    python -m eval.catalogue_recall measure --seed 7      # a held-out set: same generator, fresh samples
    python -m eval.catalogue_recall measure --catalogue memtree_plugins/redaction/catalogue/gitleaks.toml

``measure`` prints recall per view, the rules that leak at least once with an example, and the rules that
could not be sampled (or have no view B) with the reason.  One daemon serves the run; the hook runs once per
sample, one at a time: the full set (about 1,000 samples) takes about 10 s on one core.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import math
import random
import re
import sys
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import re2

EVAL = Path(__file__).resolve().parent
CATALOGUE = EVAL / "catalogue" / "gitleaks.toml"
SAMPLES = EVAL / "catalogue" / "samples.jsonl"
SEED = 20261204
PER_RULE = 3  # samples per rule (view A); view B derives one from each where it applies
ATTEMPTS = 80  # generated candidates per wanted sample before the rule is called unsampleable


# ---- the catalogue, read as gitleaks reads it -------------------------------------------------------

@dataclass
class Allowlist:
    condition: str = "OR"
    target: str = "secret"  # secret | match | line
    regexes: list[Any] = field(default_factory=list)
    stopwords: list[str] = field(default_factory=list)
    paths: list[Any] = field(default_factory=list)

    def path_allowed(self, path: str) -> bool:
        return bool(path) and any(p.search(path) for p in self.paths)


@dataclass
class Rule:
    id: str
    regex: str | None
    compiled: Any
    keywords: list[str]
    secret_group: int
    entropy: float
    path: Any
    allowlists: list[Allowlist]


def _allowlist(raw: dict[str, Any]) -> Allowlist:
    return Allowlist(
        condition=str(raw.get("condition", "OR")).upper(),
        target=raw.get("regexTarget") or "secret",
        regexes=[re2.compile(r) for r in raw.get("regexes", [])],
        stopwords=[s.lower() for s in raw.get("stopwords", [])],
        paths=[re2.compile(p) for p in raw.get("paths", [])],
    )


def load_catalogue(path: Path) -> tuple[list[Rule], list[Allowlist]]:
    """(rules in file order, global allowlists); each list as gitleaks' config loader builds it."""
    data = tomllib.loads(path.read_text())
    global_raw = list(data.get("allowlists", []))
    if data.get("allowlist"):
        global_raw.append(data["allowlist"])
    per_rule: dict[str, list[Allowlist]] = {}
    globals_: list[Allowlist] = []
    for raw in global_raw:
        al = _allowlist(raw)
        for rid in raw.get("targetRules", []):  # an allowlist with targetRules joins those rules' lists
            per_rule.setdefault(rid, []).append(al)
        if not raw.get("targetRules"):
            globals_.append(al)
    rules = []
    for raw in data.get("rules", []):
        own = list(raw.get("allowlists", []))
        if raw.get("allowlist"):
            own.append(raw["allowlist"])
        regex = raw.get("regex")
        rules.append(Rule(
            id=raw["id"], regex=regex, compiled=re2.compile(regex) if regex else None,
            keywords=[k.lower() for k in raw.get("keywords", [])], secret_group=int(raw.get("secretGroup", 0)),
            entropy=float(raw.get("entropy", 0.0)), path=re2.compile(raw["path"]) if raw.get("path") else None,
            allowlists=[_allowlist(a) for a in own] + per_rule.get(raw["id"], []),
        ))
    return rules, globals_


def shannon_entropy(data: str) -> float:
    if not data:
        return 0.0
    n = len(data.encode())  # gitleaks divides rune counts by the byte length
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())


def _finding_allowed(allowlists: list[Allowlist], secret: str, match: str, line: str, path: str) -> str | None:
    """The reason an allowlist lets this finding go, or None (gitleaks' checkFindingAllowed)."""
    for al in allowlists:
        target = {"match": match, "line": line}.get(al.target, secret)
        regex_ok = any(r.search(target) for r in al.regexes) if target else False
        low = secret.lower()
        stop = next((w for w in al.stopwords if w in low), None) if secret else None
        if al.condition == "AND":
            checks = []
            if al.paths:
                checks.append(al.path_allowed(path))
            if al.regexes:
                checks.append(regex_ok)
            if al.stopwords:
                checks.append(stop is not None)
            allowed = bool(checks) and all(checks)
        else:
            allowed = regex_ok or stop is not None
        if allowed:
            return f"stopword {stop!r}" if stop else "allowlist regex"
    return None


def _path_skipped(allowlists: list[Allowlist], path: str) -> bool:
    """gitleaks' checkCommitOrPathAllowed for a file with no commit."""
    for al in allowlists:
        if al.condition == "AND":
            if al.regexes or al.stopwords or not al.paths:
                continue
            if al.path_allowed(path):
                return True
        elif al.path_allowed(path):
            return True
    return False


@dataclass
class Finding:
    match: str
    secret: str


def findings(rule: Rule, text: str, path: str, globals_: list[Allowlist],
             rejected: Counter[str] | None = None) -> list[Finding]:
    """What gitleaks reports for ``rule`` in ``text`` (a file at ``path``, or "" for a command's output).

    ``rejected`` counts why candidate matches were dropped (for the unsampleable reasons)."""
    rejected = rejected if rejected is not None else Counter()
    if rule.compiled is None:
        return []
    if path and (_path_skipped(globals_, path) or _path_skipped(rule.allowlists, path)):
        rejected["path allowlisted"] += 1
        return []
    if rule.path is not None and not (path and rule.path.search(path)):
        rejected["path not accepted by the rule"] += 1
        return []
    low = text.lower()
    if rule.keywords and not any(k in low for k in rule.keywords):
        rejected["no keyword"] += 1
        return []
    out = []
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    for m in rule.compiled.finditer(text):
        if m.end() == m.start():
            continue
        match = m.group(0).strip("\n")
        secret = match
        sub = rule.compiled.search(match)
        groups = sub.groups() if sub else ()
        if groups:
            if rule.secret_group > 0:
                if len(groups) < rule.secret_group:
                    continue
                secret = groups[rule.secret_group - 1] or ""
            else:
                secret = next((g for g in groups if g), secret)
        if rule.entropy and shannon_entropy(secret) <= rule.entropy:
            rejected["entropy at or below the threshold"] += 1
            continue
        first = next(i for i in range(len(lines)) if starts[i + 1] > m.start())
        last = next(i for i in range(len(lines)) if starts[i + 1] > max(m.start(), m.end() - 1))
        line = "\n".join(lines[first:last + 1])
        why = _finding_allowed(globals_, secret, match, line, path) or \
            _finding_allowed(rule.allowlists, secret, match, line, path)
        if why:
            rejected[why] += 1
            continue
        out.append(Finding(match, secret))
    if not out and not rejected:
        rejected["regex does not match"] += 1
    return out


# ---- the generator -----------------------------------------------------------------------------------

class Unsampleable(Exception):
    pass


_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "xdigit": "0-9A-Fa-f", "upper": "A-Z",
          "lower": "a-z", "space": r"\t\n\v\f\r ", "blank": r" \t", "punct": r"!-/:-@\[-`{-~", "word": r"\w",
          "cntrl": r"\x00-\x1f\x7f", "print": r" -~", "graph": r"!-~", "ascii": r"\x00-\x7f"}
_UNICODE = {"L": "a-zA-Z", "Lu": "A-Z", "Ll": "a-z", "N": "0-9", "Nd": "0-9"}


def translate(go: str) -> str:
    """Go RE2 syntax -> Python ``re`` syntax with the same language for generation.

    Mid-pattern flag groups ``(?i)`` become a scoped ``(?i:...)`` up to the end of the enclosing group,
    ``\\z`` becomes ``\\Z``, ``[[:alnum:]]`` and ``\\p{L}`` become ASCII ranges, ``(?<n>`` becomes ``(?P<n>``.
    """
    out: list[str] = []
    closers = [0]  # per open group: scoped flag groups to close with it
    i, n = 0, len(go)
    while i < n:
        c = go[i]
        if c == "\\":
            nxt = go[i + 1:i + 2]
            if nxt == "z":
                out.append(r"\Z")
                i += 2
            elif nxt in ("p", "P"):
                m = re.match(r"\\[pP](\{\^?(\w+)\}|(\w))", go[i:])
                if not m:
                    raise Unsampleable(f"unknown escape at {i}")
                name = m.group(2) or m.group(3)
                if name not in _UNICODE or nxt == "P" or "^" in (m.group(1) or ""):
                    raise Unsampleable(f"unicode class \\{nxt}{{{name}}} not translated")
                out.append(f"[{_UNICODE[name]}]")
                i += len(m.group(0))
            elif nxt == "Q":
                end = go.find(r"\E", i + 2)
                lit = go[i + 2:end if end >= 0 else n]
                out.append(re.escape(lit))
                i = end + 2 if end >= 0 else n
            else:
                out.append(go[i:i + 2])
                i += 2
        elif c == "[":
            j = i + 1
            cls = ["["]
            if go[j:j + 1] == "^":
                cls.append("^")
                j += 1
            if go[j:j + 1] == "]":
                cls.append(r"\]")
                j += 1
            while j < n and go[j] != "]":
                if go[j] == "\\":
                    esc = go[j:j + 2]
                    if esc[1:] in ("p", "P"):
                        m = re.match(r"\\[pP](\{(\w+)\}|(\w))", go[j:])
                        name = m.group(2) or m.group(3) if m else ""
                        if not m or name not in _UNICODE or esc[1] == "P":
                            raise Unsampleable(f"unicode class {esc} not translated")
                        cls.append(_UNICODE[name])
                        j += len(m.group(0))
                        continue
                    cls.append(esc)
                    j += 2
                elif go.startswith("[:", j):
                    end = go.find(":]", j)
                    name = go[j + 2:end]
                    if name not in _POSIX:
                        raise Unsampleable(f"POSIX class [:{name}:] not translated")
                    cls.append(_POSIX[name])
                    j = end + 2
                elif go[j] == "[":
                    cls.append(r"\[")
                    j += 1
                else:
                    cls.append(go[j])
                    j += 1
            cls.append("]")
            out.append("".join(cls))
            i = j + 1
        elif c == "(":
            m = re.match(r"\(\?([a-zA-Z-]+)\)", go[i:])
            if m and i > 0:
                out.append(f"(?{m.group(1)}:")
                closers[-1] += 1
                i += len(m.group(0))
                continue
            if go.startswith("(?<", i) and not go.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                i += 3
            else:
                out.append("(")
                i += 1
            closers.append(0)
        elif c == ")":
            out.append(")" * closers.pop())
            out.append(")")
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * closers[0])
    return "".join(out)


def parse(go: str) -> Any:
    import warnings
    from re import _parser as sre_parse  # type: ignore[attr-defined]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return sre_parse.parse(translate(go))
        except re.error as exc:
            raise Unsampleable(f"regex does not parse after translation: {exc}") from None


PRINTABLE = [chr(c) for c in range(32, 127)]
ASCII = [chr(c) for c in range(0, 128)]
MAX_EXTRA = 24


class Generator:
    def __init__(self, rng: random.Random, fold: bool) -> None:
        from re import _constants as C  # type: ignore[attr-defined]

        self.C = C
        self.rng = rng
        self.fold = fold

    def generate(self, parsed: Any) -> str:
        ignore = bool(parsed.state.flags & self.C.SRE_FLAG_IGNORECASE)
        return "".join(self._seq(parsed, ignore))

    def _seq(self, items: Any, ignore: bool) -> list[str]:
        out: list[str] = []
        for op, av in items:
            out.extend(self._one(op, av, ignore))
        return out

    def _class_members(self, items: list[tuple[Any, Any]], ignore: bool) -> list[str]:
        C = self.C
        negate = bool(items) and items[0][0] is C.NEGATE

        def member(ch: str) -> bool:
            o = ord(ch)
            for op, av in items:
                if op is C.LITERAL and o == av:
                    return True
                if op is C.RANGE and av[0] <= o <= av[1]:
                    return True
                if op is C.CATEGORY:
                    cat = {C.CATEGORY_DIGIT: ch.isdigit(), C.CATEGORY_NOT_DIGIT: not ch.isdigit(),
                           C.CATEGORY_SPACE: ch in " \t\n\r\f\v", C.CATEGORY_NOT_SPACE: ch not in " \t\n\r\f\v",
                           C.CATEGORY_WORD: ch.isalnum() or ch == "_",
                           C.CATEGORY_NOT_WORD: not (ch.isalnum() or ch == "_")}.get(av)
                    if cat is None:
                        raise Unsampleable(f"category {av} not supported")
                    if cat:
                        return True
            return False

        def test(ch: str) -> bool:
            hit = member(ch) or (ignore and self.fold and ch.isalpha() and member(ch.swapcase()))
            return hit != negate

        for universe in (PRINTABLE, ASCII):
            chars = [ch for ch in universe if test(ch)]
            if chars:
                return chars
        raise Unsampleable("a character class with no ASCII member")

    def _one(self, op: Any, av: Any, ignore: bool) -> list[str]:
        C, rng = self.C, self.rng
        if op is C.LITERAL:
            return [chr(av)]
        if op is C.NOT_LITERAL:
            return [rng.choice([ch for ch in PRINTABLE if ord(ch) != av])]
        if op is C.ANY:  # half the time the dot stands for itself (an unescaped dot in a host name)
            return ["." if rng.random() < 0.5 else rng.choice(PRINTABLE)]
        if op is C.IN:
            return [rng.choice(self._class_members(av, ignore))]
        if op is C.BRANCH:
            return self._seq(rng.choice(av[1]), ignore)
        if op is C.SUBPATTERN:
            _group, add, delete, sub = av
            if add & C.SRE_FLAG_IGNORECASE:
                ignore = True
            if delete & C.SRE_FLAG_IGNORECASE:
                ignore = False
            return self._seq(sub, ignore)
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = min(hi, lo + MAX_EXTRA)
            count = lo if rng.random() < 1 / 3 else rng.randint(lo, hi)
            out: list[str] = []
            for _ in range(count):
                out.extend(self._seq(sub, ignore))
            return out
        if op is C.AT:
            return []
        if op is getattr(C, "ATOMIC_GROUP", None):
            return self._seq(av, ignore)
        raise Unsampleable(f"{op} is not RE2 syntax")


# ---- samples: the two views ---------------------------------------------------------------------------

@dataclass
class Sample:
    rule: str
    view: str  # "A" (a config file the agent reads) or "B" (a log line a command prints)
    text: str  # the file's content (A) or the command's stdout (B)
    secrets: list[str]
    path: str = ""  # A: the file's path relative to the project root
    command: str = ""  # B: the command that printed it

    def to_json(self) -> str:
        d = {"rule": self.rule, "view": self.view, "secrets": self.secrets}
        if self.path:
            d["path"] = self.path
        if self.command:
            d["command"] = self.command
        d["text"] = self.text
        return json.dumps(d)


# Ordinary lines around the described line: no secret keyword of any rule in them.
_CONFIG_ABOVE = ("# deployment settings", "region = eu-west-1", "replicas = 3")
_CONFIG_BELOW = ("retries = 5", "")
# Common config file names, the first one a rule's ``path`` accepts is used (none: settings.conf).
_FILE_NAMES = ("config/settings.conf", "config/settings.yaml", "infra/main.tf", "nuget.config", "src/config.php",
               "config/settings.json", "config/app.properties")
# Log lines a command prints with a bare value in them: neutral words, no assignment, no secret keyword.
_LOG_LINES = (
    ("./run-worker", "2026-12-04T{t} INFO worker-3 loaded {s} from the cache"),
    ("make deploy", "[{t}] step 4/7: uploading {s} (312 kB)"),
    ("journalctl -u sync -n 20", "Dec 04 {t} host sync[811]: received {s}"),
    ("python manage.py check", "{s}"),
)


def _file_name(rule: Rule) -> str:
    if rule.path is None:
        return _FILE_NAMES[0]
    for name in _FILE_NAMES:
        if rule.path.search(name):
            return name
    raise Unsampleable("no common config file name matches the rule's path")


def _rng(seed: int, rule_id: str, what: str) -> random.Random:
    return random.Random(f"{seed}:{rule_id}:{what}")


def sample_rule(rule: Rule, globals_: list[Allowlist], seed: int = SEED,
                per_rule: int = PER_RULE) -> tuple[list[Sample], str | None, str | None]:
    """(samples, why the rule is unsampleable or None, why it has no view B or None)."""
    if rule.compiled is None:
        return [], "no regex: a rule on file paths only (a file name is no text to redact)", None
    try:
        parsed = parse(rule.regex or "")
        path = _file_name(rule)
    except Unsampleable as exc:
        return [], str(exc), None
    rng = _rng(seed, rule.id, "generate")
    log_rng = _rng(seed, rule.id, "log")
    samples: list[Sample] = []
    b_rejected: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    seen: set[str] = set()
    attempts = 0
    while len([s for s in samples if s.view == "A"]) < per_rule and attempts < ATTEMPTS * per_rule:
        attempts += 1
        try:
            line = Generator(rng, fold=rng.random() < 0.5).generate(parsed)
        except Unsampleable as exc:
            return [], str(exc), None
        if line in seen:
            continue
        seen.add(line)
        above = _CONFIG_ABOVE
        if rule.keywords and not any(k in line.lower() for k in rule.keywords):
            above = (*above, f"# {rule.keywords[0]}")  # the service named beside the line, as gitleaks needs
        text = "\n".join((*above, line, *_CONFIG_BELOW))
        found = findings(rule, text, path, globals_, rejected)
        if not found:  # a regex anchored at the text's start: the line alone is the file
            text = line + "\n"
            found = findings(rule, text, path, globals_, Counter())
        secrets = sorted({f.secret for f in found if f.secret})
        if not secrets:
            continue
        samples.append(Sample(rule.id, "A", text, secrets, path=path))
        # view B: the bare secret in a log line, where gitleaks' rule still finds it
        secret = found[0].secret
        command, template = log_rng.choice(_LOG_LINES)
        t = f"{log_rng.randrange(24):02d}:{log_rng.randrange(60):02d}:{log_rng.randrange(60):02d}"
        out = template.format(t=t, s=secret) + "\n"
        if any(f.secret == secret for f in findings(rule, out, "", globals_, b_rejected)):
            samples.append(Sample(rule.id, "B", out, [secret], command=command))
    why = None
    if not samples:
        top = ", ".join(f"{k} x{v}" for k, v in rejected.most_common(2)) or "no candidate"
        why = f"no generated string passes gitleaks' own checks in {attempts} tries ({top})"
    no_b = None
    if samples and not any(s.view == "B" for s in samples):
        top = ", ".join(f"{k} x{v}" for k, v in b_rejected.most_common(2))
        no_b = f"the bare token is not found by the rule alone ({top})"
    return samples, why, no_b


def catalogue_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def generate(catalogue: Path = CATALOGUE, seed: int = SEED, per_rule: int = PER_RULE,
             only: list[str] | None = None) -> tuple[dict[str, Any], list[Sample]]:
    rules, globals_ = load_catalogue(catalogue)
    header: dict[str, Any] = {"seed": seed, "per_rule": per_rule, "catalogue": catalogue.name,
                              "catalogue_sha256": catalogue_hash(catalogue), "rules": len(rules),
                              "unsampleable": {}, "no_view_b": {},
                              # re._parser's trees (so the draws) may differ between Python versions
                              "python": "{}.{}".format(*sys.version_info[:2])}
    samples: list[Sample] = []
    for rule in rules:
        if only and not any(fnmatch.fnmatch(rule.id, pat) for pat in only):
            continue
        got, why, no_b = sample_rule(rule, globals_, seed, per_rule)
        samples.extend(got)
        if why:
            header["unsampleable"][rule.id] = why
        if no_b:
            header["no_view_b"][rule.id] = no_b
    return header, samples


def write_samples(header: dict[str, Any], samples: list[Sample], path: Path = SAMPLES) -> None:
    lines = [json.dumps(header, sort_keys=True)] + [s.to_json() for s in samples]
    path.write_text("\n".join(lines) + "\n")


def read_samples(path: Path = SAMPLES) -> tuple[dict[str, Any], list[Sample]]:
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    samples = [Sample(**json.loads(ln)) for ln in lines[1:] if ln.strip()]
    return header, samples


# ---- delivery: the real hook -> socket -> daemon -> store ---------------------------------------------

REPO = EVAL.parent
MEMTREE = str(Path(sys.executable).parent / "memtree")


def _hook_command() -> list[str]:
    hooks = json.loads((REPO / "plugin" / "hooks" / "hooks.json").read_text())
    for entry in hooks["hooks"]["PostToolUse"]:
        for h in entry["hooks"]:
            if h.get("async"):
                return ["/bin/sh", "-c", h["command"]]
    raise LookupError("no async PostToolUse capture hook in plugin/hooks/hooks.json")


def _payload(sample: Sample, n: int, root: Path) -> tuple[dict[str, Any], Path | None]:
    common = {"session_id": "catalogue-recall", "transcript_path": "/dev/null", "cwd": str(root),
              "permission_mode": "default", "hook_event_name": "PostToolUse",
              "tool_use_id": f"toolu_cat_{n:05d}", "duration_ms": 3}
    if sample.view == "A":
        # a real file in the project, one directory per sample so no read replaces another
        file = root / f"s{n:05d}" / sample.path
        lines = sample.text.count("\n") + (0 if sample.text.endswith("\n") else 1)
        return {**common, "tool_name": "Read", "tool_input": {"file_path": str(file)},
                "tool_response": {"type": "text", "file": {"filePath": str(file), "content": sample.text,
                                                           "numLines": lines, "startLine": 1,
                                                           "totalLines": lines}}}, file
    return {**common, "tool_name": "Bash", "tool_input": {"command": sample.command, "description": "run"},
            "tool_response": {"stdout": sample.text, "stderr": "", "interrupted": False,
                              "isImage": False}}, None


@dataclass
class Delivery:
    stored_ids: set[str]
    texts: list[str]  # every text the store and the daemon's log hold
    errors: list[str]


def _store_texts(store: Path) -> tuple[set[str], list[str]]:
    from memtree_core.store.sqlite_route import choose_route

    conn = choose_route().module.connect(str(store), timeout=30)
    try:
        texts: list[str] = []
        ids: set[str] = set()
        for content, meta, uri in conn.execute("SELECT content, metadata, source_uri FROM nodes"):
            texts.append(content or "")
            texts.append(uri or "")
            texts.append(meta or "")
            try:  # metadata's strings unescaped too: a JSON escape must not hide a leak
                texts.append(json.dumps(json.loads(meta or "{}"), ensure_ascii=False).replace('\\"', '"'))
                ids.add(str(json.loads(meta or "{}").get("tool_use_id", "")))
            except ValueError:
                pass
        for (reason,) in conn.execute("SELECT reason FROM transitions"):
            texts.append(reason or "")
    finally:
        conn.close()
    return ids, texts


SENDERS = 4  # hooks run at once


def deliver(samples: list[Sample], tmp: Path, timeout_s: float = 180.0, progress: bool = False) -> Delivery:
    """Every sample through the capture hook into a fresh daemon's store; then what the store holds."""
    import os
    import subprocess
    import time

    from memtree_core.daemon.project import identify
    from memtree_core.forwarder.paths import ProjectPaths

    root = tmp / "project"
    root.mkdir(parents=True)
    (root / "README.md").write_text("A project whose config files the agent reads.\n")
    home = tmp / "home"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(tmp)),
           "MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_DAEMON__IDLE_TIMEOUT_S": "3600"}
    paths = ProjectPaths.for_hash(home, identify(root).hash)
    errors: list[str] = []
    with open(tmp / "daemon.stderr", "wb") as err:
        daemon = subprocess.Popen([MEMTREE, "daemon", "--project", str(root)], env=env, cwd=root,
                                  stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    try:
        link = home / "roots" / str(root).lstrip("/") / ".ingest.sock"
        t0 = time.monotonic()
        while not (link.exists() and paths.ingest_socket.exists()):
            if daemon.poll() is not None or time.monotonic() - t0 > 60:
                raise RuntimeError(f"the daemon did not start: {(tmp / 'daemon.stderr').read_text()[-500:]}")
            time.sleep(0.1)
        hook_env = {**env, "CLAUDE_PROJECT_DIR": str(root), "CLAUDE_PLUGIN_ROOT": str(REPO)}
        cmd = _hook_command()
        payloads = []
        for n, sample in enumerate(samples):
            payload, file = _payload(sample, n, root)
            if file is not None:
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_text(sample.text)
            payloads.append(json.dumps(payload).encode())

        def send(n: int) -> None:
            out = subprocess.run(cmd, input=payloads[n], env=hook_env, capture_output=True, timeout=30)
            if out.returncode != 0 or out.stdout:
                errors.append(f"hook for sample {n} ({samples[n].rule}): exit {out.returncode} {out.stdout[:80]!r}")

        # A few hooks at once, as an agent's parallel tool calls send them (the daemon takes each on its own
        # connection); the order of the captures does not matter, each has its own id.
        with ThreadPoolExecutor(SENDERS) as pool:
            for n, _ in enumerate(pool.map(send, range(len(samples))), 1):
                if progress and n % 100 == 0:
                    print(f"  ... {n}/{len(samples)} sent", file=sys.stderr, flush=True)
        want = {f"toolu_cat_{n:05d}" for n in range(len(samples))}
        t0 = time.monotonic()
        ids: set[str] = set()
        while time.monotonic() - t0 < timeout_s:
            ids, _ = _store_texts(paths.store) if paths.store.exists() else (set(), [])
            if want <= ids:
                break
            time.sleep(0.5)
    finally:
        subprocess.run([MEMTREE, "stop", "--project", str(root)], env=env, capture_output=True, timeout=60)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
            errors.append("the daemon did not stop within 30 s of `memtree stop`; killed")
    ids, texts = _store_texts(paths.store)
    for extra in (paths.log, home / "hook-drops.log", tmp / "daemon.stderr"):
        if extra.exists():
            texts.append(extra.read_text(errors="replace"))
    for raw in (paths.store, Path(f"{paths.store}-wal")):  # pages on disk, free ones too
        if raw.exists():
            texts.append(raw.read_bytes().decode("latin-1"))
    drops = home / "hook-drops.log"
    if drops.exists():
        errors.append(f"hook drops: {drops.read_text()[-300:]}")
    return Delivery(ids, texts, errors)


def leaked(samples: list[Sample], texts: list[str]) -> dict[int, str]:
    """Sample index -> the piece of its secret found: the secret, or any piece of at least
    max(8, half its length) characters, anywhere in ``texts`` (one Aho-Corasick pass).  A piece that is
    mostly blanks (a secret group spanning ``key:`` and the padding before its value) tells nothing of the
    secret and is not looked for: 19 spaces are in any store."""
    import ahocorasick_rs

    pieces: dict[str, set[int]] = {}
    for i, s in enumerate(samples):
        for secret in s.secrets:
            size = min(len(secret), max(8, (len(secret) + 1) // 2))
            for k in range(len(secret) - size + 1):
                piece = secret[k:k + size]
                if 2 * sum(not c.isspace() for c in piece) >= len(piece):
                    pieces.setdefault(piece, set()).add(i)
    if not pieces:
        return {}
    patterns = list(pieces)
    ac = ahocorasick_rs.AhoCorasick(patterns)
    out: dict[int, str] = {}
    for text in texts:
        for idx, _start, _end in ac.find_matches_as_indexes(text, overlapping=True):
            for i in pieces[patterns[idx]]:
                out.setdefault(i, patterns[idx])
    return out


def measure(samples: list[Sample], tmp: Path, progress: bool = False) -> dict[str, Any]:
    d = deliver(samples, tmp, progress=progress)
    leaks = leaked(samples, d.texts)
    result: dict[str, Any] = {"views": {}, "leaking_rules": {}, "not_stored": [], "errors": d.errors}
    for view in ("A", "B"):
        idx = [i for i, s in enumerate(samples) if s.view == view]
        stored = [i for i in idx if f"toolu_cat_{i:05d}" in d.stored_ids]
        missed = [i for i in stored if i in leaks]
        result["views"][view] = {"samples": len(idx), "stored": len(stored), "leaked": len(missed),
                                 "recall": (1 - len(missed) / len(stored)) if stored else None,
                                 "rules": len({samples[i].rule for i in idx}),
                                 "rules_leaking": len({samples[i].rule for i in missed})}
        result["not_stored"] += [f"{view}:{samples[i].rule}" for i in idx if i not in stored]
    for i, piece in sorted(leaks.items()):
        s = samples[i]
        if f"toolu_cat_{i:05d}" not in d.stored_ids:
            continue
        entry = result["leaking_rules"].setdefault(s.rule, {"A": 0, "B": 0, "example": ""})
        entry[s.view] += 1
        if not entry["example"]:
            line = next((ln for ln in s.text.splitlines() if piece in ln), s.text.strip())
            entry["example"] = f"{s.view}: {line[:100]}"
    return result


# ---- command line --------------------------------------------------------------------------------------

def _summary(header: dict[str, Any], samples: list[Sample]) -> str:
    views = Counter(s.view for s in samples)
    rules = {s.rule for s in samples}
    return (f"{header['rules']} rules: {len(rules)} sampled, {len(header['unsampleable'])} unsampleable, "
            f"{len(header['no_view_b'])} with no view B; {views['A']} samples in view A, {views['B']} in view B "
            f"(seed {header['seed']}, catalogue {header['catalogue_sha256']})")


def cmd_generate(args: argparse.Namespace) -> int:
    header, samples = generate(Path(args.catalogue), args.seed, args.per_rule, args.rules)
    print(_summary(header, samples))
    for rid, why in header["unsampleable"].items():
        print(f"  unsampleable {rid}: {why}")
    if args.write:
        write_samples(header, samples, Path(args.samples))
        print(f"wrote {args.samples}")
        return 0
    if Path(args.samples).exists() and not args.rules:
        frozen_header, frozen = read_samples(Path(args.samples))
        same = [s.to_json() for s in frozen] == [s.to_json() for s in samples]
        if not same and frozen_header.get("python") != header["python"]:
            print(f"(the frozen set was made on Python {frozen_header.get('python')}, this is {header['python']})")
        print(f"frozen set {args.samples}: {'identical' if same else 'DIFFERS (generator, seed or catalogue changed)'}")
        return 0 if same else 1
    return 0



RECALL_FLOORS = {"A": 0.95, "B": 0.99}


def catalogue_gates(run: Any, gate: bool = False) -> None:
    """For ``python -m eval``: the frozen samples through hook -> socket -> daemon; recall per view against
    its floor (gates with ``gate``, reported otherwise), the leaking rules, the unsampleable ones."""
    import shutil
    import tempfile

    section = "redaction"
    header, samples = read_samples()
    tmp = Path(tempfile.mkdtemp(prefix="memtree-catalogue-"))
    try:
        result = measure(samples, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for view, floor in RECALL_FLOORS.items():
        v = result["views"][view]
        recall = v["recall"] if v["recall"] is not None else 0.0
        detail = (f"{recall:.3f} of {v['stored']} samples of {v['rules']} rules (floor {floor}); "
                  f"{v['rules_leaking']} rules leak")
        name = f"gitleaks catalogue view {view}: recall"
        if gate:
            run.gate(section, name, recall >= floor and v["stored"] == v["samples"], detail)
        else:
            run.report(section, name, detail)
    leaking = sorted(result["leaking_rules"])
    run.report(section, "  catalogue rules leaking", f"{len(leaking)}: {', '.join(leaking[:12])}"
               + (" ..." if len(leaking) > 12 else "") + "  (python -m eval.catalogue_recall measure -v)")
    run.report(section, "  catalogue rules unsampleable",
               "; ".join(f"{k}: {v}" for k, v in header["unsampleable"].items()) or "none")


def _select(args: argparse.Namespace) -> tuple[dict[str, Any], list[Sample]]:
    catalogue = Path(args.catalogue)
    if catalogue.resolve() != CATALOGUE.resolve() or args.seed != SEED:
        header, samples = generate(catalogue, args.seed, PER_RULE)  # another catalogue: its own samples
    else:
        header, samples = read_samples(Path(args.samples))
    if args.view:
        samples = [s for s in samples if s.view == args.view]
    if args.rules:
        samples = [s for s in samples if any(fnmatch.fnmatch(s.rule, pat) for pat in args.rules)]
    if args.every > 1:
        samples = samples[::args.every]
    return header, samples


def cmd_measure(args: argparse.Namespace) -> int:
    import shutil
    import tempfile
    import time

    header, samples = _select(args)
    print(_summary(header, samples), flush=True)
    base = args.tmp or None
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="memtree-catalogue-", dir=base))
    t0 = time.perf_counter()
    try:
        result = measure(samples, tmp, progress=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"delivered through the capture hook to a real daemon in {time.perf_counter() - t0:.0f} s"
          + (f" (kept {tmp})" if args.keep else ""))
    for view, v in result["views"].items():
        if not v["samples"]:
            continue
        recall = "n/a" if v["recall"] is None else f"{v['recall']:.3f}"
        print(f"view {view}: recall {recall} ({v['leaked']} of {v['stored']} stored samples leaked; "
              f"{v['rules_leaking']} of {v['rules']} rules leak at least once)")
    rules = result["leaking_rules"]
    print(f"rules leaking at least once: {len(rules)}")
    for rid, e in sorted(rules.items(), key=lambda kv: (-(kv[1]["A"] + kv[1]["B"]), kv[0])):
        if args.verbose or len(rules) <= 40:
            print(f"  {rid}: A x{e['A']} B x{e['B']}  e.g. {e['example']}")
    if len(rules) > 40 and not args.verbose:
        print(f"  ({', '.join(sorted(rules))}; -v for examples)")
    if result["not_stored"]:
        print(f"NOT STORED (dropped, so not scored): {len(result['not_stored'])}: {result['not_stored'][:8]}")
    for e in result["errors"][:5]:
        print(f"error: {e}")
    print(f"unsampleable rules: {len(header['unsampleable'])}")
    for rid, why in header["unsampleable"].items():
        print(f"  {rid}: {why}")
    print(f"rules with no view B: {len(header['no_view_b'])}")
    if args.verbose:
        for rid, why in header["no_view_b"].items():
            print(f"  {rid}: {why}")
    if args.json:
        Path(args.json).write_text(json.dumps({"header": header, **result}, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.catalogue_recall", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="generate the samples from the catalogue (compare with or --write the frozen set)")
    g.add_argument("--catalogue", default=str(CATALOGUE), help="gitleaks.toml to sample (default: eval's frozen copy)")
    g.add_argument("--samples", default=str(SAMPLES), help="the frozen sample file")
    g.add_argument("--seed", type=int, default=SEED)
    g.add_argument("--per-rule", type=int, default=PER_RULE)
    g.add_argument("--rules", type=lambda s: s.split(","), help="comma-separated rule ids or globs")
    g.add_argument("--write", action="store_true", help="rewrite the frozen sample file")
    g.set_defaults(func=cmd_generate)
    m = sub.add_parser("measure", help="send the samples through hook -> socket -> daemon and score the store")
    m.add_argument("--catalogue", default=str(CATALOGUE),
                   help="gitleaks.toml to sample (default: eval's frozen copy, whose samples are frozen)")
    m.add_argument("--samples", default=str(SAMPLES), help="the frozen sample file")
    m.add_argument("--seed", type=int, default=SEED, help="another seed: samples generated afresh")
    m.add_argument("--view", choices=("A", "B"), help="one view only")
    m.add_argument("--rules", type=lambda s: s.split(","), help="comma-separated rule ids or globs")
    m.add_argument("--every", type=int, default=1, help="every Nth sample only (a quick look)")
    m.add_argument("--tmp", help="where the run's project and store go (default: $TMPDIR)")
    m.add_argument("--keep", action="store_true", help="keep the run's directory (store, daemon log)")
    m.add_argument("--json", help="write the full result here")
    m.add_argument("-v", "--verbose", action="store_true", help="every leaking rule with an example; why no view B")
    m.set_defaults(func=cmd_measure)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
