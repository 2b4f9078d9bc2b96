"""The framework edge: LangChain and LlamaIndex models as adapters, and adapters as framework models.

:func:`as_embedding` turns what users already have into an adapter:

* a LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``, native async when it has it),
* a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``),
* a plain callable ``list[str] -> list[list[float]]``,
* an adapter (returned as is).

The other way round, :func:`langchain_view` and :func:`llama_index_view` (behind
``BaseEmbeddingAdapter.as_langchain()`` / ``as_llama_index()``) expose an adapter as a framework embedding.

Importing this module never imports a framework: models are recognised by their methods (duck typing), and the
view classes are built on first use.

Example:
    >>> emb = as_embedding(lambda texts: [[1.0, 0.0] for _ in texts])
    >>> emb.embed_query("hello"), emb.dimension
    ([1.0, 0.0], 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rrf_retriever.embeddings.base import BaseEmbeddingAdapter, CallableEmbedding
from rrf_retriever.errors import InvalidTypeError, missing_dependency

__all__ = [
    "LangChainEmbeddingAdapter",
    "LlamaIndexEmbeddingAdapter",
    "as_embedding",
    "langchain_view",
    "llama_index_view",
]


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
# Views: an adapter as a framework embedding. Built on first use so importing this module imports no framework.
# --------------------------------------------------------------------------------------------------------
_VIEW_CLASSES: dict[str, type] = {}


def langchain_view(adapter: BaseEmbeddingAdapter) -> Any:
    """``adapter`` as a LangChain ``Embeddings`` (the class behind ``adapter.as_langchain()``).

    Raises:
        MissingDependencyError: ``langchain-core`` is not installed (extra ``langchain``).
    """
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


def llama_index_view(adapter: BaseEmbeddingAdapter) -> Any:
    """``adapter`` as a LlamaIndex ``BaseEmbedding`` (the class behind ``adapter.as_llama_index()``).

    Raises:
        MissingDependencyError: ``llama-index-core`` is not installed (extra ``llama-index``).
    """
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
