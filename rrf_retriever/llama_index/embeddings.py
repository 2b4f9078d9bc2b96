"""Our embedding models as a LlamaIndex ``BaseEmbedding`` (``RRFLlamaIndexEmbedding(model)``).

A LlamaIndex index or query engine can then embed with the same model as the retriever (MiniLM offline, hashing
in tests, any adapter). :func:`~rrf_retriever.embeddings.as_embedding` unwraps the view (``rrf_adapter``) instead
of stacking a second layer of checks.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding, as_embedding
    >>> model = HashingEmbedding(dim=8)
    >>> view = RRFLlamaIndexEmbedding(model)
    >>> view.get_query_embedding("hello") == model.embed_query("hello"), as_embedding(view) is model
    (True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rrf_retriever.errors import missing_dependency

if TYPE_CHECKING:
    from rrf_retriever.embeddings.base import BaseEmbeddingAdapter

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("llama-index-core", "llama-index", "rrf_retriever.llama_index") from exc

__all__ = ["RRFLlamaIndexEmbedding"]


class RRFLlamaIndexEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` over an rrf-retriever embedding adapter (``model_name`` is its ``model_id``,
    ``embed_batch_size`` its ``batch_size`` up to LlamaIndex's 2048)."""

    _rrf_adapter: Any = PrivateAttr()

    def __init__(self, adapter: BaseEmbeddingAdapter, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", adapter.model_id)
        kwargs.setdefault("embed_batch_size", max(1, min(adapter.batch_size, 2048)))
        super().__init__(**kwargs)
        self._rrf_adapter = adapter

    @property
    def rrf_adapter(self) -> BaseEmbeddingAdapter:
        """The adapter this view answers with (what ``as_embedding`` unwraps)."""
        return self._rrf_adapter

    @classmethod
    def class_name(cls) -> str:
        return "RRFLlamaIndexEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.rrf_adapter.embed_query(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.rrf_adapter.embed_documents([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self.rrf_adapter.embed_documents(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await self.rrf_adapter.aembed_query(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self.rrf_adapter.aembed_documents([text]))[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await self.rrf_adapter.aembed_documents(texts)
