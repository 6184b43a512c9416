"""Vectors on pgvector (docs/postgresql.md, "Vectors"): one partial HNSW index per (model, dimension) over
``nodes_vec``, KNN statements that the planner answers from it, and ``vector`` values read back as the
little-endian float32 bytes the SQLite store keeps, so plugins that read ``nodes_vec.embedding`` see the same.

An HNSW index needs one dimension while ``nodes_vec.embedding`` holds any: each index is on the cast
``embedding::vector(dim)`` and restricted to its model's rows, and a query repeats that expression and
predicate with literals (a partial index serves a query only when the planner can prove the predicate, which
it cannot through a parameter of a generic prepared plan).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import Any


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _dim(dim: int) -> int:
    if not isinstance(dim, int) or not 0 < dim <= 16000:
        raise ValueError(f"a vector dimension is a whole number from 1 to 16000, not {dim!r}")
    return dim


def index_name(model: str, dim: int) -> str:
    return "nodes_vec_hnsw_" + hashlib.sha1(f"{model}\0{dim}".encode()).hexdigest()[:12]


def _where(model: str, dim: int) -> str:
    return f"embedding_model = {_literal(model)} AND embedding_dim = {_dim(dim)}"


def index_sql(model: str, dim: int) -> str:
    """The statement that creates (model, dim)'s HNSW index, cosine distance, if it is missing."""
    return (f"CREATE INDEX IF NOT EXISTS {index_name(model, dim)} ON nodes_vec USING hnsw "
            f"((embedding::vector({_dim(dim)})) vector_cosine_ops) WHERE {_where(model, dim)}")


def knn_sql(model: str, dim: int) -> str:
    """``(id, cosine distance)`` of the nearest vectors of (model, dim); parameters: the query vector (as
    :func:`vector_text`) and k."""
    d = _dim(dim)
    distance = f"embedding::vector({d}) <=> %s::vector({d})"
    return (f"SELECT id, {distance} AS distance FROM nodes_vec WHERE {_where(model, dim)} "
            f"ORDER BY distance LIMIT %s")


def vector_text(vector: Sequence[float]) -> str:
    """A vector as pgvector's text input (``[1,2,3]``)."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def register_blob_loader(conn: Any) -> None:
    """Make ``conn`` read ``vector`` values as little-endian float32 bytes (the SQLite store's blobs)."""
    from psycopg.adapt import Loader
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise LookupError("the vector extension is not installed in this database")

    class VectorBlobLoader(Loader):
        def load(self, data: Any) -> bytes:
            text = bytes(data).decode("ascii").strip("[]")
            values = [float(x) for x in text.split(",")] if text else []
            return struct.pack(f"<{len(values)}f", *values)

    conn.adapters.register_loader(info.oid, VectorBlobLoader)
