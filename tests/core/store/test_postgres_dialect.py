"""Plugins' SQL on PostgreSQL (memtree_core/store/postgres/dialect.py): placeholders translated outside
quotes and comments, SQLite-only SQL refused with the portable form named, plugin DDL that creates the same
tables on a real server, and portable statements that answer on PostgreSQL as on SQLite."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from memtree_core.store.postgres import dialect, schema
from memtree_core.store.postgres.dialect import DialectError, translate, translate_ddl


@pytest.mark.parametrize(("sql", "want"), [
    ("SELECT id FROM nodes WHERE id = ? AND kind IN (?, ?)", "SELECT id FROM nodes WHERE id = %s AND kind IN (%s, %s)"),
    ("SELECT 1 FROM meta WHERE key LIKE 'walker:%' AND value = ?", "SELECT 1 FROM meta WHERE key LIKE 'walker:%%' AND value = %s"),
    ("SELECT 'what? it''s 100%', ? -- a comment? 5%\n", "SELECT 'what? it''s 100%%', %s -- a comment? 5%%\n"),
    ('SELECT "odd?col" FROM t /* why? */ WHERE a = ?', 'SELECT "odd?col" FROM t /* why? */ WHERE a = %s'),
    ("SELECT x % ? FROM t", "SELECT x %% %s FROM t"),
    ("DO $$ BEGIN PERFORM 1 WHERE 'a' LIKE '?%'; END $$", "DO $$ BEGIN PERFORM 1 WHERE 'a' LIKE '?%%'; END $$"),
])
def test_placeholders_become_psycopgs_outside_quotes_and_comments(sql: str, want: str) -> None:
    assert translate(sql) == want


def test_named_parameters_and_casts() -> None:
    assert translate("SELECT :a::text, ':b', x FROM t WHERE y = :b_2", named=True) == \
        "SELECT %(a)s::text, ':b', x FROM t WHERE y = %(b_2)s"


@pytest.mark.parametrize(("sql", "portable"), [
    ("INSERT OR IGNORE INTO code_names VALUES (?)", "ON CONFLICT DO NOTHING"),
    ("insert or replace into samples(name, at, value) values (?, ?, ?)", "DO UPDATE SET"),
    ("REPLACE INTO meta VALUES (?, ?)", "DO UPDATE SET"),
    ("SELECT id FROM nodes WHERE json_extract(metadata, '$.e') IS ?", "IS NOT DISTINCT FROM ?"),
    ("SELECT id FROM nodes WHERE kind IS NOT ?", "IS DISTINCT FROM ?"),
    ("PRAGMA page_count", "maintain()"),
    ("SELECT 1 FROM sqlite_master WHERE name = 'samples'", "store.vector.available"),
    ("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?", "keyword_search"),
    ("SELECT vec_distance_cosine(embedding, ?) FROM nodes_vec", "vector_search"),
])
def test_sqlite_only_sql_is_refused_naming_the_portable_form(sql: str, portable: str) -> None:
    with pytest.raises(DialectError, match="docs/postgresql.md") as err:
        translate(sql)
    assert portable in str(err.value)


def test_words_inside_strings_are_not_refused() -> None:
    assert translate("SELECT ? WHERE 'INSERT OR IGNORE' <> 'PRAGMA x' AND 'IS ?' <> ''") == \
        "SELECT %s WHERE 'INSERT OR IGNORE' <> 'PRAGMA x' AND 'IS ?' <> ''"


def test_ddl_types_become_postgresqls() -> None:
    got = translate_ddl("CREATE TABLE IF NOT EXISTS t (a INTEGER PRIMARY KEY, b TEXT NOT NULL, c REAL, d BLOB, "
                        "e TEXT COLLATE \"C\", f TEXT DEFAULT 'TEXT') WITHOUT ROWID")
    assert got == ('CREATE TABLE IF NOT EXISTS t (a bigint PRIMARY KEY, b text COLLATE "C" NOT NULL, '
                   "c double precision, d bytea, e TEXT COLLATE \"C\", f text COLLATE \"C\" DEFAULT 'TEXT')")
    assert translate_ddl("ALTER TABLE t ADD COLUMN g INTEGER") == "ALTER TABLE t ADD COLUMN g bigint"
    assert translate_ddl("CREATE INDEX i ON t(a)") == "CREATE INDEX i ON t(a)"  # not a table: unchanged


# -- on the real server ------------------------------------------------------------------------------------
def _project_conn(url: str, name: str):  # type: ignore[no-untyped-def]
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e .[postgresql])")
    project = hashlib.sha256(name.encode()).hexdigest()[:16]
    conn = psycopg.connect(url, autocommit=True)
    schema.migrate_core(conn, project)
    conn.execute(f"SET search_path = {schema.search_path(project)}")
    return conn


def test_a_plugins_tables_are_created_from_its_sqlite_ddl(postgres_url: str) -> None:
    from memtree_plugins.lib.ref_links import STEPS

    with _project_conn(postgres_url, "plugin-ddl") as conn:
        for step in STEPS:
            conn.execute(translate_ddl(step), ())
        for step in STEPS:  # the steps are idempotent there too
            conn.execute(translate_ddl(step), ())
        for _ in range(2):
            conn.execute(translate("INSERT INTO code_names VALUES (?) ON CONFLICT DO NOTHING"), ("parse",))
        assert conn.execute("SELECT count(*) FROM code_names").fetchone() == (1,)
        conn.execute(translate("INSERT INTO code_rank VALUES (?, ?)"), (5_000_000_000, 0.25))  # past 32 bits
        kinds = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_name = 'code_links' AND table_schema = current_schema()").fetchall())
    assert kinds == {"src": "bigint", "dst": "bigint", "rel": "text", "weight": "double precision"}


PORTABLE = [
    ("SELECT ? || '%?%', 'it''s'", ("x",)),
    ("SELECT count(*) FROM (SELECT 1 AS one UNION ALL SELECT 2) AS two "
     "WHERE json_extract(?, '$.hook_event') IS NOT DISTINCT FROM ?", ('{"tool": "Bash"}', None)),
    ("SELECT CAST(json_extract(?, '$.exit_code') AS BIGINT) != 0, json_extract(?, '$.tool')",
     ('{"exit_code": 3}', '{"tool": "Bash"}')),
    ("SELECT substr('capture:accepted:Bash', 18), 7 / ?", (2,)),
]


@pytest.mark.parametrize(("sql", "params"), PORTABLE)
def test_portable_sql_answers_the_same_on_both(postgres_url: str, sql: str, params: tuple) -> None:
    lite = sqlite3.connect(":memory:").execute(sql, params).fetchall()
    with _project_conn(postgres_url, "portable") as conn:
        pg = conn.execute(dialect.translate(sql), params).fetchall()
    assert [tuple(int(v) if isinstance(v, bool) else v for v in row) for row in pg] == lite
