"""The two search engines behind ``grep``: ripgrep's ``--json`` stream, and a pure-Python fallback.

Both yield the same events — ``("match" | "context", path, line_number, text)`` in file order — so the
tool groups them into hit blocks the same way.  Both search hidden files, skip ``.git``, skip binary
files when walking a directory, and honour ``.gitignore`` (ripgrep exactly, the fallback roughly: one
``.gitignore`` per directory, ``*``/``**``/``?``/``[...]``, ``!`` negation, trailing ``/`` for
directories, anchoring when a pattern has a ``/``; no global excludes file).

``MEMTREE_GREP_ENGINE=python`` (or ``rg``) forces an engine; by default ripgrep is used when
:func:`memtree_plugins.lib.ripgrep.find_rg` finds it.

Resource bounds: the deadline does not depend on output -- a timer kills ripgrep's whole process group
(and anything it started) when it passes, even if ripgrep never prints a line; files over
:data:`MAX_FILE_BYTES` and anything that is not a regular file are skipped while walking; the fallback
reads in blocks of :data:`BLOCK_BYTES` and searches a line longer than :data:`MAX_LINE_BYTES` in pieces
of that size, so its memory does not grow with the input (a 1 GB file without a newline included).
"""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import re
import stat
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memtree_plugins.wrappers import children

ENGINE_ENV = "MEMTREE_GREP_ENGINE"
LINE_CHARS = 4000  # a hit line is kept up to this many characters (minified files have 1 MB lines)
_SNIFF = 8192
MAX_FILE_BYTES = 100 * 1024 * 1024  # bigger files are skipped (a log or a dump: search it with bash)
BLOCK_BYTES = 1 << 16  # the fallback reads this much at a time
MAX_LINE_BYTES = 1 << 20  # the fallback searches a longer line in pieces of this size
# Kernel and device file systems: their files never end (/dev/zero), block (a tty), or hold other processes'
# environments (/proc); nothing in them is project text.  /dev/shm is an ordinary tmpfs.
SYSTEM_TREES = ("/proc", "/sys", "/dev")
ORDINARY_UNDER_SYSTEM = ("/dev/shm",)


def system_tree(real: str) -> str | None:
    """The kernel or device tree an absolute, resolved path lies in, if any."""
    def under(tree: str) -> bool:
        return real == tree or real.startswith(tree + "/")

    if any(under(ok) for ok in ORDINARY_UNDER_SYSTEM):
        return None
    return next((tree for tree in SYSTEM_TREES if under(tree)), None)


def _holds_system_tree(target: Path) -> bool:
    """A walk of ``target`` would reach a kernel or device tree (``/``, or a chroot's bind mounts)."""
    real = os.path.realpath(target)
    return any(tree.startswith(real.rstrip("/") + "/") for tree in SYSTEM_TREES)


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
    # --sort path: ripgrep's threads otherwise print files in whatever order they finish, so the same
    # search could list (and keep, and store) different hits run to run; the Python engine walks sorted too.
    cmd = [rg, "--json", "--no-config", "--no-messages", "--hidden", "--glob", "!.git", "--sort", "path",
           "--max-filesize", str(MAX_FILE_BYTES), "--context", str(context)]
    if ignore_case:
        cmd.append("--ignore-case")
    if glob:
        cmd += ["--glob", glob]
    if _holds_system_tree(target):
        cmd.append("--one-file-system")  # /proc, /sys and /dev are mounts of their own: stay out of them
    cmd += ["--regexp", pattern, "--", str(target)]
    err = tempfile.TemporaryFile()  # a file, not a pipe: rg can never block on a full stderr
    token, marker = children.new_call()
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                            start_new_session=True, env={**os.environ, **marker})
    children.register(token, proc.pid)
    run = EngineRun("ripgrep", iter(()))

    def expire() -> None:
        # Runs on the timer's thread: rg may be stuck reading (a device, a huge file) and print nothing.
        run.timed_out = True
        children.end_call(token, proc.pid)

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), expire)
    timer.daemon = True
    timer.start()

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
            timer.cancel()
            if proc.poll() is None:
                children.end_call(token, proc.pid)
            proc.wait()
            children.unregister(token)
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
    if not target.is_dir():
        yield target  # the tool checked it: a regular file within the size cap
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
            full = os.path.join(dirpath, d)
            if d != ".git" and not rules.ignored(rel, True) and not os.path.islink(full) and \
                    system_tree(os.path.abspath(full)) is None:
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if not rules.ignored(rel, False) and _glob_matches(glob, rel) and \
                    _searchable(Path(dirpath) / f):
                yield Path(dirpath) / f


def _searchable(path: Path) -> bool:
    """A regular file within :data:`MAX_FILE_BYTES`: FIFOs, sockets, devices and symlinks are skipped (as
    ripgrep does when walking), so are huge files (as ``--max-filesize`` makes it do)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_FILE_BYTES


def _lines(fd: int, run: EngineRun, deadline: float) -> Iterator[tuple[bytes, bool]]:
    """The file's lines (without their ending), read in blocks, as ``(bytes, more)``: a line longer than
    :data:`MAX_LINE_BYTES` comes in pieces of that size, ``more`` is true for all but its last piece."""
    pending = bytearray()
    while True:
        if time.monotonic() > deadline:
            run.timed_out = True
            return
        block = os.read(fd, BLOCK_BYTES)
        if not block:
            break
        pending += block
        start = 0
        while True:
            nl = pending.find(b"\n", start)
            if nl < 0:
                break
            yield bytes(pending[start:nl]), False
            start = nl + 1
        del pending[:start]
        while len(pending) > MAX_LINE_BYTES:
            yield bytes(pending[:MAX_LINE_BYTES]), True
            del pending[:MAX_LINE_BYTES]
    if pending:
        yield bytes(pending), False


def _whole_lines(fd: int, regex: re.Pattern[str], run: EngineRun,
                 deadline: float) -> Iterator[tuple[str, bool]]:
    """``(text to show, matches)`` per line.  An overlong line is searched piece by piece (a match that
    straddles two pieces is missed) and shown by its first matching piece, else by its first piece."""
    shown: str | None = None
    matched = False
    for raw, more in _lines(fd, run, deadline):
        if matched:
            if not more:
                yield shown or "", True
                shown, matched = None, False
            continue
        text = raw.decode("utf-8", "replace").rstrip("\r")
        hit = regex.search(text) is not None
        if hit or shown is None:
            clipped = clip_line(text)
            shown = clipped if shown is None else "…" + clipped
            matched = hit
        if not more:
            yield shown, matched
            shown, matched = None, False


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
            if run.timed_out:
                return
            try:
                # O_NONBLOCK: a FIFO put in place of a checked file must not hang the open.
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError as exc:
                run.errors.append(f"{path}: {exc.strerror or exc}")
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                os.set_blocking(fd, True)
                if not explicit_file and b"\x00" in os.pread(fd, _SNIFF, 0):
                    continue  # binary: skipped when walking, as ripgrep does
                yield from _search(fd, str(path))
            except OSError as exc:
                run.errors.append(f"{path}: {exc.strerror or exc}")
            finally:
                os.close(fd)

    def _search(fd: int, path: str) -> Iterator[Event]:
        before: deque[tuple[int, str]] = deque(maxlen=context)
        after = 0
        for n, (text, hit) in enumerate(_whole_lines(fd, regex, run, deadline), 1):
            if hit:
                for m, t in before:
                    yield Event("context", path, m, t)
                before.clear()
                yield Event("match", path, n, text)
                after = context
            elif after:
                yield Event("context", path, n, text)
                after -= 1
            elif context:
                before.append((n, text))

    run.events = events()
    return run
