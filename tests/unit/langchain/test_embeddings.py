"""Our embedding models as a LangChain ``Embeddings`` (``RRFLangChainEmbeddings(adapter)``), unwrapped by as_embedding."""

from __future__ import annotations

import asyncio

from langchain_core.embeddings import Embeddings

from rrf_retriever.embeddings import HashingEmbedding, as_embedding
from rrf_retriever.langchain import RRFLangChainEmbeddings


def test_the_view_exposes_an_adapter_to_langchain_and_unwraps() -> None:
    adapter = HashingEmbedding(dim=16)
    lc = RRFLangChainEmbeddings(adapter)
    assert isinstance(lc, Embeddings) and isinstance(lc, RRFLangChainEmbeddings)
    ref = adapter.embed_query("hybrid search")
    assert lc.embed_query("hybrid search") == ref
    assert lc.embed_documents(["hybrid search"]) == [ref]
    assert asyncio.run(lc.aembed_query("hybrid search")) == ref
    assert asyncio.run(lc.aembed_documents(["hybrid search"])) == [ref]
    assert as_embedding(lc) is adapter  # no second layer of checks
