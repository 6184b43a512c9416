"""The store's vector access as a plugin uses it (memtree_core/store/vectors.py, postgres/vectors.py): three
methods over node ids, float vectors and a filter over ``nodes n``, the same on both backends (the
``vector_store`` fixture); nothing of sqlite-vec or pgvector shows."""

from __future__ import annotations

import pytest

DIM = 8  # the binary codes need a multiple of 8


def v(*xs: float) -> list[float]:
    return [*xs, *[0.0] * (DIM - len(xs))]


def test_upsert_search_and_delete(vector_store) -> None:
    vstore = vector_store
    ids = [vstore.insert_node("note", f"n{i}", status_="live").id for i in range(3)]
    kinds = vstore.insert_node("summary", "s", status_="live").id
    vecs = [v(1.0), v(0.0, 1.0), v(0.7, 0.7), v(0.9, 0.1)]
    assert vstore.vector_upsert([*zip([*ids, kinds], vecs, strict=True), ("no-such-node", v(1.0))],
                                "m", DIM) == 4
    hits = vstore.vector_search(v(1.0), "m", DIM, 2)
    assert [i for i, _ in hits] == [ids[0], kinds] and hits[0][1] == pytest.approx(0.0, abs=1e-6)
    only_notes = vstore.vector_search(v(1.0), "m", DIM, 2, where=("n.kind = ?", ["note"]))
    assert [i for i, _ in only_notes] == [ids[0], ids[2]]
    assert vstore.vector_search(v(1.0), "another-model", DIM, 2) == []  # vectors of one model only
    assert vstore.vector_upsert([(ids[0], v(0.0, 0.0, 1.0))], "m", DIM) == 1  # replaces the node's vector
    assert vstore.vector_search(v(0.0, 0.0, 1.0), "m", DIM, 1)[0][0] == ids[0]
    with pytest.raises(ValueError, match="expected 8"):
        vstore.vector_upsert([(ids[1], v(1.0)[:2])], "m", DIM)
    assert vstore.vector_delete([ids[0], ids[1]]) == 2
    assert {i for i, _ in vstore.vector_search(v(1.0), "m", DIM, 5)} == {ids[2], kinds}
    vstore.transition([kinds], "stale")
    vstore.transition([kinds], "pruned")
    assert vstore.vector_search(v(1.0), "m", DIM, 5) == [(ids[2], pytest.approx(0.2929, abs=1e-3))]
    assert vstore.vector_delete(None) == 1  # the pruned node's vector (its KNN row goes with it)
    assert vstore.query_one("SELECT count(*) FROM nodes_vec")[0] == 1


@pytest.mark.sqlite_only("how sqlite-vec's extension loads")
def test_opening_a_store_with_vectors_imports_no_numpy(tmp_path) -> None:
    """sqlite-vec loads from its package's extension file; the package's ``__init__`` (which imports
    ``numpy.typing`` when numpy is there) is not run, so a daemon's start and a keyword search pay no numpy."""
    import subprocess
    import sys

    code = ("import sys; from memtree_core.store import Store\n"
            f"s = Store.open({str(tmp_path / 'v.db')!r})\n"
            "print(s.vector.available, s.vector.reason or '-', 'numpy' in sys.modules, 'sqlite_vec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    if out[0] != "True":
        pytest.skip(f"sqlite-vec unavailable here: {' '.join(out[1:-2])}")
    assert out[-2:] == ["False", "False"]
