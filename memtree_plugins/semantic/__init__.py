"""Built-in semantic walkers: ``embedding_indexer`` (idle, embeds live nodes), ``dedupe`` (interval,
near-duplicates -> superseded) and ``summarizer`` (event, big subtrees -> summary nodes); and the ``semantic``
retriever the ``search`` tool uses for ``mode='semantic'`` and ``hybrid`` (see :mod:`.retriever`); and the
``memtree reembed`` command (:mod:`.reembed`)."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.plugin_settings import BuiltinSettings
    from memtree_core.store.migrations import Migrations

log = logging.getLogger("memtree.semantic")


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``embeddingModel`` and the embedding keys of ``walkers``: memtree_plugins.semantic.settings
    from memtree_plugins.semantic.settings import SemanticSettings

    return SemanticSettings


@hookimpl(trylast=True)
def memtree_register_walkers(register: Any) -> None:
    # imported here, not at the top: `memtree reembed --help` imports this package and must stay light
    from memtree_plugins.semantic.dedupe import Dedupe
    from memtree_plugins.semantic.indexer import EmbeddingIndexer
    from memtree_plugins.semantic.summarize import SummarizerWalker

    register(EmbeddingIndexer())
    register(Dedupe())
    register(SummarizerWalker())


@hookimpl(trylast=True)
def memtree_register_retrievers(register: Any) -> None:
    from memtree_plugins.semantic.retriever import SemanticRetriever

    register(SemanticRetriever())


@hookimpl(trylast=True)
def memtree_store_migrations(register: Any) -> None:
    register(migrations())


def migrations() -> Migrations:
    """This plugin's own schema steps (a store opened without the host, as benchmarks do, takes them with
    ``store.migrate(m.name, m.steps)``)."""
    from memtree_core.store.migrations import Migrations

    return Migrations("semantic", [_index_models])


def _index_models(store: Any) -> bool:
    """Step 1: index the vectors' (model, dim), so "which models does the store hold" is two index seeks
    (memtree_plugins/lib/embedder_choice.py).  Not yet where the store has no vector search (the vector table
    is there exactly when it has: SQLite creates it when sqlite-vec loads)."""
    if not store.vector.available:
        return False
    store.execute("CREATE INDEX IF NOT EXISTS nodes_vec_model ON nodes_vec(embedding_model, embedding_dim)")
    return True


@hookimpl(trylast=True)
def memtree_register_commands(register: Any) -> None:
    from memtree_core.command import Command

    register(Command("reembed", "re-embed every live node with the configured embedding model",
                     "memtree_plugins.semantic.reembed"))


@hookimpl(trylast=True)
def memtree_daemon_started(app: Context) -> None:
    # What the first semantic or hybrid search would otherwise pay, loaded in the background from the start:
    # the embedding model that embeds its query (~1 s for the local one) and the two-stage KNN's binary codes
    # in RAM (0.2-0.8 s at 100k vectors; the walkers load them only after their work).
    threading.Thread(target=warm_codes, args=(app,), name="memtree-warmup", daemon=True).start()


def warm_codes(app: Context) -> None:
    from memtree_core.store import StoreDamaged

    try:
        if not app.store.vector.available:
            return
        from memtree_plugins.semantic import vectors

        models = vectors.stored_models(app.store, counts=False)
        choice = vectors.choose_embedder(app, models)
        if choice.embedder is not None and models:
            choice.embedder.embed(["memtree warm-up"])  # loads the model the query will need
        from memtree_core.store import vector_codes as codes

        codes.warm(app.store)
        log.info("warm for the first search: %s", choice.embedder.name if choice.embedder and models
                 else "no embedded nodes, no model to load")
    except StoreDamaged:
        pass  # the daemon says so itself, and refuses searches
    except Exception:
        log.exception("warming up at start failed; the first search loads what it needs")
