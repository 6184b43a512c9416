"""The ``staleness_marker`` walker: re-stat the source files of live file chunks; ``stale`` when changed.

Scale: one ``os.stat`` per distinct file (never per chunk), at most ``walkers.stalenessBatchFiles`` files per
run, resuming after the last file of the previous run (a cursor in ``meta``), so a 100k-file store is
covered over several ticks.  Files come from the ``file_sources`` table (one row per ``file://`` source,
kept by a trigger, migration 2); a file's chunks are read with one range scan of the source_uri index.

A live ``file``/``file_chunk`` node goes stale (reason ``staleness:<why>``) when:

* the file is gone (``file gone``);
* its mtime advanced past the node's ``mtime`` (``mtime advanced``; nanoseconds, the one unit of
  :mod:`memtree_core.store.source_uri`, compared as integers);
* the size changed while the mtime did not (``size changed``; coarse-mtime filesystems, edits that restore
  the mtime), judged against what this walker saw at its previous check of the file;
* the node has no mtime and the file's (mtime, size) differ from the previous check (``changed``).

A source whose path redaction changed (a token in a directory name) is stored redacted and cannot be stat'ed:
it is skipped (``redacted_paths_skipped``), never taken for a file gone.

Source URIs are read back by :mod:`memtree_core.store.source_uri`, the one place that writes them.

**Per machine.**  On a store many machines share (``store.machine`` set, docs/postgresql.md "Staleness per
checkout") a file's path names a file in each machine's own checkout: the walker judges only the nodes whose
metadata records this machine (and those that record none: older rows, which any machine may judge), keeps
what it saw of each file and its cursor per machine, and runs on every machine's daemon
(``per_machine``, :class:`memtree_core.types.PerMachine`), not only on the one holding the project's walker
lock.  A file changed on one machine stales that machine's nodes; another machine's stay as they are.  Each
run also records where this machine's checkout is (memtree_plugins/lib/checkouts.py), for path filters.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memtree_core.store import now_ms, source_uri
from memtree_plugins.lib.checkouts import record as record_checkout
from memtree_plugins.walkers._common import add, move_still
from memtree_plugins.walkers.queries import (
    file_sources_after,
    forget_file_sources,
    has_file_sources,
    nodes_with_source_in,
    note_file_checks,
)

if TYPE_CHECKING:
    from memtree_core.context import Context

log = logging.getLogger("memtree.walkers.staleness")

CURSOR_KEY = "staleness:cursor"
FILE_KINDS = ("file", "file_chunk")


def key_of(uri: str) -> str:
    return source_uri.key(uri)


def path_of(key: str, root: Path) -> str | None:
    """The file a source key names (a relative one taken against ``root``); None when it is no file URI."""
    path = source_uri.path_of(key)
    if path is None:
        return None
    return path if os.path.isabs(path) else str(root / path)


def mtime_advanced(stored: int, st_mtime_ns: int) -> bool:
    """Has the file's mtime moved past ``stored`` (both nanoseconds)?"""
    return stored > 0 and st_mtime_ns > stored


def cursor_key(machine: str) -> str:
    """The ``meta`` key of the cursor of ``machine``'s walker (``""``: a store of one machine)."""
    return f"{CURSOR_KEY}:{machine}" if machine else CURSOR_KEY


class StalenessMarker:
    name = "staleness_marker"
    trigger = "interval"
    per_machine = True  # its files are this machine's checkout's: every daemon on a shared store runs it

    def interval_s(self, app: Context) -> float:
        return app.plugin_settings("walkers").walkers.staleness_interval_ms / 1000

    def has_work(self, app: Context) -> bool:
        return has_file_sources(app.store)

    def run(self, app: Context) -> dict[str, int]:
        store = app.store
        machine = store.machine
        record_checkout(store, app.project_root)  # so a path others give names this checkout's files too
        batch = app.plugin_settings("walkers").walkers.staleness_batch_files
        cursor = store.get_meta(cursor_key(machine)) or ""
        sources = file_sources_after(store, cursor, batch, machine)
        counters: dict[str, int] = {}
        if len(sources) < batch:
            add(counters, "passes_completed")
        if not sources:
            store.set_meta(cursor_key(machine), "")
            return counters
        wanted = {key: (size, mtime_ns) for key, size, mtime_ns in sources}
        # One range scan of the source_uri index covers every chunk of every file in the batch ('$' sorts
        # right after '#'); rows of other statuses come too, to tell a forgotten source from a pruned one.
        rows = nodes_with_source_in(store, sources[0][0], sources[-1][0], machine)
        live: dict[str, list[tuple[str, int]]] = {}
        present: set[str] = set()
        for node_id, uri, mtime, st, kind, other in rows:
            key = key_of(uri)
            if key not in wanted:
                continue
            present.add(key)
            if st == "live" and kind in FILE_KINDS and not other:  # another machine's: its own walker's
                live.setdefault(key, []).append((node_id, int(mtime or 0)))

        stale: dict[str, list[str]] = {}
        seen: list[tuple[int, int, int, str]] = []
        forgotten = [key for key in wanted if key not in present]
        now = now_ms()
        for key, chunks in live.items():
            if source_uri.is_redacted(key):
                # A path redaction changed is stored redacted (source_uri.clean_file_uri): it names no file
                # to stat, so "file gone" would be a lie; its nodes stay live until read or indexed again.
                add(counters, "redacted_paths_skipped")
                continue
            path = path_of(key, app.project_root)
            if path is None:
                add(counters, "unparsable")
                continue
            add(counters, "files_checked")
            add(counters, "chunks_checked", len(chunks))
            add(counters, "stats")
            try:
                st = os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                stale.setdefault("file gone", []).extend(i for i, _ in chunks)
                add(counters, "files_gone")
                continue
            except OSError as exc:  # permission denied, I/O error: cannot judge, leave as is
                log.warning("staleness: cannot stat %s: %s", path, exc)
                add(counters, "stat_errors")
                continue
            prev_size, prev_mtime = wanted[key]
            same_mtime_new_size = prev_mtime == st.st_mtime_ns and prev_size is not None and prev_size != st.st_size
            changed_since_check = prev_mtime is not None and (prev_mtime, prev_size) != (st.st_mtime_ns, st.st_size)
            for node_id, mtime in chunks:
                if mtime_advanced(mtime, st.st_mtime_ns):
                    stale.setdefault("mtime advanced", []).append(node_id)
                elif same_mtime_new_size:
                    stale.setdefault("size changed", []).append(node_id)
                elif mtime <= 0 and changed_since_check:
                    stale.setdefault("changed", []).append(node_id)
            seen.append((st.st_size, st.st_mtime_ns, now, key))

        for why, ids in stale.items():
            add(counters, "marked_stale", len(move_still(store, ids, ("live",), "stale", f"staleness:{why}")))
        with store.tx():
            note_file_checks(store, seen, machine)
            # re-checked there: a chunk captured meanwhile keeps its source
            forget_file_sources(store, forgotten, machine)
            store.set_meta(cursor_key(machine), "" if len(sources) < batch else sources[-1][0])
        add(counters, "sources_forgotten", len(forgotten))
        return counters
