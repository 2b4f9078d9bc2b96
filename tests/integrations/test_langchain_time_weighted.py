"""LangChain's own ``TimeWeightedVectorStoreRetriever`` over our ``RRFVectorStore``: it writes ``datetime`` metadata
(``last_accessed_at``, ``created_at``) and passes ``current_time`` on to the store; both are taken, so an old relevant
memory is found beyond its recency buffer. The dates come back as ISO 8601 strings and filter by range, in every
stack (qdrant-edge + BM25, the default; FTS5 + Qdrant local mode; one Qdrant local-mode collection for both legs).
A date in LangChain's structured query (``{"date": ..., "type": "date"}``, what ``SelfQueryRetriever``'s parser
makes of ``date("2022-06-01")``) is a range over those strings too.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest
from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever
from langchain_core.documents import Document
from langchain_core.structured_query import Comparator, Comparison, Operation, Operator

from rrf_retriever import HashingEmbedding
from rrf_retriever.langchain import RRFTranslator, RRFVectorStore

STACKS = [{}, {"keyword": "fts5", "dense": "qdrant"}, {"keyword": "qdrant", "dense": "qdrant"}]
OLD = "Paris is the capital of France"


def _memories(store: RRFVectorStore) -> tuple[TimeWeightedVectorStoreRetriever, datetime]:
    # k=1: the recency buffer holds the newest memory only; the old one can come from the store alone.
    retriever = TimeWeightedVectorStoreRetriever(vectorstore=store, decay_rate=1e-5, k=1, search_kwargs={"k": 10})
    month_ago = datetime.now() - timedelta(days=30)
    retriever.add_documents([Document(page_content=OLD)], current_time=month_ago)
    retriever.add_documents([Document(page_content=f"note {i}: buy bananas and milk") for i in range(5)])
    return retriever, month_ago


# The retriever adds each memory's relevance score (ours: rrf_relevance, whose level means relevance) to its
# recency, so the old memory is found only where the model says it IS relevant: the real model, not hashing.
@pytest.mark.slow  # the real MiniLM
@pytest.mark.parametrize("stack", STACKS, ids=["default", "fts5+qdrant", "qdrant-joint"])
def test_the_old_relevant_memory_is_found_and_its_dates_filter(stack: dict[str, Any], minilm: Any) -> None:
    store = RRFVectorStore(minilm, **stack)
    try:
        retriever, month_ago = _memories(store)
        assert [d.page_content for d in retriever.invoke("what is the capital of France?")] == [OLD]
        # What the store gives back: the dates as ISO strings (naive stays naive), as Qdrant gives them back.
        (hit, _), *_ = store.similarity_search_with_relevance_scores("capital of France", k=1)
        assert hit.metadata["created_at"] == month_ago.isoformat()
        assert hit.metadata["last_accessed_at"] == month_ago.isoformat()
        week_ago = datetime.now() - timedelta(days=7)
        old = store.similarity_search("capital", k=10, filter={"created_at": {"$lt": week_ago}})
        assert [d.page_content for d in old] == [OLD]
        recent = store.similarity_search("capital", k=10, filter={"created_at": {"$gte": week_ago.isoformat()}})
        assert len(recent) == 5 and OLD not in {d.page_content for d in recent}
    finally:
        store.close()


@pytest.mark.slow  # the real MiniLM
def test_the_async_path_takes_the_same_writes(minilm: Any) -> None:
    store = RRFVectorStore(minilm)
    retriever = TimeWeightedVectorStoreRetriever(vectorstore=store, decay_rate=1e-5, k=1, search_kwargs={"k": 10})

    async def run() -> list[Document]:
        await retriever.aadd_documents([Document(page_content=OLD)],
                                       current_time=datetime.now() - timedelta(days=30))
        await retriever.aadd_documents([Document(page_content="note: buy bananas and milk")])
        return await retriever.ainvoke("what is the capital of France?")

    try:
        assert [d.page_content for d in asyncio.run(run())] == [OLD]
    finally:
        store.close()


def test_a_structured_query_date_is_a_date_range() -> None:
    store = RRFVectorStore(HashingEmbedding(64))
    try:
        store.add_texts(["robots in space", "robots in the rain", "robots at sea"], ids=["a", "b", "c"],
                        metadatas=[{"released": datetime(2021, 3, 1)}, {"released": "2022-06-01T20:00:00+02:00"},
                                   {"released": datetime(2023, 1, 1).date()}])
        since = Comparison(comparator=Comparator.GTE, attribute="released",
                           value={"date": "2022-06-01", "type": "date"})
        before = Comparison(comparator=Comparator.LT, attribute="released", value={"date": "2023-01-01", "type": "date"})
        flt = Operation(operator=Operator.AND, arguments=[since, before]).accept(RRFTranslator())
        assert flt == {"$and": [{"released": {"$gte": "2022-06-01"}}, {"released": {"$lt": "2023-01-01"}}]}
        assert [d.id for d in store.similarity_search("robots", k=3, filter=flt)] == ["b"]  # 18:00 UTC on June 1
    finally:
        store.close()
