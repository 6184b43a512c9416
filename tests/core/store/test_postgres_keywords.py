"""Keyword matching on PostgreSQL finds what FTS5 finds on SQLite (memtree_core/store/postgres/keywords.py):
the same seeded corpus of code-like texts in a real SQLite store and in a project schema on a real
PostgreSQL, the same Keywords, the same nodes matched."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from memtree_core.store import Store
from memtree_core.store.keywords import Keywords
from memtree_core.store.postgres import schema
from memtree_core.store.postgres.keywords import tsquery
from memtree_core.store.symbols import identifier_words, symbol_text

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e .[postgresql])")

WORDS = ["parse", "parsed", "parses", "flag", "flags", "retry", "retries", "the", "of", "is", "not", "in",
         "config", "loader", "café", "naïve", "digit", "digits", "close", "code", "value", "values"]
IDENTS = ["parseFlags", "closeCode", "load_config", "cfg.load_flags()", "HTTPRetryPolicy", "a.b.c",
          "src/parse/flags.py", "https://example.org/retry?x=1", "v2.3.1", "is_not_in", "ConfigLoader"]
SYMBOLS = ["parseFlags", "ConfigLoader.load", "retry_policy", "closeCode", "Parser.parse_flag"]


def corpus(seed: int = 7, n: int = 120) -> list[tuple[str, str, dict]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS + IDENTS) for _ in range(rng.randint(3, 12)))
        meta = {}
        if rng.random() < 0.4:
            qual = rng.choice(SYMBOLS)
            meta = {"symbol": qual, "kind": "function", "name": qual.rsplit(".", 1)[-1]}
        out.append((f"n{i:03d}", text, meta))
    return out


QUERIES = [
    Keywords(("parse",)), Keywords(("parsed flags",)), Keywords(("retry",)), Keywords(("the",)),
    Keywords(("is not",)), Keywords(("cafe",)), Keywords(("naive",)), Keywords(("b c",)),
    Keywords(("load flags",)), Keywords(("close code",)), Keywords(("closecode",)),
    Keywords(("parseflags", "parse flags")), Keywords(("config", "loader")), Keywords(("config", "digits"), any=True),
    Keywords(("http retry policy",)), Keywords(("example org",)), Keywords(("v2 3",)),
    Keywords(("parseflags",), field="symbols"), Keywords(("parse",), field="symbols"),
    Keywords(("load",), field="symbols", leading=True), Keywords(("parse flag",), field="symbols", leading=True),
    Keywords(("retry policy", "closecode"), any=True, field="symbols", leading=True),
]


@pytest.fixture(scope="module")
def both(postgres_url: str, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    lite = Store.open(Path(tmp_path_factory.mktemp("kw")) / "store.db")
    project = hashlib.sha256(b"keyword-parity").hexdigest()[:16]
    conn = psycopg.connect(postgres_url, autocommit=True)
    schema.migrate_core(conn, project)
    conn.execute(f"SET search_path = {schema.search_path(project)}")
    for node_id, text, meta in corpus():
        lite.insert_node("file_chunk", text, metadata=meta, node_id=node_id, status_="live")
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at, metadata, "
                     "symbols, words) VALUES (%s, 'file_chunk', %s, 'h', 'live', 1, 1, %s, %s, %s)",
                     (node_id, text, json.dumps(meta), symbol_text(meta) if meta else "", identifier_words(text)))
    yield lite, conn
    lite.close()
    conn.close()


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.fts5())
def test_postgresql_matches_what_fts5_matches(both, query: Keywords) -> None:  # type: ignore[no-untyped-def]
    lite, conn = both
    want = {r[0] for r in lite.query("SELECT id FROM nodes WHERE rowid IN (SELECT rowid FROM nodes_fts "
                                     "WHERE nodes_fts MATCH ?)", (query.fts5(),))}
    column, expr, params = tsquery(query)
    got = {r[0] for r in conn.execute(f"SELECT id FROM nodes WHERE status <> 'pruned' AND {column} @@ ({expr})",
                                      params)}
    assert want, "a query the corpus answers"
    assert got == want, (sorted(got - want), sorted(want - got))


RANKED = [*QUERIES, Keywords(("parse", "café")), Keywords(("retry", "the", "value"), any=True),
          Keywords(("config", "close code", "digits"), any=True), Keywords(("the", "code"))]


def test_postgresql_scores_as_fts5s_bm25_scores(both, postgres_url: str) -> None:  # type: ignore[no-untyped-def]
    """Each phrase weighed by its idf, its frequency saturating, long texts weighed less: the scores of the
    best ten nodes of each query within a few percent of SQLite's bm25 on average (a node's length is its
    bytes on PostgreSQL and its tokens in FTS5, hence not exactly)."""
    from memtree_core.store.postgres.store import PostgresStore

    lite, conn = both
    pg = PostgresStore.open(postgres_url, hashlib.sha256(b"keyword-parity").hexdigest()[:16])
    try:
        ids = dict(conn.execute("SELECT rowid, id FROM nodes").fetchall())
        lite_ids = dict(lite.query("SELECT rowid, id FROM nodes"))
        for query in RANKED:
            want = {lite_ids[r]: s for r, s in lite.keyword_search(query)}
            got = {ids[r]: s for r, s in pg.keyword_search(query)}
            assert set(got) == set(want)
            best = sorted(want, key=lambda n: (want[n], n))[:10]
            off = [abs(got[n] - want[n]) / abs(want[n]) for n in best if want[n]]
            assert sum(off) / max(1, len(off)) < 0.15, (query, [(n, want[n], got[n]) for n in best])
    finally:
        pg.close()


def test_a_phrase_past_the_count_cap_weighs_as_one_at_the_cap(postgres_url: str, request: pytest.FixtureRequest,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A phrase's document count stops at ``DF_CAP`` (the cost of a query never grows with its commonest
    word's matches): two phrases both commoner than the cap weigh the same."""
    from helpers.postgres import project_for

    from memtree_core.store.postgres import keywords
    from memtree_core.store.postgres.store import PostgresStore

    store = PostgresStore.open(postgres_url, project_for(request.node.nodeid))
    try:
        for i in range(40):
            store.insert_node("note", f"walrus {'beaver ' if i < 10 else ''}filler{i}", status_="live")
        one = store.insert_node("note", "walrus alpha", status_="live").rowid
        other = store.insert_node("note", "beaver alpha", status_="live").rowid
        query = Keywords(("walrus", "beaver", "alpha"), any=True)
        scores = dict(store.keyword_search(query, rowids=[one, other]))
        assert scores[other] < scores[one]  # beaver (11 nodes) is rarer than walrus (41)
        monkeypatch.setattr(keywords, "DF_CAP", 5)
        scores = dict(store.keyword_search(query, rowids=[one, other]))
        assert scores[other] == pytest.approx(scores[one])
    finally:
        store.close()
