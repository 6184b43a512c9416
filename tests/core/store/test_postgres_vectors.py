"""Vectors on a real pgvector (memtree_core/store/postgres/vectors.py): a partial HNSW index per (model,
dimension) that the KNN statement is answered from, the nearest vectors found, and embeddings read back
as the float32 bytes the SQLite store keeps."""

from __future__ import annotations

import hashlib
import math
import random
import struct

import pytest

from memtree_core.store.postgres import schema, vectors

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e .[postgresql])")


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_knn_from_the_models_hnsw_index(postgres_url: str) -> None:
    rng = random.Random(5)
    project = hashlib.sha256(b"vectors").hexdigest()[:16]
    rows = {"a": [], "b": []}  # type: dict[str, list[tuple[str, list[float]]]]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        schema.migrate_core(conn, project)
        conn.execute(f"SET search_path = {schema.search_path(project)}")
        for model, dim, n in (("mini's model", 8, 400), ("other", 4, 50)):
            for i in range(n):
                vec = [_f32(rng.uniform(-1, 1)) for _ in range(dim)]
                node = f"{model[0]}{i:04d}"
                rows["a" if dim == 8 else "b"].append((node, vec))
                conn.execute("INSERT INTO nodes_vec (id, embedding, embedding_model, embedding_dim, embedded_at) "
                             "VALUES (%s, %s::vector, %s, %s, 1)", (node, vectors.vector_text(vec), model, dim))
            conn.execute(vectors.index_sql(model, dim))
            conn.execute(vectors.index_sql(model, dim))  # idempotent
        query = [_f32(rng.uniform(-1, 1)) for _ in range(8)]
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN " + vectors.knn_sql("mini's model", 8), (vectors.vector_text(query), 10)))
        assert vectors.index_name("mini's model", 8) in plan, plan
        got = [r[0] for r in conn.execute(vectors.knn_sql("mini's model", 8), (vectors.vector_text(query), 10))]
        exact = [node for node, _ in sorted(rows["a"], key=lambda r: cosine(query, r[1]))[:10]]
        assert got[0] == exact[0]
        assert len(set(got) & set(exact)) >= 8  # HNSW is approximate; here it is all but exact

        vectors.register_blob_loader(conn)
        node, vec = rows["b"][3]
        blob = conn.execute("SELECT embedding FROM nodes_vec WHERE id = %s", (node,)).fetchone()[0]
    assert blob == struct.pack("<4f", *vec)  # the SQLite store's float32 blob, bit for bit


def test_bad_dimensions_are_refused() -> None:
    for dim in (0, -1, 16001, 3.0):
        with pytest.raises(ValueError, match="dimension"):
            vectors.index_sql("m", dim)  # type: ignore[arg-type]
