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

from memtree_core.store import schema, status, token_counts
from memtree_core.store.keywords import KeywordSearch
from memtree_core.store.migrations import META_PREFIX, Step
from memtree_core.store.rows import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.sqlite_route import Route, choose_route, load_vec
from memtree_core.store.symbols import identifier_words, symbol_text
from memtree_core.store.upkeep import Upkeep, batches, marks
from memtree_core.store.vectors import Vectors

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




@dataclass(frozen=True)
class VectorStatus:
    available: bool
    reason: str
    route: str


class StoreError(Exception):
    """The store cannot be opened or used; the message says what to do."""


class StoreMissing(StoreError):
    """There is no store of the project yet (opening it to look at only, which never creates one)."""


class StoreDamaged(StoreError):
    """The store file is damaged (truncated, a garbage header, corrupt pages): nothing is written to it,
    and ``memtree doctor`` recovers what is readable into a new file."""


QUICK_CHECK_ROWS = 10  # the first problems are enough to say "damaged"
# PRAGMA quick_check reads every page (~45 MB/s on a loaded 2-core machine), and before SQLite 3.43 nothing
# can interrupt it.  So every open checks a store up to this size in full (~0.2 s at most), and a bigger one
# only for what is cheap (header, size); the daemon checks a bigger one in full on a thread of its own.
QUICK_CHECK_SYNC_BYTES = 8 << 20
QUICK_CHECK_S = 60.0  # the daemon's background check gives up then (where SQLite can be interrupted)
_CORRUPTION = ("malformed", "not a database", "corrupt", "file is encrypted")
PAGE_SIZES = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}


def is_corruption(exc: BaseException) -> bool:
    """An SQLite error saying the file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB; a truncated file reads as
    malformed).  Only the drivers' own errors count: a plugin's message that happens to say "corrupt" is not."""
    import sqlite3

    if not isinstance(exc, sqlite3.DatabaseError | choose_route().module.DatabaseError):
        return False
    text = str(exc).lower()
    return any(word in text for word in _CORRUPTION)


def damaged_message(path: Path | str, detail: str) -> str:
    detail = " ".join(detail.split())
    if len(detail) > 160:
        detail = detail[:157] + "..."
    return (f"the store {path} is damaged ({detail}); nothing more is written to it: stop the daemon "
            f"(memtree stop) and run memtree doctor to recover it into a new file")


def header_problem(path: Path) -> str | None:
    """What the first 100 bytes say is wrong, without SQLite: not a database, or cut shorter than the page
    count its header records (valid when the change counter matches the version-valid-for field; in WAL mode
    the main file is never shorter than the count in its own header).  None when they look sound."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(100)
    if len(head) < 100:
        return f"only {size} bytes"
    if not head.startswith(b"SQLite format 3\x00"):
        return "file is not a database: the header is not SQLite's"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size not in PAGE_SIZES:
        return f"file is not a database: page size {page_size} in the header"
    pages = int.from_bytes(head[28:32], "big")
    if pages and head[24:28] == head[92:96] and pages * page_size > size:
        return f"truncated: the header counts {pages} pages of {page_size} bytes, the file has {size} bytes"
    return None


def quick_check(conn: Any, rows: int = QUICK_CHECK_ROWS, seconds: float | None = None) -> list[str] | None:
    """``PRAGMA quick_check(rows)``: the problems found ([] when none), or None when it was interrupted after
    ``seconds`` (no verdict; only SQLite 3.43+ can interrupt a check)."""
    timer = threading.Timer(seconds, conn.interrupt) if seconds else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        found = [str(r[0]) for r in conn.execute(f"PRAGMA quick_check({int(rows)})").fetchall()]
    except Exception as exc:
        if "interrupt" in str(exc).lower():
            return None
        if is_corruption(exc):
            return [str(exc)]
        raise
    finally:
        if timer is not None:
            timer.cancel()
    return [] if found == ["ok"] else found


def check_in_background(path: Path, on_damage: Any, seconds: float = QUICK_CHECK_S) -> threading.Thread:
    """The full quick_check of a store too big to check at open, on its own read-only connection and thread;
    ``on_damage(message)`` when it finds a problem."""

    def run() -> None:
        module = choose_route().module
        try:
            conn = module.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        except Exception as exc:
            if is_corruption(exc):
                on_damage(damaged_message(path, str(exc)))
            return
        try:
            problems = quick_check(conn, seconds=seconds)
        except Exception:
            return
        finally:
            conn.close()
        if problems:
            on_damage(damaged_message(path, "; ".join(problems)))

    thread = threading.Thread(target=run, name="memtree-store-check", daemon=True)
    thread.start()
    return thread


def _wal(conn: Any, patience_s: float = 10.0) -> None:
    """WAL mode, set once in the file: a change of journal mode needs the file to itself, and SQLite answers
    "database is locked" at once, not after the busy timeout, while another connection opening the same new
    store at that moment (another process, another thread's App) sets it too."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Store(Upkeep, KeywordSearch, Vectors):
    """One project's store.  The basics are here; the named methods plugins call for everything else live in
    one mixin per area (upkeep, keywords, vectors), and :class:`memtree_core.context.StoreAccess`
    lists them: plugins send their own SQL through ``query``/``execute``."""

    dialect = "sqlite"
    machine = ""  # one machine's store: its file nodes need not say whose checkout they came from

    def __init__(self, path: Path, conn: Any, route: Route, vector: VectorStatus, max_bytes: int) -> None:
        self.path = path
        self.conn = conn
        self.route = route
        self.vector = vector
        self.max_bytes = max_bytes
        self.lock = threading.RLock()
        self._depth = 0
        # The counter whose count insert_node stores with each node (App sets it), and its number there.
        self.token_counter: Any = None
        self._token_tags: dict[str, int | None] = {}

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str, *, max_bytes: int = 100_000, vectors: bool = True,
             check: bool = True, synchronous: str = "normal") -> Store:
        """Open (or create) the store; ``check``: the header and size, and ``PRAGMA quick_check`` of a store
        up to :data:`QUICK_CHECK_SYNC_BYTES`, so a damaged file raises :class:`StoreDamaged` instead of
        taking writes it may lose (:func:`check_in_background` does the rest for the daemon).

        ``synchronous``: "normal" (a commit survives a crash of this process) or "full" (also an OS crash or
        power loss, for an fsync per commit)."""
        path = Path(path)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        route = choose_route()
        new = not path.exists()
        size = 0 if new else path.stat().st_size
        # Empty is a store that was never written: a new one.
        if check and size and (problem := header_problem(path)):
            raise StoreDamaged(damaged_message(path, problem))
        try:
            if new:  # born 0600; SQLite gives the -wal and -shm the database file's mode.  Not by the umask,
                # which is the process's: a directory another thread made meanwhile would be born 0600 too.
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
            conn = route.module.connect(str(path), timeout=10.0, isolation_level=None,
                                        check_same_thread=False)
        except Exception as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        if new or path.stat().st_mode & 0o077:
            path.chmod(0o600)
        try:
            loaded, reason = load_vec(conn, route) if vectors else (False, "vector search not requested")
            store = cls(path, conn, route, VectorStatus(loaded, reason, route.name), max_bytes)
            store._configure("FULL" if synchronous == "full" else "NORMAL")
            if check and 0 < size <= QUICK_CHECK_SYNC_BYTES:
                problems = quick_check(conn)
                if problems:
                    raise StoreDamaged(damaged_message(path, "; ".join(problems)))
            store._migrate()
        except route.module.DatabaseError as exc:
            conn.close()
            if is_corruption(exc):
                raise StoreDamaged(damaged_message(path, str(exc))) from None
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return store

    def _configure(self, synchronous: str = "NORMAL") -> None:
        c = self.conn
        c.execute("PRAGMA busy_timeout = 10000")
        if c.execute("PRAGMA auto_vacuum").fetchone()[0] == 0 and self._user_version() == 0:
            # Must be set before the first table exists *and* before journal_mode=WAL writes the header
            # (after it, SQLite silently keeps auto_vacuum=NONE); lets the pruner hand pages back to the OS.
            c.execute("PRAGMA auto_vacuum = INCREMENTAL")
        _wal(c)
        # WAL + NORMAL: a commit is in the WAL before the ack, so it survives SIGKILL of the daemon; only an
        # OS crash or power loss can lose the last commits (never corrupt the store).  FULL fsyncs each one.
        c.execute(f"PRAGMA synchronous = {synchronous}")
        c.execute("PRAGMA foreign_keys = OFF")
        c.execute("PRAGMA temp_store = MEMORY")
        # 2 GiB (the stdlib build's cap): a KNN pass reads every vector (~150 MB per 100k x 384 table), and
        # pages past the mmap window go through read() into a 2 MB page cache: 55 -> 40 ms p50 at 100k
        # (eval/bench/semantic.py).  Touched pages show in RSS as file-backed, reclaimable memory.
        c.execute("PRAGMA mmap_size = 2147418112")

    def _has_table(self, name: str) -> bool:
        return self.query_one("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)) is not None

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
                    # Read again under the write lock: another process (the daemon and `memtree index`
                    # opening a new store together) may have applied this step since the read above.
                    if self._user_version() > version:
                        continue
                    for stmt in schema.MIGRATIONS[version]:
                        if callable(stmt):
                            stmt(self.conn)
                        else:
                            self.conn.execute(stmt)
                    self.conn.execute(f"PRAGMA user_version = {version + 1}")
            if self.vector.available:
                with self.tx():
                    self.conn.execute(schema.VEC_TABLE)

    def migrate(self, owner: str, steps: Sequence[Step]) -> int:
        """Apply those of ``owner``'s schema steps this store has not had yet (memtree_core/store/migrations.py),
        in order, each in its own write transaction; returns how many ran now.  Raises :class:`StoreError`
        when the store has had more of them than ``steps`` holds (a newer version of the plugin wrote it)."""
        key = META_PREFIX + owner
        done = int(self.get_meta(key) or 0)
        if done > len(steps):
            raise StoreError(f"the store at {self.path} has {done} schema steps of {owner}, newer than the "
                             f"{len(steps)} this version of it knows; upgrade it")
        applied = 0
        for version in range(done, len(steps)):
            with self.tx():
                # Read again under the write lock: another process may have applied this step meanwhile.
                if int(self.get_meta(key) or 0) > version:
                    continue
                step = steps[version]
                if callable(step):
                    if step(self) is False:
                        return applied  # not yet: it runs again at the next open
                else:
                    self.conn.execute(step)
                self.set_meta(key, str(version + 1))
            applied += 1
        return applied

    def close(self) -> None:
        with self.lock:
            self._close_scratch()
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

    # -- token counts ---------------------------------------------------------------------------------
    def count_tokens_with(self, counter: Any) -> None:
        """Store each new node's token count under ``counter`` (memtree_core/store/token_counts.py)."""
        token_counts.tag_of(self, counter, create=True)
        self.token_counter = counter

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
        counter = self.token_counter
        if counter is not None and len(text) <= token_counts.AT_WRITE_CHARS:
            # counted before the transaction: the lock is shared with every tool
            node.tokens = token_counts.count(counter, text)
            node.tokens_by = token_counts.tag_of(self, counter) if node.tokens is not None else None
        words = identifier_words(text)  # before the transaction, as the token count
        with self.tx() as c:
            cur = c.execute(
                "INSERT INTO nodes (id, parent_id, kind, source_uri, content, content_hash, status, mtime, "
                "created_at, updated_at, truncated, original_bytes, metadata, symbols, words, tokens, tokens_by) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (node.id, node.parent_id, node.kind, node.source_uri, node.content, node.content_hash,
                 node.status, node.mtime, node.created_at, node.updated_at, node.truncated,
                 node.original_bytes, node.metadata,
                 symbol_text(metadata) if kind == "file_chunk" and metadata else "", words, node.tokens,
                 node.tokens_by))
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
        for part in batches(ids):
            for row in self.query(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id IN ({marks(len(part))})", part):
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

    # -- captures (the capture plugin's storing) --------------------------------------------------------
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
            for part in batches(ids):
                current.update(c.execute(f"SELECT id, status FROM nodes WHERE id IN ({marks(len(part))})",
                                         part).fetchall())
            for node_id in ids:
                if node_id not in current:
                    raise KeyError(f"no node {node_id}")
                status.check(current[node_id], to, node_id)
            for part in batches(ids):
                changed += c.execute(f"UPDATE nodes SET status = ?, updated_at = ? WHERE id IN ({marks(len(part))})",
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

    def set_meta(self, key: str, value: str | None) -> None:
        """Set ``key`` to ``value``; None deletes it."""
        if value is None:
            self.execute("DELETE FROM meta WHERE key = ?", (key,))
            return
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
        size = self._disk_bytes()
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
