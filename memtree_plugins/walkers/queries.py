"""The walkers' own queries, over the store's generic API (``query``, ``query_one``, ``execute``, ``tx``).

Each does one statement's (or one short transaction's) worth of work: the caller decides how many rows a
step takes, so the walkers keep their own budgets and pauses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memtree_core.store import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.upkeep import batches, marks

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess



# -- statuses (filter, pruner) ------------------------------------------------------------------------
def status_of(store: StoreAccess, node_id: str) -> str | None:
    row = store.query_one("SELECT status FROM nodes WHERE id = ?", (node_id,))
    return row[0] if row else None


def has_pending(store: StoreAccess) -> bool:
    return store.query_one("SELECT 1 FROM nodes WHERE status = 'pending' LIMIT 1") is not None


def oldest_pending(store: StoreAccess, limit: int) -> list[NodeRow]:
    """Up to ``limit`` pending captures, least recently updated first."""
    return [row_to_node(r) for r in store.query(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE status = 'pending' ORDER BY updated_at, id LIMIT ?", (limit,))]


def oldest_in_status(store: StoreAccess, status_: str, limit: int, *, updated_before: int | None = None,
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
    return [r[0] for r in store.query(sql + " ORDER BY updated_at LIMIT ?", (*params, limit))]


def node_count(store: StoreAccess) -> int:
    row = store.query_one("SELECT count(*) FROM nodes")
    return int(row[0]) if row else 0


# -- deleting (pruner) --------------------------------------------------------------------------------
def delete_still_pruned(store: StoreAccess, ids: Sequence[str]) -> tuple[int, int]:
    """Delete those of ``ids`` that are (still) ``pruned``, with their edges both ways and their vectors,
    in one transaction; returns (rows, edges) deleted."""
    if not ids:
        return 0, 0
    with store.tx():
        still = [r[0] for r in store.query(
            f"SELECT id FROM nodes WHERE id IN ({marks(len(ids))}) AND status = 'pruned'", list(ids))]
        if not still:
            return 0, 0
        m = marks(len(still))
        edges = store.execute(f"DELETE FROM edges WHERE src_id IN ({m})", still)
        edges += store.execute(f"DELETE FROM edges WHERE dst_id IN ({m})", still)
        store.vector_delete(still)
        rows = store.execute(f"DELETE FROM nodes WHERE id IN ({m})", still)
    return rows, edges


def trim_transitions(store: StoreAccess, before_ms: int, limit: int) -> int:
    """Delete up to ``limit`` of the oldest status-log rows written before ``before_ms``."""
    return store.execute("DELETE FROM transitions WHERE seq IN "
                         "(SELECT seq FROM transitions ORDER BY seq LIMIT ?) AND at < ?", (limit, before_ms))


def record_sample(store: StoreAccess, name: str, at: int, value: int, *, keep_from: int) -> None:
    """Store the sample ``name`` at ``at`` (a later one at the same ``at`` wins) and drop that series'
    samples older than ``keep_from``."""
    with store.tx():
        store.execute("INSERT INTO samples(name, at, value) VALUES (?, ?, ?) "
                      "ON CONFLICT (name, at) DO UPDATE SET value = excluded.value", (name, at, value))
        store.execute("DELETE FROM samples WHERE name = ? AND at < ?", (name, keep_from))


# -- file sources (the staleness walker's list of files to stat) ---------------------------------------
# ``machine`` is the store's (``store.machine``): "" on a store of one machine, whose checks are kept in
# ``file_sources`` itself; on a store machines share, each machine's in ``file_checks`` (docs/postgresql.md,
# "Staleness per checkout").
# A node of another machine: its metadata records one, and not ``machine``.  The store writes the key as
# compact JSON (``"machine":"<id>"``; an id needs no escaping), so plain text matching finds it: a tenth of
# the server's time of json_extract, which parses every row's metadata.
OTHER_MACHINE = "CASE WHEN metadata LIKE '%\"machine\":\"%' AND metadata NOT LIKE ? THEN 1 ELSE 0 END"


def _recorded(machine: str) -> str:
    """The ``LIKE`` pattern of metadata that records ``machine``."""
    return f'%"machine":"{machine}"%'


def has_file_sources(store: StoreAccess) -> bool:
    return store.query_one("SELECT 1 FROM file_sources LIMIT 1") is not None


def file_sources_after(store: StoreAccess, cursor: str, limit: int,
                       machine: str = "") -> list[tuple[Any, ...]]:
    """Up to ``limit`` file sources ``(key, size, mtime_ns)`` with keys after ``cursor``, in key order: the
    size and mtime ``machine`` saw at its last check of the file (None before its first)."""
    if not machine:
        return store.query("SELECT key, size, mtime_ns FROM file_sources WHERE key > ? ORDER BY key LIMIT ?",
                           (cursor, limit))
    return store.query("SELECT s.key, c.size, c.mtime_ns FROM file_sources s LEFT JOIN file_checks c "
                       "ON c.machine = ? AND c.key = s.key WHERE s.key > ? ORDER BY s.key LIMIT ?",
                       (machine, cursor, limit))


def nodes_with_source_in(store: StoreAccess, first_key: str, last_key: str,
                         machine: str = "") -> list[tuple[Any, ...]]:
    """``(id, source_uri, mtime, status, kind, other)`` of every node whose source URI sorts from
    ``first_key`` to ``last_key`` and its chunks (``'$'`` sorts right after ``'#'``): one range scan of the
    index.  ``other`` is 1 for a node of a machine other than ``machine`` (only ever on a store machines
    share), else 0."""
    if not machine:
        return store.query("SELECT id, source_uri, mtime, status, kind, 0 FROM nodes "
                           "WHERE source_uri >= ? AND source_uri < ?", (first_key, last_key + "$"))
    return store.query(f"SELECT id, source_uri, mtime, status, kind, {OTHER_MACHINE} FROM nodes "
                       "WHERE source_uri >= ? AND source_uri < ?",
                       (_recorded(machine), first_key, last_key + "$"))


def note_file_checks(store: StoreAccess, seen: Sequence[tuple[int, int, int, str]],
                     machine: str = "") -> None:
    """Record ``(size, mtime_ns, checked_at, key)`` for files ``machine`` just stat-ed."""
    with store.tx():
        for size, mtime_ns, at, key in seen:
            if not machine:
                store.execute("UPDATE file_sources SET size = ?, mtime_ns = ?, checked_at = ? WHERE key = ?",
                              (size, mtime_ns, at, key))
            else:
                store.execute("INSERT INTO file_checks(machine, key, size, mtime_ns, checked_at) "
                              "VALUES (?, ?, ?, ?, ?) ON CONFLICT (machine, key) DO UPDATE SET "
                              "size = excluded.size, mtime_ns = excluded.mtime_ns, "
                              "checked_at = excluded.checked_at", (machine, key, size, mtime_ns, at))


def forget_file_sources(store: StoreAccess, keys: Sequence[str], machine: str = "") -> None:
    """Drop file sources no node refers to any more (re-checked here: a chunk captured meanwhile keeps
    its source), with every machine's checks of them."""
    with store.tx():
        for k in keys:
            store.execute("DELETE FROM file_sources WHERE key = ? AND NOT EXISTS (SELECT 1 FROM nodes "
                          "WHERE source_uri = ? OR (source_uri >= ? AND source_uri < ?))", (k, k, k + "#", k + "$"))
            if machine:
                store.execute("DELETE FROM file_checks WHERE key = ? AND NOT EXISTS "
                              "(SELECT 1 FROM file_sources WHERE key = ?)", (k, k))


# -- captures and files (backfill, repo_index) --------------------------------------------------------
def ids_with_tool_use(store: StoreAccess, tool_use_ids: Sequence[str]) -> set[str]:
    """Which of these tool-use ids some node (of any status) already carries in its metadata."""
    wanted = list(dict.fromkeys(tool_use_ids))
    found: set[str] = set()
    for part in batches(wanted):
        found.update(r[0] for r in store.query(
            f"SELECT json_extract(metadata, '$.tool_use_id') FROM nodes "
            f"WHERE json_extract(metadata, '$.tool_use_id') IN ({marks(len(part))})", part))
    return found


def live_file_versions(store: StoreAccess, uri_from: str, uri_to: str) -> list[tuple[str, int | None, int | None]]:
    """``(source_uri, mtime, size)`` of every live ``file`` node with a source URI in ``[uri_from,
    uri_to)`` (one range scan of the source index); on a store machines share, this machine's (and those
    that record none): another checkout's versions are not this one's."""
    if not store.machine:
        return store.query(  # type: ignore[return-value]
            "SELECT source_uri, mtime, json_extract(metadata, '$.size') FROM nodes WHERE kind = 'file' AND "
            "status = 'live' AND source_uri >= ? AND source_uri < ?", (uri_from, uri_to))
    return store.query(  # type: ignore[return-value]
        "SELECT source_uri, mtime, json_extract(metadata, '$.size') FROM nodes WHERE kind = 'file' AND "
        f"status = 'live' AND source_uri >= ? AND source_uri < ? AND {OTHER_MACHINE} = 0",
        (uri_from, uri_to, _recorded(store.machine)))
