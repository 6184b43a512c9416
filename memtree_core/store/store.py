"""The SQLite store: one file per project, WAL, FTS5 kept in sync by triggers, sqlite-vec when it loads.

One ``Store`` object owns one connection guarded by a re-entrant lock, so the daemon's tool threads, the
ingest server and the walkers share it safely (MCP runs sync tools on worker threads).  Writes go through
:meth:`Store.tx`; every status change goes through :meth:`Store.transition`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtree_core.store import schema, status
from memtree_core.store.sqlite_route import Route, choose_route, load_vec
from memtree_core.store.symbols import symbol_text

KINDS = ("file_chunk", "tool_output", "summary", "note", "observation", "file")
EDGE_KINDS = ("derived_from", "references", "summarizes", "supersedes", "similar")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id() -> str:
    from ulid import ULID

    return str(ULID())


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def cap_text(text: str, max_bytes: int) -> tuple[str, bool, int]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes on a character boundary."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return text, False, len(raw)
    return raw[:max_bytes].decode("utf-8", "ignore"), True, len(raw)


@dataclass
class NodeRow:
    id: str
    parent_id: str | None
    kind: str
    source_uri: str | None
    content: str
    content_hash: str
    status: str
    mtime: int
    created_at: int
    updated_at: int
    truncated: int
    original_bytes: int
    metadata: str
    rowid: int = 0

    @property
    def meta(self) -> dict[str, Any]:
        try:
            value = json.loads(self.metadata or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


NODE_COLUMNS = ("id, parent_id, kind, source_uri, content, content_hash, status, mtime, created_at, "
                "updated_at, truncated, original_bytes, metadata, rowid")


def row_to_node(row: Sequence[Any]) -> NodeRow:
    return NodeRow(*row)


@dataclass(frozen=True)
class VectorStatus:
    available: bool
    reason: str
    route: str


class StoreError(Exception):
    """The store cannot be opened or used; the message says what to do."""


class Store:
    def __init__(self, path: Path, conn: Any, route: Route, vector: VectorStatus, max_bytes: int) -> None:
        self.path = path
        self.conn = conn
        self.route = route
        self.vector = vector
        self.max_bytes = max_bytes
        self.lock = threading.RLock()
        self._depth = 0

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str, *, max_bytes: int = 100_000, vectors: bool = True) -> Store:
        path = Path(path)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        route = choose_route()
        new = not path.exists()
        old_umask = os.umask(0o177)  # the db, -wal and -shm are born 0600
        try:
            conn = route.module.connect(str(path), timeout=10.0, isolation_level=None,
                                        check_same_thread=False)
        except Exception as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        finally:
            os.umask(old_umask)
        if new or path.stat().st_mode & 0o077:
            path.chmod(0o600)
        loaded, reason = load_vec(conn, route) if vectors else (False, "vector search not requested")
        store = cls(path, conn, route, VectorStatus(loaded, reason, route.name), max_bytes)
        store._configure()
        store._migrate()
        return store

    def _configure(self) -> None:
        c = self.conn
        c.execute("PRAGMA busy_timeout = 10000")
        if c.execute("PRAGMA auto_vacuum").fetchone()[0] == 0 and self._user_version() == 0:
            # Must be set before the first table exists *and* before journal_mode=WAL writes the header
            # (after it, SQLite silently keeps auto_vacuum=NONE); lets the pruner hand pages back to the OS.
            c.execute("PRAGMA auto_vacuum = INCREMENTAL")
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = NORMAL")
        c.execute("PRAGMA foreign_keys = OFF")
        c.execute("PRAGMA temp_store = MEMORY")
        # 2 GiB (the stdlib build's cap): a KNN pass reads every vector (~150 MB per 100k x 384 table), and
        # pages past the mmap window go through read() into a 2 MB page cache: 55 -> 40 ms p50 at 100k
        # (eval/bench/semantic.py).  Touched pages show in RSS as file-backed, reclaimable memory.
        c.execute("PRAGMA mmap_size = 2147418112")

    def _user_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        with self.lock:
            current = self._user_version()
            if current > schema.SCHEMA_VERSION:
                raise StoreError(f"the store at {self.path} has schema version {current}, newer than this "
                                 f"memtree understands ({schema.SCHEMA_VERSION}); upgrade memtree")
            for version in range(current, schema.SCHEMA_VERSION):
                with self.tx():
                    for stmt in schema.MIGRATIONS[version]:
                        if callable(stmt):
                            stmt(self.conn)
                        else:
                            self.conn.execute(stmt)
                    self.conn.execute(f"PRAGMA user_version = {version + 1}")
            if self.vector.available:
                with self.tx():
                    self.conn.execute(schema.VEC_TABLE)

    def close(self) -> None:
        with self.lock:
            try:
                self.conn.close()
            except Exception:
                pass

    # -- transactions and queries -------------------------------------------------------------------
    @contextmanager
    def tx(self) -> Iterator[Any]:
        """A write transaction (BEGIN IMMEDIATE); nested calls join the outer one."""
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple[Any, ...] | None:
        with self.lock:
            return self.conn.execute(sql, params).fetchone()

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        """Run one write statement in its own transaction (or the caller's); return rows changed."""
        with self.tx() as c:
            return c.execute(sql, params).rowcount

    # -- nodes ----------------------------------------------------------------------------------------
    def insert_node(self, kind: str, content: str, *, parent_id: str | None = None,
                    source_uri: str | None = None, status_: str = "pending", mtime: int = 0,
                    metadata: dict[str, Any] | None = None, node_id: str | None = None,
                    created_at: int | None = None) -> NodeRow:
        """Insert a node, capping content at ``max_bytes`` (``truncated``/``original_bytes`` say so)."""
        if status_ not in ("pending", "live"):
            raise status.IllegalTransition(f"a new node starts pending or live, not {status_!r}")
        text, truncated, original = cap_text(content, self.max_bytes)
        ts = created_at if created_at is not None else now_ms()
        node = NodeRow(node_id or new_id(), parent_id, kind, source_uri, text, content_hash(text), status_,
                       int(mtime), ts, ts, int(truncated), original,
                       json.dumps(metadata or {}, separators=(",", ":"), ensure_ascii=False))
        with self.tx() as c:
            cur = c.execute(
                "INSERT INTO nodes (id, parent_id, kind, source_uri, content, content_hash, status, mtime, "
                "created_at, updated_at, truncated, original_bytes, metadata, symbols) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (node.id, node.parent_id, node.kind, node.source_uri, node.content, node.content_hash,
                 node.status, node.mtime, node.created_at, node.updated_at, node.truncated,
                 node.original_bytes, node.metadata,
                 symbol_text(metadata) if kind == "file_chunk" and metadata else ""))
            node.rowid = cur.lastrowid or 0
            c.execute("INSERT INTO transitions (node_id, from_status, to_status, reason, at) VALUES (?,?,?,?,?)",
                      (node.id, None, status_, "created", ts))
        return node

    def get_node(self, node_id: str) -> NodeRow | None:
        row = self.query_one(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?", (node_id,))
        return row_to_node(row) if row else None

    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, NodeRow]:
        ids = list(dict.fromkeys(node_ids))
        out: dict[str, NodeRow] = {}
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            marks = ",".join("?" * len(part))
            for row in self.query(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id IN ({marks})", part):
                out[row[0]] = row_to_node(row)
        return out

    def update_metadata(self, node_id: str, changes: dict[str, Any]) -> None:
        with self.tx() as c:
            row = c.execute("SELECT metadata FROM nodes WHERE id = ?", (node_id,)).fetchone()
            if row is None:
                return
            meta = json.loads(row[0] or "{}")
            meta.update(changes)
            c.execute("UPDATE nodes SET metadata = ?, updated_at = ? WHERE id = ?",
                      (json.dumps(meta, separators=(",", ":"), ensure_ascii=False), now_ms(), node_id))

    def add_edge(self, src_id: str, dst_id: str, kind: str) -> None:
        with self.tx() as c:
            c.execute("INSERT OR IGNORE INTO edges (src_id, dst_id, kind, created_at) VALUES (?,?,?,?)",
                      (src_id, dst_id, kind, now_ms()))

    def transition(self, node_ids: Iterable[str], to: str, reason: str = "") -> int:
        """Move nodes to status ``to``; every status change in memtree goes through here.

        Raises :class:`~memtree_core.store.status.IllegalTransition` (changing nothing) if any node's
        current status does not allow it.  Returns how many nodes changed.
        """
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return 0
        ts = now_ms()
        changed = 0
        with self.tx() as c:
            current: dict[str, str] = {}
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                marks = ",".join("?" * len(part))
                current.update(c.execute(f"SELECT id, status FROM nodes WHERE id IN ({marks})", part).fetchall())
            for node_id in ids:
                if node_id not in current:
                    raise KeyError(f"no node {node_id}")
                status.check(current[node_id], to, node_id)
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                marks = ",".join("?" * len(part))
                changed += c.execute(f"UPDATE nodes SET status = ?, updated_at = ? WHERE id IN ({marks})",
                                     (to, ts, *part)).rowcount
            c.executemany("INSERT INTO transitions (node_id, from_status, to_status, reason, at) "
                          "VALUES (?,?,?,?,?)", [(n, current[n], to, reason, ts) for n in ids])
            counts: dict[str, int] = {}
            for n in ids:
                key = f"transition:{current[n]}->{to}"
                counts[key] = counts.get(key, 0) + 1
            for key, n in counts.items():
                self.bump(key, n)
        return changed

    # -- counters -------------------------------------------------------------------------------------
    def bump(self, name: str, n: int = 1) -> None:
        if not n:
            return
        with self.tx() as c:
            c.execute("INSERT INTO counters (name, value) VALUES (?, ?) "
                      "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value", (name, n))

    def counters(self, prefix: str = "") -> dict[str, int]:
        rows = self.query("SELECT name, value FROM counters WHERE name >= ? AND name < ? ORDER BY name",
                          (prefix, prefix + "\U0010ffff"))
        return dict(rows)

    def set_meta(self, key: str, value: str) -> None:
        self.execute("INSERT INTO meta (key, value) VALUES (?, ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def get_meta(self, key: str) -> str | None:
        row = self.query_one("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0] if row else None

    # -- stats ----------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        by: dict[str, dict[str, int]] = {}
        for kind, st, n in self.query("SELECT kind, status, count(*) FROM nodes GROUP BY kind, status"):
            by.setdefault(kind, {})[st] = n
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        page_size, pages, free, vacuum = (self.query_one(f"PRAGMA {p}")[0]  # type: ignore[index]
                                          for p in ("page_size", "page_count", "freelist_count", "auto_vacuum"))
        walkers: dict[str, dict[str, str]] = {}  # walker -> last_run / last_error, kept by the coordinator
        for key, value in self.query("SELECT key, value FROM meta WHERE key >= 'walker:' AND key < 'walker;'"):
            name, _, field = key[len("walker:"):].rpartition(":")
            walkers.setdefault(name or field, {})[field if name else "value"] = value
        return {
            "db_bytes": size,
            "storage": {"page_size": page_size, "pages": pages, "free_pages": free,
                        "used_bytes": (pages - free) * page_size,
                        "auto_vacuum": {0: "none", 1: "full", 2: "incremental"}.get(vacuum, str(vacuum))},
            "pending": self.query_one("SELECT count(*) FROM nodes WHERE status = 'pending'")[0],  # type: ignore[index]
            "nodes": by,
            "edges": self.query_one("SELECT count(*) FROM edges")[0],  # type: ignore[index]
            "walkers": walkers,
            "counters": self.counters(),
        }
