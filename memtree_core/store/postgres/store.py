"""``PostgresStore``: one project's store on a PostgreSQL server (docs/postgresql.md, "StoreAccess on
PostgreSQL"), the same :class:`~memtree_core.context.StoreAccess` the SQLite store serves.

Connections come from a psycopg pool (autocommit; ``search_path`` set to the project's schema first, then
the shared one; ``vector`` values read as the SQLite store's float32 blobs).  A thread that opens a
transaction (:meth:`PostgresStore.tx`) or a snapshot (``lock``) pins one connection for as long as it holds
either; a statement outside both borrows one for itself.  ``tx()`` takes the project's write lock (a
transaction-level advisory lock) first, so writers to one project, in this process or on other machines,
run one at a time as SQLite's ``BEGIN IMMEDIATE`` makes them; a nested ``tx()`` is a savepoint.  ``lock``
opens a ``REPEATABLE READ`` transaction: one snapshot across several reads, as the SQLite store's shared
connection gives.

Plugins' SQL goes through :func:`~memtree_core.store.postgres.dialect.translate` (their ``?`` placeholders,
and a refusal naming the portable form for SQL only SQLite understands); the store's own statements are
PostgreSQL's.  psycopg is imported here and only here (with the pool), when a PostgreSQL store opens.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memtree_core.store import status, token_counts
from memtree_core.store.migrations import META_PREFIX, Step
from memtree_core.store.postgres import schema
from memtree_core.store.postgres.dialect import translate, translate_ddl
from memtree_core.store.postgres.keywords import PgKeywordSearch
from memtree_core.store.postgres.url import connect_options, redact_url
from memtree_core.store.postgres.vectors import PgVectors, register_blob_loader
from memtree_core.store.rows import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.source_uri import is_file_uri
from memtree_core.store.store import StoreError, VectorStatus, cap_text, content_hash, new_id, now_ms
from memtree_core.store.symbols import identifier_words, symbol_text
from memtree_core.store.upkeep import Space

POOL_MAX = 8  # connections per process: the daemon's tool threads, the ingest server and the walkers
# The planner's cost of a random page read where the server's configuration leaves PostgreSQL's default
# (4.0, for spinning disks): the value recommended for SSDs and a cache-resident working set, which is what a
# store's indexes are.  At the default, a word in 1% of 1M nodes is looked for by walking the rowid index
# newest first (100k rows, ~100 ms) instead of its GIN posting list (~10 ms).  A value an administrator set
# (configuration file, ALTER DATABASE/ROLE) is kept.
RANDOM_PAGE_COST = "1.1"
BLOCK = 8192  # PostgreSQL's page size, for the page figures stats() reports as the SQLite store does
# How long a write waits for the project's write lock, as long as SQLite's busy timeout: a holder that has
# stalled (a machine gone mid-transaction, which the server may not notice for hours) must not hang every
# machine's tool calls.  Schema steps wait without limit (another machine may be applying them).
WRITE_WAIT_MS = 10_000


class _Cursor:
    """What ``with store.tx() as c: c.execute(...)`` gives the store's own modules (token counts, vector
    codes): SQLite's ``?`` statements on the pinned connection, through the translation."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self._conn.execute(translate(sql, named=isinstance(params, dict)), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        cur = self._conn.cursor()
        cur.executemany(translate(sql), list(rows))
        return cur


class _Pin(threading.local):
    """A thread's pinned connection: how many holders (tx and lock), and how deep its transactions go."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.holders = 0
        self.depth = 0  # transactions and savepoints open on it
        self.writing = False  # the write lock is held (until the outermost transaction ends)
        self.snapshot: Any = None  # the REPEATABLE READ transaction ``lock`` opened, when it did


class _SnapshotLock:
    """``store.lock``: re-entrant per thread; the outermost holder opens one snapshot for its reads."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def __enter__(self) -> _SnapshotLock:
        store, pin = self._store, self._store._pin
        conn = store._hold()
        if pin.depth == 0:
            pin.snapshot = conn.transaction()
            pin.snapshot.__enter__()
            pin.depth += 1
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return self

    def __exit__(self, *exc: Any) -> None:
        store, pin = self._store, self._store._pin
        try:
            if pin.snapshot is not None and pin.holders == 1:
                snapshot, pin.snapshot = pin.snapshot, None
                pin.depth -= 1
                if pin.depth == 0:
                    pin.writing = False
                snapshot.__exit__(*exc)
        finally:
            store._release()


class PostgresStore(PgKeywordSearch, PgVectors):
    """One project's store on a PostgreSQL server: its tables in the schema ``mt_<project hash>``."""

    dialect = "postgresql"
    write_wait_ms: int = WRITE_WAIT_MS

    def __init__(self, url: str, project: str, path: Path, pool: Any, max_bytes: int,
                 machine: str = "") -> None:
        self.url = url
        self.project = project
        # this machine (store/machine.py): recorded in the metadata of every node whose source is a file,
        # whose checkout it came from, as compact JSON ("machine":"<id>", which walkers match as text;
        # docs/postgresql.md, "Staleness per checkout")
        self.machine = machine
        self.path = path  # where an SQLite store would be: nothing is there (memtree info shows the URL)
        self.pool = pool
        self.max_bytes = max_bytes
        self.vector = VectorStatus(True, "", "postgresql")
        self.route = "postgresql"
        self._pin = _Pin()
        self.lock = _SnapshotLock(self)
        self._write_key = schema.lock_key("write", project)
        self.token_counter: Any = None
        self._token_tags: dict[str, int | None] = {}
        self._indexes: set[tuple[str, int]] = set()  # vector indexes known to exist

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def open(cls, url: str, project: str, *, path: Path | str = "", max_bytes: int = 100_000,
             pool_max: int = POOL_MAX, machine: str = "", readonly: bool = False) -> PostgresStore:
        """Connect, create or upgrade the project's core schema (idempotent, under advisory locks), and
        start the pool.  A server that cannot be reached or refuses is a :class:`StoreError` that shows the
        URL without its password.  ``readonly`` (to look at the store while daemons write it): no migration,
        a project the server has no store of (or one of another schema version) is a :class:`StoreError`
        saying so, and every connection's transactions are read-only, so no statement can change a row."""
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise StoreError("store.url names a PostgreSQL server, and psycopg is not installed: "
                             "pip install 'memtree-mcp[postgresql]' (psycopg 3 and psycopg-pool)") from exc
        try:
            with psycopg.connect(url, autocommit=True, application_name="memtree", **connect_options(url)) as conn:
                if readonly:
                    schema.check_core(conn, project, redact_url(url))
                else:
                    schema.migrate_core(conn, project)
                row = conn.execute("SELECT source FROM pg_settings WHERE name = 'random_page_cost'").fetchone()
        except psycopg.Error as exc:
            fix = ("; start the server, or correct store.url (MEMTREE_STORE_URL) in your memtree config"
                   if isinstance(exc, psycopg.OperationalError) else "")
            raise StoreError(f"cannot open the store at {redact_url(url)}: {' '.join(str(exc).split())}{fix}") from exc
        path_ = schema.search_path(project)
        settings = [f"SET search_path = {path_}"]
        if readonly:
            settings.append("SET default_transaction_read_only = on")
        if row is not None and row[0] == "default":
            settings.append(f"SET random_page_cost = {RANDOM_PAGE_COST}")

        def configure(conn: Any) -> None:
            for statement in settings:
                conn.execute(statement)
            register_blob_loader(conn)

        # ``check``: each connection is tried (one empty round trip) as it leaves the pool, and a dead one is
        # replaced.  A daemon lives for days, and its pooled sessions end without it (a server restart or
        # failover, an administrator, an idle timeout): without the check, each call that drew one failed.
        pool = ConnectionPool(url, min_size=1, max_size=pool_max, open=False, configure=configure,
                              kwargs={"autocommit": True, "application_name": "memtree", **connect_options(url)},
                              check=ConnectionPool.check_connection, name=f"memtree-{project}")
        try:
            pool.open(wait=True, timeout=30)
        except Exception as exc:
            pool.close()
            raise StoreError(f"cannot open the store at {redact_url(url)}: {exc}") from exc
        return cls(url, project, Path(path), pool, max_bytes, machine)

    def close(self) -> None:
        self.pool.close()

    def migrate(self, owner: str, steps: Sequence[Step]) -> int:
        """As the SQLite store's: ``owner``'s steps this project has not had, each in a write transaction
        that also holds the project's migration lock, SQL steps through the DDL translation."""
        key = META_PREFIX + owner
        done = int(self.get_meta(key) or 0)
        if done > len(steps):
            raise StoreError(f"the store of project {self.project} has {done} schema steps of {owner}, newer "
                             f"than the {len(steps)} this version of it knows; upgrade it")
        applied = 0
        for version in range(done, len(steps)):
            with self.tx(bounded=False) as c:
                c._conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                                (schema.lock_key("migrate", self.project),))
                if int(self.get_meta(key) or 0) > version:
                    continue
                step = steps[version]
                if callable(step):
                    if step(self) is False:
                        return applied
                else:
                    c._conn.execute(translate_ddl(step), ())
                self.set_meta(key, str(version + 1))
            applied += 1
        return applied

    # -- connections, transactions -------------------------------------------------------------------
    def _hold(self) -> Any:
        pin = self._pin
        if pin.conn is None:
            pin.conn = self.pool.getconn()
        pin.holders += 1
        return pin.conn

    def _release(self) -> None:
        pin = self._pin
        pin.holders -= 1
        if pin.holders == 0:
            conn, pin.conn = pin.conn, None
            pin.depth, pin.writing, pin.snapshot = 0, False, None
            self.pool.putconn(conn)

    @property
    def conn(self) -> _Cursor:
        """The pinned connection, for the store's own modules (inside ``lock`` or ``tx()`` only)."""
        if self._pin.conn is None:
            raise RuntimeError("PostgresStore.conn is only there inside store.lock or store.tx()")
        return _Cursor(self._pin.conn)

    @contextmanager
    def tx(self, *, bounded: bool = True) -> Iterator[_Cursor]:
        """A write transaction holding the project's write lock; nested calls are savepoints in it.  The lock
        is waited for ``write_wait_ms`` at most (``bounded=False``: without limit), then a
        :class:`StoreError` says the store is busy."""
        pin = self._pin
        conn = self._hold()
        try:
            with conn.transaction():
                pin.depth += 1
                try:
                    if not pin.writing:
                        self._write_lock(conn, self.write_wait_ms if bounded else None)
                        pin.writing = True
                    yield _Cursor(conn)
                finally:
                    pin.depth -= 1
                    if pin.depth == 0:
                        pin.writing = False
        finally:
            self._release()

    def _write_lock(self, conn: Any, wait_ms: int | None) -> None:
        """Take the project's write lock, waiting ``wait_ms`` at most (None: without limit), in one round trip
        (every write pays it): the bound is set for this wait alone, then back to what the server has."""
        import psycopg
        from psycopg import sql

        take = sql.SQL("SELECT pg_advisory_xact_lock(hashtextextended({}, 0))").format(sql.Literal(self._write_key))
        if wait_ms is not None:  # statements without parameters: sent together, run in order, stopped by an error
            take = sql.SQL("SET LOCAL lock_timeout = {}; {}; SET LOCAL lock_timeout TO DEFAULT").format(
                sql.Literal(int(wait_ms)), take)
        try:
            conn.execute(take)
        except psycopg.errors.LockNotAvailable:
            raise StoreError(f"the store is busy: another memtree process has held this project's write lock "
                             f"for over {(wait_ms or 0) / 1000:g} s (a stalled machine, or a long copy into the "
                             f"project); this write was not made") from None

    @contextmanager
    def _read_tx(self) -> Iterator[Any]:
        """A transaction without the write lock (a savepoint inside one already open), for settings that
        last until its end (``SET LOCAL``); yields the psycopg connection."""
        pin = self._pin
        conn = self._hold()
        try:
            with conn.transaction():
                pin.depth += 1
                try:
                    yield conn
                finally:
                    pin.depth -= 1
                    if pin.depth == 0:
                        pin.writing = False
        finally:
            self._release()

    def _run(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """Run PostgreSQL's ``sql`` (psycopg placeholders) on the pinned connection or a borrowed one; the
        rows when it returns any, else the row count."""
        pin = self._pin
        if pin.conn is not None:
            cur = pin.conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else cur.rowcount
        with self.pool.connection() as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else cur.rowcount

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        found = self._run(sql, params)
        return found if isinstance(found, list) else []

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        return self._rows(translate(sql, named=isinstance(params, dict)), params)

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple[Any, ...] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        """One write statement in its own transaction (or the caller's); rows changed.  A ``CREATE TABLE`` or
        ``ADD COLUMN`` (a migration step's function runs its DDL here) gets the DDL translation."""
        with self.tx() as c:
            if isinstance(params, dict):
                return int(c.execute(sql, params).rowcount)
            return int(c._conn.execute(translate_ddl(sql), params).rowcount)

    # -- token counts ---------------------------------------------------------------------------------
    def count_tokens_with(self, counter: Any) -> None:
        token_counts.tag_of(self, counter, create=True)  # type: ignore[arg-type]
        self.token_counter = counter

    # -- nodes ----------------------------------------------------------------------------------------
    def insert_node(self, kind: str, content: str, *, parent_id: str | None = None,
                    source_uri: str | None = None, status_: str = "pending", mtime: int = 0,
                    metadata: dict[str, Any] | None = None, node_id: str | None = None,
                    created_at: int | None = None) -> NodeRow:
        if status_ not in ("pending", "live"):
            raise status.IllegalTransition(f"a new node starts pending or live, not {status_!r}")
        text, truncated, original = cap_text(content, self.max_bytes)
        ts = created_at if created_at is not None else now_ms()
        if self.machine and is_file_uri(source_uri):
            metadata = {**(metadata or {}), "machine": self.machine}
        node = NodeRow(node_id or new_id(), parent_id, kind, source_uri, text, content_hash(text), status_,
                       int(mtime), ts, ts, int(truncated), original,
                       json.dumps(metadata or {}, separators=(",", ":"), ensure_ascii=False))
        counter = self.token_counter
        if counter is not None and len(text) <= token_counts.AT_WRITE_CHARS:
            node.tokens = token_counts.count(counter, text)
            node.tokens_by = token_counts.tag_of(self, counter) if node.tokens is not None else None  # type: ignore[arg-type]
        words = identifier_words(text)
        with self.tx() as c:
            row = c._conn.execute(
                "INSERT INTO nodes (id, parent_id, kind, source_uri, content, content_hash, status, mtime, "
                "created_at, updated_at, truncated, original_bytes, metadata, symbols, words, tokens, tokens_by) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING rowid",
                (node.id, node.parent_id, node.kind, node.source_uri, node.content, node.content_hash,
                 node.status, node.mtime, node.created_at, node.updated_at, node.truncated,
                 node.original_bytes, node.metadata,
                 symbol_text(metadata) if kind == "file_chunk" and metadata else "", words, node.tokens,
                 node.tokens_by)).fetchone()
            node.rowid = int(row[0])
            c._conn.execute("INSERT INTO transitions (node_id, from_status, to_status, reason, at) "
                            "VALUES (%s,%s,%s,%s,%s)", (node.id, None, status_, "created", ts))
        return node

    def get_node(self, node_id: str) -> NodeRow | None:
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = %s", (node_id,))
        return row_to_node(rows[0]) if rows else None

    def get_nodes(self, node_ids: Iterable[str]) -> dict[str, NodeRow]:
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ANY(%s)", (ids,))
        return {row[0]: row_to_node(row) for row in rows}

    def update_metadata(self, node_id: str, changes: dict[str, Any]) -> None:
        with self.tx() as c:
            row = c._conn.execute("SELECT metadata FROM nodes WHERE id = %s FOR UPDATE", (node_id,)).fetchone()
            if row is None:
                return
            meta = json.loads(row[0] or "{}")
            meta.update(changes)
            c._conn.execute("UPDATE nodes SET metadata = %s, updated_at = %s WHERE id = %s",
                            (json.dumps(meta, separators=(",", ":"), ensure_ascii=False), now_ms(), node_id))

    def add_edge(self, src_id: str, dst_id: str, kind: str) -> None:
        with self.tx() as c:
            c._conn.execute("INSERT INTO edges (src_id, dst_id, kind, created_at) VALUES (%s,%s,%s,%s) "
                            "ON CONFLICT DO NOTHING", (src_id, dst_id, kind, now_ms()))

    def transition(self, node_ids: Iterable[str], to: str, reason: str = "") -> int:
        """As the SQLite store's: every node's move checked first (their rows locked), then all made."""
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return 0
        ts = now_ms()
        with self.tx() as c:
            current: dict[str, str] = dict(c._conn.execute(
                "SELECT id, status FROM nodes WHERE id = ANY(%s) FOR UPDATE", (ids,)).fetchall())
            for node_id in ids:
                if node_id not in current:
                    raise KeyError(f"no node {node_id}")
                status.check(current[node_id], to, node_id)
            changed = c._conn.execute("UPDATE nodes SET status = %s, updated_at = %s WHERE id = ANY(%s)",
                                      (to, ts, ids)).rowcount
            cur = c._conn.cursor()
            cur.executemany("INSERT INTO transitions (node_id, from_status, to_status, reason, at) "
                            "VALUES (%s,%s,%s,%s,%s)", [(n, current[n], to, reason, ts) for n in ids])
            counts: dict[str, int] = {}
            for n in ids:
                key = f"transition:{current[n]}->{to}"
                counts[key] = counts.get(key, 0) + 1
            for key, n in counts.items():
                self.bump(key, n)
        return int(changed)

    # -- counters, meta -------------------------------------------------------------------------------
    def bump(self, name: str, n: int = 1) -> None:
        if not n:
            return
        with self.tx() as c:
            c._conn.execute("INSERT INTO counters (name, value) VALUES (%s, %s) ON CONFLICT (name) "
                            "DO UPDATE SET value = counters.value + excluded.value", (name, n))

    def counters(self, prefix: str = "") -> dict[str, int]:
        rows = self._rows("SELECT name, value FROM counters WHERE name >= %s AND name < %s ORDER BY name",
                          (prefix, prefix + "\U0010ffff"))
        return {name: int(value) for name, value in rows}

    def set_meta(self, key: str, value: str | None) -> None:
        with self.tx() as c:
            if value is None:
                c._conn.execute("DELETE FROM meta WHERE key = %s", (key,))
            else:
                c._conn.execute("INSERT INTO meta (key, value) VALUES (%s, %s) "
                                "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def get_meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = %s", (key,))
        return rows[0][0] if rows else None

    # -- stats, upkeep --------------------------------------------------------------------------------
    def _bytes(self) -> int:
        rows = self._rows("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                          "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind = 'r'",
                          (schema.schema_name(self.project),))
        return int(rows[0][0])

    def stats(self) -> dict[str, Any]:
        by: dict[str, dict[str, int]] = {}
        for kind, st, n in self._rows("SELECT kind, status, count(*) FROM nodes GROUP BY kind, status"):
            by.setdefault(kind, {})[st] = int(n)
        size = self._bytes()
        walkers: dict[str, dict[str, str]] = {}
        for key, value in self._rows("SELECT key, value FROM meta WHERE key >= 'walker:' AND key < 'walker;'"):
            name, _, field = key[len("walker:"):].rpartition(":")
            walkers.setdefault(name or field, {})[field if name else "value"] = value
        return {
            "db_bytes": size,
            # the SQLite store's figures, in PostgreSQL's 8 KiB pages; its autovacuum keeps the free space
            "storage": {"page_size": BLOCK, "pages": size // BLOCK, "free_pages": 0, "used_bytes": size,
                        "auto_vacuum": "autovacuum"},
            "pending": int(self._rows("SELECT count(*) FROM nodes WHERE status = 'pending'")[0][0]),
            "nodes": by,
            "edges": int(self._rows("SELECT count(*) FROM edges")[0][0]),
            "walkers": walkers,
            "counters": self.counters(),
        }

    def maintain(self, *, merge_index_pages: int = 0, reclaim_pages: int = 0) -> Space:
        """No pages to juggle here (autovacuum keeps the space): with ``reclaim_pages``, one ``VACUUM
        (ANALYZE)`` of the project's node tables, reporting the pages it gave back; then the sizes.  The
        GIN indexes merge their pending lists in that vacuum too."""
        before = self._bytes()
        reclaimed = 0
        if (reclaim_pages > 0 or merge_index_pages > 0) and self._pin.conn is None:
            with self.pool.connection() as conn:  # autocommit: VACUUM runs outside a transaction
                for table in ("nodes", "nodes_vec", "transitions", "edges"):
                    conn.execute(f"VACUUM (ANALYZE) {schema.schema_name(self.project)}.{table}")
            reclaimed = max(0, before - self._bytes()) // BLOCK if reclaim_pages > 0 else 0
        size = self._bytes()
        return Space(size, size, 0, reclaimed, False)
