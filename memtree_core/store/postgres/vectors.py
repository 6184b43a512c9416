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
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any


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


def _lock_sql() -> str:
    return "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


class PgVectors:
    """The SQLite store's three vector methods on pgvector, mixed into
    :class:`~memtree_core.store.postgres.store.PostgresStore` (which provides ``tx``, ``_rows``, ``_pin``,
    ``project`` and ``_indexes``).  Distances are cosine, as the SQLite store's."""

    project: str
    _indexes: set[tuple[str, int]]
    _pin: Any

    if TYPE_CHECKING:
        def tx(self) -> AbstractContextManager[Any]: ...
        def _rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def _run(self, sql: str, params: Any = ()) -> Any: ...
        def _read_tx(self) -> AbstractContextManager[Any]: ...

    def _ensure_index(self, c: Any, model: str, dim: int) -> None:
        """(model, dim)'s HNSW index, made the first time its vectors are written (under the project's
        migration lock, so two writers do not race to create it)."""
        if (model, dim) in self._indexes:
            return
        from memtree_core.store.postgres.schema import lock_key

        c._conn.execute(_lock_sql(), (lock_key("migrate", self.project),))
        c._conn.execute(index_sql(model, dim))
        self._indexes.add((model, dim))

    def vector_upsert(self, rows: Sequence[tuple[str, Sequence[float]]], model: str, dim: int) -> int:
        if not rows:
            return 0
        ts = time.time_ns() // 1_000_000
        written = 0
        with self.tx() as c:
            self._ensure_index(c, model, dim)
            for node_id, vec in rows:
                if len(vec) != dim:
                    raise ValueError(f"embedder {model} returned {len(vec)} dims for node {node_id}, "
                                     f"expected {dim}")
                written += c._conn.execute(
                    "INSERT INTO nodes_vec (id, embedding, embedding_model, embedding_dim, embedded_at) "
                    "SELECT id, %s::vector, %s, %s, %s FROM nodes WHERE id = %s ON CONFLICT (id) DO UPDATE SET "
                    "embedding = excluded.embedding, embedding_model = excluded.embedding_model, "
                    "embedding_dim = excluded.embedding_dim, embedded_at = excluded.embedded_at",
                    (vector_text(vec), model, dim, ts, node_id)).rowcount
        return written

    def vector_delete(self, node_ids: Sequence[str] | None, *, limit: int | None = 2000) -> int:
        with self.tx() as c:
            if node_ids is not None:
                if not node_ids:
                    return 0
                return int(c._conn.execute("DELETE FROM nodes_vec WHERE id = ANY(%s)", (list(node_ids),)).rowcount)
            pruned = ("SELECT v.id FROM nodes_vec v JOIN nodes n ON n.id = v.id WHERE n.status = 'pruned'"
                      + (" LIMIT %s" if limit is not None else ""))
            return int(c._conn.execute(f"DELETE FROM nodes_vec WHERE id IN ({pruned})",
                                       (limit,) if limit is not None else ()).rowcount)

    def vector_search(self, vector: Sequence[float], model: str, dim: int, k: int, *,
                      where: tuple[str, Sequence[Any]] | None = None, selective: bool = False,
                      exact: bool = False) -> list[tuple[str, float]]:
        """The ``k`` nearest; from the HNSW index of (model, dim) (an iterative scan, so a filter does not
        starve the result), or ranked exactly over the rows the filter admits with ``selective`` or
        ``exact``.  Pruned nodes are never results."""
        from memtree_core.store.postgres.keywords import condition

        if len(vector) != dim:
            raise ValueError(f"query vector has {len(vector)} dims, the index {dim}")
        want = max(1, int(k))
        d = _dim(dim)
        cond = f"{condition(where[0]) if where and where[0] else 'true'} AND n.status <> 'pruned'"
        params = [vector_text(vector), *(where[1] if where else []), want]
        model_sql = _literal(model).replace("%", "%%")  # a literal (see knn_sql), in a statement with parameters
        sql = (f"SELECT n.id, v.embedding::vector({d}) <=> %s::vector({d}) AS distance FROM nodes_vec v "
               f"JOIN nodes n ON n.id = v.id WHERE {cond} AND v.embedding_model = {model_sql} AND v.embedding_dim = {d} "
               f"ORDER BY distance LIMIT %s")
        ranked = selective or exact
        with self._read_tx() as conn:
            if ranked:
                conn.execute("SELECT set_config('enable_indexscan', 'off', true)")
            else:
                conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                             "set_config('hnsw.ef_search', %s, true)", (str(max(40, min(1000, want * 2))),))
            try:
                rows = conn.execute(sql, params).fetchall()
            finally:
                conn.execute("RESET enable_indexscan" if ranked else "RESET hnsw.iterative_scan")
                if not ranked:
                    conn.execute("RESET hnsw.ef_search")
        return sorted(((i, float(x)) for i, x in rows), key=lambda r: r[1])
