"""Index a directory's files into the store up front, so ``search`` finds code the agent has not read yet.

Each file taken (see :mod:`memtree_plugins.walkers.repo_files` for which) goes through the ``read`` tool's own
writer, :func:`memtree_plugins.lib.file_versions.write_version`: the whole text redacted first, then chunked
by definition, stored as one ``file`` node with its ``file_chunk`` children, an older version retired.  So
an indexed file and a read file are the same nodes, and a later ``read`` of an indexed file is served
from the store.

Incremental by mtime and size, the convention ``read`` uses: a file whose live ``file`` node has the
file's ``st_mtime_ns`` and size is counted unchanged and not opened.  Each file is its own transaction, so
a daemon writing to the same store (WAL, busy timeout) waits at most one file's write.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memtree_core.errors import NotFound
from memtree_core.store import source_uri
from memtree_plugins.walkers.queries import live_file_versions
from memtree_plugins.walkers.repo_files import DEFAULT_MAX_BYTES, by_content, by_name, candidates

if TYPE_CHECKING:
    from memtree_core.context import Context


@dataclass
class IndexSummary:
    root: str
    indexed: int = 0
    unchanged: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    chunks: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # the first few unreadable files, with why
    complete: bool = True  # False when ``max_writes`` stopped the pass before the last file

    @property
    def files(self) -> int:
        return self.indexed + self.unchanged + sum(self.skipped.values())

    def as_dict(self) -> dict[str, object]:
        return {"root": self.root, "files": self.files, "indexed": self.indexed, "unchanged": self.unchanged,
                "skipped": dict(sorted(self.skipped.items())), "chunks": self.chunks,
                "seconds": round(self.seconds, 3), "errors": self.errors, "complete": self.complete}


MAX_ERRORS_KEPT = 20


def known_versions(app: Context, root: Path) -> dict[str, set[tuple[int, int]]]:
    """``file://`` URI -> (mtime_ns, size) of each live ``file`` node under ``root``, in one query."""
    prefix = source_uri.prefix(app.redact(f"{root}/")[0])  # stored paths are redacted (file_versions.source_of)
    rows = live_file_versions(app.store, prefix, prefix[:-1] + "0")
    out: dict[str, set[tuple[int, int]]] = {}
    for uri, mtime, size in rows:
        if mtime is not None and size is not None:
            out.setdefault(uri, set()).add((int(mtime), int(size)))
    return out


def index_directory(app: Context, root: Path, max_bytes: int = DEFAULT_MAX_BYTES,
                    on_file: Callable[[str, IndexSummary], None] | None = None,
                    on_total: Callable[[int], None] | None = None,
                    max_writes: int | None = None) -> IndexSummary:
    """Index every file ``root`` holds into ``app``'s store; ``on_file(rel, summary)`` after each one.
    With ``max_writes``, stop after writing that many files (the daemon's bounded tick: the next pass
    finds the written ones unchanged and goes on)."""
    from memtree_core.store.source_uri import file_uri
    from memtree_plugins.lib.file_versions import source_of, write_version
    from memtree_plugins.lib.files import display
    from memtree_plugins.lib.ref_links import guarded, resolve_pending

    started = time.monotonic()
    summary = IndexSummary(str(root))
    project_root = app.identity.root
    known = known_versions(app, root)
    listed = list(candidates(root))
    if on_total is not None:
        on_total(len(listed))
    for c in listed:
        if max_writes is not None and summary.indexed >= max_writes:
            summary.complete = False
            break
        reason = by_name(c.rel)
        st = None
        if reason is None:
            reason, st = by_content(c, max_bytes)
        if reason is not None or st is None:
            summary.skipped[reason or "unreadable"] += 1
        elif (st.st_mtime_ns, st.st_size) in known.get(file_uri(c.path), ()):  # stored URIs are clean already
            summary.unchanged += 1
        elif (st.st_mtime_ns, st.st_size) in known.get(uri := source_of(app, c.path), ()):
            summary.unchanged += 1
        else:
            try:
                version, _texts, _raced = write_version(app, c.path, display(c.path, project_root),
                                                        uri, resolve=False)
            except (ValueError, NotFound, OSError) as exc:  # gone or changed to binary since the look
                summary.skipped["unreadable"] += 1
                if len(summary.errors) < MAX_ERRORS_KEPT:
                    summary.errors.append(f"{c.rel}: {exc}")
            else:
                summary.indexed += 1
                summary.chunks += len(version.chunks)
        if on_file is not None:
            on_file(c.rel, summary)
    guarded(app.store, resolve_pending, app.store)  # every file's references, once all targets are stored
    summary.seconds = time.monotonic() - started
    return summary
