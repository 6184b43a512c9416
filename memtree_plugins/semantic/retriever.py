"""The semantic retriever the ``search`` tool uses for ``mode='semantic'|'hybrid'``.

``install(app)`` registers it through the retrieval plugin's seam (``register_retriever``);
``default_mode(app)`` says which mode a search without one should use: ``hybrid`` when the store holds
vectors and an embedder for them is available, else ``keyword`` with the reason.
"""

from __future__ import annotations

from typing import Any

from memtree_core import vectors


def semantic_retriever(app: Any, pq: Any, limit: int, filters: Any) -> list[tuple[str, float]]:
    """(node_id, 1 - cosine distance) best first; raises ValueError with the reason when it cannot run
    (the search tool turns that into a clear tool error)."""
    text = getattr(pq, "raw", pq)
    where = filters.sql() if filters is not None else None
    try:
        return vectors.semantic_search(app, str(text), limit, where=where)
    except vectors.SemanticUnavailable as exc:
        raise ValueError(f"semantic search is unavailable: {exc}") from exc


def install(app: Any) -> None:
    from memtree_plugins.retrieval.search import register_retriever

    register_retriever(app, "semantic", semantic_retriever)


def default_mode(app: Any) -> tuple[str, str]:
    """('hybrid', '') or ('keyword', why semantic is not used)."""
    store = app.store
    if not store.vector.available:
        return "keyword", f"vector search is off: {store.vector.reason}"
    models = vectors.stored_models(store)
    choice = vectors.choose_embedder(app, models)
    if choice.embedder is None:
        # Checked first: with no embedder nothing will ever be embedded, and "not yet" would say it will.
        return "keyword", f"no embedder is available: {choice.reason}"
    if not models:
        return "keyword", (f"no node has been embedded yet with {choice.embedder.model} (the embedding_indexer "
                           "walker runs when idle)")
    if len(models) > 1 or (models[0][0], models[0][1]) != (choice.embedder.model, choice.embedder.dim or models[0][1]):
        return "keyword", f"the store's vectors do not match {choice.embedder.model}: {vectors.REEMBED_HINT}"
    return "hybrid", ""
