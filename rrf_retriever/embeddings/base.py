"""The embedding protocol and the machinery every adapter shares.

Every dense store keeps an :class:`EmbeddingAdapter` as ``store.embedding``; the engine embeds a query once
(``embed_query``) and hands the vector to every dense leg. :class:`BaseEmbeddingAdapter` does the work common to
all models: input checks, batching, output checks (count, dimension, finite values), the progress bar, the async
twins, and turning an exception inside the model into an :class:`~rrf_retriever.errors.EmbeddingError` chained to
it (:func:`embedding_error`, the one place that wording lives). :class:`CallableEmbedding` wraps a plain callable.
A framework's view of a model lives in that framework's package (this module imports none):
:class:`rrf_retriever.langchain.RRFLangChainEmbeddings` and :class:`rrf_retriever.llama_index.RRFLlamaIndexEmbedding`.

Example:
    >>> CallableEmbedding(lambda texts: [[1.0, 0.0] for _ in texts]).embed_query("hello")
    [1.0, 0.0]
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from rrf_retriever.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidArgumentError,
    InvalidTypeError,
    RRFRetrieverError,
)
from rrf_retriever.progress import ProgressBar, progress_bar
from rrf_retriever.validate import check_str
from rrf_retriever.vectors import to_float_vectors

__all__ = [
    "BaseEmbeddingAdapter",
    "CallableEmbedding",
    "EmbeddingAdapter",
    "EmbedsArrays",
    "check_texts",
    "declared_languages",
    "declared_window",
    "embedding_error",
]


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


@runtime_checkable
class EmbedsArrays(Protocol):
    """A model that embeds documents into one 2-D float array (``[len(texts), dimension]``, float32), such as
    :class:`~rrf_retriever.embeddings.MiniLMEmbedding`: writes take that array to the stores as it is, 8 times
    smaller than the same vectors as Python floats. Its rows must equal ``embed_documents``'s vectors.

    Example:
        >>> isinstance(CallableEmbedding(lambda texts: [[1.0] for _ in texts]), EmbedsArrays)
        False
    """

    def embed_array(self, texts: Sequence[str]) -> Any: ...


def declared_languages(model: object) -> frozenset[str] | None:
    """The languages ``model`` declares in its ``languages`` attribute (a name or a collection of names), lower-cased;
    None when it declares none.

    Example:
        >>> declared_languages(type("M", (), {"languages": ["English"]})()), declared_languages(object())
        (frozenset({'english'}), None)
    """
    value = getattr(model, "languages", None)
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, (set, frozenset, list, tuple)) and value and all(isinstance(v, str) for v in value):
        return frozenset(v.strip().lower() for v in value)
    return None


def declared_window(model: object) -> int | None:
    """How many tokens of a text ``model`` declares it reads (``window_tokens``, a positive integer); else None.

    Example:
        >>> declared_window(type("M", (), {"window_tokens": 256})()), declared_window(object())
        (256, None)
    """
    value = getattr(model, "window_tokens", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def check_texts(texts: object) -> list[str]:
    """``texts`` as a list of strings.

    Raises:
        InvalidTypeError: ``texts`` is a single string, not a sequence, or holds a non-string.

    Example:
        >>> check_texts(("a", "b"))
        ['a', 'b']
    """
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        msg = f"texts must be a list of strings, not {type(texts).__name__}"
        raise InvalidTypeError(msg)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            msg = f"texts[{i}] must be a str, not {type(text).__name__}"
            raise InvalidTypeError(msg)
    return list(texts)


def embedding_error(exc: BaseException, source: str) -> RRFRetrieverError:
    """``exc`` as one of our errors: an :class:`~rrf_retriever.errors.RRFRetrieverError` is returned as is;
    anything else becomes an ``EmbeddingError`` ``"<source> failed: <Type>: <message>"`` chained to ``exc``.

    The one wording of a failed embedding model, for the adapters and for callers that embed through a model
    that may not be one of ours.

    Example:
        >>> err = embedding_error(ConnectionError("quota exceeded"), "the embedding model m")
        >>> str(err), type(err.__cause__).__name__
        ('the embedding model m failed: ConnectionError: quota exceeded', 'ConnectionError')
    """
    if isinstance(exc, RRFRetrieverError):
        return exc
    err = EmbeddingError(f"{source} failed: {type(exc).__name__}: {exc}")
    err.__cause__ = exc
    return err


class BaseEmbeddingAdapter:
    """Shared machinery: input checks, batching, output checks, progress bar, async twins.

    Subclasses implement the hook :meth:`_embed_batch` (and may override :meth:`_embed_one_query` and the async
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
    #: The languages the model was trained on (names such as ``"english"``), or None: not declared (the engine's
    #: weak-leg rule then takes it to speak the corpus; :func:`declared_languages`).
    languages: frozenset[str] | None = None
    #: How many tokens of a text the model reads (it cuts the rest), or None: not declared (:func:`declared_window`).
    window_tokens: int | None = None
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

    # -- hooks (subclasses override these) ---------------------------------------------------------------
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

    # -- checks ------------------------------------------------------------------------------------------
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

    @contextmanager
    def _model_errors(self) -> Iterator[None]:
        """Around every call into the model (sync or awaited): its failures become our ``EmbeddingError``."""
        try:
            yield
        except RRFRetrieverError:
            raise
        except Exception as exc:  # the user's model: any failure is an embedding failure
            raise embedding_error(exc, f"the embedding model {self!r}") from exc

    def _call_model(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._model_errors():
            return fn(*args)

    def _batches(self, texts: list[str]) -> list[list[str]]:
        return [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]

    def _progress(self, total: int) -> Any:
        """A progress bar context over ``total`` texts (silent for small jobs or without tqdm)."""
        return progress_bar(total, f"embedding ({self.model_id})", unit="text", show=self.show_progress)

    # -- public API --------------------------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents, in batches of ``batch_size``; one vector per text, in order.

        Raises:
            EmbeddingError: the model failed or returned the wrong number of vectors.
            DimensionMismatchError: a vector of another dimension, or holding NaN or infinity.
        """
        items = check_texts(texts)
        if not items:
            return []
        out: list[list[float]] = []
        bar: ProgressBar
        with self._progress(len(items)) as bar:
            for batch in self._batches(items):
                out.extend(self._check_vectors(self._call_model(self._embed_batch, batch), len(batch)))
                bar.update(len(batch))
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
        items = check_texts(texts)
        out: list[list[float]] = []
        for batch in self._batches(items):
            with self._model_errors():
                raw = await self._aembed_batch(batch)
            out.extend(self._check_vectors(raw, len(batch)))
        return out

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`."""
        query = check_str(text, "the query")
        with self._model_errors():
            raw = await self._aembed_one_query(query)
        return self._check_vectors([raw], 1)[0]

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
        # A coroutine function, or an object whose __call__ is one.
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
        self.model_id = model_id or str(getattr(fn, "__name__", type(fn).__name__))

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        if self._is_async:
            msg = f"{self!r} wraps a coroutine function: use aembed_documents / aembed_query"
            raise InvalidTypeError(msg)
        return self._fn(texts)

    async def _aembed_batch(self, texts: list[str]) -> Sequence[Any]:
        return await self._fn(texts) if self._is_async else await super()._aembed_batch(texts)

    async def _aembed_one_query(self, text: str) -> Any:
        return (await self._fn([text]))[0] if self._is_async else await super()._aembed_one_query(text)
