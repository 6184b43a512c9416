"""The store opened read-only, for looking at it while the daemon may be writing it.

The connection is SQLite's ``mode=ro`` (plus ``PRAGMA query_only``), so no statement can change the file:
no migration, no walker, no counter.  sqlite-vec is loaded as :meth:`Store.open` loads it, so the
semantic modes of search work too.  In WAL mode a reader needs the ``-wal`` and ``-shm`` files; when no
writer has them open SQLite creates them empty (0600 here, as the daemon would) and leaves them, as any
reader does, without writing to the database or the log.
"""

from __future__ import annotations

from pathlib import Path

from memtree_core.store.schema import SCHEMA_VERSION
from memtree_core.store.sqlite_route import choose_route, load_vec
from memtree_core.store.store import (
    Store,
    StoreError,
    StoreMissing,
    VectorStatus,
    damaged_message,
    header_problem,
    is_corruption,
)


def open_readonly(path: Path | str, *, max_bytes: int = 100_000, vectors: bool = True) -> Store:
    """A :class:`Store` on a read-only connection; :class:`StoreError` with a clear message when there is
    no store yet (:class:`StoreMissing`), it is damaged, or its schema is not one this memtree reads."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        raise StoreMissing(f"there is no store at {path} yet: nothing has been captured for this project")
    problem = header_problem(path)
    if problem:
        raise StoreError(damaged_message(path, problem))
    route = choose_route()
    try:  # the -wal and -shm a reader may create get the database file's mode (0600), as SQLite gives them
        conn = route.module.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10.0,
                                    isolation_level=None, check_same_thread=False)
    except Exception as exc:
        raise StoreError(f"cannot open the store at {path} read-only: {exc}") from exc
    try:
        loaded, reason = load_vec(conn, route) if vectors else (False, "vector search not requested")
        conn.execute("PRAGMA query_only = 1")
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA mmap_size = 268435456")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version != SCHEMA_VERSION:
            # Migrating is a write: the inspector leaves it to the daemon (or any command that opens the store).
            fix = "upgrade memtree" if version > SCHEMA_VERSION else "run 'memtree stats' once to migrate it"
            raise StoreError(f"the store at {path} has schema version {version}, this memtree reads "
                             f"{SCHEMA_VERSION}; {fix}")
        if loaded and not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'nodes_vec'").fetchone():
            loaded, reason = False, "the store has no vector table yet"
    except StoreError:
        conn.close()
        raise
    except route.module.DatabaseError as exc:
        conn.close()
        if is_corruption(exc):
            raise StoreError(damaged_message(path, str(exc))) from None
        raise StoreError(f"cannot read the store at {path}: {exc}") from exc
    return Store(path, conn, route, VectorStatus(loaded, reason, route.name), max_bytes)
