"""Built-in semantic walkers: ``embedding_indexer`` (idle, embeds live nodes), ``dedupe`` (interval,
near-duplicates -> superseded) and ``summarizer`` (event, big subtrees -> summary nodes); and the ``semantic``
retriever the ``search`` tool uses for ``mode='semantic'`` and ``hybrid`` (see :mod:`.retriever`)."""

from __future__ import annotations

from typing import Any

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings
from memtree_plugins.semantic.dedupe import Dedupe
from memtree_plugins.semantic.indexer import EmbeddingIndexer
from memtree_plugins.semantic.retriever import SemanticRetriever
from memtree_plugins.semantic.summarize import SummarizerWalker


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``embeddingModel`` and the embedding keys of ``walkers``: memtree_plugins.semantic.settings
    from memtree_plugins.semantic.settings import SemanticSettings

    return SemanticSettings


@hookimpl(trylast=True)
def memtree_register_walkers(register: Any) -> None:
    register(EmbeddingIndexer())
    register(Dedupe())
    register(SummarizerWalker())


@hookimpl(trylast=True)
def memtree_register_retrievers(register: Any) -> None:
    register(SemanticRetriever())
