"""Commands whose whole capture is dropped: environment dumps, and the regexes a user lists in
``$MEMTREE_HOME/<project-hash>/bash.deny``.  The built-in command policies (``memtree_register_command_policies``)
``env-dump`` and ``bash.deny``; they ship with the redaction plugin, which a repository cannot disable.

Redaction catches secrets by shape; an environment dump is denied outright because it is *all* secrets
by position (any variable may hold one).  What counts as a dump, decided conservatively — a false denial
loses one capture, a false pass can store every credential in the environment:

* ``env`` / ``printenv`` with no program to run: alone, with flags (``env -0``, ``printenv PATH``),
  through ``sudo``/``command``/``exec``/``nice``/``nohup``/``time``, by path (``/usr/bin/env``), anywhere in
  a pipeline or list (``|``, ``&&``, ``||``, ``;``, ``&``, newline) or inside ``$(...)`` / backticks /
  ``( ... )``.  ``env FOO=1 python x.py`` and ``/usr/bin/env python3 script.py`` run a program and pass.
  ``env -u VAR`` / ``env -i`` count as dumps when no program follows.
* ``export`` / ``export -p``, ``declare -x`` / ``declare -p`` / ``typeset -x`` with no assignment and
  ``set`` alone (bash prints every variable, functions too).  ``export FOO=1`` and ``set -e`` pass.
* ``cat /proc/<pid>/environ`` (any reader of a process environment file).

Not denied here (redaction handles their output): ``cat ~/.aws/credentials``, ``gh auth token``,
``kubectl config view --raw`` — their outputs have shapes the rules know, and users often need the
non-secret parts.  Add them to ``bash.deny`` to drop them instead.

``bash.deny``: one Python regex per line, searched (``re.search``) in the whole command; blank lines and
lines starting with ``#`` are ignored.  A line that is not a valid regex is skipped and reported (by
:func:`load_patterns`'s ``errors`` and the logger), never fatal: a typo must not turn capture off.
"""

from __future__ import annotations

import logging
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree_core.context import Context

log = logging.getLogger(__name__)

# Words that run the next word as the command (sudo env, command env, time env...), with their flags
# that take an argument.  Their own flags are skipped; `sudo -u root env` and `command -p env` still dump.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-p", "-C", "-h", "-U", "-r", "-t", "-D", "-R", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "command": frozenset(), "builtin": frozenset(), "exec": frozenset({"-a"}), "nohup": frozenset(),
    "chronic": frozenset(), "nice": frozenset({"-n"}), "time": frozenset({"-f", "-o"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}), "ionice": frozenset({"-c", "-n", "-p"}),
    "xargs": frozenset({"-n", "-I", "-i", "-d", "-E", "-e", "-L", "-l", "-P", "-s", "-a"}),
    "setsid": frozenset(), "unbuffer": frozenset(), "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
}
# Shells whose `-c STRING` is itself a command line to check (`sh -c env`, `bash -c printenv`).
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "su"})
_RECURSION = 8  # sh -c "sh -c '...'" nested deeper than this is denied outright
_ENV_FLAGS_WITH_ARG = frozenset({"-u", "--unset", "-C", "--chdir", "-P"})
_SINGLE_QUOTED = re.compile(r"'[^']*'")
_DOUBLE_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_SUBSHELL_IN_QUOTES = re.compile(r"\$\([^)]*\)|`[^`]*`")
_SEPARATORS = re.compile(r"\|\|?|&&|;|&|\n|\$\(|`|\(|\)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Any path to a process's environ file (/proc/self//environ, /proc/thread-self/environ, /proc/$PPID/...),
# and `environ` read anywhere after a `/proc` in the same command (`cd /proc/self && cat environ`).
_ENVIRON_FILE = re.compile(r"/proc/[^\s;|&]*environ\b|/proc\b[\s\S]*\benviron\b")


@dataclass
class DenyPatterns:
    patterns: list[re.Pattern[str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "bash.deny:3: bad regex 'x(': missing ), ..."


def load_patterns(deny_file: Path) -> list[re.Pattern[str]]:
    """The valid regexes of ``bash.deny`` (bad lines are logged and skipped; see :func:`read_deny_file`)."""
    return read_deny_file(deny_file).patterns


def read_deny_file(deny_file: Path) -> DenyPatterns:
    """Read ``bash.deny``; a missing file is no patterns, a bad line is an error entry, not a failure."""
    out = DenyPatterns()
    try:
        lines = deny_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return out
    except OSError as exc:
        out.errors.append(f"{deny_file}: cannot read ({exc}); fix its permissions")
        return out
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            out.patterns.append(re.compile(line))
        except re.error as exc:
            out.errors.append(f"{deny_file.name}:{number}: bad regex {line!r} skipped ({exc}); "
                              f"fix or remove the line")
    for error in out.errors:
        log.warning("%s", error)
    return out


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=True)
    except ValueError:  # unbalanced quotes: fall back to whitespace, still catches a bare `env`
        return segment.split()


def _strip_wrappers(words: list[str]) -> list[str]:
    i = 0
    while i < len(words):
        w = words[i]
        base = w.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(w):  # FOO=1 env
            i += 1
        elif base in _WRAPPERS:
            with_arg = _WRAPPERS[base]
            i += 1
            while i < len(words) and words[i].startswith("-"):
                flag = words[i]
                i += 2 if flag in with_arg else 1
            if base == "timeout" and i < len(words):
                i += 1  # the duration
        else:
            break
    return words[i:]


def _env_program(args: list[str]) -> list[str]:
    """The program (and its arguments) ``env`` runs, after its flags and assignments."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or _ASSIGNMENT.match(a):
            i += 1
        elif a.startswith("-"):
            i += 2 if a in _ENV_FLAGS_WITH_ARG else 1
        else:
            break
    return args[i:]


def _shell_string(args: list[str]) -> str | None:
    """The command string of ``sh -c STRING`` (flags may be combined: ``-lc``, ``-ec``), or None."""
    for i, a in enumerate(args):
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and i + 1 < len(args):
            return args[i + 1]
        if not a.startswith("-"):
            return None
    return None


def _env_runs_nothing(args: list[str]) -> bool:
    """``env``'s arguments: True when no program follows the flags and assignments (so it prints)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            continue
        if a in ("-S", "--split-string") or a.startswith(("--split-string=", "-S")):
            return False  # env -S "prog args": the string is the program
        if a.startswith("-"):
            i += 2 if a in _ENV_FLAGS_WITH_ARG else 1
            continue
        if _ASSIGNMENT.match(a):
            i += 1
            continue
        return False  # a program to run
    return True


def _segment_dumps(segment: str, depth: int = 0) -> str | None:
    words = _strip_wrappers(_words(segment))
    if not words:
        return None
    cmd = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if cmd == "printenv":
        return "env-dump:printenv"
    if cmd == "env" and _env_runs_nothing(args):
        return "env-dump:env"
    # What runs a command line of its own: check that line too (sh -c env, env bash -c printenv, eval e""nv).
    inner = None
    if cmd == "env":
        inner = shlex.join(_env_program(args))
    elif cmd in _SHELLS:
        inner = _shell_string(args)
    elif cmd == "eval":
        inner = " ".join(args)
    if inner:
        if depth >= _RECURSION:
            return "env-dump:nested-shell"
        return _reason(inner, depth + 1)
    if cmd == "export" and all(a.startswith("-") for a in args):
        return "env-dump:export"
    if cmd in ("declare", "typeset") and args and all(a.startswith("-") for a in args) and \
            any(set(a[1:]) & set("xpg") for a in args):
        return f"env-dump:{cmd}"
    if cmd in ("declare", "typeset") and not args:
        return f"env-dump:{cmd}"
    if cmd == "set" and not args:
        return "env-dump:set"
    return None


def builtin_reason(command: str) -> str | None:
    """Why ``command`` dumps the environment (``env-dump:<how>``), or None."""
    return _reason(command, 0)


_SHELL_PUNCTUATION = frozenset({";", "&", "|", "&&", "||", ";;", "(", ")", "|&", ";&"})


def _inner_command_lines(command: str) -> list[str]:
    """Command lines a shell or ``eval`` in ``command`` will run, read from the quoted words as the shell
    sees them (the segment check below blanks quoted text, which is data everywhere else)."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:  # unbalanced quotes: the shell would refuse it too
        return []
    out = []
    for i, tok in enumerate(tokens):
        base = tok.rsplit("/", 1)[-1]
        rest = tokens[i + 1:]
        end = next((j for j, t in enumerate(rest) if t in _SHELL_PUNCTUATION), len(rest))
        if base in _SHELLS:
            inner = _shell_string(rest[:end])
            if inner:
                out.append(inner)
        elif base == "eval" and end:
            out.append(" ".join(rest[:end]))
    return out


def _reason(command: str, depth: int) -> str | None:
    if _ENVIRON_FILE.search(command):
        return "env-dump:proc-environ"
    if depth < _RECURSION:
        for inner in _inner_command_lines(command):
            reason = _reason(inner, depth + 1)
            if reason:
                return reason
    elif _inner_command_lines(command):
        return "env-dump:nested-shell"
    # Quoted text is data (`git commit -m "drop env; add x"`), except command substitutions inside "...".
    unquoted = _SINGLE_QUOTED.sub("''", command)
    unquoted = _DOUBLE_QUOTED.sub(lambda m: " ; ".join(_SUBSHELL_IN_QUOTES.findall(m.group(0))) or '""', unquoted)
    for segment in _SEPARATORS.split(unquoted):
        reason = _segment_dumps(segment, depth)
        if reason:
            return reason
    return None


class EnvDumpPolicy:
    """The built-in command policy ``env-dump``: commands that print the environment (see the module doc)."""

    name = "env-dump"

    def check(self, command: str, app: Context) -> str | None:
        return builtin_reason(command)


class UserDenyPolicy:
    """The built-in command policy ``bash.deny``: the user's regexes in ``$MEMTREE_HOME/<hash>/bash.deny``."""

    name = "bash.deny"

    def check(self, command: str, app: Context) -> str | None:
        for pattern in load_patterns(app.paths.bash_deny):
            if pattern.search(command):
                return f"bash.deny:{pattern.pattern}"
        return None


def command_denied(command: str, deny_file: Path) -> str | None:
    """Return why ``command``'s output must not be stored, or None.

    Reasons: ``env-dump:<how>`` for the built-in list, ``bash.deny:<regex>`` for a user pattern.
    Bad lines in ``deny_file`` are logged and skipped (see :func:`load_patterns`).
    """
    reason = builtin_reason(command)
    if reason:
        return reason
    for pattern in load_patterns(deny_file):
        if pattern.search(command):
            return f"bash.deny:{pattern.pattern}"
    return None
