"""The walkers plugin's settings: ``retention``, ``index`` and its walkers' intervals and batches in
``walkers`` (the semantic plugin owns that section's embedding keys)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from memtree_core.plugin_settings import BuiltinSettings, Section, UserOnly
from memtree_core.settings import MIN_INTERVAL_MS


class Retention(Section):
    stale_hours: float = Field(24, ge=0)
    superseded_days: float = Field(7, ge=0)
    # pruned rows are kept for audit this long, then deleted.
    pruned_days: float = Field(30, ge=0)
    # 0 = no cap; above it the pruner evicts the oldest non-live rows, then the oldest live tool outputs.
    max_store_mb: float = Field(0, ge=0)

    @field_validator("max_store_mb")
    @classmethod
    def _no_tiny_cap(cls, value: float) -> float:
        # A cap under 1 MB would evict every stored output on each pruner run.
        if 0 < value < 1:
            raise ValueError("must be 0 (no cap) or at least 1 (MB)")
        return value


class WalkerIntervals(Section):
    staleness_interval_ms: int = Field(30000, ge=MIN_INTERVAL_MS)
    pruner_interval_ms: int = Field(300000, ge=MIN_INTERVAL_MS)
    filter_interval_ms: int = Field(250, ge=MIN_INTERVAL_MS)
    # files re-stat'ed per staleness tick, so one tick stays short on a huge store.
    staleness_batch_files: int = Field(5000, ge=1, le=1_000_000)
    prune_batch_rows: int = Field(2000, ge=1, le=1_000_000)


class IndexSettings(Section):
    # Keep the project indexed from the daemon (``memtree index``'s incremental pass, ``maxFilesPerRun``
    # files written per tick).  Off by default and the user's alone: a cloned repository must not make the
    # daemon read and store every file it holds.
    background: bool = False
    interval_ms: int = Field(60000, ge=MIN_INTERVAL_MS)
    max_files_per_run: int = Field(200, ge=1, le=100_000)
    max_bytes: int = Field(1024 * 1024, ge=1, le=20 * 1024 * 1024)


class WalkersSettings(BuiltinSettings):
    retention: Retention = Retention()
    walkers: WalkerIntervals = WalkerIntervals()
    index: Annotated[IndexSettings, UserOnly("it makes the daemon read and store every file of the project")] \
        = IndexSettings()
