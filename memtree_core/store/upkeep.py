"""Named store methods for the walkers' upkeep: retention, the size cap, space reclaim and file checks.

Plugins talk to the store through methods that say what they do; the SQL for each intent lives here, next to
the schema it depends on.  Every method does one statement's (or one short transaction's) worth of work:
the caller decides how many rows a step takes, so the walkers keep their own budgets and pauses.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

VEC_TABLE = "nodes_vec"  # created by the schema when sqlite-vec loads; absent otherwise


def marks(n: int) -> str:
    return ",".join("?" * n)


def batches(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    """``items`` in slices of ``size``: an ``IN (...)`` list stays far below SQLite's limit on parameters."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


class Upkeep:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``conn``, ``tx`` and ``query``."""

    conn: Any

    if TYPE_CHECKING:
        def tx(self) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def query_one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    # -- statuses -------------------------------------------------------------------------------------
    def ids_in_status(self, ids: Sequence[str], statuses: Sequence[str]) -> list[str]:
        """Those of ``ids`` whose status is one of ``statuses`` now (one statement: the caller keeps ``ids``
        short, and joins a transaction when it acts on the answer)."""
        if not ids or not statuses:
            return []
        return [r[0] for r in self.query(
            f"SELECT id FROM nodes WHERE id IN ({marks(len(ids))}) AND status IN ({marks(len(statuses))})",
            (*ids, *statuses))]

    def oldest_in_status(self, status_: str, limit: int, *, updated_before: int | None = None,
                         kind: str | None = None) -> list[str]:
        """Ids of up to ``limit`` nodes in ``status_``, least recently updated first; optionally only those
        updated before ``updated_before`` (ms) or of one ``kind``."""
        sql = "SELECT id FROM nodes WHERE status = ?"
        params: list[object] = [status_]
        if updated_before is not None:
            sql += " AND updated_at < ?"
            params.append(updated_before)
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        return [r[0] for r in self.query(sql + " ORDER BY updated_at LIMIT ?", (*params, limit))]

    def node_count(self) -> int:
        row = self.query_one("SELECT count(*) FROM nodes")
        return int(row[0]) if row else 0

    # -- deleting -------------------------------------------------------------------------------------
    def delete_still_pruned(self, ids: Sequence[str]) -> tuple[int, int]:
        """Delete those of ``ids`` that are (still) ``pruned``, with their edges both ways and their vectors,
        in one transaction; returns (rows, edges) deleted."""
        if not ids:
            return 0, 0
        vec = self._has_table(VEC_TABLE)  # type: ignore[attr-defined]
        with self.tx() as c:
            still = [r[0] for r in c.execute(
                f"SELECT id FROM nodes WHERE id IN ({marks(len(ids))}) AND status = 'pruned'", list(ids))]
            if not still:
                return 0, 0
            m = marks(len(still))
            edges = c.execute(f"DELETE FROM edges WHERE src_id IN ({m})", still).rowcount
            edges += c.execute(f"DELETE FROM edges WHERE dst_id IN ({m})", still).rowcount
            if vec:
                c.execute(f"DELETE FROM {VEC_TABLE} WHERE id IN ({m})", still)
            rows = c.execute(f"DELETE FROM nodes WHERE id IN ({m})", still).rowcount
        return rows, edges

    def trim_transitions(self, before_ms: int, limit: int) -> int:
        """Delete up to ``limit`` of the oldest status-log rows written before ``before_ms``."""
        with self.tx() as c:
            return c.execute("DELETE FROM transitions WHERE seq IN "
                             "(SELECT seq FROM transitions ORDER BY seq LIMIT ?) AND at < ?",
                             (limit, before_ms)).rowcount

    # -- space ----------------------------------------------------------------------------------------
    def _pragma(self, name: str) -> int:
        return int(self.query_one(f"PRAGMA {name}")[0])  # type: ignore[index]

    def used_bytes(self) -> int:
        """Bytes of pages in use: the file minus its free list (free pages are reclaimable, not used)."""
        page_size, pages, free = (self._pragma(p) for p in ("page_size", "page_count", "freelist_count"))
        return (pages - free) * page_size

    def free_pages(self) -> int:
        return self._pragma("freelist_count")

    def reclaims_incrementally(self) -> bool:
        """Whether the store was created with ``auto_vacuum=INCREMENTAL`` (older stores need a full VACUUM)."""
        return self._pragma("auto_vacuum") == 2

    def release_free_pages(self, pages: int) -> None:
        """Give up to ``pages`` free pages back to the file system (``PRAGMA incremental_vacuum``)."""
        with self.tx() as c:
            c.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()

    def merge_keyword_index(self, pages: int) -> bool:
        """One bounded FTS5 segment merge (a negative page count works even with few segments), so deleted
        rows' tombstones go; returns whether it merged anything."""
        with self.tx() as c:
            before = self.conn.total_changes
            c.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('merge', ?)", (-int(pages),))
            return self.conn.total_changes - before > 1  # the command row itself is one change

    def record_sample(self, name: str, at: int, value: int, *, keep_from: int) -> None:
        """Store the sample ``name`` at ``at`` (a later one at the same ``at`` wins) and drop that series'
        samples older than ``keep_from``."""
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO samples(name, at, value) VALUES (?, ?, ?)", (name, at, value))
            c.execute("DELETE FROM samples WHERE name = ? AND at < ?", (name, keep_from))

    # -- file sources (the staleness walker's list of files to stat) -----------------------------------
    def has_file_sources(self) -> bool:
        return self.query_one("SELECT 1 FROM file_sources LIMIT 1") is not None

    def file_sources_after(self, cursor: str, limit: int) -> list[tuple[Any, ...]]:
        """Up to ``limit`` file sources ``(key, size, mtime_ns)`` with keys after ``cursor``, in key order."""
        return self.query("SELECT key, size, mtime_ns FROM file_sources WHERE key > ? ORDER BY key LIMIT ?",
                          (cursor, limit))

    def nodes_with_source_in(self, first_key: str, last_key: str) -> list[tuple[Any, ...]]:
        """``(id, source_uri, mtime, status, kind)`` of every node whose source URI sorts from ``first_key``
        to ``last_key`` and its chunks (``'$'`` sorts right after ``'#'``): one range scan of the index."""
        return self.query("SELECT id, source_uri, mtime, status, kind FROM nodes "
                          "WHERE source_uri >= ? AND source_uri < ?", (first_key, last_key + "$"))

    def note_file_checks(self, seen: Sequence[tuple[int, int, int, str]]) -> None:
        """Record ``(size, mtime_ns, checked_at, key)`` for files just stat-ed."""
        with self.tx() as c:
            c.executemany("UPDATE file_sources SET size = ?, mtime_ns = ?, checked_at = ? WHERE key = ?", seen)

    def forget_file_sources(self, keys: Sequence[str]) -> None:
        """Drop file sources no node refers to any more (re-checked here: a chunk captured meanwhile keeps
        its source)."""
        with self.tx() as c:
            c.executemany("DELETE FROM file_sources WHERE key = ? AND NOT EXISTS (SELECT 1 FROM nodes "
                          "WHERE source_uri = ? OR (source_uri >= ? AND source_uri < ?))",
                          [(k, k, k + "#", k + "$") for k in keys])
