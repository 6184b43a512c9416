"""The semantic plugin's keys the embedders follow, read through ``app.plugin_settings("semantic")``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree_core.context import Context

# The semantic plugin's defaults, for where it is not loaded (its embedders still serve `memtree info`).
DEFAULT_MODEL = "nomic-embed-text"
DEFAULT_BATCH = 32


def embedding_model(app: Context) -> str:
    """``embeddingModel``."""
    own = app.plugin_settings("semantic")
    return own.embedding_model if own is not None else DEFAULT_MODEL


def batch_size(app: Context) -> int:
    """``walkers.embeddingBatchSize``: texts per embedding call."""
    own = app.plugin_settings("semantic")
    return own.walkers.embedding_batch_size if own is not None else DEFAULT_BATCH
