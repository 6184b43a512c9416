"""Environment dumps, recognised by what the output is rather than by the command that printed it.

The command denylist (:mod:`memtree_plugins.redaction.denylist`) stops ``env``, ``printenv`` and the like before they
run, but a shell offers endless other spellings (``sh -c env``, ``x=env; $x``, an awk or python loop,
``cat /proc/$PPID/environ``).  Every one of them prints the same thing: the names of the running
process's environment variables, each with a value.  This rule looks for that.

A *dump* is a run of key/value pairs, one after another, in any of the shapes real tools print:

* ``NAME=value`` lines (``env``, ``printenv``, ``set``), also behind ``export``/``declare -x``/
  ``typeset -x``/``setenv``/``set -gx``, a line-number gutter (``cat -n``, Read's ``12→``) or a
  ``grep -n`` prefix (``path:12:``);
* ``NAME value`` lines (a loop printing ``k, v``);
* NUL-separated ``NAME=value`` blocks (``/proc/*/environ``);
* ``environ({'NAME': 'value', ...})`` (``repr(os.environ)``), ``[('NAME', 'value'), ...]``, dicts, JSON objects, ``{ NAME: 'v' }``
  (node's ``process.env``), ``"NAME" => "v"``, JSON arrays of ``"NAME=value"`` strings (docker's ``Env``).

A run is a dump when at least :data:`MIN_MATCHING` of its names are this process's variables *with
this process's values* (the output reproduces our own environment), or when it is a dump of another
environment (a container's, a CI job's): at least :data:`MIN_FOREIGN_RUN` pairs, :data:`MIN_KNOWN` of
them named like this process's variables or the common ones (``PATH``, ``HOME``, ``HOSTNAME``...),
and values expanded (a script's ``export PATH="$HOME/bin:$PATH"`` holds references, a dump never does).  Every
value in a dump is redacted, whatever its name; names are kept.

Apart from dumps, the values of this process's own secret-named variables (``PGPASSWORD``,
``SENTRY_DSN``, ``*_TOKEN``, URLs with a password...) are redacted wherever they occur, so ``echo
"$PGPASSWORD"`` or ``env | grep DSN`` print nothing worth keeping either.

Cost: one Aho-Corasick pass over the text for the process's variable names (the automaton is rebuilt
only when the environment's names change) and one substring search per secret value; the pair regex
runs only when three or more distinct names occur.
"""

from __future__ import annotations

import base64
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter

from memtree_plugins.redaction import scan
from memtree_plugins.redaction.engine import is_number_or_flag, is_pathlike, placeholder

try:
    import ahocorasick_rs
except ImportError:  # declared in pyproject; without it names are searched one by one
    ahocorasick_rs = None

MIN_MATCHING = 3  # names whose value equals this process's own: the output is our environment
MIN_KNOWN = 4  # names of this process's variables (or common ones) in a dump of another environment,
MIN_FOREIGN_RUN = 6  # in a run this long at least (a CI file's short `env:` block is not a dump),
KNOWN_SHARE = 0.3  # making up this share of its names, with expanded values
MAX_VALUE = 8192  # characters of one value looked at (a longer one is cut there, then redacted)
MIN_SECRET_VALUE = 8  # shorter values of secret-named variables are not searched for everywhere

TAG_DUMP = "env-dump"
TAG_VALUE = "env-value"

# Names a dump from another environment (a container, a CI job) still shares with ours.
COMMON_NAMES = frozenset("""
PATH HOME USER LOGNAME SHELL PWD OLDPWD LANG LANGUAGE TERM HOSTNAME SHLVL TMPDIR TZ MAIL EDITOR VISUAL
PAGER LC_ALL LC_CTYPE LC_MESSAGES XDG_RUNTIME_DIR XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME
XDG_SESSION_ID XDG_SESSION_TYPE DISPLAY SSH_CONNECTION SSH_CLIENT SSH_TTY SSH_AUTH_SOCK COLORTERM
TERM_PROGRAM HISTFILE HISTSIZE LS_COLORS MOTD_SHOWN DBUS_SESSION_BUS_ADDRESS
""".split())

_SECRET_NAME = re.compile(
    r"(?i)pass|secret|token|credential|private|auth|dsn|api_?key|access_?key|(?:^|_)key(?:_|$)|session|"
    r"cookie|signature|signing|bearer|jwt|webhook|salt|cert|license")
_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/\s@]*:[^/\s@]+@", re.I)

# One key/value pair.  Keys start a line (after indentation, a gutter or a shell keyword), follow a NUL,
# or follow a dict/JSON delimiter.  The value is a quoted string, or the rest of the line / NUL segment.
_PAIR = re.compile(
    r"(?:^|(?<=[\x00{,(]))[ \t]*"
    r"(?P<gutter>\d{1,9}(?:→|\t|:)[ \t]?|[^\s:=\x00]{1,512}?[:-]\d{1,9}[:-]|[^\s:=\x00'\"{}]{1,512}?:(?=[A-Za-z_]))?"
    r"(?P<shell>(?:export|declare|typeset|readonly|local|setenv|set)(?:[ \t]+-[-\w]+)*[ \t]+)?"
    r"(?P<q>[\"'])?(?P<name>[A-Za-z_][A-Za-z0-9_]{0,127})(?(q)(?P=q))"
    r"(?P<sep>[ \t]*(?:=>|[=:])[ \t]*|(?(q)[ \t]*,[ \t]*|[^\s\S])|[ \t]+)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.){0,8192}\"|'(?:[^'\\\n]|\\.){0,8192}'|[^\n\x00]{0,8192})",
    re.M)
# One "NAME=value" string of a JSON array (docker inspect's "Env", a Kubernetes env list rendered as strings).
_ARRAY_PAIR = re.compile(r"[ \t]*\"(?P<name>[A-Za-z_][A-Za-z0-9_]{0,127})(?P<sep>=)(?P<value>(?:[^\"\\\n]|\\.){0,8192})\"")
# What may stand between two pairs of one dump: separators, and the opening of a dict or environ(...).
_SEPARATOR_GAP = re.compile(r"[\s,;\x00{}()\[\]]*(?:environ\(|process\.env|ENV)?[\s,;\x00{}()\[\]]*")
_REFERENCE = re.compile(r"\$\{?[A-Za-z_]|\$\{\{|\$\(|`|%[A-Za-z_]+%")


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v.rstrip(",").strip()


def looks_secret(name: str, value: str) -> bool:
    """A variable whose value is worth finding anywhere: a secret-like name with a password-like value,
    or a URL with a password in it."""
    v = value.strip()
    if _URL_WITH_PASSWORD.match(v):
        return True
    if len(v) < MIN_SECRET_VALUE or not _SECRET_NAME.search(name) or name in ("PWD", "OLDPWD"):
        return False
    if is_pathlike(v) or is_number_or_flag(v) or v.startswith("[REDACTED:"):
        return False
    # Two kinds of character at least, not counting word joiners: "basic-auth" is a setting, not a secret.
    classes = sum(bool(re.search(p, v)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9_.-]"))
    return classes >= 2


@dataclass
class _Names:
    """The process's variable names (plus the common ones), with a fast finder for them."""

    key: frozenset[str]
    # (text, enough): whole-word (name, offset) occurrences; stops at ``enough`` distinct names if given
    find: Callable[[str, int | None], list[tuple[str, int]]]


_names_cache: _Names | None = None


def _names(environ: Mapping[str, str]) -> _Names:
    global _names_cache
    # One-letter names (``_``, ``A``) would match everywhere and say nothing.
    key = frozenset(n for n in environ if len(n) > 1 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)) | COMMON_NAMES
    cached = _names_cache
    if cached is not None and cached.key == key:
        return cached
    ordered = sorted(key)
    if ahocorasick_rs is not None:
        automaton = ahocorasick_rs.AhoCorasick(ordered, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
        gate = scan.DistinctLiterals(ordered)

        def find(text: str, enough: int | None) -> list[tuple[str, int]]:
            found: list[tuple[str, int]] = []
            distinct: set[str] = set()
            if enough is not None and (at_most := gate.count(text)) is not None and at_most < enough:
                return found  # too few names anywhere (one C-speed pass; most text holds one or two)
            matches = automaton.find_matches_as_indexes(text)
            if enough is not None and len(set(map(itemgetter(0), matches))) < enough:
                return found  # too few names even before the word test (counted in C: a line of one name)
            for i, start, end in matches:
                if (start == 0 or not _is_word(text[start - 1])) and (end == len(text) or not _is_word(text[end])):
                    found.append((ordered[i], start))
                    distinct.add(ordered[i])
                    if enough is not None and len(distinct) >= enough:
                        break
            return found
    else:
        def find(text: str, enough: int | None) -> list[tuple[str, int]]:
            return [(n, m.start()) for n in ordered if n in text for m in re.finditer(rf"(?<!\w){n}(?!\w)", text)]
    cached = _names_cache = _Names(key, find)
    return cached


def current_names() -> frozenset[str]:
    """The names this rule looks for now: the live environment's (longer than one letter) and the common ones."""
    return _names(os.environ).key


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


class EnvDumpRule:
    """Redacts every value of an environment dump, and this process's secret values anywhere."""

    name = TAG_DUMP

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ  # None: the live os.environ, read at each call (it can change)
        # What the environment's contents give (its names' finder, its secret values and their base64 forms),
        # kept for the contents they were made from: a capture redacts each of its fields against the same
        # environment, and working them out again cost more than the rule's whole pass over a short field.
        self._made_from: frozenset[tuple[str, str]] | None = None
        self._made: tuple[_Names, list[str]] | None = None

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    def redact(self, text: str) -> tuple[str, int]:
        if not text:
            return text, 0
        env = dict(self.environ)  # os.environ decodes on every lookup; a dump looks up every name
        names, secrets = self._from_environ(env)
        text, dumped = self._redact_dumps(text, env, names)
        text, masked = self._redact_values(text, secrets)
        return text, dumped + masked

    def _from_environ(self, env: dict[str, str]) -> tuple[_Names, list[str]]:
        contents = frozenset(env.items())
        made = self._made
        if made is None or contents != self._made_from:
            values = sorted({v.strip() for n, v in env.items() if looks_secret(n, v)}, key=len, reverse=True)
            made = (_names(env), [form for v in values for form in (v, base64.b64encode(v.encode()).decode())])
            self._made, self._made_from = made, contents
        return made

    # -- dumps -------------------------------------------------------------------------------------------
    def _redact_dumps(self, text: str, env: Mapping[str, str], names: _Names) -> tuple[str, int]:
        enough = min(MIN_MATCHING, MIN_KNOWN)
        if len({n for n, _ in names.find(text, enough)}) < enough:
            return text, 0
        # Pairs with an empty value stay in their run (a dump has them); there is nothing to redact in them.
        pairs = _candidate_pairs(text, [at for _, at in names.find(text, None)])
        edits: list[tuple[int, int, str]] = []
        for run in _runs(text, pairs):
            if _is_dump(run, names.key, env):
                edits += _value_edits(run)
        if not edits:
            return text, 0
        out, last = [], 0
        for start, end, new in sorted(edits):
            if start < last:
                continue  # inside a value already replaced
            out.append(text[last:start])
            out.append(new)
            last = end
        out.append(text[last:])
        return "".join(out), len(edits)

    # -- secret values anywhere ----------------------------------------------------------------------------
    def _redact_values(self, text: str, secrets: list[str]) -> tuple[str, int]:
        """Every occurrence of a secret value (longest first) or of its base64 form."""
        hits = 0
        mark = placeholder(TAG_VALUE)
        for form in secrets:
            n = text.count(form)
            if n:
                text = text.replace(form, mark)
                hits += n
        return text, hits


NEAR_LINES = 16  # lines around a line naming a variable that are parsed for pairs (unknown names in a dump)


def _candidate_pairs(text: str, names_at: list[int]) -> list[re.Match[str]]:
    """The pairs on lines near a known name: one per line (``NAME=value``), or every pair on a line
    that names two or more variables or holds NULs (a dict, a JSON object, an environ block)."""
    starts = [0]
    starts += [m.end() for m in re.finditer("\n", text)]
    per_line: dict[int, int] = {}
    for at in names_at:
        line = bisect_right(starts, at) - 1
        per_line[line] = per_line.get(line, 0) + 1
    wanted: list[int] = []
    for line in sorted(per_line):  # each named line and its neighbours, once, in order
        lo = max(line - NEAR_LINES, wanted[-1] + 1 if wanted else 0)
        wanted.extend(range(lo, min(len(starts), line + NEAR_LINES + 1)))
    pairs: list[re.Match[str]] = []
    for line in wanted:
        lo = starts[line]
        hi = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
        if per_line.get(line, 0) > 1 or "\x00" in text[lo:hi]:
            found = list(_PAIR.finditer(text, lo, hi))
            if '"' in text[lo:hi]:
                found = sorted(found + list(_ARRAY_PAIR.finditer(text, lo, hi)), key=lambda m: m.start())
            pairs += found
        else:
            m = _PAIR.match(text, lo, hi) or _ARRAY_PAIR.match(text, lo, hi)
            if m is not None:
                pairs.append(m)
    return pairs


def _runs(text: str, pairs: list[re.Match[str]]) -> list[list[re.Match[str]]]:
    """Pairs split into runs: consecutive pairs with only separators between them."""
    runs: list[list[re.Match[str]]] = []
    for m in pairs:
        if runs:
            prev = runs[-1][-1]
            gap = text[prev.end():m.start()]
            if m.start() >= prev.end() and _SEPARATOR_GAP.fullmatch(gap):
                runs[-1].append(m)
                continue
        runs.append([m])
    return runs


def _is_dump(run: list[re.Match[str]], known: frozenset[str], env: Mapping[str, str]) -> bool:
    if len(run) < min(MIN_MATCHING, MIN_KNOWN):
        return False
    names = [m.group("name") for m in run]
    matching = {n for n, m in zip(names, run, strict=True)
                if n in env and env[n] and _unquote(m.group("value")) == env[n]}
    if len(matching) >= MIN_MATCHING:
        return True
    distinct_known = {n for n in names if n in known}
    if len(distinct_known) < MIN_KNOWN or len(run) < MIN_FOREIGN_RUN or \
            sum(n in known for n in names) < KNOWN_SHARE * len(names):
        return False
    references = sum(bool(_REFERENCE.search(m.group("value"))) for m in run)
    return references * 5 <= len(run)


def _value_edits(run: list[re.Match[str]]) -> list[tuple[int, int, str]]:
    mark = placeholder(TAG_DUMP)
    edits = []
    for m in run:
        start, end = m.span("value")
        value = m.group("value")
        stripped = value.rstrip()
        end -= len(value) - len(stripped)
        if stripped.endswith(",") and not stripped.startswith(("'", '"')):
            end -= 1  # "NAME: value," in a JSON-ish listing keeps its comma
            stripped = stripped[:-1]
        if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'":
            start, end = start + 1, end - 1
        if end <= start or value.strip().startswith("[REDACTED:") or stripped[1:].startswith("[REDACTED:"):
            continue
        if stripped[:1] in ("{", "[", "("):
            continue  # a nested object or list: its own pairs are parsed (and redacted) one by one
        edits.append((start, end, mark))
    return edits
