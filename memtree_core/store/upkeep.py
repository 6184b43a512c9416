"""The store's upkeep: :meth:`Upkeep.maintain`, the one generic step of space upkeep (keyword-index merge,
free pages back to the file system) and the space figures a size cap compares; the SQL helpers ``marks`` and
``batches``; and two facts about the connection.

What to delete or trim, and when, is the plugins' business (the pruner's queries are in
``memtree_plugins/walkers/queries.py``); only the SQLite specifics of reclaiming space stay behind here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any


@dataclass(frozen=True)
class Space:
    """What the store takes, measured after a :meth:`Upkeep.maintain` step, and what that step did."""

    used_bytes: int  # pages in use: the file minus its free list (free pages are reclaimable, not used)
    disk_bytes: int  # the store's files as they take space on disk (with the write-ahead log)
    free_pages: int  # pages the next reclaim could give back
    reclaimed_pages: int = 0  # given back to the file system by this step
    index_merged: bool = False  # whether this step's keyword-index merge did any work


def marks(n: int) -> str:
    return ",".join("?" * n)


def batches(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    """``items`` in slices of ``size``: an ``IN (...)`` list stays far below SQLite's limit on parameters."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


class Upkeep:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``path``, ``conn``, ``tx`` and
    ``query``."""

    path: Path
    conn: Any

    if TYPE_CHECKING:
        def tx(self) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def query_one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...


    # -- space ----------------------------------------------------------------------------------------
    def _pragma(self, name: str) -> int:
        return int(self.query_one(f"PRAGMA {name}")[0])  # type: ignore[index]

    def _disk_bytes(self) -> int:
        """The store file and its write-ahead log, as they take space on disk."""
        total = 0
        for path in (self.path, Path(f"{self.path}-wal")):
            try:
                total += path.stat().st_size
            except OSError:  # no write-ahead log right now
                pass
        return total

    def maintain(self, *, merge_index_pages: int = 0, reclaim_pages: int = 0) -> Space:
        """One bounded step of space upkeep, then what the store takes (with no arguments: only that).

        ``merge_index_pages``: merge the keyword index's segments by about that much work, so deleted
        rows' entries go (here one FTS5 ``merge``; a negative page count works even with few segments).
        ``reclaim_pages``: give up to that many free pages back to the file system (here ``PRAGMA
        incremental_vacuum``, on a store created with ``auto_vacuum=INCREMENTAL``; an older one needs a
        full VACUUM, which is the user's call, and reclaims nothing here).  A backend that keeps its space
        some other way may skip both steps (PostgreSQL's autovacuum) or run its own (``VACUUM``), reporting
        what it reclaimed; the figures are always measured.  Each step is one short transaction: the caller
        bounds the work and loops."""
        merged = reclaimed = 0
        if merge_index_pages > 0:
            with self.tx() as c:
                before = self.conn.total_changes
                c.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('merge', ?)", (-int(merge_index_pages),))
                merged = self.conn.total_changes - before > 1  # the command row itself is one change
        if reclaim_pages > 0 and self._pragma("auto_vacuum") == 2 and (free := self._pragma("freelist_count")):
            with self.tx() as c:
                c.execute(f"PRAGMA incremental_vacuum({min(free, int(reclaim_pages))})").fetchall()
            reclaimed = max(0, free - self._pragma("freelist_count"))
        page_size, pages, free = (self._pragma(p) for p in ("page_size", "page_count", "freelist_count"))
        return Space((pages - free) * page_size, self._disk_bytes(), free, reclaimed, bool(merged))

