"""The one walker loop per project across machines (docs/postgresql.md, "Many daemons, one database").

On SQLite one daemon per project walks, by the ``flock`` on ``daemon.lock``.  With a shared server many
daemons serve one project, and the walkers' work must still run in exactly one of them at a time: the one
whose connection holds the session-level advisory lock ``memtree:walkers:<project>``.  The lock lives on a
connection of its own (never a pooled one, which other threads would use and the pool may recycle); the
server drops it when that session ends, at once when the process dies (its socket closes) and after the
TCP keepalive time when a machine vanishes (~25 s: :func:`~memtree_core.store.postgres.url.connect_options`).  A holder checks :meth:`SessionLock.holding` before each round
and stops walking when it is gone.
"""

from __future__ import annotations

from typing import Any

from memtree_core.store.postgres.schema import lock_key
from memtree_core.store.postgres.url import connect_options


class SessionLock:
    """A session-level advisory lock of ``purpose`` for ``project`` on ``url``, on a connection of its own."""

    def __init__(self, url: str, purpose: str, project: str, name: str = "memtree walkers") -> None:
        self.url = url
        self.key = lock_key(purpose, project)
        self.name = name[:63]  # the session's application_name: how another daemon names the holder
        self._conn: Any = None
        self._held = False

    def try_acquire(self) -> bool:
        """Take the lock if no other session holds it (never waits); True when this one holds it now."""
        import psycopg

        if self.holding():
            return True
        try:
            if self._conn is None:
                # keepalives both ways: a vanished machine's session, and so its lock, ends within ~25 s
                self._conn = psycopg.connect(self.url, autocommit=True, application_name=self.name,
                                             **connect_options(self.url))
            row = self._conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.key,)).fetchone()
        except psycopg.Error:
            self._drop()
            return False
        self._held = bool(row and row[0])
        return self._held

    def holding(self) -> bool:
        """Whether this session still holds the lock (its connection answers); False once it is lost."""
        if self._conn is None or not self._held:
            return False
        try:
            self._conn.execute("SELECT 1")
        except Exception:
            self._drop()
            return False
        return True

    def holder(self) -> str | None:
        """Who holds the lock now (its session's application name, client address and server pid), or None
        when nobody does; asked on a connection of its own, so it never takes the lock."""
        return holder(self.url, self.key)

    def release(self) -> None:
        """Give the lock back and close the connection."""
        if self._conn is not None and self._held:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.key,))
            except Exception:
                pass
        self._drop()

    def _drop(self) -> None:
        self._held = False
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
            self._conn = None


def holder(url: str, key: str) -> str | None:
    """The session holding the session-level advisory lock ``key`` on ``url``: ``"<application name> (server
    pid N[, from ADDRESS])"``, or None when it is free.  A bigint advisory key shows in ``pg_locks`` as
    ``classid`` (its high 32 bits) and ``objid`` (its low 32 bits) with ``objsubid`` 1."""
    import psycopg

    with psycopg.connect(url, autocommit=True, application_name="memtree lock check", connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT a.application_name, a.pid, host(a.client_addr) FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(%s, 0)", (key,)).fetchone()
    if row is None:
        return None
    name, pid, addr = row
    return f"{name or 'a session'} (server pid {pid}{f', from {addr}' if addr else ''})"
