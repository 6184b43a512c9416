"""Copy a project's local SQLite store into its schema on a PostgreSQL server (``memtree store migrate``).

Every table the two stores share is copied: the core ones (nodes with their rowids, edges, transitions,
counters, meta, file_sources, samples, nodes_vec with its embeddings) and the plugins' own (the target was
opened through the host, so their migrations made them there).  SQLite's keyword index (FTS5) and its shadow
tables are not copied: the server computes its own from the rows.  One transaction, under the project's
write lock: the server holds the whole copy or none of it.  Then the rows are counted on both sides, table by
table.  The target must hold none of this project's rows (``replace`` drops its schema first).  Messages show
the URL redacted (docs/postgresql.md, "Selecting the backend").
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtree_core.store import StoreError
from memtree_core.store.postgres import schema
from memtree_core.store.postgres.vectors import vector_text

FIRST = ["file_sources"]  # before nodes: the nodes' trigger adds their keys, which must not collide
MERGED = {"meta": "key", "counters": "name"}  # the target's open wrote some (its plugins' schema progress)
# meta kept out: the target's own migration progress, and the SQLite store's own vector tables (the server
# answers vectors from HNSW indexes made here instead)
META_WHERE = " WHERE key NOT LIKE 'schema:%' AND key NOT LIKE 'vec_index:%' AND key <> 'vec_codes'"
SQLITE_ONLY = {"nodes_vec_codes": "the SQLite store's vector sign codes: the server answers from HNSW indexes"}
HOLDS_ROWS = ["nodes", "edges", "transitions", "nodes_vec"]
BATCH = 5000


@dataclass
class Copied:
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)  # table -> (source rows, target rows)
    skipped: dict[str, str] = field(default_factory=dict)  # table -> why it was not copied

    @property
    def ok(self) -> bool:
        return all(a == b for a, b in self.tables.values())


def rows_held(store: Any) -> dict[str, int]:
    """This project's rows on the server, in the tables that say it holds a store already."""
    return {t: n for t in HOLDS_ROWS if (n := int(store._rows(f"SELECT count(*) FROM {t}")[0][0]))}


def drop_project(url: str, project: str) -> None:
    """Remove the project's schema and registration from the server (``--replace``)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, application_name="memtree migrate") as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (schema.lock_key("migrate", project),))
        conn.execute(f"DROP SCHEMA IF EXISTS {schema.schema_name(project)} CASCADE")
        if conn.execute("SELECT to_regclass(%s)", (f"{schema.SHARED_SCHEMA}.projects",)).fetchone()[0]:
            conn.execute(f"DELETE FROM {schema.SHARED_SCHEMA}.projects WHERE hash = %s", (project,))


def _sqlite_tables(src: Any) -> tuple[list[str], set[str]]:
    """The source's plain tables, and the names that belong to its virtual tables (FTS5, vec0 shadows)."""
    rows = src.execute("SELECT name, coalesce(sql, '') FROM sqlite_master WHERE type = 'table' "
                       "AND name NOT LIKE 'sqlite%' ORDER BY name").fetchall()
    virtual = [name for name, sql in rows if sql.upper().startswith("CREATE VIRTUAL")]
    shadow = {name for name, _ in rows if any(name == v or name.startswith(v + "_") for v in virtual)}
    return [name for name, _ in rows if name not in shadow], shadow


def copy_store(sqlite_path: Path, store: Any, progress: Callable[[str, int, int], None] | None = None) -> Copied:
    """Copy the SQLite store at ``sqlite_path`` into ``store`` (a PostgresStore, opened with the plugins'
    migrations); returns what was copied and the counts on both sides."""
    from memtree_core.store.sqlite_route import choose_route

    module = choose_route().module
    src = module.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    out = Copied()
    try:
        tables, _shadow = _sqlite_tables(src)
        target_cols = _target_columns(store)
        order = [t for t in FIRST if t in tables] + [t for t in tables if t not in FIRST]
        with store.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (store._write_key,))
            for table in order:
                if table in SQLITE_ONLY:
                    continue
                if table not in target_cols:
                    out.skipped[table] = "no such table on the server (its plugin's migration did not apply there)"
                    continue
                src_cols = [r[1].lower() for r in src.execute(f'PRAGMA table_info("{table}")')]
                cols = [c for c in target_cols[table] if c in src_cols or c == "rowid"]
                missing = [c for c in src_cols if c not in target_cols[table]]
                if missing:
                    out.skipped[table] = f"columns {', '.join(missing)} are not on the server"
                    continue
                where = META_WHERE if table == "meta" else ""
                total = src.execute(f'SELECT count(*) FROM "{table}"{where}').fetchone()[0]
                _copy_table(src, conn, table, cols, where, total, progress)
                out.tables[table] = (int(total), _count_copied(src, conn, table, cols, where))
            _after(conn, store, target_cols)
    finally:
        src.close()
    return out


def _count_copied(src: Any, conn: Any, table: str, cols: list[str], where: str) -> int:
    """The target's rows of ``table``; for the merged tables, the source's rows found there with the same
    values (the target may have rows of its own: its open wrote some)."""
    if table not in MERGED:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    key = MERGED[table]
    mine = dict(src.execute(f'SELECT "{key}", value FROM "{table}"{where}').fetchall())
    theirs = dict(conn.execute(f"SELECT {key}, value FROM {table} WHERE {key} = ANY(%s)",
                               (list(mine),)).fetchall())
    return sum(1 for k, v in mine.items() if k in theirs and str(theirs[k]) == str(v))


def _target_columns(store: Any) -> dict[str, list[str]]:
    rows = store._rows("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s "
                       "AND is_generated = 'NEVER' ORDER BY table_name, ordinal_position",
                       (schema.schema_name(store.project),))
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def _copy_table(src: Any, conn: Any, table: str, cols: list[str], where: str, total: int,
                progress: Callable[[str, int, int], None] | None) -> None:
    names = ", ".join(cols)
    select = ", ".join(f'"{c}"' if c != "rowid" else "rowid" for c in cols)
    vec = cols.index("embedding") if table == "nodes_vec" else -1
    cursor = src.execute(f'SELECT {select} FROM "{table}"{where}')
    done = 0
    if progress:
        progress(table, 0, total)
    if table in MERGED:
        key = MERGED[table]
        updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c != key)
        sql = (f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(cols))}) "
               f"ON CONFLICT ({key}) DO UPDATE SET {updates}")
        with conn.cursor() as cur:
            while batch := cursor.fetchmany(BATCH):
                cur.executemany(sql, batch)
                done += len(batch)
                if progress:
                    progress(table, done, total)
        return
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        while batch := cursor.fetchmany(BATCH):
            for row in batch:
                if vec >= 0:
                    blob = bytes(row[vec])
                    row = (*row[:vec], vector_text(struct.unpack(f"<{len(blob) // 4}f", blob)), *row[vec + 1:])
                copy.write_row(row)
            done += len(batch)
            if progress:
                progress(table, done, total)


def _after(conn: Any, store: Any, target_cols: dict[str, list[str]]) -> None:
    """Identity sequences past the copied values; the vectors' HNSW indexes; the copied file nodes and the
    checks of their files recorded as this machine's, whose checkout they came from (docs/postgresql.md,
    "Staleness per checkout")."""
    name = schema.schema_name(store.project)
    if store.machine:
        # as insert_node writes it, compact (the walkers match the text "machine":"<id>")
        conn.execute("""UPDATE nodes SET metadata = '{"machine":"' || %s
                     || CASE WHEN metadata ~ '^\\{\\s*\\}$' THEN '"}' ELSE '",' || substr(metadata, 2) END
                     WHERE source_uri LIKE 'file://%%' AND metadata LIKE '{%%'
                     AND metadata NOT LIKE '%%"machine"%%'""", (store.machine,))
        conn.execute("INSERT INTO file_checks (machine, key, size, mtime_ns, checked_at) SELECT %s, key, "
                     "size, mtime_ns, checked_at FROM file_sources WHERE checked_at IS NOT NULL "
                     "ON CONFLICT DO NOTHING", (store.machine,))
    for table, column in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s "
            "AND is_identity = 'YES'", (name,)).fetchall():
        conn.execute(f"SELECT setval(pg_get_serial_sequence(%s, %s), coalesce(max({column}), 0) + 1, false) "
                     f"FROM {table}", (f"{name}.{table}", column))
    if "nodes_vec" in target_cols:
        from memtree_core.store.postgres.vectors import index_sql

        for model, dim, n in conn.execute("SELECT embedding_model, embedding_dim, count(*) FROM nodes_vec "
                                          "GROUP BY 1, 2").fetchall():
            _index_memory(conn, int(n) * (int(dim) * 4 + GRAPH_BYTES_PER_VECTOR))
            conn.execute(index_sql(model, int(dim)))


# An HNSW index builds several times faster when its graph fits in maintenance_work_mem (PostgreSQL's default
# is 64 MB: 100k MiniLM vectors took 84 s there, 36 s with 512 MB, here): the copy's transaction raises it to
# what the graph needs, at most INDEX_MEMORY_CAP, never below the server's own value.
GRAPH_BYTES_PER_VECTOR = 400  # the graph's neighbour lists and tuple overhead beside the vector itself
INDEX_MEMORY_CAP = 2 << 30


def _index_memory(conn: Any, need: int) -> None:
    have = int(conn.execute("SELECT setting::bigint * 1024 FROM pg_settings "
                            "WHERE name = 'maintenance_work_mem'").fetchone()[0])
    want = min(need, INDEX_MEMORY_CAP)
    if want > have:
        conn.execute(f"SET LOCAL maintenance_work_mem = '{want // 1024}kB'")


def check_empty(store: Any, url_shown: str) -> None:
    held = rows_held(store)
    if held:
        rows = ", ".join(f"{t} {n:,}" for t, n in held.items())
        raise StoreError(f"{url_shown} already holds rows of this project ({rows}); add --replace to drop them "
                         f"and copy the local store in their place")
