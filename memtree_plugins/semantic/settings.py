"""The semantic plugin's settings: ``embeddingModel`` and its walkers' keys in ``walkers`` (the walkers plugin
owns that section's other keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from memtree_core.plugin_settings import REPO_SAFE, BuiltinSettings, Section
from memtree_core.settings import MIN_INTERVAL_MS

if TYPE_CHECKING:
    from memtree_core.context import Context


class EmbeddingWalkers(Section):
    embedding_idle_ms: int = Field(5000, ge=0)
    embedding_batch_size: int = Field(32, ge=1, le=1024)
    summarizer_subtree_threshold: int = Field(25, ge=1)
    dedupe_interval_ms: int = Field(60000, ge=MIN_INTERVAL_MS)


class SemanticSettings(BuiltinSettings):
    # which registered embedder (or model); repo-safe: the destinations themselves stay the user's.
    embedding_model: Annotated[str, REPO_SAFE] = "nomic-embed-text"
    walkers: EmbeddingWalkers = EmbeddingWalkers()


def semantic_settings(app: Context) -> SemanticSettings:
    """The semantic plugin's settings, or their defaults where it is not loaded (its modules still serve
    ``memtree reembed`` and the embedders)."""
    own = app.plugin_settings("semantic")
    return own if own is not None else SemanticSettings()
