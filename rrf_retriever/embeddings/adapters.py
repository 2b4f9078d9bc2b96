"""What users already have as an embedding model, made an adapter: :func:`as_embedding`.

It takes

* a LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``, native async when it has it),
* a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``),
* a plain callable ``list[str] -> list[list[float]]``,
* an adapter (returned as is), or one of our framework views over an adapter (``rrf_adapter``: unwrapped).

Framework-free: models are recognised by their methods (duck typing), so any object with LangChain's or
LlamaIndex's embedding methods works, with either framework installed or neither. The other way round (an adapter
as a framework's embedding) is each framework package's: :class:`rrf_retriever.langchain.RRFLangChainEmbeddings`,
:class:`rrf_retriever.llama_index.RRFLlamaIndexEmbedding`.

Example:
    >>> emb = as_embedding(lambda texts: [[1.0, 0.0] for _ in texts])
    >>> emb.embed_query("hello"), emb.dimension
    ([1.0, 0.0], 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rrf_retriever.embeddings.base import BaseEmbeddingAdapter, CallableEmbedding, declared_languages, declared_window
from rrf_retriever.errors import InvalidTypeError

__all__ = ["LangChainEmbeddingAdapter", "LlamaIndexEmbeddingAdapter", "as_embedding"]


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
        self.languages, self.window_tokens = declared_languages(model), declared_window(model)
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
        self.languages, self.window_tokens = declared_languages(model), declared_window(model)

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
    inner = getattr(obj, "rrf_adapter", None)
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
