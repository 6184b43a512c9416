"""The two search engines behind ``grep``: ripgrep's ``--json`` stream, and a pure-Python fallback.

Both yield the same events — ``("match" | "context", path, line_number, text)`` in file order — so the
tool groups them into hit blocks the same way.  Both search hidden files, skip ``.git``, skip binary
files when walking a directory, and honour ``.gitignore`` (ripgrep exactly, the fallback roughly: one
``.gitignore`` per directory, ``*``/``**``/``?``/``[...]``, ``!`` negation, trailing ``/`` for
directories, anchoring when a pattern has a ``/``; no global excludes file).

``MEMTREE_GREP_ENGINE=python`` (or ``rg``) forces an engine; by default ripgrep is used when
:func:`memtree_core.ripgrep.find_rg` finds it.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import re
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ENGINE_ENV = "MEMTREE_GREP_ENGINE"
LINE_CHARS = 4000  # a hit line is kept up to this many characters (minified files have 1 MB lines)
_SNIFF = 8192


@dataclass
class Event:
    kind: str  # "match" | "context"
    path: str
    line: int
    text: str  # without the line ending; cut at LINE_CHARS


@dataclass
class EngineRun:
    name: str
    events: Iterator[Event]
    errors: list[str] = field(default_factory=list)
    timed_out: bool = False


class GrepError(ValueError):
    """The pattern or the arguments are not usable; the message says how to fix them."""


def clip_line(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + f"…[{len(text) - LINE_CHARS} more chars]"


# -- ripgrep -------------------------------------------------------------------------------------------
def _rg_text(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", "replace")


def ripgrep(rg: str, pattern: str, target: Path, cwd: Path, *, glob: str | None, ignore_case: bool,
            context: int, deadline: float) -> EngineRun:
    cmd = [rg, "--json", "--no-config", "--no-messages", "--hidden", "--glob", "!.git",
           "--context", str(context)]
    if ignore_case:
        cmd.append("--ignore-case")
    if glob:
        cmd += ["--glob", glob]
    cmd += ["--regexp", pattern, "--", str(target)]
    err = tempfile.TemporaryFile()  # a file, not a pipe: rg can never block on a full stderr
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
    run = EngineRun("ripgrep", iter(()))

    def events() -> Iterator[Event]:
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                if time.monotonic() > deadline:
                    run.timed_out = True
                    break
                msg = json.loads(raw)
                kind = msg.get("type")
                if kind in ("match", "context"):
                    data = msg["data"]
                    yield Event(kind, _rg_text(data["path"]), data["line_number"], clip_line(_rg_text(data["lines"])))
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            err.seek(0)
            message = err.read(20000).decode("utf-8", "replace").strip()
            err.close()
            if proc.returncode == 2 and message:
                if "regex" in message or "error parsing" in message:
                    raise GrepError(f"bad regex {pattern!r}: {message} (ripgrep syntax, like Rust's regex; "
                                    f"escape special characters with \\ or search a literal)")
                if "glob" in message:
                    raise GrepError(f"bad glob {glob!r}: {message}")
                run.errors.append(message.splitlines()[0])

    run.events = events()
    return run


# -- the Python fallback ---------------------------------------------------------------------------
def _glob_regex(pattern: str) -> str:
    """A gitignore glob (without ``!`` or trailing ``/``) as a regex over ``/``-separated paths."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            j = pattern.find("]", i + 2)
            if j == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1:j].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = j + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@dataclass
class _Rule:
    base: str  # directory of the .gitignore, relative to the walk root ("" for the root)
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


class IgnoreRules:
    """A rough ``.gitignore`` matcher: last matching rule wins, as in git."""

    def __init__(self) -> None:
        self.rules: list[_Rule] = []

    def add_file(self, base: str, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
            line = line.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            line = line.replace("\\#", "#").replace("\\!", "!")
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            body = _glob_regex(line.lstrip("/"))
            regex = re.compile(("" if anchored else "(?:.*/)?") + body + "$")
            self.rules.append(_Rule(base, regex, negate, dir_only))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = False
        for r in self.rules:
            if r.dir_only and not is_dir:
                continue
            if r.base:
                if not rel.startswith(r.base + "/"):
                    continue
                sub = rel[len(r.base) + 1:]
            else:
                sub = rel
            if r.regex.match(sub):
                verdict = not r.negate
        return verdict


def _glob_matches(glob: str | None, rel: str) -> bool:
    if not glob:
        return True
    negate = glob.startswith("!")
    pat = glob[1:] if negate else glob
    target = rel if "/" in pat else rel.rsplit("/", 1)[-1]
    hit = bool(re.match(_glob_regex(pat.lstrip("/")) + "$", target)) or fnmatch.fnmatchcase(target, pat)
    return hit != negate


def _files(target: Path, glob: str | None, run: EngineRun, deadline: float) -> Iterator[Path]:
    if target.is_file():
        yield target
        return
    rules = IgnoreRules()
    for dirpath, dirnames, filenames in os.walk(target, onerror=lambda e: run.errors.append(str(e))):
        if time.monotonic() > deadline:
            run.timed_out = True
            return
        rel_dir = os.path.relpath(dirpath, target).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        if ".gitignore" in filenames:
            rules.add_file(rel_dir, Path(dirpath) / ".gitignore")
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d != ".git" and not rules.ignored(rel, True) and not os.path.islink(os.path.join(dirpath, d)):
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if not rules.ignored(rel, False) and _glob_matches(glob, rel):
                yield Path(dirpath) / f


def python_engine(pattern: str, target: Path, *, glob: str | None, ignore_case: bool, context: int,
                  deadline: float) -> EngineRun:
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise GrepError(f"bad regex {pattern!r}: {exc} (Python re syntax; escape special characters "
                        f"with \\)") from None
    run = EngineRun("python", iter(()))
    explicit_file = target.is_file()

    def events() -> Iterator[Event]:
        for path in _files(target, glob, run, deadline):
            try:
                with open(path, "rb") as fh:
                    if not explicit_file and b"\x00" in fh.read(_SNIFF):
                        continue  # binary: skipped when walking, as ripgrep does
                    fh.seek(0)
                    before: deque[tuple[int, str]] = deque(maxlen=context)
                    after = 0
                    for n, raw in enumerate(fh, 1):
                        text = raw.decode("utf-8", "replace").rstrip("\r\n")
                        if regex.search(text):
                            for m, t in before:
                                yield Event("context", str(path), m, clip_line(t))
                            before.clear()
                            yield Event("match", str(path), n, clip_line(text))
                            after = context
                        elif after:
                            yield Event("context", str(path), n, clip_line(text))
                            after -= 1
                        elif context:
                            before.append((n, text))
                        if n % 4096 == 0 and time.monotonic() > deadline:
                            run.timed_out = True
                            return
            except OSError as exc:
                run.errors.append(f"{path}: {exc.strerror or exc}")

    run.events = events()
    return run
