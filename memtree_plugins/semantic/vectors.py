"""Vectors as the semantic plugin sees them: which embedder serves this store, which models its vectors
are of, which live nodes still lack one, and KNN through the store's vector access (``store.vector_upsert``,
``vector_delete``, ``vector_search``: memtree_core/store/vectors.py holds the vec0 tables and the two-stage
search over binary codes).

A search whose embedder's (model, dim) differs from what the store holds raises :class:`ModelMismatch`,
naming ``memtree reembed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

# The choice of embedder is shared with `memtree info`; the semantic plugin's modules name it from here.
from memtree_plugins.lib.embedder_choice import AUTO as AUTO
from memtree_plugins.lib.embedder_choice import EmbedderChoice as EmbedderChoice
from memtree_plugins.lib.embedder_choice import choose_embedder as choose_embedder
from memtree_plugins.lib.embedder_choice import configured_model as configured_model
from memtree_plugins.lib.embedder_choice import model_span
from memtree_plugins.lib.embedder_choice import stored_models as stored_models

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.context import StoreAccess as Store
    from memtree_core.types import Embedder

REEMBED_HINT = "run `memtree reembed` to re-embed the store with the configured model"


class SemanticUnavailable(Exception):
    """Semantic search cannot run here; the message says why and what would fix it."""


class ModelMismatch(SemanticUnavailable):
    """The query embedder's model/dim differ from the vectors in the store."""


# -- the store's vectors -------------------------------------------------------------------------
def require_vectors(store: Store) -> None:
    if not store.vector.available:
        raise SemanticUnavailable(f"vector search is off: {store.vector.reason}")


def check_model(store: Store, model: str, dim: int) -> None:
    """Raise :class:`ModelMismatch` unless every stored vector is (model, dim)."""
    first, last = model_span(store)
    if first is None or first == last == (model, dim):
        return
    other = [(m, d, n) for m, d, n in stored_models(store) if (m, d) != (model, dim)]
    if other:
        held = ", ".join(f"{n} x {m} ({d} dims)" for m, d, n in other)
        raise ModelMismatch(f"the store holds vectors from another embedding model ({held}) but the "
                            f"query embedder is {model} ({dim} dims); mixed-model search is refused "
                            f"because its results would be meaningless: {REEMBED_HINT}")


def put_vectors(store: Store, rows: Sequence[tuple[str, Sequence[float]]], model: str, dim: int) -> int:
    """Write (node_id, vector) pairs for ``model``; replaces a node's earlier vector.  Returns rows written."""
    if not rows:
        return 0
    require_vectors(store)
    return store.vector_upsert(rows, model, dim)


def delete_vectors(store: Store, node_ids: Sequence[str]) -> int:
    """Remove the vectors of these nodes (for re-embedding)."""
    if not node_ids or not store.vector.available:
        return 0
    return store.vector_delete(node_ids)


def sweep_orphans(store: Store, limit: int = 2000) -> int:
    """Delete the vectors of pruned nodes and index rows left without a vector, bounded by ``limit``."""
    return store.vector_delete(None, limit=limit) if store.vector.available else 0


def backlog(store: Store) -> int:
    """Live nodes without a vector."""
    if not store.vector.available:
        return 0
    row = store.query_one("SELECT count(*) FROM nodes n WHERE n.status = 'live' AND NOT EXISTS "
                          "(SELECT 1 FROM nodes_vec v WHERE v.id = n.id)")
    return int(row[0]) if row else 0


def has_backlog(store: Store) -> bool:
    """Whether any live node has no vector yet."""
    return store.query_one("SELECT 1 FROM nodes n WHERE n.status = 'live' AND NOT EXISTS "
                           "(SELECT 1 FROM nodes_vec v WHERE v.id = n.id) LIMIT 1") is not None


def has_vectors(store: Store) -> bool:
    return store.query_one("SELECT 1 FROM nodes_vec LIMIT 1") is not None


def vector_count(store: Store) -> int:
    return int((store.query_one("SELECT count(*) FROM nodes_vec") or (0,))[0])


def newest_unembedded(store: Store, limit: int) -> list[tuple[str, str, str]]:
    """``(id, content, metadata)`` of up to ``limit`` live nodes without a vector, newest first."""
    return store.query("SELECT n.id, n.content, n.metadata FROM nodes n WHERE n.status = 'live' AND "
                       "NOT EXISTS (SELECT 1 FROM nodes_vec v WHERE v.id = n.id) ORDER BY n.rowid DESC "
                       "LIMIT ?", (limit,))  # type: ignore[return-value]


def live_to_reembed(store: Store, cursor: int, limit: int, *, model: str, dim: int,
                    every: bool) -> list[tuple[str, str, str, int]]:
    """``(id, content, metadata, rowid)`` of up to ``limit`` live nodes after rowid ``cursor`` whose vector is
    missing or of another (model, dim), or all of them when ``every``."""
    return store.query(  # type: ignore[return-value]
        "SELECT n.id, n.content, n.metadata, n.rowid FROM nodes n LEFT JOIN nodes_vec v ON v.id = n.id "
        "WHERE n.status = 'live' AND n.rowid > ? AND (? OR v.id IS NULL OR v.embedding_model != ? "
        "OR v.embedding_dim != ?) ORDER BY n.rowid LIMIT ?", (cursor, bool(every), model, dim, limit))


def ids_of_other_models(store: Store, model: str, dim: int) -> list[str]:
    """Nodes whose vector is not of (model, dim)."""
    return [i for (i,) in store.query("SELECT id FROM nodes_vec WHERE embedding_model != ? OR embedding_dim != ?",
                                      (model, dim))]


def live_vectors_after(store: Store, cursor: int, limit: int) -> list[tuple[int, str, bytes, str, str, int]]:
    """``(vector rowid, node id, embedding, kind, source_uri, created_at)`` of up to ``limit`` live nodes'
    vectors after ``cursor`` in ``nodes_vec`` order (the near-duplicate walker's pass)."""
    return store.query("SELECT v.rowid, v.id, v.embedding, n.kind, n.source_uri, n.created_at FROM nodes_vec v "
                       "JOIN nodes n ON n.id = v.id WHERE v.rowid > ? AND n.status = 'live' "
                       "ORDER BY v.rowid LIMIT ?", (cursor, limit))  # type: ignore[return-value]


# -- KNN ----------------------------------------------------------------------------------------------
def knn(store: Store, vector: Sequence[float], model: str, dim: int, k: int, *,
        statuses: Sequence[str] = ("live",), kinds: Sequence[str] | None = None,
        where: tuple[str, Sequence[Any]] | None = None, selective: bool = False,
        exact: bool = False) -> list[tuple[str, float]]:
    """The ``k`` nearest nodes to ``vector`` as (node_id, cosine distance), nearest first: only nodes in
    ``statuses`` (and ``kinds``) count — or, given ``where`` (a SQL fragment over ``nodes n`` and its
    parameters), the nodes it admits.  Refuses (:class:`ModelMismatch`) while the store holds vectors of
    another model; the search itself is the store's (``vector_search``, which says how it ranks)."""
    require_vectors(store)
    check_model(store, model, dim)
    if where is None:
        parts, params = [f"n.status IN ({','.join('?' * len(statuses))})"], list(statuses)
        if kinds:
            parts.append(f"n.kind IN ({','.join('?' * len(kinds))})")
            params += list(kinds)
        where = (" AND ".join(parts), params)
    return store.vector_search(vector, model, dim, k, where=where, selective=selective, exact=exact)


def embed_query(app: Context, text: str) -> tuple[Embedder, list[float]]:
    """Embed a query with the chosen embedder, after checking the store's vectors match it."""
    require_vectors(app.store)
    models = stored_models(app.store, counts=False)
    choice = choose_embedder(app, models)
    if choice.embedder is None:
        raise SemanticUnavailable(f"no embedder: {choice.reason}")
    e = choice.embedder
    if e.dim:
        check_model(app.store, e.model, e.dim)
    (vec,) = e.embed([text])
    check_model(app.store, e.model, len(vec))
    return e, vec


def semantic_search(app: Context, text: str, limit: int, *, kinds: Sequence[str] | None = None,
                    statuses: Sequence[str] = ("live",), where: tuple[str, Sequence[Any]] | None = None,
                    ) -> list[tuple[str, float]]:
    """(node_id, similarity = 1 - cosine distance), best first.  Raises :class:`SemanticUnavailable`."""
    e, vec = embed_query(app, text)
    hits = knn(app.store, vec, e.model, len(vec), limit, statuses=statuses, kinds=kinds, where=where)
    return [(i, 1.0 - d) for i, d in hits]
