"""``memtree doctor`` on a PostgreSQL store: the connection, the extensions, the database's ctype, the
project's schema version, whether the server's shared buffers hold the project's nodes and indexes, and who
holds the walker lock, each failure with its fix (docs/postgresql.md).

Read-only: nothing is created or changed on the server (the store creates what is missing at its first
open).  The URL is shown redacted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memtree_core.store.postgres import schema
from memtree_core.store.postgres.url import redact_url

EXTENSIONS = {"vector": (0, 8), "pg_trgm": (1, 0)}  # name -> the oldest version the store is built for


@dataclass
class Check:
    name: str
    ok: bool
    text: str  # what was found; on failure, what is wrong and the fix

    def line(self) -> str:
        return f"{self.name}: {'ok' if self.ok else 'FAILED'}: {self.text}"


def _version(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def check(url: str, project: str) -> list[Check]:
    """The checks of ``project``'s store on ``url``, in order; after a failed connection only that one."""
    shown = redact_url(url)
    try:
        import psycopg
    except ImportError:
        return [Check("connection", False, f"cannot connect to {shown}: psycopg is not installed; fix: "
                      "pip install 'memtree-mcp[postgresql]' into memtree's environment")]
    try:
        conn = psycopg.connect(url, autocommit=True, application_name="memtree doctor", connect_timeout=10)
    except psycopg.Error as exc:
        return [Check("connection", False, f"cannot connect to {shown}: {' '.join(str(exc).split())}; fix: start "
                      f"the server or correct store.url (or MEMTREE_STORE_URL): host, port, database, user, and "
                      f"the password in ~/.pgpass or the URL")]
    with conn:
        server = conn.execute("SELECT current_setting('server_version')").fetchone()[0]
        out = [Check("connection", True, f"{shown} (PostgreSQL {server})")]
        out.extend(_extensions(conn))
        ctype = conn.execute("SELECT datctype FROM pg_database WHERE datname = current_database()").fetchone()[0]
        utf8 = "utf-8" in ctype.lower() or "utf8" in ctype.lower()
        out.append(Check("ctype", utf8, ctype if utf8 else
                         f"{ctype}: letters outside ASCII are not letters to the keyword index; fix: create the "
                         f"database with a UTF-8 LC_CTYPE (CREATE DATABASE ... LC_CTYPE 'C.UTF-8' "
                         f"TEMPLATE template0) and copy the store there"))
        out.append(_schema(conn, project))
        out.append(_memory(conn, project))
    from memtree_core.store.postgres.locks import holder

    try:
        who = holder(url, schema.lock_key("walkers", project))
        out.append(Check("walker lock", True, f"held by {who}" if who else
                         "free: no daemon runs this project's walkers now (one takes it when it starts)"))
    except psycopg.Error as exc:
        out.append(Check("walker lock", False, f"cannot read it ({' '.join(str(exc).split())}); fix: grant this "
                         f"user pg_read_all_stats to see other sessions"))
    return out


def _extensions(conn: Any) -> list[Check]:
    rows = conn.execute("SELECT name, installed_version, default_version FROM pg_available_extensions "
                        "WHERE name = ANY(%s)", (list(EXTENSIONS),)).fetchall()
    found = {name: (installed, default) for name, installed, default in rows}
    out = []
    for name, floor in EXTENSIONS.items():
        installed, default = found.get(name, (None, None))
        want = ".".join(map(str, floor))
        if installed is None and default is None:
            package = "pgvector (postgresql-NN-pgvector)" if name == "vector" else "the contrib package"
            out.append(Check(f"extension {name}", False, f"not available on the server; fix: install {package} "
                             f"on the server (version {want} or newer), then memtree creates it at first use"))
        elif installed is None:
            out.append(Check(f"extension {name}", False, f"available ({default}) but not created in this database; "
                             f"fix: CREATE EXTENSION {name}; as the database owner or a superuser (memtree does it "
                             f"at first use when it may)"))
        elif _version(installed) < floor:
            out.append(Check(f"extension {name}", False, f"version {installed}, older than {want}; fix: ALTER "
                             f"EXTENSION {name} UPDATE; after installing a newer package on the server"))
        else:
            out.append(Check(f"extension {name}", True, f"version {installed}"))
    return out


def _memory(conn: Any, project: str) -> Check:
    """Do the server's shared buffers hold the project's nodes and their indexes?  Searched pages read from
    the operating system's cache instead cost 2-3x at 1M nodes (docs/postgresql.md, "Figures")."""
    shared = int(conn.execute("SELECT setting::bigint * current_setting('block_size')::bigint FROM pg_settings "
                              "WHERE name = 'shared_buffers'").fetchone()[0])
    table = conn.execute("SELECT to_regclass(%s)", (f"{schema.schema_name(project)}.nodes",)).fetchone()[0]
    need = int(conn.execute("SELECT pg_relation_size(%s::regclass) + pg_indexes_size(%s::regclass)",
                            (table, table)).fetchone()[0]) if table else 0
    return Check("memory", True, memory_text(shared, need))


def memory_text(shared: int, need: int) -> str:
    have = f"shared_buffers {_size(shared)}"
    if need <= shared:
        return f"{have} holds the project's nodes and their indexes ({_size(need)})"
    return (f"{have} is below the {_size(need)} of the project's nodes and their indexes: searches read "
            f"pages from the operating system's cache, 2-3x slower on a large store; to speed them up, "
            f"raise shared_buffers (PostgreSQL's advice: a quarter of the server's memory)")


def _size(n: int) -> str:
    return f"{n / (1 << 30):.1f} GB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MB"


def _schema(conn: Any, project: str) -> Check:
    name = "schema version"
    exists = conn.execute("SELECT to_regclass(%s)", (f"{schema.SHARED_SCHEMA}.projects",)).fetchone()[0]
    row = conn.execute(f"SELECT schema_version FROM {schema.SHARED_SCHEMA}.projects WHERE hash = %s",
                       (project,)).fetchone() if exists else None
    if row is None:
        return Check(name, True, f"no store of project {project} on this server yet: it is created at first use "
                     f"(or copy the local one: memtree store migrate --to URL)")
    version = int(row[0])
    if version > schema.SCHEMA_VERSION:
        return Check(name, False, f"{version}, newer than this memtree ({schema.SCHEMA_VERSION}); fix: upgrade "
                     f"memtree on this machine (pip install -U memtree-mcp)")
    if version < schema.SCHEMA_VERSION:
        return Check(name, True, f"{version}: upgraded to {schema.SCHEMA_VERSION} at the next open")
    return Check(name, True, f"{version} (project {project}, schema {schema.schema_name(project)})")
