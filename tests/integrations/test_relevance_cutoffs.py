"""A similarity cutoff means something in the frameworks' own flows, with the real MiniLM (int8, the default).

LlamaIndex: ``VectorStoreIndex.from_vector_store(store).as_retriever()`` + ``SimilarityPostprocessor(0.7)``;
LangChain: ``as_retriever(search_type="similarity_score_threshold")`` and
``similarity_search_with_relevance_scores``; a keyword-only ``VectorStoreQuery`` with its embedding. An unrelated
query keeps nothing; the strong match is kept.
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.vector_stores.types import VectorStoreQuery

from rrf_retriever import EnsembleRRFRetriever, MiniLMEmbedding
from rrf_retriever.langchain import RRFVectorStore as LangChainStore
from rrf_retriever.llama_index import RRFLlamaIndexEmbedding, RRFVectorStore

pytestmark = pytest.mark.slow

#: A small help-desk knowledge base (one topic per entry).
KB = {
    "sync-token": "Error E4012 means the sync token expired; sign out and sign in again to renew it.",
    "disk-full": "Uploads pause when the disk is nearly full; free some space and they resume.",
    "quota": "Each team has a storage quota of 2 TB; admins can raise it in the billing page.",
    "vpn": "The desktop client cannot connect through a VPN that blocks port 443.",
    "restore": "Deleted folders can be restored from the trash for 30 days.",
    "share-link": "Share links expire after seven days unless the owner sets another date.",
    "two-factor": "Two-factor authentication is required for every admin account.",
    "mobile-photos": "The mobile app uploads new photos automatically when it is on Wi-Fi.",
    "offline": "Files marked available offline are kept on the laptop and synced when it reconnects.",
    "versions": "Every file keeps its previous 100 versions; older versions are removed.",
    "proxy": "Set the proxy address in the network settings if your company uses one.",
    "invoice": "Invoices are emailed to the billing contact on the first day of each month.",
}
RELATED = "my sync token has expired, how do I renew it?"
#: Unrelated, but its words ("team", "first day of the month") are in the invoice entry: BM25 and the dense leg both
#: rank that entry first, so the rank-based score was 1.0 (and the next ones 0.98, 0.95).
UNRELATED = "which football team won the match on the first day of the month?"
CUTOFF = 0.7


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedding:
    return MiniLMEmbedding()  # the default: int8


def test_llama_index_default_retriever_and_similarity_cutoff(model: MiniLMEmbedding) -> None:
    embed_model = RRFLlamaIndexEmbedding(model)
    store = RRFVectorStore()
    VectorStoreIndex.from_documents([Document(id_=k, text=t) for k, t in KB.items()],
                                    storage_context=StorageContext.from_defaults(vector_store=store),
                                    embed_model=embed_model)
    retriever = VectorStoreIndex.from_vector_store(store, embed_model=embed_model).as_retriever(similarity_top_k=3)
    cutoff = SimilarityPostprocessor(similarity_cutoff=CUTOFF)

    unrelated = retriever.retrieve(UNRELATED)
    assert len(unrelated) == 3 and cutoff.postprocess_nodes(unrelated) == []
    related = retriever.retrieve(RELATED)
    kept = cutoff.postprocess_nodes(related)
    assert [n.node.ref_doc_id for n in kept] == ["sync-token"]
    for nodes in (unrelated, related):
        scores = [n.score for n in nodes]
        assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)  # type: ignore[operator]  # floats
        assert all(n.score == n.node.metadata["rrf_relevance"] for n in nodes)
        assert nodes[0].node.metadata["rrf_score_normalized"] == 1.0  # rank-based: first in the (only) leg
    # BM25 alone (the dense leg not searched), the query embedding given: the hits' stored vectors give the level
    # (LlamaIndex's own retriever sends no embedding in keyword modes: there the score stays rank-based)
    for text, expected in ((UNRELATED, []), (RELATED, ["sync-token"])):
        query = VectorStoreQuery(query_str=text, query_embedding=embed_model.get_query_embedding(text),
                                 similarity_top_k=3, mode="text_search")
        found = store.query(query)
        assert found.nodes and found.nodes[0].metadata["rrf_score_normalized"] == 1.0
        assert [n.ref_doc_id for n, s in zip(found.nodes, found.similarities or []) if s >= CUTOFF] == expected
    store.close()


def test_langchain_score_threshold_and_relevance_scores(model: MiniLMEmbedding) -> None:
    store = LangChainStore.from_texts(list(KB.values()), model, ids=list(KB))
    try:
        retriever = store.as_retriever(search_type="similarity_score_threshold",
                                       search_kwargs={"score_threshold": CUTOFF, "k": 3})
        assert retriever.invoke(UNRELATED) == []
        assert [d.id for d in retriever.invoke(RELATED)] == ["sync-token"]
        scored: list[tuple[Any, float]] = store.similarity_search_with_relevance_scores(UNRELATED, k=3)
        assert len(scored) == 3 and all(0.0 <= s < CUTOFF for _, s in scored)
        assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
        top, score = store.similarity_search_with_relevance_scores(RELATED, k=3)[0]
        assert top.id == "sync-token" and score >= CUTOFF
    finally:
        store.close()


def test_llama_index_retriever_score_relevance(model: MiniLMEmbedding) -> None:
    retriever = EnsembleRRFRetriever.from_texts(list(KB.values()), model, ids=list(KB), k=3, score="relevance")
    try:
        cutoff = SimilarityPostprocessor(similarity_cutoff=CUTOFF)
        unrelated = retriever.retrieve(UNRELATED)
        assert len(unrelated) == 3 and cutoff.postprocess_nodes(unrelated) == []
        assert all(n.score == n.node.metadata["rrf_relevance"] for n in unrelated)
        assert [n.node.node_id for n in cutoff.postprocess_nodes(retriever.retrieve(RELATED))] == ["sync-token"]
        assert [n.node.node_id for n in cutoff.postprocess_nodes(retriever.scoped(k=2).retrieve(RELATED))] == [
            "sync-token"]  # a scoped copy keeps the choice
    finally:
        retriever.close()
