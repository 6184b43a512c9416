"""The ``pruner`` walker: retention horizons, the audit horizon, the size cap and space reclaim.

Each run, in short transactions of at most 100 rows (``CHUNK``), each phase bounded by ``walkers.pruneBatchRows``:

1. ``stale`` nodes not updated for ``retention.staleHours`` and ``superseded`` ones not updated for
   ``retention.supersededDays`` -> ``pruned`` (the FTS trigger removes them from ``nodes_fts``; their
   ``nodes_vec`` rows are deleted here).  The row stays, for audit.
2. ``pruned`` rows older than ``retention.prunedDays`` (the audit horizon) are deleted with their edges;
   the ``transitions`` log is trimmed to the same horizon.
3. Size cap ``retention.maxStoreMb`` (0 = none), measured as pages in use (the file minus its free list):
   above it, evict — oldest first within each step — (a) pruned rows, (b) stale, then superseded nodes,
   (c) live ``tool_output`` nodes.  Evicted nodes go through ``pruned`` (reason ``pruner:size cap``, so the
   transitions log says what left) and are deleted at once.  Live files and file chunks, notes,
   observations and summaries are never evicted: chunks are what ``read`` reuses and what search is for,
   the others were written on purpose; when only they remain, ``cap_unreachable`` is counted and logged.
4. Free pages go back to the OS through ``store.maintain(reclaim_pages=...)`` (SQLite's ``PRAGMA
   incremental_vacuum``: stores created by memtree use ``auto_vacuum=INCREMENTAL``), at most
   ``VACUUM_PAGES_PER_RUN`` pages a run; the keyword index gets a bounded merge after deletions
   (``store.maintain(merge_index_pages=...)``, an FTS5 ``merge``) so it shrinks too.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from memtree_core.store import now_ms
from memtree_plugins.walkers._common import CHUNK, add, move_still
from memtree_plugins.walkers.queries import (
    delete_still_pruned,
    node_count,
    oldest_in_status,
    record_sample,
    trim_transitions,
)

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess

log = logging.getLogger("memtree.walkers.pruner")

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
VACUUM_PAGES_PER_RUN = 20_000
VACUUM_STEP = 1_000
# FTS5 deletes leave tombstones until segments merge; a negative 'merge' works even with few segments.
FTS_MERGE_PAGES = 200
FTS_MERGE_ROUNDS = 10
# Kinds the size cap may evict while they are live, oldest first.
EVICTABLE_LIVE_KINDS = ("tool_output",)


def fts_merge(store: StoreAccess, rounds: int) -> int:
    """Bounded FTS segment merging, one short transaction per round; returns rounds that did work."""
    worked = 0
    for _ in range(rounds):
        if not store.maintain(merge_index_pages=FTS_MERGE_PAGES).index_merged:
            break
        worked += 1
    return worked


def delete_pruned(store: StoreAccess, ids: list[str]) -> tuple[int, int]:
    """Delete rows that are (still) pruned, their edges both ways and their vectors; return (rows, edges)."""
    rows = edges = 0
    for i in range(0, len(ids), CHUNK):
        r, e = delete_still_pruned(store, ids[i:i + CHUNK])
        rows += r
        edges += e
        time.sleep(0.001)  # let a waiting search take the store's lock between chunks
    return rows, edges


SIZE_SAMPLE = "store_bytes"


def record_size(store: StoreAccess, now: int, horizon: int) -> None:
    """This hour's sample of the store's size on disk (the file and its write-ahead log; the last run of the
    hour wins), and samples older than the retention horizon removed."""
    record_sample(store, SIZE_SAMPLE, now // HOUR_MS * HOUR_MS, store.maintain().disk_bytes, keep_from=horizon)


class Pruner:
    name = "pruner"
    trigger = "interval"

    def interval_s(self, app: Context) -> float:
        return app.plugin_settings("walkers").walkers.pruner_interval_ms / 1000

    def has_work(self, app: Context) -> bool:
        return True

    def run(self, app: Context) -> dict[str, int]:
        store = app.store
        own = app.plugin_settings("walkers")
        ret = own.retention
        budget = own.walkers.prune_batch_rows
        now = now_ms()
        counters: dict[str, int] = {}

        for status_, age_ms, label in (("stale", ret.stale_hours * HOUR_MS, f"{ret.stale_hours:g}h"),
                                       ("superseded", ret.superseded_days * DAY_MS, f"{ret.superseded_days:g}d")):
            ids = oldest_in_status(store, status_, budget, updated_before=now - int(age_ms))
            moved = move_still(store, ids, (status_,), "pruned", f"pruner:{status_} for {label}")
            add(counters, f"pruned_{status_}", len(moved))

        horizon = now - int(ret.pruned_days * DAY_MS)
        rows, edges = delete_pruned(store, oldest_in_status(store, "pruned", budget, updated_before=horizon))
        add(counters, "deleted_rows", rows)
        add(counters, "deleted_edges", edges)
        add(counters, "transitions_trimmed", trim_transitions(store, horizon, budget))

        if ret.max_store_mb > 0:
            self._cap(store, int(ret.max_store_mb * 1_000_000), budget, counters)

        if counters.get("pruned_stale") or counters.get("pruned_superseded"):
            add(counters, "fts_merges", fts_merge(store, FTS_MERGE_ROUNDS))
        add(counters, "vacuumed_pages", self._vacuum(store))
        record_size(store, now, horizon)
        return counters

    def _cap(self, store: StoreAccess, cap: int, budget: int, counters: dict[str, int]) -> None:
        steps: list[tuple[str, str | None]] = [("pruned", None), ("stale", None), ("superseded", None)]
        steps += [("live", kind) for kind in EVICTABLE_LIVE_KINDS]
        left = budget
        for status_, kind in steps:
            while left > 0 and (used := store.maintain().used_bytes) > cap:
                # Evict about what the excess is worth at the average row size, not a fixed chunk.
                rows_total = node_count(store) or 1
                want = math.ceil((used - cap) / max(1, used // rows_total))
                ids = oldest_in_status(store, status_, max(1, min(CHUNK, left, want)), kind=kind)
                if not ids:
                    break
                if status_ != "pruned":
                    ids = move_still(store, ids, (status_,), "pruned", "pruner:size cap")
                rows, edges = delete_pruned(store, ids)
                add(counters, "evicted", rows)
                add(counters, f"evicted_{status_}", rows)
                add(counters, "deleted_edges", edges)
                if status_ != "pruned":  # these just left the FTS index: let its space go too
                    add(counters, "fts_merges", fts_merge(store, 2))
                left -= max(len(ids), 1)
        if left > 0 and (used := store.maintain().used_bytes) > cap:
            add(counters, "cap_unreachable")
            log.warning("store is above retention.maxStoreMb (%.1f MB used, cap %.1f MB) and only live files, "
                        "chunks, notes and summaries remain; raise the cap or remove the store",
                        used / 1e6, cap / 1e6)

    def _vacuum(self, store: StoreAccess) -> int:
        # A store created before memtree set auto_vacuum=INCREMENTAL reclaims nothing here: a full VACUUM is
        # the user's call.
        freed = 0
        while freed < VACUUM_PAGES_PER_RUN:
            step = store.maintain(reclaim_pages=min(VACUUM_STEP, VACUUM_PAGES_PER_RUN - freed)).reclaimed_pages
            if not step:
                break
            freed += step
        return freed
