"""LangChain and LlamaIndex models as adapters (as_embedding, duck typed); the views the other way round are
tested with their framework package (tests/unit/langchain, tests/unit/llama_index)."""

from __future__ import annotations

import asyncio

from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from rrf_retriever.embeddings import (
    EmbeddingAdapter,
    LangChainEmbeddingAdapter,
    LlamaIndexEmbeddingAdapter,
    as_embedding,
)


class PrefixEmbeddings(Embeddings):
    """A real LangChain Embeddings: documents and queries are embedded differently, async is native."""

    def __init__(self) -> None:
        self.async_calls = 0

    def _vec(self, text: str, query: bool) -> list[float]:
        return [float(len(text)), 1.0 if query else 0.0, 1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t, False) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text, True)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.async_calls += 1
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self.async_calls += 1
        return self.embed_query(text)


class LengthEmbedding(BaseEmbedding):
    """A real LlamaIndex BaseEmbedding (pydantic model) with distinct query and text embeddings."""

    @classmethod
    def class_name(cls) -> str:
        return "LengthEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(len(query)), 1.0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(len(text)), 0.0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._get_text_embedding(t) for t in texts]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def test_langchain_embeddings_adapter() -> None:
    model = PrefixEmbeddings()
    adapter = as_embedding(model)
    assert isinstance(adapter, LangChainEmbeddingAdapter)
    assert isinstance(adapter, EmbeddingAdapter)
    assert adapter.embed_documents(["ab", "abc"]) == [[2.0, 0.0, 1.0], [3.0, 0.0, 1.0]]
    assert adapter.embed_query("ab") == [2.0, 1.0, 1.0]
    assert adapter.dimension == 3
    assert asyncio.run(adapter.aembed_query("abcd")) == [4.0, 1.0, 1.0]
    assert asyncio.run(adapter.aembed_documents(["a"])) == [[1.0, 0.0, 1.0]]
    assert model.async_calls == 2  # the model's own async methods were used


def test_llama_index_embedding_adapter() -> None:
    model = LengthEmbedding(embed_batch_size=2)
    adapter = as_embedding(model)
    assert isinstance(adapter, LlamaIndexEmbeddingAdapter)
    assert adapter.embed_documents(["a", "bb", "ccc"]) == [[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]
    assert adapter.embed_query("abcd") == [4.0, 1.0]
    assert asyncio.run(adapter.aembed_query("ab")) == [2.0, 1.0]
    assert asyncio.run(adapter.aembed_documents(["ab"])) == [[2.0, 0.0]]
