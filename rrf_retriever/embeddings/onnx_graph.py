"""Build the all-MiniLM-L6-v2 sentence encoder as an ONNX graph from its safetensors, without torch.

The graph is the BERT encoder of ``sentence-transformers/all-MiniLM-L6-v2`` followed by its sentence head:
embeddings (word + position + token type 0, LayerNorm), 6 encoder layers (12-head self-attention with the
padding mask, GELU(erf) feed-forward, post-LayerNorm), mean pooling over non-padding tokens and L2
normalisation. Inputs: ``input_ids`` and ``attention_mask`` (int64, ``[batch, seq]``); output:
``sentence_embedding`` (float32, ``[batch, 384]``). It reproduces sentence-transformers to ~1e-7 (see
benchmarks/RESULTS.md).

Building takes about a second; :func:`build_or_load` caches the file on disk, keyed by the weights' hash.

Example:
    >>> from rrf_retriever.embeddings.onnx_graph import build_or_load  # doctest: +SKIP
    >>> onnx_path = build_or_load(model_dir, cache_dir)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from rrf_retriever.embeddings.graph_cache import cache_error, new_temp_file, publish, remembered_hash

__all__ = ["GRAPH_VERSION", "build_graph", "build_or_load", "weights_hash"]

#: Bumped whenever the graph changes, so a stale cached file is never reused.
GRAPH_VERSION = 2
_OPSET = 17  # LayerNormalization is a single op from opset 17


def weights_hash(safetensors_path: Path) -> str:
    """SHA-256 of the weights file (first 16 hex digits), the cache key of the built graph."""
    digest = hashlib.sha256()
    with safetensors_path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def build_graph(model_dir: Path, *, fused: bool = False) -> Any:
    """Build the ONNX ``ModelProto`` from ``model_dir`` (``model.safetensors`` + ``config.json``).

    ``fused=False`` (the fp32 model that runs) uses standard ONNX ops only. ``fused=True`` writes each encoder
    layer with onnxruntime's contrib ops (``com.microsoft``: ``Attention``, ``SkipLayerNormalization``,
    ``BiasGelu``): the same function (equal within ~2e-7), no faster in fp32 here, but the form the int8
    quantiser turns into ``QAttention`` and that leaves few fp32 element-wise ops beside the int8 matrix products
    (:mod:`rrf_retriever.embeddings.int8_graph`).

    Raises:
        ImportError: ``onnx``, ``numpy`` or ``safetensors`` is missing.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    weights = load_file(str(model_dir / "model.safetensors"))

    def w(name: str) -> Any:
        # Some exports prefix every key with "bert." or "0.auto_model."; accept them all.
        for prefix in ("", "bert.", "0.auto_model."):
            if prefix + name in weights:
                return weights[prefix + name]
        msg = f"weight {name!r} not found in {model_dir / 'model.safetensors'}"
        raise KeyError(msg)

    initializers: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, array: Any) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x: str, prefix: str, out: str) -> str:
        # torch Linear keeps weight as [out, in]; MatMul wants [in, out].
        wt = const(f"{prefix}.wT", w(f"{prefix}.weight").T.astype(np.float32))
        b = const(f"{prefix}.b", w(f"{prefix}.bias").astype(np.float32))
        return node("Add", [node("MatMul", [x, wt], f"{out}_mm"), b], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.g", w(f"{prefix}.weight").astype(np.float32))
        bias = const(f"{prefix}.beta", w(f"{prefix}.bias").astype(np.float32))
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

    # --- embeddings: word + position[0:seq] + token_type[0] ------------------------------------------
    const("zero_i64", np.array([0], dtype=np.int64))
    const("one_i64", np.array([1], dtype=np.int64))
    const("two_i64", np.array([2], dtype=np.int64))
    const("word_emb", w("embeddings.word_embeddings.weight").astype(np.float32))
    const("pos_emb", w("embeddings.position_embeddings.weight").astype(np.float32))
    const("type0_emb", w("embeddings.token_type_embeddings.weight")[0].astype(np.float32))
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq_len = node("Slice", [shape, "one_i64", "two_i64"], "seq_len")
    positions = node("Slice", ["pos_emb", "zero_i64", seq_len, "zero_i64"], "positions")
    words = node("Gather", ["word_emb", "input_ids"], "words")
    x = node("Add", [node("Add", [words, positions], "emb_wp"), "type0_emb"], "emb_sum")
    x = layer_norm(x, "embeddings.LayerNorm", "emb_ln")

    # --- additive attention mask [batch, 1, 1, seq]: 0 for tokens, a large negative for padding --------
    mask_f = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    const("one_f", np.array(1.0, dtype=np.float32))
    const("neg_big", np.array(np.finfo(np.float32).min, dtype=np.float32))
    inv = node("Sub", ["one_f", mask_f], "mask_inv")
    additive = node("Mul", [inv, "neg_big"], "mask_add")
    const("mask_axes", np.array([1, 2], dtype=np.int64))
    additive = node("Unsqueeze", [additive, "mask_axes"], "mask_4d")

    const("split_heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    const("merge_heads_shape", np.array([0, 0, hidden], dtype=np.int64))
    const("inv_sqrt_d", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), dtype=np.float32))
    const("half", np.array(0.5, dtype=np.float32))
    const("qkv_split", np.array([hidden, hidden, hidden], dtype=np.int64))

    if fused:  # the additive mask above is then left unused: three [batch, seq] ops, kept for one code path
        x = _fused_layers(x, w, const, node, layers=layers, heads=heads, eps=eps)
    for i in range(0 if fused else layers):
        p = f"encoder.layer.{i}"
        # Q, K and V in one MatMul over concatenated weights (one pass over x instead of three).
        qkv_w = np.concatenate(
            [w(f"{p}.attention.self.{n}.weight").T for n in ("query", "key", "value")], axis=1
        ).astype(np.float32)
        qkv_b = np.concatenate([w(f"{p}.attention.self.{n}.bias") for n in ("query", "key", "value")])
        qkv_mm = node("MatMul", [x, const(f"l{i}_qkv.wT", qkv_w)], f"l{i}_qkv_mm")
        qkv = node("Add", [qkv_mm, const(f"l{i}_qkv.b", qkv_b.astype(np.float32))], f"l{i}_qkv")
        split_out = [f"l{i}_q", f"l{i}_k", f"l{i}_v"]
        nodes.append(helper.make_node("Split", [qkv, "qkv_split"], split_out, name=f"l{i}_split", axis=-1))
        heads4 = {name: node("Reshape", [name, "split_heads_shape"], f"{name}4") for name in split_out}
        # [batch, heads, seq, head_dim] for Q and V; K as [batch, heads, head_dim, seq] for Q @ K^T
        q = node("Transpose", [heads4[split_out[0]]], f"l{i}_qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [heads4[split_out[1]]], f"l{i}_kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [heads4[split_out[2]]], f"l{i}_vt", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"l{i}_qk"), "inv_sqrt_d"], f"l{i}_scaled")
        scores = node("Add", [scores, additive], f"l{i}_masked")
        probs = node("Softmax", [scores], f"l{i}_probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"l{i}_ctx4")], f"l{i}_ctxt", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "merge_heads_shape"], f"l{i}_ctx")
        attn = linear(ctx, f"{p}.attention.output.dense", f"l{i}_attn")
        x = layer_norm(node("Add", [attn, x], f"l{i}_res1"), f"{p}.attention.output.LayerNorm", f"l{i}_ln1")
        inter = linear(x, f"{p}.intermediate.dense", f"l{i}_inter")
        # GELU(erf) exactly as BERT: 0.5 * x * (1 + erf(x / sqrt(2)))
        erf = node("Erf", [node("Mul", [inter, "inv_sqrt2"], f"l{i}_gx")], f"l{i}_erf")
        half_x = node("Mul", [inter, "half"], f"l{i}_hx")
        gelu = node("Mul", [half_x, node("Add", [erf, "one_f"], f"l{i}_1erf")], f"l{i}_gelu")
        out = linear(gelu, f"{p}.output.dense", f"l{i}_out")
        x = layer_norm(node("Add", [out, x], f"l{i}_res2"), f"{p}.output.LayerNorm", f"l{i}_ln2")

    # --- mean pooling over real tokens, then L2 normalisation (sentence-transformers' clamps) ----------
    const("last_axis", np.array([-1], dtype=np.int64))
    const("seq_axis", np.array([1], dtype=np.int64))
    const("min_count", np.array(1e-9, dtype=np.float32))
    const("min_norm", np.array(1e-12, dtype=np.float32))
    mask3 = node("Unsqueeze", [mask_f, "last_axis"], "mask3")
    masked = node("Mul", [x, mask3], "masked_tokens")
    summed = node("ReduceSum", [masked, "seq_axis"], "sum_tokens", keepdims=0)
    token_count = node("ReduceSum", [mask3, "seq_axis"], "token_count", keepdims=0)
    counts = node("Max", [token_count, "min_count"], "count")
    mean = node("Div", [summed, counts], "mean_pooled")
    norm = node("ReduceL2", [mean], "l2", axes=[-1], keepdims=1)  # axes is an attribute until opset 18
    node("Div", [mean, node("Max", [norm, "min_norm"], "l2_clamped")], "sentence_embedding")

    graph = helper.make_graph(
        nodes,
        "all_minilm_l6_v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        initializer=initializers,
    )
    opsets = [helper.make_opsetid("", _OPSET)] + ([helper.make_opsetid("com.microsoft", 1)] if fused else [])
    model = helper.make_model(graph, opset_imports=opsets, producer_name="rrf-retriever")
    model.ir_version = 8  # readable by every onnxruntime >= 1.14
    if not fused:  # the checker does not know the contrib ops
        onnx.checker.check_model(model)
    return model


def _fused_layers(x: str, w: Any, const: Any, node: Any, *, layers: int, heads: int, eps: float) -> str:
    """The encoder layers with onnxruntime's contrib ops; returns the last hidden state's name.

    ``Attention`` projects Q, K, V in one product, applies the raw 0/1 mask (int32, ``[batch, seq]``) and merges
    the heads; ``SkipLayerNormalization`` is ``LayerNorm(input + skip + bias)`` (the residual and the dense bias);
    ``BiasGelu`` is the exact erf GELU of ``input + bias``.
    """
    import numpy as np
    from onnx import TensorProto

    ms = "com.microsoft"
    mask_i32 = node("Cast", ["attention_mask"], "mask_i32", to=TensorProto.INT32)
    for i in range(layers):
        p = f"encoder.layer.{i}"

        def wt(name: str, key: str) -> str:
            return const(name, w(f"{key}.weight").T.astype(np.float32))

        def vec(name: str, key: str) -> str:
            return const(name, w(key).astype(np.float32))

        qkv_w = np.concatenate(
            [w(f"{p}.attention.self.{n}.weight").T for n in ("query", "key", "value")], axis=1
        ).astype(np.float32)
        qkv_b = np.concatenate([w(f"{p}.attention.self.{n}.bias") for n in ("query", "key", "value")])
        ctx = node("Attention", [x, const(f"l{i}_qkv.wT", qkv_w), const(f"l{i}_qkv.b", qkv_b.astype(np.float32)),
                                 mask_i32], f"l{i}_ctx", domain=ms, num_heads=heads)
        attn = node("MatMul", [ctx, wt(f"l{i}_ao.wT", f"{p}.attention.output.dense")], f"l{i}_attn_mm")
        x = node("SkipLayerNormalization",
                 [attn, x, vec(f"l{i}_ln1.g", f"{p}.attention.output.LayerNorm.weight"),
                  vec(f"l{i}_ln1.beta", f"{p}.attention.output.LayerNorm.bias"),
                  vec(f"l{i}_ao.b", f"{p}.attention.output.dense.bias")], f"l{i}_ln1", domain=ms, epsilon=eps)
        inter = node("MatMul", [x, wt(f"l{i}_in.wT", f"{p}.intermediate.dense")], f"l{i}_inter_mm")
        gelu = node("BiasGelu", [inter, vec(f"l{i}_in.b", f"{p}.intermediate.dense.bias")], f"l{i}_gelu", domain=ms)
        out = node("MatMul", [gelu, wt(f"l{i}_out.wT", f"{p}.output.dense")], f"l{i}_out_mm")
        x = node("SkipLayerNormalization",
                 [out, x, vec(f"l{i}_ln2.g", f"{p}.output.LayerNorm.weight"),
                  vec(f"l{i}_ln2.beta", f"{p}.output.LayerNorm.bias"),
                  vec(f"l{i}_out.b", f"{p}.output.dense.bias")], f"l{i}_ln2", domain=ms, epsilon=eps)
    return x


def build_or_load(model_dir: Path, cache_dir: Path) -> Path:
    """Return the path of the cached ONNX graph for ``model_dir``, building it once if needed.

    The file name holds the weights' hash and :data:`GRAPH_VERSION`; the write is atomic and durable
    (:func:`~rrf_retriever.embeddings.graph_cache.publish`), so concurrent first uses never see a half-written file.

    Raises:
        EmbeddingError: ``cache_dir`` is a file, lies under one, or cannot be written.
    """
    key = remembered_hash(model_dir / "model.safetensors", cache_dir, weights_hash)
    target = cache_dir / f"all-minilm-l6-v2-{key}-g{GRAPH_VERSION}.onnx"
    if target.is_file():
        return target
    tmp = new_temp_file(target)  # an unusable cache_dir fails here, before the build
    try:
        tmp.write_bytes(build_graph(model_dir).SerializeToString())
        publish(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise cache_error(cache_dir, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
