"""``VectorStoreQuery(node_ids=...)`` of any length: 120,000 ids (most unknown, a few stored) restrict a query to
the stored ones, with the answer a metadata filter on the same nodes gives; and ``VectorStoreIndex`` built with
``store_nodes_override=True`` (which passes every node id) answers from every node. Before, ``node_ids`` above
~90,000 ids failed with "limit must be between 0 and 100000". Real LlamaIndex objects, hashing embedder."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import Document, MockEmbedding, StorageContext, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from rrf_retriever import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.llama_index import RRFVectorStore, vector_store

WORDS = ("zebra", "stripes", "savanna", "lion", "river", "delta", "quota", "disk", "backup", "sync")
REAL = [3, 17, 42, 101, 199]  # the stored nodes named among the 120,000 ids
EMBED = HashingEmbedding(dim=32)


def _text(i: int) -> str:
    return f"note {i}: " + " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))


@pytest.fixture(scope="module")
def store() -> RRFVectorStore:
    texts = [_text(i) for i in range(200)]
    vectors = EMBED.embed_documents(texts)
    store = RRFVectorStore()
    store.add([TextNode(id_=f"n{i}", text=t, metadata={"n": i}, embedding=v)
               for i, (t, v) in enumerate(zip(texts, vectors))])
    return store


def _node_ids() -> list[str]:
    unknown = [f"unknown-{j}" for j in range(120_000 - len(REAL))]
    return unknown[:50_000] + [f"n{i}" for i in REAL] + unknown[50_000:]


def _query(mode: str, **extra: object) -> VectorStoreQuery:
    text = "zebra stripes river"
    return VectorStoreQuery(query_str=text, query_embedding=EMBED.embed_query(text), mode=mode,
                            similarity_top_k=10, **extra)  # type: ignore[arg-type]  # pydantic fields


@pytest.mark.parametrize("mode", ["default", "text_search", "hybrid", "mmr"])
def test_120k_node_ids_restrict_the_query_to_the_stored_ones_as_a_filter_on_them_does(
    store: RRFVectorStore, mode: str
) -> None:
    node_ids = _node_ids()
    assert len(node_ids) == 120_000
    got = store.query(_query(mode, node_ids=node_ids))
    reference = store.query(_query(mode, filters=MetadataFilters(
        filters=[MetadataFilter(key="n", value=REAL, operator=FilterOperator.IN)])))
    assert got.ids, "the stored nodes among node_ids are found"
    assert set(got.ids) <= {f"n{i}" for i in REAL}
    assert got.ids == reference.ids
    assert got.similarities == reference.similarities
    assert asyncio.run(store.aquery(_query(mode, node_ids=node_ids))).ids == reference.ids


def test_120k_unknown_node_ids_find_nothing(store: RRFVectorStore) -> None:
    assert store.query(_query("hybrid", node_ids=[f"unknown-{j}" for j in range(120_000)])).ids == []


def test_node_ids_leaving_too_many_others_are_still_refused_naming_the_way_out(
    store: RRFVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_store, "NODE_IDS_MAX_OTHERS", 150)
    few = ["n0"]  # 199 others stored: refused from the store's count, before any listing
    many = [f"n{i}" for i in range(20)] + [f"u{j}" for j in range(120_000)]  # 180 others: refused once listed
    for node_ids in (few, many):
        with pytest.raises(InvalidArgumentError, match="store_nodes_override=True"):
            store.query(_query("text_search", node_ids=node_ids))
    assert len(store.query(_query("text_search", node_ids=[f"n{i}" for i in range(60)])).ids or []) == 10


def test_store_nodes_override_index_answers_from_every_node() -> None:
    documents = [Document(text=_text(i), id_=f"d{i}") for i in range(30)]
    index = VectorStoreIndex.from_documents(
        documents, storage_context=StorageContext.from_defaults(vector_store=RRFVectorStore()),
        embed_model=MockEmbedding(embed_dim=8), store_nodes_override=True)
    nodes = index.as_retriever(similarity_top_k=30).retrieve("zebra")
    assert len(nodes) == 30
