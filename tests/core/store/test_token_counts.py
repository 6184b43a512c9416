"""Stored token counts (migration 7): counted when a node is written, by the registered counter; old rows
counted later in bounded batches; a count from another counter, or for other content, is never used.  The
tests of a bare store run on both backends (the ``store`` fixture)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memtree_core.daemon.coordinator import Coordinator
from memtree_core.store import Store, token_counts
from memtree_core.store.schema import SCHEMA_VERSION
from memtree_plugins.retrieval.nodes import SAMPLE_CHARS, node_tokens, node_tokens_estimate
from memtree_plugins.retrieval.search import Filters, search
from memtree_plugins.tokens import EstimatingCounter, estimate

REPO = Path(__file__).resolve().parents[3]


def _texts() -> list[str]:
    """Real text of every shape the counter prices differently: this repository's code and docs, a line of
    non-ASCII text, a blob, an empty body, and one body far over the search's sampling size."""
    files = sorted((REPO / "memtree_plugins").glob("*.py"))[:6] + [REPO / "README.md"]
    texts = [p.read_text(encoding="utf-8") for p in files if p.exists()]
    # Its tail (past the sample) is text priced unlike its head, so a count scaled up from the sample is
    # always wrong, whatever the repository's files hold.
    big = "\n".join(texts) * (1 + 2 * SAMPLE_CHARS // max(1, len("\n".join(texts)))) + "東京 🚀 " * 4000
    return [*texts, "naïve café — 東京 🚀 ok", "QUJDREVGR0hJSktMTU5PUA== deadbeef" * 40, "", big]


def _old_store(path: Path, texts: list[str]) -> None:
    """A store as memtree left it before migration 7, with ``texts`` as nodes."""
    from memtree_core.store import schema
    from memtree_core.store.sqlite_route import choose_route

    conn = choose_route().module.connect(str(path), isolation_level=None)
    for version in range(6):
        for stmt in schema.MIGRATIONS[version]:
            stmt(conn) if callable(stmt) else conn.execute(stmt)
    conn.execute("PRAGMA user_version = 6")
    for i, text in enumerate(texts):
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at) "
                     "VALUES (?, 'tool_output', ?, ?, 'live', 1, 1)", (f"N{i:03d}", text, f"h{i}"))
    conn.close()


@pytest.mark.sqlite_only('SQLite files of older memtree versions; a PostgreSQL store starts at the latest schema')
def test_an_old_store_migrates_at_once_and_is_counted_in_bounded_batches(tmp_path: Path) -> None:
    texts = _texts()
    path = tmp_path / "v6.db"
    _old_store(path, texts)
    store = Store.open(path)
    try:
        assert store.query_one("PRAGMA user_version")[0] == SCHEMA_VERSION
        # the migration itself counts nothing: a big store opens as fast as before
        assert store.query_one("SELECT count(*) FROM nodes WHERE tokens IS NOT NULL")[0] == 0
        counter = EstimatingCounter()
        calls = []
        while True:
            n, done = token_counts.fill(store, counter, rows=3)
            calls.append(n)
            if done:
                break
        assert max(calls) <= 3 and len(calls) >= len(texts) // 3
        tag = token_counts.tag_of(store, counter)
        rows = store.query("SELECT content, tokens, tokens_by FROM nodes ORDER BY id")
        assert [(t, by) for _c, t, by in rows] == [(estimate(c), tag) for c, _t, _b in rows]
        assert token_counts.fill(store, counter) == (0, True)  # the cursor: nothing is counted twice
        # a writer with no counter adds a row later: the next fill reaches it
        store.insert_node("note", "written without a counter", status_="live")
        assert store.query_one("SELECT tokens FROM nodes WHERE content = 'written without a counter'")[0] is None
        assert token_counts.fill(store, counter) == (1, True)
    finally:
        store.close()


def test_new_nodes_carry_the_registered_counters_count(backend_app) -> None:
    app = backend_app
    texts = _texts()
    nodes = [app.store.insert_node("tool_output", t, status_="live") for t in texts]
    tag = token_counts.tag_of(app.store, app.plugins.token_counter)
    assert tag is not None
    stored = dict(app.store.query("SELECT id, tokens FROM nodes"))
    small = [n for n in nodes if len(n.content) <= token_counts.AT_WRITE_CHARS]
    large = [n for n in nodes if n not in small]
    assert small and large
    for node in small:
        assert stored[node.id] == app.count_tokens(node.content) == estimate(node.content)
        assert node.tokens == stored[node.id] and node.tokens_by == tag
        fresh = app.store.get_node(node.id)
        assert node_tokens(app, fresh) == node_tokens_estimate(app, fresh) == estimate(fresh.content)
    # the big body is left out of the write (a capture's ack waits for it) and counted by the walker
    big = max(nodes, key=lambda n: len(n.content))
    assert len(big.content) > SAMPLE_CHARS and all(stored[n.id] is None for n in large)
    assert Coordinator(app).run_once("token_counts")["token_counts"]["counted"] == len(large)
    # then a search lists it with its exact count, not one scaled up from a sample
    sampled = -(-estimate(big.content[:SAMPLE_CHARS]) * len(big.content) // SAMPLE_CHARS)
    assert sampled != estimate(big.content)  # else this test could not tell them apart
    hits = search(app, "memtree_token_counter", mode="keyword", limit=20, filters=Filters()).hits
    assert estimate(big.content) in [h.tokens for h in hits if h.id == big.id]


class WordCounter:
    name = "words"
    version = 1

    def count(self, text: str) -> int:
        return len(text.split())


def test_a_count_made_by_another_counter_or_version_is_not_used(store) -> None:
    store.count_tokens_with(EstimatingCounter())
    node = store.insert_node("note", "alpha beta gamma delta " * 10, status_="live")
    row = store.get_node(node.id)
    assert row.tokens == estimate(row.content)
    words = WordCounter()
    assert token_counts.tag_of(store, words) is None  # never used here: no row can hold its counts
    assert token_counts.tag_of(store, words, create=True) != row.tokens_by
    newer = WordCounter()
    newer.name = "estimate"  # same name as the built-in, another version: another counter
    newer.version = EstimatingCounter.version + 1
    assert token_counts.counter_key(newer) != token_counts.counter_key(EstimatingCounter())
    assert token_counts.tag_of(store, newer, create=True) not in (row.tokens_by, token_counts.tag_of(store, words))
    # the walker's fill recounts that row for the new counter
    while not token_counts.fill(store, words)[1]:
        pass
    assert store.query_one("SELECT tokens FROM nodes WHERE id = ?", (node.id,))[0] == 40


def test_new_content_without_a_new_count_drops_the_old_count(store) -> None:
    store.count_tokens_with(EstimatingCounter())
    a = store.insert_node("note", "one two three", status_="live")
    b = store.insert_node("note", "four five six", status_="live")
    store.execute("UPDATE nodes SET metadata = '{\"x\":1}' WHERE id = ?", (a.id,))
    assert store.get_node(a.id).tokens == estimate("one two three")  # other columns keep it
    store.execute("UPDATE nodes SET content = 'a much longer text than before' WHERE id = ?", (a.id,))
    assert (store.get_node(a.id).tokens, store.get_node(a.id).tokens_by) == (None, None)
    store.execute("UPDATE nodes SET content = 'seven', tokens = 2 WHERE id = ?", (b.id,))
    assert store.get_node(b.id).tokens == 2  # a writer that sets both keeps its count


class BrokenCounter:
    name = "broken"

    def count(self, text: str) -> int:
        raise RuntimeError("tokenizer missing")


def test_a_failing_counter_costs_the_count_never_the_node(store) -> None:
    store.count_tokens_with(BrokenCounter())
    node = store.insert_node("note", "kept all the same", status_="live")
    assert store.get_node(node.id).content == "kept all the same"
    assert store.get_node(node.id).tokens is None
    assert token_counts.fill(store, BrokenCounter()) == (0, True)


def test_the_walker_counts_what_was_stored_without_a_count(backend_app) -> None:
    app = backend_app
    store = app.store
    rng = random.Random(5)
    words = ["retry", "ledger", "naïve", "\t", "\n", "HTTPError", "0x1f", "_", "東京"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 300))) for _ in range(40)]
    with store.tx() as c:  # as a writer with no counter (an older memtree, a bulk import) stores them
        c.executemany("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at) "
                      "VALUES (?, 'note', ?, ?, 'live', 1, 1)", [(f"W{i:03d}", t, f"w{i}") for i, t in
                                                                enumerate(texts)])
    coordinator = Coordinator(app)
    assert "token_counts" in app.plugins.walkers.names()
    result = coordinator.run_once("token_counts")["token_counts"]
    assert result["counted"] == len(texts) and result["done"] == 1
    rows = store.query("SELECT content, tokens FROM nodes WHERE id LIKE 'W%'")
    assert all(t == app.count_tokens(c) for c, t in rows)
    assert not app.plugins.walkers.get("token_counts").has_work(app)
