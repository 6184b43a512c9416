"""The two-stage KNN's binary codes (memtree_core/store/vector_codes.py): the codes table follows every
write to ``nodes_vec`` (triggers), a process's RAM copy follows the table (even across connections), a
store from before the codes gets them at its first search, and the two-stage answer matches exact search
on clustered vectors, through filters that reject most candidates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memtree_core.store import Store
from memtree_core.store import vector_codes as codes
from memtree_core.store import vectors as store_vectors
from memtree_plugins.semantic import vectors

DIM = 384  # what MiniLM gives; 64-bit codes of a 64-d embedder would choose candidates far less well


def _clustered(n: int, seed: int) -> np.ndarray:
    """Unnormalised vectors around 40 centres with a common offset (like real embeddings, not isotropic)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM))
    return (centres[rng.integers(0, 40, n)] + 0.45 * rng.normal(size=(n, DIM)) + 0.2).astype(np.float32)


def _fill(store: Store, x: np.ndarray, kind_of=lambda i: "note") -> list[str]:
    ids = [store.insert_node(kind_of(i), f"n{i}", status_="live").id for i in range(len(x))]
    for s in range(0, len(ids), 1000):
        vectors.put_vectors(store, list(zip(ids[s:s + 1000], x[s:s + 1000].tolist(), strict=True)), "m", DIM)
    return ids


def _exact(x: np.ndarray, q: np.ndarray, ids: list[str], k: int, among: list[int] | None = None) -> list[str]:
    rows = np.arange(len(x)) if among is None else np.asarray(among)
    xu = x[rows] / np.linalg.norm(x[rows], axis=1, keepdims=True)
    return [ids[rows[i]] for i in np.argsort(-(xu @ (q / np.linalg.norm(q))), kind="stable")[:k]]


def _code_rows(store: Store) -> dict[str, tuple[int, bytes | None]]:
    return {i: (seq, code) for i, seq, code in store.query(
        f"SELECT n.id, c.seq, c.code FROM {codes.TABLE} c JOIN nodes n ON n.rowid = c.node_rowid")}


def test_codes_follow_every_write_to_the_vectors(vstore) -> None:
    x = _clustered(30, 1)
    ids = _fill(vstore, x)
    rows = _code_rows(vstore)
    assert set(rows) == set(ids) and codes.counts(vstore) == (30, 30)
    # vec_quantize_binary's layout: one sign bit a dimension, least significant bit first.
    assert rows[ids[3]][1] == np.packbits(x[3] > 0, bitorder="little").tobytes()
    cache = codes.cache(vstore)
    assert len(cache) == 30

    flipped = (-x[3]).tolist()
    vectors.put_vectors(vstore, [(ids[3], flipped)], "m", DIM)  # a re-embedded node
    after = _code_rows(vstore)
    assert after[ids[3]][1] == np.packbits(-x[3] > 0, bitorder="little").tobytes()
    assert after[ids[3]][0] > max(seq for seq, _ in rows.values())
    vectors.delete_vectors(vstore, [ids[4]])
    with vstore.tx() as c:  # what the pruner does, without the semantic plugin's help
        c.execute("DELETE FROM nodes_vec WHERE id = ?", (ids[5],))
    after = _code_rows(vstore)
    assert after[ids[4]][1] is None and after[ids[5]][1] is None  # tombstones
    assert codes.counts(vstore) == (28, 28)

    cache = codes.cache(vstore)
    assert len(cache) == 28
    q = -x[3]
    got = cache.nearest(vstore.query_one("SELECT vec_quantize_binary(?)", (store_vectors.pack(q.tolist()),))[0],
                        (q / np.linalg.norm(q)).astype(np.float32), 5, 5)
    rowid_of = dict(vstore.query("SELECT id, rowid FROM nodes"))
    assert got[0] == rowid_of[ids[3]]
    assert rowid_of[ids[4]] not in got.tolist() and rowid_of[ids[5]] not in got.tolist()


def test_a_process_sees_vectors_another_connection_wrote(vstore, project: Path, monkeypatch) -> None:
    monkeypatch.setattr(store_vectors, "SCAN_MAX", 0)  # no filter counts as small: the two-stage path runs
    x = _clustered(600, 2)
    ids = _fill(vstore, x)
    q = _clustered(1, 99)[0]
    before = vectors.knn(vstore, q.tolist(), "m", DIM, 3)
    assert codes.loaded(vstore) == 600
    other = Store.open(project / "vec.db")  # the daemon's store and a CLI command's, say
    try:
        new = other.insert_node("note", "new", status_="live").id
        vectors.put_vectors(other, [(new, (q * 3).tolist())], "m", DIM)
    finally:
        other.close()
    got = vectors.knn(vstore, q.tolist(), "m", DIM, 3)
    assert got[0][0] == new and got[0][1] == pytest.approx(0, abs=1e-5)
    assert [i for i, _ in got[1:]] == [i for i, _ in before[:2]]
    assert codes.loaded(vstore) == 601 and ids


def test_two_stage_search_matches_exact_search(vstore, monkeypatch) -> None:
    # More vectors than it re-scores, so the codes really choose: 3000 vectors, 600 re-scored.
    x = _clustered(3000, 3)
    ids = _fill(vstore, x, kind_of=lambda i: "summary" if i % 100 == 0 else "note")
    monkeypatch.setattr(store_vectors, "SCAN_MAX", 0)  # no filter counts as small: the two-stage path runs
    queries = _clustered(20, 4)
    hits = []
    for q in queries:
        got = vectors.knn(vstore, q.tolist(), "m", DIM, 10)
        want = _exact(x, q, ids, 10)
        hits.append(len({i for i, _ in got} & set(want)) / 10)
        # distances are exact, whichever stage chose the candidates
        qn = q / np.linalg.norm(q)
        for i, d in got:
            v = x[ids.index(i)]
            assert d == pytest.approx(1 - float(v @ qn) / float(np.linalg.norm(v)), abs=1e-4)
        assert [d for _, d in got] == sorted(d for _, d in got)
    # Queries unrelated to the clusters, whose nearest are near-ties: the bench measures ~0.97 on the
    # like of it at 100k, 1.00 on real MiniLM chunks.
    assert np.mean(hits) >= 0.9, hits
    assert codes.loaded(vstore) == 3000
    # A query near a stored vector (what a question about a chunk is) finds that vector first.
    rng = np.random.default_rng(5)
    for j in rng.integers(0, 3000, 10):
        q = x[j] + 0.1 * rng.normal(size=DIM).astype(np.float32)
        assert vectors.knn(vstore, q.tolist(), "m", DIM, 10)[0][0] == ids[j]
    # A kind held by 30 of 3000 nodes rejects almost every candidate: widening, then the exact fallback,
    # still return exactly the nearest of that kind.
    rare = [i for i in range(3000) if i % 100 == 0]
    for q in queries[:5]:
        got = vectors.knn(vstore, q.tolist(), "m", DIM, 20, kinds=["summary"])
        assert [i for i, _ in got] == _exact(x, q, ids, 20, among=rare)


def test_a_store_from_before_the_codes_gets_them_at_its_first_search(vstore, project: Path,
                                                                    monkeypatch) -> None:
    monkeypatch.setattr(store_vectors, "SCAN_MAX", 0)  # no filter counts as small: the two-stage path runs
    x = _clustered(500, 5)
    ids = _fill(vstore, x)
    q = x[7]
    want = vectors.knn(vstore, q.tolist(), "m", DIM, 5, exact=True)
    with vstore.tx() as c:  # the layout before the codes: no table, no triggers, no meta key
        for name in ("ins", "upd", "del"):
            c.execute(f"DROP TRIGGER {codes.TABLE}_{name}")
        c.execute(f"DROP TABLE {codes.TABLE}")
        c.execute("DELETE FROM meta WHERE key = ?", (codes.META_KEY,))
    vstore.close()
    from memtree_plugins.inspector.readonly import open_readonly

    ro = open_readonly(project / "vec.db")  # memtree ui's connection cannot add them: exact search
    try:
        assert [i for i, _ in vectors.knn(ro, q.tolist(), "m", DIM, 5)] == [i for i, _ in want]
        assert not codes.present(ro)
    finally:
        ro.close()
    store = Store.open(project / "vec.db")
    try:
        assert not codes.present(store)
        got = vectors.knn(store, q.tolist(), "m", DIM, 5)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [d for _, d in got] == pytest.approx([d for _, d in want], abs=1e-5)
        assert codes.present(store) and codes.counts(store) == (500, 500)
        new = store.insert_node("note", "later", status_="live").id
        vectors.put_vectors(store, [(new, q.tolist())], "m", DIM)  # the triggers are back
        assert codes.counts(store) == (501, 501)
        assert {i for i, _ in vectors.knn(store, q.tolist(), "m", DIM, 2)} == {ids[7], new}
    finally:
        store.close()
    ro = open_readonly(project / "vec.db")  # once they exist, a read-only connection uses them too
    try:
        assert {i for i, _ in vectors.knn(ro, q.tolist(), "m", DIM, 2)} == {ids[7], new}
        assert codes.loaded(ro) == 501
    finally:
        ro.close()


def test_codes_follow_a_change_of_dimension(vstore) -> None:
    """A reembed to a model of another dimension: between two syncs the table holds codes of both widths;
    the RAM copy keeps the newest width and loses no row of it."""
    old = _clustered(10, 6)
    ids = _fill(vstore, old)
    assert len(codes.cache(vstore)) == 10
    rng = np.random.default_rng(7)
    new_ids = [vstore.insert_node("note", f"m{i}", status_="live").id for i in range(5)]
    vectors.put_vectors(vstore, [(i, rng.normal(size=768).tolist()) for i in new_ids], "m2", 768)
    cache = codes.cache(vstore)
    assert len(cache) == 5 and cache.data[2] == 96
    vectors.delete_vectors(vstore, ids)
    vectors.put_vectors(vstore, [(i, rng.normal(size=768).tolist()) for i in ids], "m2", 768)
    assert len(codes.cache(vstore)) == 15 and codes.counts(vstore) == (15, 15)


def test_info_says_what_knn_searches_over(home: Path, project: Path) -> None:
    import json

    from helpers.common import run_memtree

    from memtree_core.app import App

    app = App.open(project)
    try:
        if not app.store.vector.available:
            pytest.skip(f"sqlite-vec unavailable: {app.store.vector.reason}")
        _fill(app.store, _clustered(12, 8))
        with app.store.tx() as c:  # a code lost behind the triggers' back: info must not hide it
            c.execute(f"DELETE FROM {codes.TABLE} WHERE node_rowid = (SELECT min(node_rowid) FROM {codes.TABLE})")
    finally:
        app.close()
    out = run_memtree("info", "--json", "--project", str(project))
    assert out.returncode == 0, out.stderr
    index = json.loads(out.stdout)["vector_index"]
    assert (index["vectors"], index["codes"]) == (12, 11) and "cover 11 of 12 vectors" in index["state"]
    text = run_memtree("info", "--project", str(project)).stdout
    assert "knn       12 vectors, 11 binary codes" in text
    # what the state advises (`memtree reembed`) repairs it: reembed rebuilds the codes from the vectors
    store = Store.open(home / json.loads(out.stdout)["store"])
    try:
        assert codes.rebuild(store) == 12 and codes.counts(store) == (12, 12)
    finally:
        store.close()


@pytest.fixture
def unloaded(home: Path, project: Path) -> Iterator[Any]:
    """A project's App whose store holds 20 vectors with their codes, none of them loaded in RAM yet."""
    from memtree_core.app import App

    app = App.open(project)
    try:
        if not app.store.vector.available:
            pytest.skip(f"sqlite-vec unavailable: {app.store.vector.reason}")
        _fill(app.store, _clustered(20, 9))
        assert codes.loaded(app.store) is None
        yield app
    finally:
        app.close()


def test_the_dedupe_walker_loads_the_codes_off_the_query_path(unloaded) -> None:
    from memtree_plugins.semantic.dedupe import Dedupe

    Dedupe().run(unloaded)
    assert codes.loaded(unloaded.store) == 20


def test_a_starting_daemon_loads_the_codes_before_the_first_search(unloaded) -> None:
    import threading

    unloaded.plugins.notify("memtree_daemon_started", app=unloaded)
    for thread in threading.enumerate():  # the load runs on a thread, so the start does not wait for it
        if thread.name == "memtree-warmup":
            thread.join(30)
    assert codes.loaded(unloaded.store) == 20


class _CountingEmbedder:
    """An embedder of the store's model that records what it was asked to embed."""

    name, model, dim = "counting", "m", DIM

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def available(self) -> tuple[bool, str]:
        return True, ""

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.asked.append(list(texts))
        return [[1.0] * DIM for _ in texts]


def test_a_starting_daemon_loads_the_embedding_model_the_first_search_needs(home: Path, project: Path) -> None:
    """The first hybrid search embeds its query: the model it needs is loaded at the daemon's start, in the
    background, not on that search's clock."""
    import threading

    from memtree_core.app import App
    from memtree_core.hookspecs import hookimpl

    embedder = _CountingEmbedder()

    class Plugin:
        @hookimpl
        def memtree_register_embedders(self, register: Any) -> None:
            register(embedder)

    import os

    app = App.open(project, environ={**os.environ, "MEMTREE_EMBEDDING_MODEL": "counting"},
                   extra=[("counting", Plugin())])
    try:
        if not app.store.vector.available:
            pytest.skip(f"sqlite-vec unavailable: {app.store.vector.reason}")
        _fill(app.store, _clustered(20, 9))
        app.plugins.notify("memtree_daemon_started", app=app)
        for thread in threading.enumerate():
            if thread.name == "memtree-warmup":
                thread.join(30)
        assert embedder.asked == [["memtree warm-up"]]
    finally:
        app.close()


def test_without_numpy_knn_takes_the_exact_path(vstore, project: Path) -> None:
    """numpy comes with the embed extra; a store embedded through Ollama may lack it: same answers, exactly."""
    import json
    import subprocess
    import sys

    x = _clustered(2100, 10)  # above SCAN_MAX: an unfiltered search would take the two-stage path
    ids = _fill(vstore, x)
    q = _clustered(1, 11)[0]
    script = (
        "import json, sys; sys.modules['numpy'] = None\n"
        "from memtree_core.store import Store\n"
        "from memtree_core.store import vector_codes as codes\n"
        "from memtree_plugins.semantic import vectors\n"
        f"s = Store.open({str(project / 'vec.db')!r})\n"
        f"hits = vectors.knn(s, {q.tolist()!r}, 'm', {DIM}, 10)\n"
        "print(json.dumps({'usable': codes.usable(), 'loaded': codes.loaded(s), 'hits': [i for i, _ in hits]}))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["usable"][0] is False and "numpy is not installed" in got["usable"][1]
    assert got["loaded"] is None and got["hits"] == _exact(x, q, ids, 10)
