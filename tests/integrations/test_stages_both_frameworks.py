"""Every per-call stage through BOTH frameworks on the real default stores (FTS5 + qdrant-edge): the
LangChain side (``invoke(q, **kwargs)``) and the LlamaIndex side (``scoped(**kwargs).retrieve(q)``) give the same
list, and the list has the stage's property. Framework objects as rerankers: test_stages_frameworks.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llama_index.core.vector_stores import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidFilterError

DIM = 32
IDS = [f"m{i:02d}" for i in range(30)]
TEXTS = [f"{['sync token', 'disk quota', 'battery'][i % 3]} note {i} about uploads and retries" for i in range(30)]
METAS = [{"session": i % 5, "year": 2015 + i % 10, "lang": ["en", "de", "fr"][i % 3], **({"vip": True} if i % 7 == 0
                                                                                             else {})}
         for i in range(30)]
QUERY = "sync token uploads"


@pytest.fixture(scope="module")
def retriever() -> Iterator[EnsembleRRFRetriever]:
    r = EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(DIM), metadatas=METAS, ids=IDS, top_k=6)
    yield r
    r.close()


def both(retriever: Any, **kwargs: Any) -> tuple[list[Any], list[Any]]:
    """(LangChain documents, LlamaIndex nodes) for the same arguments; their ids must agree."""
    docs = retriever.invoke(QUERY, **kwargs)
    nodes = retriever.scoped(**kwargs).retrieve(QUERY)
    assert [d.id for d in docs] == [n.node.node_id for n in nodes]
    for d, n in zip(docs, nodes, strict=True):
        assert d.metadata == n.node.metadata
    return docs, nodes


def meta(docs: list[Any]) -> list[dict[str, Any]]:
    return [d.metadata for d in docs]


OPERATOR_FILTERS: list[tuple[dict[str, Any], Callable[[dict[str, Any]], bool]]] = [
    ({"year": {"$gte": 2020}}, lambda m: m["year"] >= 2020),
    ({"lang": {"$nin": ["en", "de"]}}, lambda m: m["lang"] == "fr"),
    ({"$or": [{"session": 1}, {"year": {"$lt": 2017}}]}, lambda m: m["session"] == 1 or m["year"] < 2017),
    ({"$not": {"lang": "en"}, "session": {"$in": [2, 3]}}, lambda m: m["lang"] != "en" and m["session"] in (2, 3)),
    ({"vip": {"$exists": True}}, lambda m: "vip" in m),
    ({"vip": {"$ne": True}, "year": {"$gt": 2018, "$lte": 2022}}, lambda m: "vip" not in m and 2018 < m["year"] <= 2022),
]


@pytest.mark.parametrize(("flt", "rule"), OPERATOR_FILTERS, ids=lambda x: str(x) if isinstance(x, dict) else "")
def test_filter_operators(retriever: Any, flt: dict[str, Any], rule: Callable[[dict[str, Any]], bool]) -> None:
    docs, _ = both(retriever, filter=flt, k=30)
    expected = {i for i, m in zip(IDS, METAS, strict=True) if rule(m)}
    # every document mentions "uploads", so the keyword leg finds every one in scope: exactly the matching set
    assert {d.id for d in docs} == expected


def test_llamaindex_metadata_filters_on_both_sides(retriever: Any) -> None:
    filters = MetadataFilters(filters=[
        MetadataFilter(key="year", value=2020, operator=FilterOperator.GTE),
        MetadataFilters(filters=[MetadataFilter(key="lang", value="en"), MetadataFilter(key="session", value=0)],
                        condition=FilterCondition.OR),
    ], condition=FilterCondition.AND)
    docs, _ = both(retriever, filter=filters, k=30)
    expected = {i for i, m in zip(IDS, METAS, strict=True) if m["year"] >= 2020 and (m["lang"] == "en" or
                                                                                        m["session"] == 0)}
    assert {d.id for d in docs} == expected
    # TEXT_MATCH is a substring test on both sides, as SimpleVectorStore's
    text_match = MetadataFilters(filters=[MetadataFilter(key="lang", value="e", operator=FilterOperator.TEXT_MATCH)])
    docs, _ = both(retriever, filter=text_match, k=30)
    assert {d.id for d in docs} == {i for i, m in zip(IDS, METAS, strict=True) if "e" in m["lang"]}
    wrong_kind = MetadataFilters(filters=[MetadataFilter(key="year", value="soon", operator=FilterOperator.GT)])
    with pytest.raises(InvalidFilterError):
        retriever.invoke(QUERY, filter=wrong_kind)
    with pytest.raises(InvalidFilterError):
        retriever.scoped(filter=wrong_kind).retrieve(QUERY)


def test_pinned_ids_in_scope_always_out_of_scope_never(retriever: Any) -> None:
    last = retriever.invoke(QUERY, k=30)[-1]
    docs, _ = both(retriever, pinned_ids=[last.id], k=3)
    assert last.id in [d.id for d in docs] and len(docs) == 3
    assert [m.get("rrf_pinned", False) for m in meta(docs)].count(True) == 1
    other_session = (last.metadata["session"] + 1) % 5
    docs, _ = both(retriever, pinned_ids=[last.id], filter={"session": other_session}, k=3)
    assert last.id not in [d.id for d in docs]


def test_pages_are_slices_of_one_fused_list(retriever: Any) -> None:
    whole, _ = both(retriever, k=12)
    page_two, _ = both(retriever, k=4, offset=4)
    assert [d.id for d in page_two] == [d.id for d in whole[4:8]]


def test_normalized_score_and_threshold(retriever: Any) -> None:
    docs, nodes = both(retriever, k=10)
    scores = [m["rrf_score_normalized"] for m in meta(docs)]
    assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    cut = scores[3]
    kept, _ = both(retriever, k=10, score_threshold=cut)
    assert [d.id for d in kept] == [d.id for d in docs if d.metadata["rrf_score_normalized"] >= cut]
    assert nodes[0].score == docs[0].metadata["rrf_score"]


def test_query_vector_skips_the_embedding(retriever: Any) -> None:
    vector = HashingEmbedding(DIM).embed_query(QUERY)
    docs, _ = both(retriever, query_vector=vector, k=6)
    assert [d.id for d in docs] == [d.id for d in retriever.invoke(QUERY, k=6)]
    other = HashingEmbedding(DIM).embed_query("battery")
    dense_only, _ = both(retriever, query_vector=other, weights={"keyword": 0}, k=6)
    assert [d.id for d in dense_only] == [d.id for d in retriever.invoke("battery", weights={"keyword": 0}, k=6)]


def test_diversity_and_a_callable_reranker(retriever: Any) -> None:
    fused, _ = both(retriever, k=6)
    same, _ = both(retriever, k=6, diversity=1.0)
    assert [d.id for d in same] == [d.id for d in fused]
    diverse, _ = both(retriever, k=6, diversity=0.0)
    assert diverse[0].id == fused[0].id and {d.id for d in diverse} <= {d.id for d in retriever.invoke(QUERY, k=40)}

    def by_number(query: str, texts: list[str]) -> list[float]:
        return [float(t.split(" note ")[1].split()[0]) for t in texts]

    reranked, _ = both(retriever, k=4, reranker=by_number, rerank_k=12)
    numbers = [int(d.page_content.split(" note ")[1].split()[0]) for d in reranked]
    assert numbers == sorted(numbers, reverse=True)
    assert all("rrf_rerank_score" in d.metadata and d.metadata["rrf_ranks"] for d in reranked)
