"""The built-in ``semantic`` retriever: nearest nodes by embedding (``mode='semantic'``, fused into ``hybrid``).

``available(app)`` says whether it can run on this store: the store holds vectors and an embedder for them
is available; if not, the reason (``auto`` search then stays keyword and says it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memtree_plugins.semantic import vectors

if TYPE_CHECKING:
    from memtree_core.context import Context


class SemanticRetriever:
    name = "semantic"
    fuse = True  # hybrid search fuses its list with keyword's

    def retrieve(self, app: Context, query: str, limit: int, filters: Any) -> list[tuple[str, float]]:
        """(node_id, 1 - cosine distance) best first; raises ValueError with the reason when it cannot run
        (the search tool turns that into a clear tool error)."""
        where = filters.sql() if filters is not None else None
        try:
            return vectors.semantic_search(app, str(query), limit, where=where)
        except vectors.SemanticUnavailable as exc:
            raise ValueError(f"semantic search is unavailable: {exc}") from exc

    def available(self, app: Context) -> tuple[bool, str]:
        """(True, '') or (False, why semantic search is not used on this store)."""
        store = app.store
        if not store.vector.available:
            return False, f"vector search is off: {store.vector.reason}"
        models = vectors.stored_models(store, counts=False)
        choice = vectors.choose_embedder(app, models)
        if choice.embedder is None:
            # Checked first: with no embedder nothing will ever be embedded, and "not yet" would say it will.
            why = choice.reason  # "no embedder is available (...)" already, when no embedder was named
            return False, why if why.startswith("no embedder") else f"no embedder is available: {why}"
        if not models:
            return False, (f"no node has been embedded yet with {choice.embedder.model} (the embedding_indexer "
                           "walker runs when idle)")
        if len(models) > 1 or (models[0][0], models[0][1]) != (choice.embedder.model,
                                                               choice.embedder.dim or models[0][1]):
            return False, f"the store's vectors do not match {choice.embedder.model}: {vectors.REEMBED_HINT}"
        return True, ""
