"""Our embedding models as a LangChain ``Embeddings`` (``RRFLangChainEmbeddings(model)``).

A LangChain vector store or chain can then embed with the same model as the retriever (MiniLM offline, hashing in
tests, any adapter). :func:`~rrf_retriever.embeddings.as_embedding` unwraps the view (``rrf_adapter``) instead of
stacking a second layer of checks.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding, as_embedding
    >>> model = HashingEmbedding(dim=8)
    >>> view = RRFLangChainEmbeddings(model)
    >>> view.embed_query("hello") == model.embed_query("hello"), as_embedding(view) is model
    (True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rrf_retriever.errors import missing_dependency

if TYPE_CHECKING:
    from rrf_retriever.embeddings.base import BaseEmbeddingAdapter

try:
    from langchain_core.embeddings import Embeddings
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("langchain-core", "langchain", "rrf_retriever.langchain") from exc

__all__ = ["RRFLangChainEmbeddings"]


class RRFLangChainEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over an rrf-retriever embedding adapter (sync and async, as the adapter does)."""

    def __init__(self, adapter: BaseEmbeddingAdapter) -> None:
        #: The adapter this view answers with (what ``as_embedding`` unwraps).
        self.rrf_adapter = adapter

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.rrf_adapter.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.rrf_adapter.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self.rrf_adapter.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await self.rrf_adapter.aembed_query(text)
