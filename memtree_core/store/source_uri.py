"""The source contract of file nodes, written once: how a file's ``source_uri`` is built and read back, and
the unit of ``nodes.mtime``.

**URIs** are ``file://`` + the absolute path with ``%`` and ``#`` percent-escaped (``%25``, ``%23``) and
nothing else, so a plain path reads back as itself, a path prefix is a string prefix of the URI, and the
first ``#`` starts the fragment: ``#L<a>-<b>`` for a line range.  Every writer (the read and grep tools,
captures) and every reader (staleness, indexing, search's path filter, source labels) goes through here.

**Paths redaction changed.**  A path is stored text like any other: every writer builds a URI from the path
as redaction leaves it (:func:`clean_file_uri`), so a token in a directory name is a ``[REDACTED:rule]`` mark
in ``source_uri`` as it is in the metadata.  Such a URI names no file that can be stat'ed, so the staleness
walker skips it (:func:`is_redacted`): its nodes stay as they are until the file is read or indexed again.
(A real path that holds the mark's text itself is skipped the same way.)

**mtime** of ``file`` and ``file_chunk`` nodes is the source file's ``st_mtime_ns``: nanoseconds since the
epoch, exact integers (no float rounding), compared as integers.  Stores written before this module held
milliseconds for captures and unescaped URIs for the read tool; migration 5 rewrites them
(:func:`migrate_store`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

SCHEME = "file://"
REDACTION_MARK = "[REDACTED:"  # the start of every redaction mark (memtree_core.daemon.redacting.MARK)
_FRAGMENT = re.compile(r"#L(\d+)-(\d+)$")
_ESCAPED = re.compile(r"%(25|23)")


def escape(path: str) -> str:
    """A path as it appears in a URI: ``%`` -> ``%25``, ``#`` -> ``%23``, nothing else changed."""
    return str(path).replace("%", "%25").replace("#", "%23")


def unescape(text: str) -> str:
    """The inverse of :func:`escape`, in one pass (so ``%2523`` is ``%23``, not ``#``)."""
    return _ESCAPED.sub(lambda m: "%" if m.group(1) == "25" else "#", text)


def file_uri(path: Any, start: int | None = None, end: int | None = None) -> str:
    """``file:///abs/path`` or, with a line range, ``file:///abs/path#L<start>-<end>``."""
    uri = SCHEME + escape(str(path))
    return uri if start is None or end is None else f"{uri}#L{start}-{end}"


def clean_file_uri(redact: Callable[[str], tuple[str, Any]], path: Any, start: int | None = None,
                   end: int | None = None) -> str:
    """:func:`file_uri` of ``path`` as ``redact`` (``app.redact``) leaves it: the one way a writer turns a path
    it was given into a stored URI (see the module doc)."""
    return file_uri(redact(str(path))[0], start, end)


def is_redacted(uri: str) -> bool:
    """Whether a file URI's path holds a redaction mark: it names no file that can be stat'ed."""
    return REDACTION_MARK in key(uri)


def is_file_uri(uri: str | None) -> bool:
    return bool(uri) and uri.startswith(SCHEME)  # type: ignore[union-attr]


def parse(uri: str) -> tuple[str, int | None, int | None]:
    """``file:///a/b%23c#L3-9`` -> (``/a/b#c``, 3, 9); no line range -> (path, None, None).  Raise
    ValueError for anything that is not a file URI."""
    if not is_file_uri(uri):
        raise ValueError(f"not a file URI: {uri!r}")
    rest, _, fragment = uri[len(SCHEME):].partition("#")
    if rest.startswith("localhost/"):
        rest = rest[len("localhost"):]
    m = _FRAGMENT.fullmatch("#" + fragment) if fragment else None
    return unescape(rest), (int(m.group(1)) if m else None), (int(m.group(2)) if m else None)


def path_of(uri: str) -> str | None:
    """The file path a URI names, or None when it is not a file URI (or names no path)."""
    try:
        path = parse(uri)[0]
    except ValueError:
        return None
    return path or None


def key(uri: str) -> str:
    """The URI of the whole file (the line range dropped): one per file, as ``file_sources`` keys them."""
    return uri.split("#", 1)[0]


def prefix(path: str) -> str:
    """The URI prefix of every source under ``path`` (an absolute path, with a trailing ``/`` for a tree)."""
    return SCHEME + escape(path)


def mtime(st: os.stat_result) -> int:
    """The value stored in ``nodes.mtime`` for a file: ``st_mtime_ns``."""
    return st.st_mtime_ns


def mtime_of_path(path: str) -> int:
    """:func:`mtime` of the file at ``path``; 0 when it cannot be stat'ed."""
    try:
        return mtime(os.stat(path))
    except OSError:
        return 0


# -- migration 5: one form for what older versions stored --------------------------------------------------
def _as_ns(value: int) -> int:
    """An mtime written in seconds, milliseconds or microseconds (told apart by magnitude), in nanoseconds:
    the last nanosecond of that unit, so a file unchanged since does not look newer than its node."""
    for below, scale in ((10**11, 10**9), (10**14, 10**6), (10**17, 10**3)):  # s (until 5138), ms, µs
        if 0 < value < below:
            return value * scale + scale - 1
    return value


def canonical(uri: str) -> str:
    """A stored file URI in this module's form.  The read and grep tools once wrote paths unescaped: a ``#``
    before the line range, or a ``%`` that starts no ``%25``/``%23``, can only be such a path, and is escaped.
    (An unescaped path holding a literal ``%25`` cannot be told from an escaped one and is left as it is.)"""
    rest = uri[len(SCHEME):]
    m = _FRAGMENT.search(rest)
    body, fragment = (rest[:m.start()], rest[m.start():]) if m else (rest, "")
    if "#" in body or re.search(r"%(?!25|23)", body):
        return SCHEME + escape(body) + fragment
    return uri


def migrate_store(conn: Any) -> None:
    """Migration 5's data step: file nodes' URIs escaped one way and their mtimes in nanoseconds."""
    rows = conn.execute("SELECT rowid, source_uri, mtime FROM nodes WHERE source_uri LIKE 'file://%'").fetchall()
    uris, mtimes = [], []
    for rowid, uri, value in rows:
        fixed = canonical(uri)
        if fixed != uri:
            uris.append((fixed, rowid))
        if isinstance(value, int) and 0 < value < 10**17:
            mtimes.append((_as_ns(value), rowid))
    conn.executemany("UPDATE nodes SET source_uri = ? WHERE rowid = ?", uris)
    conn.executemany("UPDATE nodes SET mtime = ? WHERE rowid = ?", mtimes)
    # file_sources is keyed by the URI up to its first '#' (migration 2's trigger): rebuilt from the fixed
    # URIs, so a key cut at a '#' of an unescaped path goes (what the walker saw of a kept key stays).
    keys = "DISTINCT CASE WHEN instr(source_uri, '#') > 0 THEN substr(source_uri, 1, instr(source_uri, '#') - 1) " \
           "ELSE source_uri END FROM nodes WHERE source_uri LIKE 'file://%'"
    conn.execute(f"DELETE FROM file_sources WHERE key NOT IN (SELECT {keys})")
    conn.execute(f"INSERT OR IGNORE INTO file_sources(key) SELECT {keys}")
