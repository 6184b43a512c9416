"""What the inspector's pages read from the store: every query is bounded (a page of rows, a window of the
newest rows, or an index range), so a page costs the same on a store of 1k or 1M nodes.

Bounds that show on a page are named here (``PAGE``, ``SESSION_WINDOW``...) and the pages say them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memtree_core.store import NODE_COLUMNS, NodeRow, Store, row_to_node

_N_COLUMNS = ", ".join(f"n.{c.strip()}" for c in NODE_COLUMNS.split(","))
PAGE = 50  # rows per page of a listing
CHILDREN_SHOWN = 6  # children listed under a tool call in the tree (the node page lists them all, paged)
COUNT_CAP = 10_000  # counts above this show as "10000+": counting more costs more than it tells
SESSION_WINDOW = 2_000  # the session list is made from the newest tool calls
SESSION_SCAN = 5_000  # a session filter looks through at most this many roots per page
TRANSITIONS_WINDOW = 10_000  # walker activity over time: the newest status changes
CHAIN_MAX = 50  # supersedes chains, each way
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass
class Cursor:
    """A position in a newest-first listing: (created_at, id) of the last row shown."""

    created_at: int
    id: str

    def token(self) -> str:
        return f"{self.created_at}.{self.id}"

    @classmethod
    def parse(cls, value: str | None) -> Cursor | None:
        if not value:
            return None
        at, _, nid = value.partition(".")
        try:
            return cls(int(at), nid)
        except ValueError:
            return None


def _meta(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _bounded_count(store: Store, sql: str, params: Iterable[Any], cap: int = COUNT_CAP) -> int:
    row = store.query_one(f"SELECT count(*) FROM ({sql} LIMIT ?)", [*params, cap + 1])
    return int(row[0]) if row else 0


# -- tree: sessions -> tool calls -> outputs -> chunks ------------------------------------------------------
@dataclass
class Root:
    """A node with no parent: a captured tool call, a wrapped tool's output, a read file, a note..."""

    node: NodeRow
    meta: dict[str, Any]
    children: list[NodeRow] = field(default_factory=list)
    child_count: int = 0

    @property
    def session(self) -> str:
        value = self.meta.get("session_id")
        return value if isinstance(value, str) else ""


@dataclass
class RootsPage:
    roots: list[Root]
    next_cursor: Cursor | None
    scanned_all: bool = True  # False when a session filter stopped at SESSION_SCAN roots


def roots_page(store: Store, before: Cursor | None = None, session: str | None = None,
               limit: int = PAGE) -> RootsPage:
    """Root nodes newest first, from ``before`` on (the ``nodes_created_parent`` index walked backwards)."""
    # ``|| ''`` keeps the planner off nodes_parent (half the store has no parent; it would sort them all)
    # and on nodes_created_parent, walked backwards from the cursor until the page is full (SQLite's unary +
    # does the same; PostgreSQL has no unary + for text).
    where, params = ["parent_id || '' IS NULL"], []
    if before is not None:
        # (the first term is the index range; an OR alone would make SQLite scan the index from the top)
        where.append("created_at <= ? AND (created_at < ? OR id < ?)")
        params += [before.created_at, before.created_at, before.id]
    order = "ORDER BY created_at DESC, id DESC"
    scanned_all = True
    window_end: Cursor | None = None
    if session:
        # Sessions live in the metadata JSON, which no index covers: look through a bounded window of roots
        # (the LIKE is a cheap prefilter; the JSON check is exact).
        inner = f"SELECT rowid AS r, created_at AS c, id AS i FROM nodes WHERE {' AND '.join(where)} {order} LIMIT ?"
        rows = store.query(
            f"SELECT {_N_COLUMNS} FROM ({inner}) w JOIN nodes n ON n.rowid = w.r "
            "WHERE n.metadata LIKE ? AND json_extract(n.metadata, '$.session_id') = ? "
            "ORDER BY w.c DESC, w.i DESC LIMIT ?",
            [*params, SESSION_SCAN, f"%{_like_escape(session)}%", session, limit + 1])
        if len(rows) <= limit:
            # Fewer matches than a page: either the window held every remaining root, or the next page
            # goes on from the last root looked at.
            last = store.query_one(f"SELECT c, i FROM ({inner}) ORDER BY c, i LIMIT 1", [*params, SESSION_SCAN])
            total = _bounded_count(store, f"SELECT 1 FROM nodes WHERE {' AND '.join(where)}", params,
                                   SESSION_SCAN)
            if total > SESSION_SCAN and last is not None:
                scanned_all = False
                window_end = Cursor(int(last[0]), str(last[1]))
    else:
        rows = store.query(f"SELECT {NODE_COLUMNS} FROM nodes WHERE {' AND '.join(where)} {order} LIMIT ?",
                           [*params, limit + 1])
    nodes = [row_to_node(r) for r in rows]
    more = len(nodes) > limit
    nodes = nodes[:limit]
    roots = [Root(n, _meta(n.metadata)) for n in nodes]
    for root in roots:
        root.children = [row_to_node(r) for r in store.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE parent_id = ? ORDER BY rowid LIMIT ?",
            (root.node.id, CHILDREN_SHOWN))]
        root.child_count = len(root.children) if len(root.children) < CHILDREN_SHOWN else _bounded_count(
            store, "SELECT 1 FROM nodes WHERE parent_id = ?", [root.node.id])
    nxt = Cursor(nodes[-1].created_at, nodes[-1].id) if more and nodes else window_end
    return RootsPage(roots, nxt, scanned_all)


def _like_escape(text: str) -> str:
    # As the store writes metadata (ensure_ascii=False).  LIKE without ESCAPE: % and _ in a session id only
    # widen the prefilter; the JSON check is exact.
    return json.dumps(text, ensure_ascii=False)[1:-1]


@dataclass
class SessionRow:
    session: str
    calls: int
    first: int
    last: int


def recent_sessions(store: Store) -> list[SessionRow]:
    """Sessions among the newest ``SESSION_WINDOW`` root nodes, newest first."""
    rows = store.query(
        "SELECT json_extract(metadata, '$.session_id') AS s, count(*), min(created_at), max(created_at) "
        "FROM (SELECT metadata, created_at FROM nodes WHERE parent_id || '' IS NULL ORDER BY created_at DESC LIMIT ?) w "
        "GROUP BY s ORDER BY max(created_at) DESC", (SESSION_WINDOW,))
    return [SessionRow(s if isinstance(s, str) else "", int(n), int(a), int(b)) for s, n, a, b in rows]


# -- files -> chunks -----------------------------------------------------------------------------------------
@dataclass
class FileRow:
    key: str
    size: int | None
    mtime_ns: int | None
    checked_at: int | None
    statuses: dict[str, int] = field(default_factory=dict)


def _file_range(key: str) -> tuple[str, list[Any]]:
    """The nodes of one source file: its own URI, and its chunks ``key#...`` ('$' sorts right after '#')."""
    return "(source_uri = ? OR (source_uri >= ? AND source_uri < ?))", [key, key + "#", key + "$"]


def files_page(store: Store, after: str | None = None, prefix: str | None = None,
               limit: int = PAGE) -> tuple[list[FileRow], str | None]:
    """Source files in URI order from ``after``, each with its nodes counted by status."""
    where, params = ["1 = 1"], []  # (not a bare 1: PostgreSQL's AND takes no integer)
    if after:
        where.append("key > ?")
        params.append(after)
    if prefix:
        where.append("key >= ? AND key < ?")
        params += [prefix, prefix + "\U0010ffff"]
    rows = store.query(f"SELECT key, size, mtime_ns, checked_at FROM file_sources WHERE {' AND '.join(where)} "
                       "ORDER BY key LIMIT ?", [*params, limit + 1])
    files = [FileRow(*r) for r in rows[:limit]]
    for f in files:
        cond, p = _file_range(f.key)
        f.statuses = dict(store.query(
            f"SELECT status, count(*) FROM (SELECT status FROM nodes WHERE {cond} LIMIT ?) GROUP BY status",
            [*p, COUNT_CAP]))
    return files, (files[-1].key if len(rows) > limit and files else None)


def file_info(store: Store, key: str) -> FileRow | None:
    row = store.query_one("SELECT key, size, mtime_ns, checked_at FROM file_sources WHERE key = ?", (key,))
    return FileRow(*row) if row else None


def file_nodes(store: Store, key: str, after_rowid: int = 0, limit: int = PAGE) -> tuple[list[NodeRow], int | None]:
    """The nodes of one source file (the file node and its chunks, every status), oldest first."""
    cond, params = _file_range(key)
    rows = store.query(f"SELECT {NODE_COLUMNS} FROM nodes WHERE {cond} AND rowid > ? ORDER BY rowid LIMIT ?",
                       [*params, after_rowid, limit + 1])
    nodes = [row_to_node(r) for r in rows[:limit]]
    return nodes, (nodes[-1].rowid if len(rows) > limit and nodes else None)


# -- one node -----------------------------------------------------------------------------------------------
def children(store: Store, node_id: str, after_rowid: int = 0, limit: int = PAGE) -> tuple[list[NodeRow], int | None]:
    rows = store.query(f"SELECT {NODE_COLUMNS} FROM nodes WHERE parent_id = ? AND rowid > ? ORDER BY rowid LIMIT ?",
                       (node_id, after_rowid, limit + 1))
    nodes = [row_to_node(r) for r in rows[:limit]]
    return nodes, (nodes[-1].rowid if len(rows) > limit and nodes else None)


def transitions(store: Store, node_id: str, limit: int = PAGE) -> list[tuple[str | None, str, str, int]]:
    """The node's status changes, oldest first (the pruner trims them past its retention horizon)."""
    return [tuple(r) for r in store.query(  # type: ignore[misc]
        "SELECT from_status, to_status, reason, at FROM transitions WHERE node_id = ? ORDER BY seq LIMIT ?",
        (node_id, limit))]


def supersedes_chain(store: Store, node_id: str) -> tuple[list[str], list[str]]:
    """(newer, older): the nodes that supersede this one, newest last, and those it supersedes, in order.
    A ``supersedes`` edge goes from the newer node to the older one."""

    def walk(start: str, sql: str) -> list[str]:
        out: list[str] = []
        seen = {start}
        current = start
        while len(out) < CHAIN_MAX:
            row = store.query_one(sql, (current,))
            if row is None or row[0] in seen:
                break
            current = row[0]
            seen.add(current)
            out.append(current)
        return out

    newer = walk(node_id, "SELECT src_id FROM edges WHERE dst_id = ? AND kind = 'supersedes' ORDER BY src_id DESC LIMIT 1")
    older = walk(node_id, "SELECT dst_id FROM edges WHERE src_id = ? AND kind = 'supersedes' ORDER BY dst_id DESC LIMIT 1")
    return newer, older


# -- stats ------------------------------------------------------------------------------------------------
def per_bucket(store: Store, start_ms: int, end_ms: int, step_ms: int, roots_only: bool = False) -> dict[int, int]:
    """Nodes (or root nodes) created per bucket of ``step_ms`` from ``start_ms`` to ``end_ms``: one range
    count on the ``nodes_created_parent`` index per bucket (a GROUP BY over the same rows would sort them
    all in a temporary b-tree first: 5-10x slower on 100k nodes)."""
    first = start_ms - start_ms % step_ms
    cond = " AND parent_id || '' IS NULL" if roots_only else ""
    rows = store.query(
        "WITH RECURSIVE b(t) AS (SELECT ? UNION ALL SELECT t + ? FROM b WHERE t + ? <= ?) "
        f"SELECT t, (SELECT count(*) FROM nodes WHERE created_at >= t AND created_at < t + ?{cond}) FROM b",
        (first, step_ms, step_ms, end_ms, step_ms))
    return {int(t): int(n) for t, n in rows}


def newest_created(store: Store) -> int | None:
    row = store.query_one("SELECT max(created_at) FROM nodes")
    return int(row[0]) if row and row[0] is not None else None


def oldest_created(store: Store) -> int | None:
    row = store.query_one("SELECT min(created_at) FROM nodes")
    return int(row[0]) if row and row[0] is not None else None


def status_changes(store: Store, bucket_ms: int = DAY_MS) -> tuple[dict[tuple[int, str], int], int]:
    """Status changes other than creation among the newest ``TRANSITIONS_WINDOW`` (what the walkers did
    over time), per (bucket, change), and how many changes were looked at."""
    rows = store.query(
        "SELECT at / ? AS b, coalesce(from_status, '') || '->' || to_status, reason = 'created', count(*) FROM "
        "(SELECT at, from_status, to_status, reason FROM transitions ORDER BY seq DESC LIMIT ?) GROUP BY 1, 2, 3",
        (bucket_ms, TRANSITIONS_WINDOW))
    changes = {(int(b) * bucket_ms, str(k)): int(n) for b, k, created, n in rows if not created}
    return changes, sum(int(n) for *_x, n in rows)


def counter_groups(store: Store) -> dict[str, dict[str, int]]:
    """Counters by their first ``:`` part: ``redaction``, ``capture``, ``filter``, ``walker``, ``replace``..."""
    out: dict[str, dict[str, int]] = {}
    for name, value in store.counters().items():
        group, _, rest = name.partition(":")
        out.setdefault(group, {})[rest or group] = int(value)
    return out


def walker_meta(store: Store) -> dict[str, dict[str, str]]:
    """walker -> {last_run, last_error...} from the meta rows the coordinator keeps."""
    out: dict[str, dict[str, str]] = {}
    for key, value in store.query("SELECT key, value FROM meta WHERE key >= 'walker:' AND key < 'walker;'"):
        name, _, fieldname = key[len("walker:"):].rpartition(":")
        out.setdefault(name or fieldname, {})[fieldname if name else "value"] = value
    return out


def store_size(store: Store) -> dict[str, int]:
    """What the store takes on disk (its files: with SQLite's write-ahead log) and in use, in bytes, as the
    store measures it (``maintain()`` with no work to do only measures)."""
    space = store.maintain()
    return {"disk": space.disk_bytes, "used": space.used_bytes}


def size_samples(store: Store, since_ms: int) -> list[tuple[int, int]]:
    """(hour, bytes on disk) samples the pruner recorded since ``since_ms``, oldest first; none from a store
    older than the ``samples`` table (this connection is read-only: it never migrates; on a server the core
    tables are all there, see docs/postgresql.md)."""
    if store.dialect == "sqlite" and store.query_one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'samples'") is None:
        return []
    rows = store.query("SELECT at, value FROM samples WHERE name = 'store_bytes' AND at >= ? ORDER BY at",
                       (since_ms,))
    return [(int(at), int(value)) for at, value in rows]


def node_counts(store: Store) -> dict[str, dict[str, int]]:
    """kind -> status -> count (the ``nodes_status_kind`` index: no table rows read)."""
    out: dict[str, dict[str, int]] = {}
    for kind, st, n in store.query("SELECT kind, status, count(*) FROM nodes GROUP BY status, kind"):
        out.setdefault(kind, {})[st] = int(n)
    return out


def now_ms() -> int:
    return time.time_ns() // 1_000_000
