"""Filters written for other LangChain vector stores, produced by LangChain's own translators
(langchain_community.query_constructors), at every LangChain door of ours: PGVector's applied, the others refused
by name (never a silent empty result)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.structured_query import Comparator, Comparison, Operation, Operator, StructuredQuery

from rrf_retriever import HashingEmbedding
from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.langchain import LangChainRRFRetriever, RRFVectorStore

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # langchain-community's sunset notice
qc = pytest.importorskip("langchain_community.query_constructors")

TEXTS = ["space opera with robots", "noir detective in the rain", "robots in a noir city"]
METAS = [{"genre": "sf", "year": 2021}, {"genre": "noir", "year": 1990}, {"genre": "noir", "year": 2022}]
QUERY = StructuredQuery(query="robots", filter=Operation(operator=Operator.AND, arguments=[
    Comparison(comparator=Comparator.EQ, attribute="genre", value="noir"),
    Comparison(comparator=Comparator.GT, attribute="year", value=2000)]))


@pytest.fixture
def store() -> Iterator[RRFVectorStore]:
    s = RRFVectorStore.from_texts(TEXTS, HashingEmbedding(32), metadatas=METAS, ids=["a", "b", "c"])
    yield s
    s.close()


def _translated(translator: Any) -> Any:
    _, kwargs = translator.visit_structured_query(QUERY)
    return next(iter(kwargs.values()))  # filter / where_filter / expr, as each store names it


def test_pgvector_filters_are_applied_at_every_door(store: RRFVectorStore) -> None:
    from langchain_community.query_constructors.pgvector import PGVectorTranslator

    flt = _translated(PGVectorTranslator())
    assert flt == {"and": [{"genre": {"eq": "noir"}}, {"year": {"gt": 2000}}]}
    assert [d.id for d in store.similarity_search("robots", filter=flt)] == ["c"]
    assert [d.id for d in store.as_retriever(search_kwargs={"filter": flt}).invoke("robots")] == ["c"]
    retriever = store.as_hybrid_retriever()
    assert [d.id for d in retriever.invoke("robots", filter=flt)] == ["c"]
    assert [d.id for d in retriever.scoped(filter=flt).invoke("robots")] == ["c"]
    assert [d.id for d in store.similarity_search_by_vector(HashingEmbedding(32).embed_query("x"), filter=flt)] == ["c"]
    standalone = LangChainRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), metadatas=METAS,
                                                  search_kwargs={"filter": flt})
    assert [d.page_content for d in standalone.invoke("robots")] == [TEXTS[2]]
    standalone.close()


@pytest.mark.parametrize(("translator", "dialect"), [
    ("weaviate.WeaviateTranslator", "Weaviate"),
    ("elasticsearch.ElasticsearchTranslator", "Elasticsearch"),
    ("milvus.MilvusTranslator", "Milvus"),
    ("qdrant.QdrantTranslator", "Qdrant"),
])
async def test_other_stores_filters_are_refused_by_name(store: RRFVectorStore, translator: str, dialect: str) -> None:
    module, name = translator.split(".")
    cls = getattr(pytest.importorskip(f"langchain_community.query_constructors.{module}"), name)
    if module == "qdrant":
        pytest.importorskip("qdrant_client")
    flt = _translated(cls(metadata_key="metadata") if module == "qdrant" else cls())
    vector = HashingEmbedding(32).embed_query("x")
    calls = [lambda: store.similarity_search("robots", filter=flt),
             lambda: store.as_retriever(search_kwargs={"filter": flt}).invoke("robots"),
             lambda: store.as_hybrid_retriever().invoke("robots", filter=flt),
             lambda: store.similarity_search_by_vector(vector, filter=flt)]
    for call in calls:
        with pytest.raises(InvalidFilterError, match=dialect):
            call()
    with pytest.raises(InvalidFilterError, match=dialect):
        await store.asimilarity_search("robots", filter=flt)


def test_the_dual_retriever_reads_pgvector_and_refuses_weaviate() -> None:
    from langchain_community.query_constructors.pgvector import PGVectorTranslator
    from langchain_community.query_constructors.weaviate import WeaviateTranslator

    from rrf_retriever import EnsembleRRFRetriever

    with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), metadatas=METAS, ids=["a", "b", "c"]) as r:
        assert [d.id for d in r.invoke("robots", filter=_translated(PGVectorTranslator()))] == ["c"]
        assert [h.id for h in r.search("robots", filter=_translated(PGVectorTranslator())).hits] == ["c"]
        with pytest.raises(InvalidFilterError, match="Weaviate"):
            r.invoke("robots", filter=_translated(WeaviateTranslator()))
        with pytest.raises(InvalidFilterError, match="Weaviate"):
            r.scoped(filter=_translated(WeaviateTranslator()))
