"""Our embedding models as a LlamaIndex ``BaseEmbedding`` (``RRFLlamaIndexEmbedding(adapter)``), unwrapped by
as_embedding."""

from __future__ import annotations

import asyncio

from llama_index.core.base.embeddings.base import BaseEmbedding

from rrf_retriever.embeddings import HashingEmbedding, as_embedding
from rrf_retriever.llama_index import RRFLlamaIndexEmbedding


def test_the_view_exposes_an_adapter_to_llama_index_and_unwraps() -> None:
    adapter = HashingEmbedding(dim=16)
    li = RRFLlamaIndexEmbedding(adapter)
    assert isinstance(li, BaseEmbedding) and isinstance(li, RRFLlamaIndexEmbedding)
    ref = adapter.embed_query("hybrid search")
    assert li.get_query_embedding("hybrid search") == ref
    assert li.get_text_embedding_batch(["hybrid search", "x"])[0] == ref
    assert asyncio.run(li.aget_query_embedding("hybrid search")) == ref
    assert asyncio.run(li.aget_text_embedding_batch(["hybrid search"])) == [ref]
    assert li.model_name == adapter.model_id
    assert li.rrf_adapter is adapter
    assert as_embedding(li) is adapter  # no second layer of checks
