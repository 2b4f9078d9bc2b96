"""RRFVectorStore as a LangChain ``VectorStore``: LangChain's own standard suite, then our contract (hybrid results,
the score, metadata without per-query keys, the dense-only ``by_vector``, ``as_retriever``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from langchain_tests.integration_tests.vectorstores import VectorStoreIntegrationTests

from rrf_retriever import HashingEmbedding
from rrf_retriever.errors import EngineClosedError
from rrf_retriever.langchain import LangChainRRFRetriever, RRFVectorStore


class TestRRFVectorStoreStandard(VectorStoreIntegrationTests):
    """LangChain's standard vector store tests, run as they are."""

    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:  # type: ignore[override]  # the suite's fixture, a generator
        store = RRFVectorStore(self.get_embeddings())
        yield store
        store.close()


TEXTS = ["error E42 when the index is full", "vector search with dense embeddings", "keyword search with BM25"]
METAS = [{"kind": "log", "year": 2024}, {"kind": "doc", "year": 2021}, {"kind": "doc", "year": 2023}]


@pytest.fixture
def store() -> Iterator[RRFVectorStore]:
    s = RRFVectorStore.from_texts(TEXTS, HashingEmbedding(32), metadatas=METAS, ids=["e42", "vec", "bm25"])
    yield s
    s.close()


def test_results_are_hybrid_and_carry_only_the_users_metadata(store: RRFVectorStore) -> None:
    docs = store.similarity_search("E42", k=3)
    assert docs[0] == Document(id="e42", page_content=TEXTS[0], metadata=METAS[0])  # the keyword leg's exact match
    assert all(not any(k.startswith("rrf_") for k in d.metadata) for d in docs)
    # the same document from two queries is equal, so LangChain's deduplication (by equality) sees one document
    assert store.similarity_search("error", k=1)[0] == docs[0]
    ranks = store.retriever.search("E42", k=3).hits[0].ranks  # where the scoring lives
    assert set(ranks) == {"dense", "keyword"}


def test_the_score_is_the_normalized_fused_score(store: RRFVectorStore) -> None:
    scored = store.similarity_search_with_score("keyword search with BM25", k=3)
    scores = [s for _, s in scored]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    assert scored[0][0].id == "bm25" and scores[0] == pytest.approx(1.0)  # first in both legs
    hits = store.retriever.search("keyword search with BM25", k=3).hits
    assert scores == [h.normalized_score for h in hits]
    assert store.similarity_search_with_relevance_scores("keyword search with BM25", k=3) == scored


def test_filters_weights_and_the_search_options_pass_through(store: RRFVectorStore) -> None:
    assert [d.id for d in store.similarity_search("search", k=3, filter={"kind": "doc"})] in (
        ["vec", "bm25"], ["bm25", "vec"])
    assert {d.id for d in store.similarity_search("search", filter={"year": {"$gte": 2023}})} == {"bm25", "e42"}
    assert store.similarity_search("E42", k=3, exclude_ids=["e42"])[0].id != "e42"
    with pytest.raises(ValueError, match="unknown"):
        store.similarity_search("E42", fliter={"kind": "doc"})  # a typo is an error, never ignored


def test_by_vector_ranks_by_the_dense_leg_alone(store: RRFVectorStore) -> None:
    vector = HashingEmbedding(32).embed_query("vector search with dense embeddings")
    docs = store.similarity_search_by_vector(vector, k=2)
    assert docs[0] == Document(id="vec", page_content=TEXTS[1], metadata=METAS[1])
    assert [d.id for d in store.similarity_search_by_vector(vector, k=3, filter={"kind": "log"})] == ["e42"]
    with pytest.raises(ValueError, match=r"dimension|length"):
        store.similarity_search_by_vector([1.0, 0.0], k=2)
    hybrid = store.similarity_search("E42", k=1, query_vector=vector)  # hybrid, with a vector of one's own
    assert hybrid[0].id in {"e42", "vec"}
    store.close()
    with pytest.raises(EngineClosedError):
        store.similarity_search_by_vector(vector)


def test_as_retriever_is_langchains_with_hybrid_results_and_ours_is_one_call_away(store: RRFVectorStore) -> None:
    retriever = store.as_retriever(search_kwargs={"k": 1, "filter": {"kind": "doc"}})
    assert isinstance(retriever, VectorStoreRetriever)
    assert [d.id for d in retriever.invoke("BM25")] == ["bm25"]
    threshold = store.as_retriever(search_type="similarity_score_threshold",
                                   search_kwargs={"k": 3, "score_threshold": 0.99})
    assert [d.id for d in threshold.invoke("keyword search with BM25")] == ["bm25"]
    ours = store.as_hybrid_retriever(k=1)
    assert isinstance(ours, LangChainRRFRetriever) and ours.engine is store.retriever.engine
    assert ours.invoke("E42")[0].metadata["rrf_ranks"]["keyword"] == 1


def test_writes_deletes_and_get_by_ids(store: RRFVectorStore) -> None:
    ids = store.add_documents([Document(page_content="fresh note about E77", metadata={"kind": "log"}, id="n77"),
                               Document(page_content="another one")])
    assert ids[0] == "n77" and ids[1]
    assert store.get_by_ids(["n77", "missing"]) == [
        Document(id="n77", page_content="fresh note about E77", metadata={"kind": "log"})]
    assert store.add_documents([Document(page_content="x")], ids=["given"]) == ["given"]
    assert store.delete(["n77", "given"]) is True and store.get_by_ids(["n77", "given"]) == []
    assert store.delete() is False  # nothing named, nothing deleted
    with pytest.raises(ValueError, match="unknown"):
        store.add_texts(["y"], batch_sise=3)  # a typo is refused (batch_size is accepted: LangChain's index())


def test_embeddings_and_construction() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    fake = DeterministicFakeEmbedding(size=8)
    with RRFVectorStore.from_texts(["a b c"], fake) as s:
        assert s.embeddings is fake
    base = LangChainRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), ids=["e42", "vec", "bm25"])
    wrapped = RRFVectorStore(retriever=base)
    assert wrapped.embeddings is not None and len(wrapped.embeddings.embed_query("x")) == 32
    assert wrapped.similarity_search("E42", k=1)[0].id == "e42"
    with pytest.raises(ValueError, match="embedding"):
        RRFVectorStore()
    wrapped.close()


async def test_async_twins_are_native(store: RRFVectorStore) -> None:
    assert [d.id for d in await store.asimilarity_search("E42", k=1)] == ["e42"]
    assert await store.asimilarity_search_with_score("E42", k=2) == store.similarity_search_with_score("E42", k=2)
    assert await store.aadd_texts(["async E99"], ids=["a99"]) == ["a99"]
    assert await store.adelete(["a99"]) is True and await store.aget_by_ids(["a99"]) == []


async def test_mmr_is_our_diversity_stage_over_the_hybrid_candidates() -> None:
    texts = ["robots in space", "robots in space!", "robots in space?", "a quiet garden with robots"]
    with RRFVectorStore.from_texts(texts, HashingEmbedding(64), ids=["a", "b", "c", "d"]) as s:
        plain = [d.id for d in s.similarity_search("robots in space", k=2)]
        diverse = [d.id for d in s.max_marginal_relevance_search("robots in space", k=2, lambda_mult=0.0)]
        assert len(plain) == len(diverse) == 2 and plain[0] == diverse[0]
        assert "d" in diverse and "d" not in plain  # the near-duplicates give way
        assert [d.id for d in s.as_retriever(search_type="mmr", search_kwargs={"k": 2, "lambda_mult": 0.0})
                .invoke("robots in space")] == diverse
        assert [d.id for d in await s.amax_marginal_relevance_search("robots in space", k=2, lambda_mult=0.0)] == (
            diverse)
        with pytest.raises(ValueError, match="fetch_k"):
            s.max_marginal_relevance_search("robots", k=2, fetch_k=10_001)  # past the maximum: refused, named
