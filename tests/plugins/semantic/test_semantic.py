"""Semantic recall end to end with the real local model: index real chunks, find them by meaning through
the ``search`` function; mixed-model rejection and ``reembed``; dedupe marks and never deletes (and undo);
summaries without an API key; keyword-only when sqlite-vec is off."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest
from helpers.common import closed_port

from memtree_core.app import App
from memtree_core.store import vectors as store_vectors
from memtree_core.store.status import IllegalTransition
from memtree_plugins.rankers import ReciprocalRankFusion, ScoreFusion
from memtree_plugins.semantic import vectors
from memtree_plugins.semantic.dedupe import Dedupe, restore
from memtree_plugins.semantic.indexer import EmbeddingIndexer
from memtree_plugins.semantic.summarize import SummarizerWalker

STDLIB = Path(sysconfig.get_paths()["stdlib"])



@pytest.fixture
def sapp(home: Path, project: Path, backend: str):
    """An App whose 'auto' embedder is the local model (no Ollama answers on a closed port), on each store."""
    a = App.open(project, environ={**os.environ, "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}",
                                   "MEMTREE_WALKERS__SUMMARIZER_SUBTREE_THRESHOLD": "3"})
    a.environ.pop("ANTHROPIC_API_KEY", None)  # the summarizer test must never call the API
    yield a
    a.close()


# Real chunks of real modules, a few per topic so the test stays fast on a loaded 2-core machine.
SYMBOLS = {"shutil.py": {"copytree", "_copytree", "rmtree", "move", "which", "disk_usage", "make_archive",
                         "chown", "get_terminal_size"},
           "gzip.py": {"open", "compress", "decompress"}}


def _index_stdlib_chunks(app: App, names: list[str]) -> dict[str, str]:
    """Chunk real stdlib modules with memtree's chunker; store the chunks of SYMBOLS live; return symbol ->
    node id."""
    by_symbol: dict[str, str] = {}
    for name in names:
        path = STDLIB / name
        text = path.read_text(encoding="utf-8")
        for ch in app.chunker_for(str(path)).chunk(str(path), text):
            if ch.symbol not in SYMBOLS[name]:
                continue
            node = app.store.insert_node("file_chunk", ch.text, source_uri=f"file://{path}#L{ch.start_line}-"
                                         f"{ch.end_line}", status_="live",
                                         metadata={"symbol": ch.symbol, "outline": ch.outline})
            if ch.symbol:
                by_symbol[ch.symbol] = node.id
    return by_symbol


def _embed_all(app: App) -> int:
    walker = EmbeddingIndexer()
    total = 0
    while walker.has_work(app):
        total += walker.run(app)["embedded"]
    return total


def test_with_no_embedder_the_keyword_hint_says_so_not_that_embedding_is_pending(home: Path,
                                                                                  project: Path) -> None:
    # An unknown name goes to Ollama as its model; no Ollama answers on a closed port.
    a = App.open(project, environ={**os.environ, "MEMTREE_EMBEDDING_MODEL": "no-such-embedder",
                                   "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    try:
        ok, why = a.plugins.retrievers["semantic"].available(a)
    finally:
        a.close()
    assert not ok
    assert why.startswith("no embedder is available") and "not reachable" in why, why
    assert "yet" not in why


def test_natural_language_query_finds_the_chunk_through_search(sapp: App) -> None:
    from memtree_plugins.retrieval.search import search
    semantic = sapp.plugins.retrievers["semantic"]
    by_symbol = _index_stdlib_chunks(sapp, ["shutil.py", "gzip.py"])
    assert "copytree" in by_symbol and "rmtree" in by_symbol
    assert not semantic.available(sapp)[0]  # nothing embedded yet: keyword, with the reason
    before = search(sapp, "copy directory tree recursively", limit=5)  # mode='auto'
    assert before.mode == "keyword" and "embedded yet" in before.degraded
    sapp.state.pop("retrieval.auto_mode")  # the auto decision is reused for a few seconds
    assert _embed_all(sapp) == vectors.backlog(sapp.store) + sapp.store.query_one(
        "SELECT count(*) FROM nodes_vec")[0]
    assert vectors.backlog(sapp.store) == 0
    assert sapp.store.counters("walker:embedding_indexer:backlog") == {"walker:embedding_indexer:backlog": 0}
    assert semantic.available(sapp) == (True, "")

    result = search(sapp, "recursively copy an entire directory to a new location", mode="semantic", limit=5)
    assert result.hits[0].id in (by_symbol["copytree"], by_symbol["_copytree"])
    result = search(sapp, "delete a folder and everything inside it", mode="semantic", limit=5)
    assert by_symbol["rmtree"] in [h.id for h in result.hits[:3]]
    hybrid = search(sapp, "copy directory tree recursively", mode="hybrid", limit=5)
    assert by_symbol["copytree"] in [h.id for h in hybrid.hits[:3]]
    assert search(sapp, "copy directory tree recursively", limit=5).mode == "hybrid"  # auto, now vectors exist


def test_mixed_models_are_refused_until_reembed(sapp: App) -> None:
    from memtree_plugins.semantic.reembed import reembed

    ids = [sapp.store.insert_node("note", text, status_="live").id for text in (
        "the deploy script pushes the docker image to the registry",
        "unit tests for the tokenizer live in tests/plugins/tokens/test_tokens.py")]
    # A store embedded earlier by another model: same vectors, labelled with that model.
    vecs = vectors.choose_embedder(sapp).embedder.embed(["x", "y"])
    vectors.put_vectors(sapp.store, list(zip(ids, vecs, strict=True)), "old-model", 384)
    with pytest.raises(vectors.ModelMismatch, match="memtree reembed"):
        vectors.semantic_search(sapp, "where are the tokenizer tests", 2)
    assert EmbeddingIndexer().run(sapp)["embedded"] == 0  # the indexer never mixes models either
    seen: list[tuple[int, int]] = []
    out = reembed(sapp, progress=lambda done, total: seen.append((done, total)))
    assert out["embedded"] == 2 and out["model"] == "all-MiniLM-L6-v2-int8" and seen[-1] == (2, 2)
    assert vectors.stored_models(sapp.store) == [("all-MiniLM-L6-v2-int8", 384, 2)]
    # What a search asks (which model?) without counting every vector: a scan on a server
    assert vectors.stored_models(sapp.store, counts=False) == [("all-MiniLM-L6-v2-int8", 384, None)]
    hits = vectors.semantic_search(sapp, "where are the tokenizer tests", 2)
    assert hits[0][0] == ids[1]


def test_dedupe_marks_older_superseded_never_deletes_and_undo_works(sapp: App) -> None:
    log = ("FAILED tests/test_api.py::test_login - AssertionError: expected 200, got 500\n"
           "1 failed, 41 passed in 3.2s\n")
    older = sapp.store.insert_node("tool_output", log, status_="live", created_at=1_000)
    newer = sapp.store.insert_node("tool_output", log.replace("3.2s", "3.4s"), status_="live", created_at=2_000)
    other = sapp.store.insert_node("tool_output", "Successfully installed requests-2.32.3 urllib3-2.2.2",
                                   status_="live", created_at=3_000)
    chunk = sapp.store.insert_node("file_chunk", log, source_uri="file:///a.txt#L1-2", status_="live")
    rows_before = sapp.store.query_one("SELECT count(*) FROM nodes")[0]
    _embed_all(sapp)
    counts = Dedupe().run(sapp)
    assert counts["superseded"] == 1
    nodes = sapp.store.get_nodes([older.id, newer.id, other.id, chunk.id])
    assert nodes[older.id].status == "superseded"
    assert nodes[newer.id].status == "live" and nodes[other.id].status == "live"
    assert nodes[chunk.id].status == "live"  # same text, other kind: not a duplicate
    assert sapp.store.query("SELECT src_id, dst_id FROM edges WHERE kind = 'supersedes'") == [(newer.id, older.id)]
    assert sapp.store.query_one("SELECT count(*) FROM nodes")[0] == rows_before  # nothing deleted

    assert "is live again" in restore(sapp, older.id)
    assert sapp.store.get_node(older.id).status == "live"
    assert sapp.store.query("SELECT * FROM edges WHERE kind = 'supersedes'") == []
    with pytest.raises(IllegalTransition):
        restore(sapp, newer.id)  # it was never superseded


def test_summarizer_without_a_key_writes_extractive_summaries(sapp: App) -> None:
    parent = sapp.store.insert_node("tool_output", "pytest run", status_="live")
    passed = "".join(f"tests/test_mod.py::test_case_{j} PASSED\n" for j in range(10))
    kids = [sapp.store.insert_node("tool_output", f"line one of output {i}\n{passed}ERROR: thing {i} failed",
                                   parent_id=parent.id, status_="live") for i in range(4)]
    walker = SummarizerWalker()
    assert walker.has_work(sapp)
    assert walker.run(sapp)["summaries"] == 1
    (summary,) = sapp.store.query("SELECT id, content, metadata FROM nodes WHERE kind = 'summary'")
    assert '"summarizer":"extractive"' in summary[2]
    assert "4 nodes" in summary[1] and "ERROR: thing 3 failed" in summary[1]
    edges = {d for (d,) in sapp.store.query("SELECT dst_id FROM edges WHERE src_id = ? AND kind = 'summarizes'",
                                            (summary[0],))}
    assert edges == {k.id for k in kids}
    assert not walker.has_work(sapp)  # fresh

    sapp.store.insert_node("tool_output", "a fifth output", parent_id=parent.id, status_="live",
                           created_at=sapp.store.get_node(summary[0]).created_at + 10)
    assert walker.has_work(sapp)
    walker.run(sapp)
    assert sapp.store.get_node(summary[0]).status == "superseded"
    assert len(sapp.store.query("SELECT 1 FROM nodes WHERE kind = 'summary' AND status = 'live'")) == 1


def test_keyword_only_when_sqlite_vec_is_off(home: Path, project: Path) -> None:
    from memtree_core.store import Store

    store = Store.open(project / "plain.db", vectors=False)
    try:
        assert not store.vector.available
        with pytest.raises(vectors.SemanticUnavailable, match="vector search is off"):
            vectors.knn(store, [0.0] * 384, "m", 384, 5)
        assert vectors.backlog(store) == 0 and vectors.stored_models(store) == []
    finally:
        store.close()


def test_rankers() -> None:
    lists = {"keyword": [("a", 9.0), ("b", 5.0), ("c", 1.0)], "semantic": [("c", 0.9), ("a", 0.8), ("d", 0.1)]}
    rrf = ReciprocalRankFusion().fuse(lists, 10)
    assert [h.node_id for h in rrf][:2] == ["a", "c"]
    assert rrf[0].score == pytest.approx(1 / 61 + 1 / 62)
    score = ScoreFusion().fuse(lists, 2)
    assert [h.node_id for h in score] == ["a", "c"] and len(score) == 2


class _ThirdParty:
    """A third-party plugin: its own summarizer (tried before the built-ins), a ranker replacing 'rrf',
    and an embedder that is never available (so 'auto' skips it with its reason)."""

    class Summ:
        name = "shout"

        def available(self) -> tuple[bool, str]:
            return True, ""

        def summarize(self, nodes, app) -> str:
            return f"{len(nodes)} NODES"

    class Rank(ReciprocalRankFusion):
        def __init__(self) -> None:
            super().__init__(k=1)

    class Emb:
        name, model, dim = "broken", "broken-model", 8

        def available(self) -> tuple[bool, str]:
            return False, "broken on purpose"

        def embed(self, texts):
            raise AssertionError("never called")

    from memtree_core.hookspecs import hookimpl

    @hookimpl
    def memtree_register_summarizers(self, register) -> None:
        register(self.Summ())

    @hookimpl
    def memtree_register_rankers(self, register) -> None:
        register(self.Rank(), replaces=True)

    @hookimpl
    def memtree_register_embedders(self, register) -> None:
        register(self.Emb())


def test_third_party_summarizer_ranker_and_embedder(home: Path, project: Path) -> None:
    app = App.open(project, environ={**os.environ, "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}",
                                     "MEMTREE_WALKERS__SUMMARIZER_SUBTREE_THRESHOLD": "1"},
                   extra=[("thirdparty", _ThirdParty())])
    try:
        assert app.plugins.rankers["rrf"].k == 1
        parent = app.store.insert_node("note", "p", status_="live")
        for i in range(2):
            app.store.insert_node("note", f"c{i}", parent_id=parent.id, status_="live")
        SummarizerWalker().run(app)
        assert app.store.query("SELECT content FROM nodes WHERE kind = 'summary'") == [("2 NODES",)]
        semantic = app.plugin_settings("semantic")
        app.plugins.plugin_settings["semantic"] = semantic.model_copy(update={"embedding_model": "broken"})
        choice = vectors.choose_embedder(app)
        assert choice.embedder is None and choice.reason == "broken on purpose"
    finally:
        app.close()


# -- the KNN index itself: exact against a brute-force ranking, whatever the filter ----------------------
def _vectors(n: int, dim: int, seed: int) -> list[list[float]]:
    """Clustered, unnormalised vectors (the index must not assume unit length): data for the index, not
    meaning — the semantic tests above use the real model."""
    import random

    rnd = random.Random(seed)
    centres = [[rnd.gauss(0, 1) for _ in range(dim)] for _ in range(8)]
    return [[c + 0.5 * rnd.gauss(0, 1) + 0.3 for c in centres[i % 8]] for i in range(n)]


def _cos_distance(a: list[float], b: list[float]) -> float:
    import math

    return 1 - sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _brute(q: list[float], vecs: dict[str, list[float]], k: int) -> list[str]:
    return sorted(vecs, key=lambda i: _cos_distance(q, vecs[i]))[:k]


@pytest.fixture(params=["two-stage", "vec0", "ranked"])
def knn_path(request, monkeypatch):
    """Run a test through every KNN path: the two-stage search over binary codes (no filter counts as small;
    with fewer vectors than it re-scores, its answer must be exact), the vec0 index, and the direct ranking
    of the filter's nodes (every filter here admits fewer than SCAN_MAX)."""
    if request.param in ("two-stage", "vec0"):
        monkeypatch.setattr(store_vectors, "SCAN_MAX", 0)
    if request.param == "vec0":
        monkeypatch.setattr(store_vectors, "TWO_STAGE", False)
    return request.param


def test_knn_is_exact_and_filters_never_starve_it(vstore, knn_path) -> None:
    dim = 16
    vecs = _vectors(300, dim, 1)
    ids = [vstore.insert_node("note" if i % 60 == 0 else "tool_output", f"n{i}", status_="live").id
           for i in range(300)]
    assert vectors.put_vectors(vstore, list(zip(ids, vecs, strict=True)), "m", dim) == 300
    by_id = dict(zip(ids, vecs, strict=True))
    query = _vectors(301, dim, 2)[-1]

    got = vectors.knn(vstore, query, "m", dim, 10)
    assert [i for i, _ in got] == _brute(query, by_id, 10)
    assert all(a[1] <= b[1] for a, b in zip(got, got[1:], strict=False))  # nearest first
    assert [d for _, d in got] == pytest.approx([_cos_distance(query, by_id[i]) for i, _ in got], abs=1e-5)
    # A kind held by 5 of 300 nodes: the index's nearest rarely include them; all 5 still come back, ranked.
    notes = {i: v for i, v in by_id.items() if vstore.get_node(i).kind == "note"}
    assert [i for i, _ in vectors.knn(vstore, query, "m", dim, 10, kinds=["note"])] == _brute(query, notes, 10)
    # Non-live nodes are never returned, even when they are the nearest.
    nearest = [i for i, _ in got[:3]]
    vstore.transition(nearest, "superseded", "test")
    live = {i: v for i, v in by_id.items() if i not in nearest}
    assert [i for i, _ in vectors.knn(vstore, query, "m", dim, 10)] == _brute(query, live, 10)
    assert [i for i, _ in vectors.knn(vstore, query, "m", dim, 3, statuses=["superseded"])] == nearest
    vstore.transition(nearest, "pruned", "test")
    assert not set(nearest) & {i for i, _ in vectors.knn(vstore, query, "m", dim, 300, statuses=["live", "pruned"])}
    # selective=True ranks the filter's nodes directly: same answer.
    cond = ("n.status = 'live' AND n.kind = ?", ["note"])
    assert vectors.knn(vstore, query, "m", dim, 4, where=cond, selective=True) == \
        vectors.knn(vstore, query, "m", dim, 4, where=cond)


def test_the_retired_binary_table_is_dropped_by_the_next_write_and_nothing_is_lost(vstore) -> None:
    """Stores from before the binary codes kept a vec0 ``bit`` twin of every float table, written and never
    read since the codes replaced it: the next write drops it; deletes and sweeps work with and without it."""
    dim = 8
    vecs = _vectors(30, dim, 5)
    ids = [vstore.insert_node("note", f"n{i}", status_="live").id for i in range(30)]
    vectors.put_vectors(vstore, list(zip(ids[:20], vecs[:20], strict=True)), "m", dim)
    ftab, retired = store_vectors.index_tables("m", dim)
    assert not vstore._has_table(retired)  # never created any more
    with vstore.tx() as c:  # what the earlier layout left beside the float table
        c.execute(f"CREATE VIRTUAL TABLE {retired} USING vec0(embedding bit[{dim}])")
        c.execute(f"INSERT INTO {retired} (rowid, embedding) SELECT rowid, vec_quantize_binary(embedding) "
                  f"FROM {ftab}")
    assert vectors.delete_vectors(vstore, ids[:1]) == 1  # the twin is still there: its rows go too
    assert vstore.query_one(f"SELECT count(*) FROM {retired}")[0] == 19
    vectors.put_vectors(vstore, list(zip(ids[20:], vecs[20:], strict=True)), "m", dim)
    assert not vstore._has_table(retired)
    got = vectors.knn(vstore, vecs[25], "m", dim, 3)
    assert got[0][0] == ids[25] and ids[0] not in {i for i, _ in vectors.knn(vstore, vecs[0], "m", dim, 5)}
    assert vectors.delete_vectors(vstore, ids[1:3]) == 2 and vectors.sweep_orphans(vstore) == 0


def test_an_index_of_the_older_layout_is_rebuilt_once(vstore, knn_path) -> None:
    dim = 8
    vecs = _vectors(40, dim, 3)
    ids = [vstore.insert_node("note", f"n{i}", status_="live").id for i in range(40)]
    vectors.put_vectors(vstore, list(zip(ids, vecs, strict=True)), "m", dim)
    want = vectors.knn(vstore, vecs[5], "m", dim, 5)
    # What e26bf14 left behind: distance_metric=cosine tables under the f_/b_ names, and no l2_ tables.
    ftab, btab = store_vectors.index_tables("m", dim)
    old_f, old_b = (pre + ftab.rsplit("_", 1)[1] for pre in store_vectors.LAYOUTS[1])
    with vstore.tx() as c:
        c.execute(f"DROP TABLE {ftab}")
        c.execute("DELETE FROM meta WHERE key = ?", (f"vec_index:{ftab}",))
        c.execute(f"CREATE VIRTUAL TABLE {old_f} USING vec0(embedding float[{dim}] distance_metric=cosine)")
        c.execute(f"CREATE VIRTUAL TABLE {old_b} USING vec0(embedding bit[{dim}])")
        c.execute("INSERT INTO meta (key, value) VALUES (?, 'm')", (f"vec_index:{old_f}",))
    got = vectors.knn(vstore, vecs[5], "m", dim, 5)
    assert [i for i, _ in got] == [i for i, _ in want] and got[0][1] == pytest.approx(0, abs=1e-6)
    names = {r[0] for r in vstore.query("SELECT name FROM sqlite_master")}
    assert ftab in names and btab not in names and old_f not in names and old_b not in names
    assert vstore.get_meta(f"vec_index:{old_f}") is None
    assert vectors.delete_vectors(vstore, ids[:1]) == 1
    assert ids[0] not in {i for i, _ in vectors.knn(vstore, vecs[0], "m", dim, 5)}


SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "bookshop"


def _run_dedupe_pass(app: App) -> dict[str, int]:
    total = {"checked": 0, "superseded": 0, "similar": 0}
    while True:
        counts = Dedupe().run(app)
        for k in total:
            total[k] += counts[k]
        if counts["checked"] < 500:
            return total


def test_dedupe_never_hides_distinct_code_of_the_sample(sapp: App) -> None:
    """rates_at() and rates_br() share their shape, not their data: both stay live and findable."""
    from memtree_plugins.retrieval.search import Filters, search

    path = SAMPLE / "bookshop" / "shipping_rates.py"
    text = path.read_text(encoding="utf-8")
    wanted = {"rates_at", "rates_be", "rates_br", "rates_de"}  # a few of its ~40 siblings keep the test quick
    for ch in sapp.chunker_for(str(path)).chunk(str(path), text):
        if ch.symbol in wanted:
            sapp.store.insert_node("file_chunk", ch.text, source_uri=f"file://{path}#L{ch.start_line}-{ch.end_line}",
                                   status_="live", metadata={"path": str(path), "kind": ch.kind,
                                                             "symbol": ch.symbol})
    assert _embed_all(sapp) == len(wanted)
    counts = _run_dedupe_pass(sapp)
    assert counts["superseded"] == 0
    assert counts["similar"] > 0  # their vectors are that close (cosine > 0.97): linked, not merged
    rows = sapp.store.query("SELECT status, json_extract(metadata, '$.symbol') FROM nodes WHERE kind = 'file_chunk'")
    assert {st for st, _ in rows} == {"live"} and {sym for _, sym in rows} == wanted
    hit = search(sapp, "rates_at", mode="keyword", limit=3, filters=Filters.build())
    assert hit.hits and "def rates_at(" in sapp.store.get_node(hit.hits[0].id).content


def test_dedupe_still_merges_a_real_copy_of_code(sapp: App) -> None:
    body = ("def charge(order, card):\n    total = sum(line.price * line.qty for line in order.lines)\n"
            "    if total <= 0:\n        raise ValueError('empty order')\n    return card.debit(total)\n")
    meta = {"path": "/p/billing.py", "kind": "function", "symbol": "charge"}
    older = sapp.store.insert_node("file_chunk", body, source_uri="file:///p/billing.py#L1-5", status_="live",
                                   created_at=1_000, metadata=meta)
    # the same code re-indented: a copy
    newer = sapp.store.insert_node("file_chunk", body.replace("    ", "  "),
                                   source_uri="file:///p/billing.py#L10-15", status_="live", created_at=2_000,
                                   metadata=meta)
    # same text, another chunk kind: not compared as a copy
    other = sapp.store.insert_node("file_chunk", body, source_uri="file:///p/billing.py#L20-24", status_="live",
                                   created_at=3_000, metadata={**meta, "kind": "method"})
    _embed_all(sapp)
    counts = _run_dedupe_pass(sapp)
    nodes = sapp.store.get_nodes([older.id, newer.id, other.id])
    assert counts["superseded"] == 1
    assert nodes[older.id].status == "superseded"
    assert nodes[newer.id].status == "live" and nodes[other.id].status == "live"


def test_dedupe_keeps_each_machines_version_of_a_file(home: Path, project: Path, tmp_path: Path,
                                                      postgres_url: str) -> None:
    """On a store machines share (two homes on one real server), two machines' versions of one file are two
    checkouts' views, not copies: both stay live; a copy within one machine's checkout still merges."""
    env = {**os.environ, "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}", "MEMTREE_STORE_URL": postgres_url}
    a = App.open(project, environ={**env, "MEMTREE_HOME": str(tmp_path / "home-a")})
    b = App.open(project, environ={**env, "MEMTREE_HOME": str(tmp_path / "home-b")})
    try:
        body = ("def charge(order, card):\n    total = sum(line.price * line.qty for line in order.lines)\n"
                "    if total <= 0:\n        raise ValueError('empty order')\n    return card.debit(total)\n")
        meta = {"path": "/p/billing.py", "kind": "function", "symbol": "charge"}
        on_a = a.store.insert_node("file_chunk", body, source_uri="file:///p/billing.py#L1-5", status_="live",
                                   created_at=1_000, metadata=meta)
        on_b = b.store.insert_node("file_chunk", body, source_uri="file:///p/billing.py#L1-5", status_="live",
                                   created_at=2_000, metadata=meta)
        copy_on_b = b.store.insert_node("file_chunk", body.replace("    ", "  "), source_uri="file:///p/billing.py"
                                        "#L10-15", status_="live", created_at=3_000, metadata=meta)
        assert _embed_all(a) == 3
        assert _run_dedupe_pass(a)["superseded"] == 1  # whichever machine's loop runs it
        got = {i: n.status for i, n in a.store.get_nodes([on_a.id, on_b.id, copy_on_b.id]).items()}
        assert got == {on_a.id: "live", on_b.id: "superseded", copy_on_b.id: "live"}
    finally:
        a.close()
        b.close()


def test_shingle_similarity_tells_copies_from_siblings() -> None:
    from memtree_plugins.semantic.sameness import jaccard

    text = (SAMPLE / "bookshop" / "shipping_rates.py").read_text(encoding="utf-8")
    at = text[text.index("def rates_at("):text.index("def ", text.index("def rates_at(") + 5)]
    br = text[text.index("def rates_br("):text.index("def ", text.index("def rates_br(") + 5)]
    assert jaccard(at, at.replace("    ", "\t")) == 1.0
    assert jaccard(at, br) < 0.5


def test_stats_shows_embedding_progress_and_rate(sapp: App, project: Path) -> None:
    """`memtree stats` says how many live nodes hold a vector, with which model, what is left and the rate."""
    import json

    from tests.helpers.common import run_memtree

    for i in range(5):
        sapp.store.insert_node("note", f"note number {i} about the deploy script", status_="live")
    assert EmbeddingIndexer().run(sapp)["embedded"] == 5
    sapp.store.insert_node("note", "one more, not embedded yet", status_="live")
    sapp.close()
    out = run_memtree("stats", "--project", str(project), cwd=project)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("embeddings"))
    assert "5/6 live nodes (83%) with all-MiniLM-L6-v2-int8; 1 to go at " in line, line
    assert " nodes/s" in line
    js = run_memtree("stats", "--json", "--project", str(project), cwd=project)
    progress = json.loads(js.stdout)["embeddings"]
    assert progress["embedded"] == 5 and progress["backlog"] == 1 and progress["rate"] > 0
