"""LlamaIndex's documented MMR knob, ``as_retriever(vector_store_query_mode="mmr",
vector_store_kwargs={"mmr_threshold": x})``, is honoured by our vector store as ``SimpleVectorStore`` reads it
(``mmr_threshold`` is the MMR lambda: 1 relevance only, 0 the most diverse). Before, ``query(**kwargs)`` dropped
it: 0.1 and 1.0 gave the same list. Each list is compared with the MMR our stage documents over the same
candidates; a keyword we do not know is refused by name instead of dropped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.llama_index import RRFVectorStore
from tests.integrations.test_langchain_mmr import reference_mmr

HASHING = HashingEmbedding(32)
TEXTS = [f"note {i} about topic {i % 4} and topic {i % 3}" for i in range(30)]


class Hashing(BaseEmbedding):
    """LlamaIndex's side of the hashing embedder (the nodes were embedded with it)."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return list(HASHING.embed_query(query))

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return list(HASHING.embed_query(query))

    def _get_text_embedding(self, text: str) -> list[float]:
        return list(HASHING.embed_query(text))


@pytest.fixture(scope="module")
def store() -> Iterator[RRFVectorStore]:
    s = RRFVectorStore()
    s.add([TextNode(id_=f"n{i}", text=t, embedding=list(HASHING.embed_query(t))) for i, t in enumerate(TEXTS)])
    yield s
    s.close()


def _reference(store: RRFVectorStore, query: str, lam: float, k: int, fetch_k: int = 40) -> list[str]:
    vector = list(HASHING.embed_query(query))
    candidates = store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=fetch_k)).ids or []
    stored = store.client.engine.legs["dense"].store.get_vectors(candidates)
    return reference_mmr(vector, candidates, stored, lam, k)


@pytest.mark.parametrize("query", ["topic 3 note", "note 7 about topic 1"])
async def test_mmr_threshold_from_vector_store_kwargs_is_the_lambda(store: RRFVectorStore, query: str) -> None:
    index = VectorStoreIndex.from_vector_store(store, embed_model=Hashing())
    lists = {}
    for lam in (0.1, 0.5, 1.0):
        retriever = index.as_retriever(vector_store_query_mode="mmr", similarity_top_k=6,
                                       vector_store_kwargs={"mmr_threshold": lam})
        lists[lam] = [n.node.node_id for n in retriever.retrieve(query)]
        assert lists[lam] == _reference(store, query, lam, 6)
        assert [n.node.node_id for n in await retriever.aretrieve(query)] == lists[lam]
    assert lists[0.1] != lists[1.0]
    plain = index.as_retriever(similarity_top_k=6).retrieve(query)
    assert lists[1.0] == [n.node.node_id for n in plain]  # 1.0: relevance only, the dense order
    default = index.as_retriever(vector_store_query_mode="mmr", similarity_top_k=6).retrieve(query)
    assert [n.node.node_id for n in default] == lists[0.5]  # SimpleVectorStore's default, 0.5


def test_the_query_field_and_the_kwarg_agree_or_are_refused(store: RRFVectorStore) -> None:
    vector = list(HASHING.embed_query("topic 2"))
    on_query = VectorStoreQuery(query_embedding=vector, similarity_top_k=5, mode="mmr", mmr_threshold=0.2)
    bare = VectorStoreQuery(query_embedding=vector, similarity_top_k=5, mode="mmr")
    assert store.query(on_query).ids == store.query(bare, mmr_threshold=0.2).ids == _reference(store, "topic 2",
                                                                                               0.2, 5)
    assert store.query(on_query, mmr_threshold=0.2).ids == store.query(on_query).ids
    with pytest.raises(InvalidArgumentError, match="mmr_threshold given twice"):
        store.query(on_query, mmr_threshold=0.9)
    with pytest.raises(InvalidArgumentError, match="diversity"):
        store.query(bare, mmr_threshold=1.5)


async def test_an_unknown_or_misplaced_kwarg_is_refused_by_name(store: RRFVectorStore) -> None:
    vector = list(HASHING.embed_query("topic 2"))
    query = VectorStoreQuery(query_embedding=vector, similarity_top_k=5)
    with pytest.raises(InvalidArgumentError, match="mmr_prefetch_factor"):
        store.query(query, mmr_prefetch_factor=4)
    with pytest.raises(InvalidArgumentError, match="sparse_top_k_typo"):
        await store.aquery(query, sparse_top_k_typo=3)
    with pytest.raises(InvalidArgumentError, match="mode 'default'"):
        store.query(query, mmr_threshold=0.3)  # MMR's knob outside MMR mode: never silently nothing
    index = VectorStoreIndex.from_vector_store(store, embed_model=Hashing())
    with pytest.raises(InvalidArgumentError, match="nonsense"):
        index.as_retriever(vector_store_kwargs={"nonsense": 1}).retrieve("topic 2")
