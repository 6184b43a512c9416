"""Hybrid fusion by query shape (memtree_plugins/lib/fusion.py) and the contextual header embedded
before a chunk's text (memtree_core/embedding_text.py), the latter through the real local model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memtree_core.app import App
from memtree_plugins.lib.fusion import fuse, query_shape
from memtree_plugins.rankers import ShapedFusion
from memtree_plugins.semantic.embedding_text import (
    TEXT_VERSION,
    TEXT_VERSION_KEY,
    embedding_text,
    header,
    identifier_words,
)


@pytest.mark.parametrize(("query", "shape"), [
    ("should_strip_auth", "identifier"), ("HTTPAdapter", "identifier"), ("Command.option", "identifier"),
    ("parseArgs()", "identifier"), ("std::vector", "identifier"), ("retry", "identifier"),
    ("where do we retry failed payments", "prose"), ("how is the config file located", "prose"),
    ("merge_setting headers", "mixed"), ("redirect auth", "mixed"),
    ("where does parse_args read sys.argv", "mixed"),
])
def test_query_shape(query: str, shape: str) -> None:
    assert query_shape(query) == shape


def test_an_identifier_keeps_keyword_order_and_semantic_only_fills() -> None:
    kw = [("def", 9.0), ("use1", 5.0), ("use2", 4.0)]
    sem = [("use2", 0.9), ("other", 0.8), ("def", 0.7)]
    out = fuse("identifier", kw, sem, 4)
    assert [n for n, *_ in out] == ["def", "use1", "use2", "other"]
    assert [s for _, s, _ in out] == sorted((s for _, s, _ in out), reverse=True)
    assert out[0][2] == {"keyword": 1, "semantic": 3}


def test_prose_fuses_both_lists_by_rank() -> None:
    kw = [("a", 9.0), ("b", 5.0), ("c", 1.0)]
    sem = [("b", 0.9), ("c", 0.8), ("d", 0.1)]
    order = [n for n, *_ in fuse("prose", kw, sem, 10)]
    assert order == ["b", "c", "a", "d"]  # found by both beats first in one only
    assert set(order) == {"a", "b", "c", "d"}


def test_the_shaped_ranker_reads_the_query() -> None:
    lists = {"keyword": [("def", 3.0), ("x", 2.0)], "semantic": [("x", 0.9), ("y", 0.8)]}
    assert [h.node_id for h in ShapedFusion().fuse(lists, 3, query="parse_flag")] == ["def", "x", "y"]
    assert ShapedFusion().fuse(lists, 3, query="where are the flags parsed")[0].node_id == "x"


def test_header_names_path_symbol_words_and_outline(tmp_path: Path) -> None:
    meta = {"path": str(tmp_path / "src" / "pkg" / "sessions.py"), "symbol": "SessionRedirectMixin.should_strip_auth",
            "kind": "method", "outline": "def should_strip_auth(self, old_url, new_url):"}
    head = header(meta, tmp_path)
    assert head.splitlines()[0] == "src/pkg/sessions.py"
    assert "method SessionRedirectMixin.should_strip_auth (session redirect mixin should strip auth)" in head
    assert "def should_strip_auth(self, old_url, new_url):" in head
    text = embedding_text("body", json.dumps(meta), tmp_path)
    assert text.startswith(head) and text.endswith("\n\nbody")
    # no path (tool output, notes): the text alone; unreadable metadata is no error
    assert embedding_text("out", {"tool": "bash"}) == "out"
    assert embedding_text("out", "{not json") == "out"
    assert identifier_words("getHTTPResponse_v2") == "get http response v 2"


def test_the_walker_embeds_the_header_and_stores_the_text_unchanged(home: Path, project: Path) -> None:
    from memtree_core.store.vectors import unpack
    from memtree_plugins.semantic import vectors
    from memtree_plugins.semantic.indexer import EmbeddingIndexer

    app = App.open(project, environ={**os.environ, "MEMTREE_EMBEDDING_MODEL": "local"})
    try:
        if not app.store.vector.available or not vectors.choose_embedder(app).ok:
            pytest.skip("no vector search or local model here")
        body = "def total(xs):\n    return sum(xs)\n"
        meta = {"path": str(project / "shop" / "cart.py"), "symbol": "Cart.total", "kind": "method",
                "outline": "def total(xs):"}
        node = app.store.insert_node("file_chunk", body, source_uri=f"file://{project}/shop/cart.py#L1-2",
                                     status_="live", metadata=meta)
        walker = EmbeddingIndexer()
        while walker.has_work(app):
            walker.run(app)
        (blob,) = app.store.query_one("SELECT embedding FROM nodes_vec WHERE id = ?", (node.id,))
        stored = unpack(blob)
        e = vectors.choose_embedder(app).embedder
        with_header, bare = e.embed([embedding_text(body, meta, app.identity.root), body])

        def cos(a: list[float], b: list[float]) -> float:
            return sum(x * y for x, y in zip(a, b, strict=True))

        assert cos(stored, with_header) > 0.9999 > cos(stored, bare)
        assert app.store.get_nodes([node.id])[node.id].content == body
        assert app.store.get_meta(TEXT_VERSION_KEY) == TEXT_VERSION

        # A store embedded before the header (no version recorded, bare vectors): reembed redoes every node once.
        from memtree_plugins.semantic.reembed import reembed

        with app.store.tx():
            vectors.delete_vectors(app.store, [node.id])
            vectors.put_vectors(app.store, [(node.id, bare)], e.model, len(bare))
        app.store.execute("DELETE FROM meta WHERE key = ?", (TEXT_VERSION_KEY,))
        assert reembed(app)["embedded"] == 1
        (blob,) = app.store.query_one("SELECT embedding FROM nodes_vec WHERE id = ?", (node.id,))
        assert cos(unpack(blob), with_header) > 0.9999
        assert app.store.get_meta(TEXT_VERSION_KEY) == TEXT_VERSION
        assert reembed(app)["embedded"] == 0  # up to date: nothing to redo
    finally:
        app.close()


@pytest.mark.parametrize(("uri", "test"), [
    ("file:///r/tests/test_utils.py#L1-9", True), ("file:///r/src/pkg/test_helpers.py", True),
    ("file:///r/pkg/client_test.go", True), ("file:///r/src/cart.spec.ts", True), ("file:///r/lib/a.test.js", True),
    ("file:///r/src/test/java/CartTest.java", True), ("file:///r/conftest.py", True),
    ("file:///r/src/pkg/utils.py#L1-9", False), ("file:///r/src/testament.py", False),
    ("file:///r/src/contest/rules.py", False), (None, False),
])
def test_test_paths(uri: str | None, test: bool) -> None:
    from memtree_plugins.retrieval.priors import is_test_path

    assert is_test_path(uri) is test


def test_a_prose_question_prefers_the_implementation_to_its_tests() -> None:
    from memtree_plugins.retrieval.priors import apply_priors

    where = {"t": "file:///r/tests/test_retry.py#L1-20", "c": "file:///r/src/retry.py#L5-30", "d": "file:///r/README.md"}
    order = [("t", 0.033), ("c", 0.030), ("d", 0.010)]
    assert [n for n, _ in apply_priors("where do we retry failed payments", order, where.get)] == ["c", "t", "d"]
    # a question about the tests, or an identifier, keeps the fused order
    assert [n for n, _ in apply_priors("which tests cover the retry of payments", order, where.get)] == ["t", "c", "d"]
    assert [n for n, _ in apply_priors("retry_payment", order, where.get)] == ["t", "c", "d"]


def test_a_tie_goes_to_keyword_whatever_the_node_ids() -> None:
    for kw_id, sem_id in (("a", "z"), ("z", "a")):
        out = fuse("prose", [(kw_id, 1.0)], [(sem_id, 0.9)], 2)
        assert [n for n, *_ in out] == [kw_id, sem_id]
