"""The ``embedding_indexer`` walker: when the project has been idle ``walkers.embeddingIdleMs``
and live nodes lack a vector, embed them in batches of ``walkers.embeddingBatchSize``, newest first.

Bounded per run (``MAX_BATCHES`` batches) so a big backlog never holds the coordinator; the backlog left is
kept as the gauge counter ``walker:embedding_indexer:backlog`` for ``memtree stats``, which also shows the
progress (nodes embedded of the live ones) and the rate from the counters ``embedding:embedded`` and
``embedding:embed_ms`` (memtree_plugins/lib/embedder_choice.py).  It never mixes
models: when the store holds vectors of another model it does nothing and says ``memtree reembed``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memtree_plugins.lib.embedder_choice import EMBED_MS_COUNTER, EMBEDDED_COUNTER
from memtree_plugins.semantic import queries, vectors
from memtree_plugins.semantic.embedding_text import TEXT_VERSION, TEXT_VERSION_KEY, embedding_text
from memtree_plugins.semantic.settings import semantic_settings

if TYPE_CHECKING:
    from memtree_core.context import Context

MAX_BATCHES = 8


def set_gauge(store: Any, name: str, value: int) -> None:
    queries.set_counter(store, name, value)


def note_reason(store: Any, walker: str, reason: str) -> None:
    if store.get_meta(f"walker:{walker}:reason") != reason:
        store.set_meta(f"walker:{walker}:reason", reason)


class EmbeddingIndexer:
    name = "embedding_indexer"
    trigger = "idle"

    def interval_s(self, app: Context) -> float:
        return semantic_settings(app).walkers.embedding_idle_ms / 1000

    def has_work(self, app: Context) -> bool:
        store = app.store
        if not store.vector.available:
            return False
        return vectors.has_backlog(store) and vectors.choose_embedder(app).ok

    def run(self, app: Context) -> dict[str, int]:
        store = app.store
        counts = {"embedded": 0, "swept": vectors.sweep_orphans(store)}
        if not store.vector.available:
            note_reason(store, self.name, f"vector search is off: {store.vector.reason}")
            return counts
        choice = vectors.choose_embedder(app)
        if choice.embedder is None:
            note_reason(store, self.name, f"no embedder: {choice.reason}")
            set_gauge(store, f"walker:{self.name}:backlog", vectors.backlog(store))
            return counts
        e = choice.embedder
        batch = max(1, semantic_settings(app).walkers.embedding_batch_size)
        try:
            if e.dim:
                vectors.check_model(store, e.model, e.dim)
            if store.get_meta(TEXT_VERSION_KEY) is None and not vectors.has_vectors(store):
                store.set_meta(TEXT_VERSION_KEY, TEXT_VERSION)  # a fresh store: every vector gets this text
            for _ in range(MAX_BATCHES):
                rows = vectors.newest_unembedded(store, batch)
                if not rows:
                    break
                # a contextual header (path, qualified name, signature, docstring) before the text
                t0 = time.perf_counter()
                vecs = e.embed([embedding_text(content, meta, app.identity.root) for _, content, meta in rows])
                store.bump(EMBED_MS_COUNTER, max(1, round((time.perf_counter() - t0) * 1000)))
                store.bump(EMBEDDED_COUNTER, len(rows))
                dim = len(vecs[0]) if vecs else e.dim
                vectors.check_model(store, e.model, dim)
                counts["embedded"] += vectors.put_vectors(store, list(zip([i for i, *_ in rows], vecs, strict=True)),
                                                          e.model, dim)
        except vectors.ModelMismatch as exc:
            note_reason(store, self.name, str(exc))
            counts["refused_mixed_model"] = 1
        else:
            note_reason(store, self.name, f"embedding with {e.name} ({e.model})")
            if counts["embedded"]:
                from memtree_core.store import vector_codes as codes  # numpy: when there are vectors

                codes.warm(store)
        set_gauge(store, f"walker:{self.name}:backlog", vectors.backlog(store))
        return counts
