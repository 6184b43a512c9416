"""What the offline embedders share: a model loaded on the first ``embed`` call (never at import, so a
daemon's start does not pay for it), one forward pass at a time (memory stays bounded; the runtime already
uses the cores), and the batch size from the ``walkers.embeddingBatchSize`` setting."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_core.context import Context


class OnDemandEmbedder:
    """Subclasses set ``name``, ``model``, ``dim`` and ``available()``, and build their model in
    :meth:`load_model`."""

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def configure(self, settings: Any, app: Context) -> None:
        from memtree_plugins.embedders.semantic_keys import batch_size

        self.batch_size = batch_size(app)

    def load_model(self) -> Any:
        raise NotImplementedError

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self.load_model()
            return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        with self._lock:
            return model.encode(list(texts), batch_size=self.batch_size).tolist()
