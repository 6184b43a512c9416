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
4. Free pages go back to the OS with ``PRAGMA incremental_vacuum`` (stores created by memtree use
   ``auto_vacuum=INCREMENTAL``), at most ``VACUUM_PAGES_PER_RUN`` pages a run; FTS segments get a bounded
   ``merge`` after deletions so the keyword index shrinks too.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from memtree_core.store import Store, now_ms
from memtree_plugins.walkers._common import CHUNK, add, move_still

if TYPE_CHECKING:
    from memtree_core.context import Context

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


def fts_merge(store: Store, rounds: int) -> int:
    """Bounded FTS segment merging, one short transaction per round; returns rounds that did work."""
    worked = 0
    for _ in range(rounds):
        if not store.merge_keyword_index(FTS_MERGE_PAGES):
            break
        worked += 1
    return worked


def delete_pruned(store: Store, ids: list[str]) -> tuple[int, int]:
    """Delete rows that are (still) pruned, their edges both ways and their vectors; return (rows, edges)."""
    rows = edges = 0
    for i in range(0, len(ids), CHUNK):
        r, e = store.delete_still_pruned(ids[i:i + CHUNK])
        rows += r
        edges += e
        time.sleep(0.001)  # let a waiting search take the store's lock between chunks
    return rows, edges


SIZE_SAMPLE = "store_bytes"


def record_size(store: Store, now: int, horizon: int) -> None:
    """This hour's sample of the store's size on disk (the file and its write-ahead log; the last run of the
    hour wins), and samples older than the retention horizon removed."""
    store.record_sample(SIZE_SAMPLE, now // HOUR_MS * HOUR_MS, store.disk_bytes(), keep_from=horizon)


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
            ids = store.oldest_in_status(status_, budget, updated_before=now - int(age_ms))
            moved = move_still(store, ids, (status_,), "pruned", f"pruner:{status_} for {label}")
            add(counters, f"pruned_{status_}", len(moved))

        horizon = now - int(ret.pruned_days * DAY_MS)
        rows, edges = delete_pruned(store, store.oldest_in_status("pruned", budget, updated_before=horizon))
        add(counters, "deleted_rows", rows)
        add(counters, "deleted_edges", edges)
        add(counters, "transitions_trimmed", store.trim_transitions(horizon, budget))

        if ret.max_store_mb > 0:
            self._cap(store, int(ret.max_store_mb * 1_000_000), budget, counters)

        if counters.get("pruned_stale") or counters.get("pruned_superseded"):
            add(counters, "fts_merges", fts_merge(store, FTS_MERGE_ROUNDS))
        add(counters, "vacuumed_pages", self._vacuum(store))
        record_size(store, now, horizon)
        return counters

    def _cap(self, store: Store, cap: int, budget: int, counters: dict[str, int]) -> None:
        steps: list[tuple[str, str | None]] = [("pruned", None), ("stale", None), ("superseded", None)]
        steps += [("live", kind) for kind in EVICTABLE_LIVE_KINDS]
        left = budget
        for status_, kind in steps:
            while left > 0 and (used := store.used_bytes()) > cap:
                # Evict about what the excess is worth at the average row size, not a fixed chunk.
                rows_total = store.node_count() or 1
                want = math.ceil((used - cap) / max(1, used // rows_total))
                ids = store.oldest_in_status(status_, max(1, min(CHUNK, left, want)), kind=kind)
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
        if left > 0 and store.used_bytes() > cap:
            add(counters, "cap_unreachable")
            log.warning("store is above retention.maxStoreMb (%.1f MB used, cap %.1f MB) and only live files, "
                        "chunks, notes and summaries remain; raise the cap or remove the store",
                        store.used_bytes() / 1e6, cap / 1e6)

    def _vacuum(self, store: Store) -> int:
        if not store.reclaims_incrementally():
            return 0  # a store created before memtree set INCREMENTAL: a full VACUUM is the user's call
        freed = 0
        while freed < VACUUM_PAGES_PER_RUN:
            free = store.free_pages()
            if not free:
                break
            step = min(free, VACUUM_STEP, VACUUM_PAGES_PER_RUN - freed)
            store.release_free_pages(step)
            after = store.free_pages()
            if after >= free:
                break
            freed += free - after
        return freed
