"""Ours fusing a LangChain BM25Retriever and a LlamaIndex vector retriever as sources (seed: N sources)."""

from __future__ import annotations

import asyncio

from langchain_core.documents import Document
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from integrations.corpus import NOTES
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.llama_index import RRFLlamaIndexEmbedding
from rrf_retriever.stores.fts5.store import FTS5KeywordStore


def _sources():  # type: ignore[no-untyped-def]
    from langchain_community.retrievers import BM25Retriever

    docs = [Document(id=doc_id, page_content=text, metadata=meta) for doc_id, text, meta in NOTES]
    lc_bm25 = BM25Retriever.from_documents(docs, k=4)
    nodes = [TextNode(id_=doc_id, text=text, metadata=meta) for doc_id, text, meta in NOTES]
    li_vector = VectorStoreIndex(nodes, embed_model=RRFLlamaIndexEmbedding(HashingEmbedding(32))).as_retriever(
        similarity_top_k=4
    )
    return lc_bm25, li_vector


def test_fuses_a_langchain_and_a_llamaindex_retriever() -> None:
    lc_bm25, li_vector = _sources()
    r = EnsembleRRFRetriever(sources={"bm25": lc_bm25, "vector": li_vector}, weights={"bm25": 1.0, "vector": 0.5})
    docs = r.invoke("E4012 sync token")
    assert docs[0].id == "kb-1"
    assert set(docs[0].metadata["rrf_ranks"]) <= {"bm25", "vector"}
    # The same id from both frameworks fuses into one result.
    assert len({d.id for d in docs}) == len(docs)
    both = [d for d in docs if set(d.metadata["rrf_ranks"]) == {"bm25", "vector"}]
    assert both, "some document should be ranked by both sources"
    nodes = asyncio.run(r.aretrieve("E4012 sync token"))
    assert nodes[0].node.node_id == "kb-1"


def test_foreign_sources_are_scoped_after_retrieval_and_zero_weight_is_not_called() -> None:
    lc_bm25, li_vector = _sources()
    keyword = FTS5KeywordStore()
    r = EnsembleRRFRetriever(keyword=keyword, sources={"bm25": lc_bm25, "vector": li_vector})
    r.add_texts([t for _, t, _ in NOTES], [m for *_, m in NOTES], [i for i, *_ in NOTES])  # reaches only our store
    assert keyword.count() == len(NOTES)
    docs = r.invoke("sync token disk retry", filter={"session_id": [1]}, exclude_ids=["kb-2"])
    assert {d.id for d in docs} == {"kb-1"}
    result = r.search("E4012", weights={"vector": 0.0})
    vector = next(t for t in result.trace.legs if t.name == "vector")
    assert not vector.called
