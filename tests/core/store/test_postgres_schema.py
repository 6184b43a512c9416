"""The core schema on a real PostgreSQL (memtree_core/store/postgres/schema.py): created idempotently under
advisory locks however many processes open a project at once, one schema per project, keyword columns that
split and stem as the SQLite store's FTS5 index does, and SQLite's json_extract for plugins' SQL."""

from __future__ import annotations

import hashlib
import json
import threading

import pytest

from memtree_core.store import StoreError
from memtree_core.store.postgres import schema

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e .[postgresql])")


def project_hash(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def connect(url: str, project: str | None = None):  # type: ignore[no-untyped-def]
    conn = psycopg.connect(url)
    conn.autocommit = True  # migrate_core makes its own transactions
    if project is not None:
        conn.execute(f"SET search_path = {schema.search_path(project)}")
    return conn


def test_core_schema_is_created_once_by_many_at_once(postgres_url: str) -> None:
    project = project_hash("many-at-once")
    n = 6
    barrier = threading.Barrier(n)
    applied: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with connect(postgres_url) as conn:
                barrier.wait()
                applied.append(schema.migrate_core(conn, project))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(applied) == [0] * (n - 1) + [schema.SCHEMA_VERSION]
    with connect(postgres_url) as conn:
        assert schema.migrate_core(conn, project) == 0  # and again later: nothing to do
        version = conn.execute("SELECT schema_version FROM memtree.projects WHERE hash = %s", (project,)).fetchone()
        assert version == (schema.SCHEMA_VERSION,)
        tables = {r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables "
                                             "WHERE table_schema = %s", (schema.schema_name(project),))}
    assert {"nodes", "edges", "transitions", "counters", "meta", "file_sources", "samples", "nodes_vec"} <= tables


def test_two_projects_share_a_database_not_their_rows(postgres_url: str) -> None:
    a, b = project_hash("project-a"), project_hash("project-b")
    for p in (a, b):
        with connect(postgres_url) as conn:
            schema.migrate_core(conn, p)
    with connect(postgres_url, a) as conn:
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, created_at, updated_at, source_uri) "
                     "VALUES ('n1', 'note', 'only in a', 'h', 1, 1, 'file:///src/x.py#L1')")
        assert conn.execute("SELECT key FROM file_sources").fetchall() == [("file:///src/x.py",)]
    with connect(postgres_url, b) as conn:
        assert conn.execute("SELECT count(*) FROM nodes").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM file_sources").fetchone() == (0,)


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    project = project_hash("from-the-future")
    with connect(postgres_url) as conn:
        schema.migrate_core(conn, project)
        conn.execute("UPDATE memtree.projects SET schema_version = %s WHERE hash = %s",
                     (schema.SCHEMA_VERSION + 1, project))
        with pytest.raises(StoreError, match="upgrade memtree"):
            schema.migrate_core(conn, project)
    with pytest.raises(StoreError, match="not a project hash"):
        schema.schema_name("x; DROP TABLE nodes")


def test_keyword_columns_split_and_stem_as_fts5_does(postgres_url: str) -> None:
    project = project_hash("keywords")
    with connect(postgres_url) as conn:
        schema.migrate_core(conn, project)
    with connect(postgres_url, project) as conn:
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, created_at, updated_at, symbols, words) "
                     "VALUES ('n1', 'file_chunk', 'retries the parse of cfg.load_flags() in a.b.c', 'h', 1, 1, "
                     "'ParseFlags parse flags', 'parse flags')")

        def hits(column: str, phrase: str) -> bool:
            row = conn.execute(f"SELECT count(*) FROM nodes WHERE {column} @@ "
                               f"phraseto_tsquery('{schema.TS_CONFIG}', %s)", (phrase,)).fetchone()
            return bool(row[0])

        assert hits("tsv", "retry")  # stemmed
        assert hits("tsv", "the parse")  # no stopwords dropped
        assert hits("tsv", "load flags") and hits("tsv", "b c")  # split on punctuation, as unicode61 does
        assert hits("tsv_symbols", f"{schema.LEADING_MARK} parseflags")  # starts the symbols field
        assert not hits("tsv_symbols", f"{schema.LEADING_MARK} parse")
        assert not hits("tsv_symbols", "retry")  # the body is not in the symbols field
        weights = conn.execute("SELECT ts_rank('{0.1, 0.2, 0.4, 1.0}', tsv, "
                               "phraseto_tsquery('memtree.memtree', 'parseflags')) > ts_rank('{0.1, 0.2, 0.4, 1.0}',"
                               " tsv, phraseto_tsquery('memtree.memtree', 'retries')) FROM nodes").fetchone()
        assert weights == (True,)  # a symbol outweighs body text
        conn.execute("UPDATE nodes SET status = 'live'")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT rowid FROM nodes WHERE status <> 'pruned' AND tsv @@ to_tsquery('memtree.memtree', 'flag')"))
        assert "nodes_tsv" in plan or "Seq Scan" in plan  # a one-row table may be scanned; the index exists
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'nodes_tsv' AND schemaname = %s",
                            (schema.schema_name(project),)).fetchone() == (1,)


def test_a_store_of_generated_keyword_columns_keeps_its_rows_keywords_and_keeps_new_ones(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step 3 (the keyword columns kept by a trigger) on a store made before it: the rows' keywords stay
    (DROP EXPRESSION keeps them), and new or changed rows get theirs."""
    project = project_hash("keywords-by-trigger")
    monkeypatch.setattr(schema, "CORE", schema.CORE[:2])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 2)
    with connect(postgres_url) as conn:
        schema.migrate_core(conn, project)
    with connect(postgres_url, project) as conn:
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, created_at, updated_at, symbols) "
                     "VALUES ('old', 'note', 'an okapi before', 'h', 1, 1, 'OkapiBefore')")
    monkeypatch.undo()
    with connect(postgres_url) as conn:
        assert schema.migrate_core(conn, project) == schema.SCHEMA_VERSION - 2
    with connect(postgres_url, project) as conn:
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, created_at, updated_at) "
                     "VALUES ('new', 'note', 'an okapi after', 'h', 1, 1)")

        def hits(column: str, word: str) -> list[str]:
            return [r[0] for r in conn.execute(f"SELECT id FROM nodes WHERE {column} @@ to_tsquery("
                                               f"'{schema.TS_CONFIG}', %s) ORDER BY id", (word,))]

        assert hits("tsv", "okapi") == ["new", "old"] and hits("tsv_symbols", "okapibefore") == ["old"]
        conn.execute("UPDATE nodes SET content = 'a quagga now' WHERE id = 'old'")
        assert hits("tsv", "okapi") == ["new"] and hits("tsv", "quagga") == ["old"]


def test_json_extract_answers_as_sqlite_does(postgres_url: str) -> None:
    import sqlite3

    project = project_hash("json")
    doc = json.dumps({"tool": "Bash", "failure": True, "ok": False, "exit_code": 2, "none": None,
                      "size": 12_345_678_901, "nested": {"path": "a/b"}})
    paths = ["$.tool", "$.failure", "$.ok", "$.exit_code", "$.none", "$.missing", "$.size", "$.nested.path"]
    lite = sqlite3.connect(":memory:")
    want = [lite.execute("SELECT CAST(json_extract(?, ?) AS TEXT)", (doc, p)).fetchone()[0] for p in paths]
    with connect(postgres_url) as conn:
        schema.migrate_core(conn, project)
    with connect(postgres_url, project) as conn:
        got = [conn.execute("SELECT json_extract(%s, %s)", (doc, p)).fetchone()[0] for p in paths]
        assert conn.execute("SELECT CAST(json_extract(%s, '$.exit_code') AS BIGINT) != 0", (doc,)).fetchone() == (True,)
    assert got == want
