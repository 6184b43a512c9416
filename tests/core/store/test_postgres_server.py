"""The test PostgreSQL (tests/helpers/postgres.py) is real and has what the PostgreSQL store needs:
pgvector with HNSW, pg_trgm, text search."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e .[postgresql])")


def test_server_has_the_extensions_the_store_needs(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        versions = dict(conn.execute("SELECT extname, extversion FROM pg_extension").fetchall())
        server = int(conn.execute("SHOW server_version_num").fetchone()[0])
    assert server >= 160000, server
    major, minor, *_ = (int(x) for x in versions["vector"].split("."))
    assert (major, minor) >= (0, 8), versions  # HNSW with iterative index scans (filtered KNN)
    assert "pg_trgm" in versions


def test_hnsw_knn_and_text_search_answer(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TEMP TABLE v (id int PRIMARY KEY, e vector(3), body text)")
        conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
        conn.execute("INSERT INTO v VALUES (1, '[1,0,0]', 'parse flags first'), (2, '[0,1,0]', 'close code'),"
                     " (3, '[0.9,0.1,0]', 'parsed flag values')")
        conn.execute("SET LOCAL enable_seqscan = off")  # the HNSW index answers, not a scan
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT id FROM v ORDER BY e <=> '[1,0,0]' LIMIT 2"))
        assert "hnsw" in plan.lower() or "v_e_idx" in plan, plan
        near = [r[0] for r in conn.execute("SELECT id FROM v ORDER BY e <=> '[1,0,0]' LIMIT 2")]
        assert near == [1, 3]
        hits = [r[0] for r in conn.execute("SELECT id FROM v WHERE to_tsvector('english', body) @@ "
                                           "phraseto_tsquery('english', 'parse flag') ORDER BY id")]
        assert hits == [1, 3]  # stemmed, as FTS5's porter tokenizer does
