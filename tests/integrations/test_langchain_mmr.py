"""``RRFVectorStore.max_marginal_relevance_search_by_vector`` and its async twin (LangChain's base raised
``NotImplementedError``; langchain-qdrant has them): our diversity stage over the dense legs' candidates, with the
vector given and no text, compared with exact references:

* where the semantics coincide with LangChain's (``lambda_mult`` 1.0: the relevance order; 0.0: the first pick
  then novelty alone), with ``langchain_core.vectorstores.utils.maximal_marginal_relevance`` over the same
  candidates and with ``InMemoryVectorStore`` on the same vectors;
* for every ``lambda_mult``, with the formula our stage documents (Carbonell-Goldstein over the candidates' stored
  vectors, relevance = the fused score over the best one), written out here in numpy.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError
from rrf_retriever.langchain import RRFVectorStore

DIM = 12
TEXTS = [f"note {i} about topic {i % 5}" for i in range(40)]
METAS = [{"kind": "even" if i % 2 == 0 else "odd"} for i in range(40)]
IDS = [f"t{i}" for i in range(40)]
RRF_K = 60.0


@pytest.fixture(scope="module")
def embedding() -> DeterministicFakeEmbedding:
    return DeterministicFakeEmbedding(size=DIM)


@pytest.fixture(scope="module")
def stores(embedding: DeterministicFakeEmbedding) -> Iterator[tuple[RRFVectorStore, InMemoryVectorStore]]:
    ours = RRFVectorStore.from_texts(TEXTS, embedding, metadatas=METAS, ids=IDS)
    theirs = InMemoryVectorStore(embedding)
    theirs.add_texts(TEXTS, metadatas=METAS, ids=IDS)
    yield ours, theirs
    ours.close()


def _ids(docs: list[Any]) -> list[str]:
    return [str(d.id) for d in docs]


def reference_mmr(query: list[float], candidates: list[str], vectors: dict[str, list[float]], lam: float,
                   k: int) -> list[str]:
    """The documented stage: relevance = fused score / best (one dense leg: (rrf_k + 1) / (rrf_k + rank)); the
    first pick the most relevant; then argmax lam * rel - (1 - lam) * max cosine to the picked; ties: the earlier."""
    unit = np.array([vectors[c] for c in candidates], dtype=np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    rel = [(RRF_K + 1) / (RRF_K + rank) for rank in range(1, len(candidates) + 1)]
    picked = [0]
    while len(picked) < min(k, len(candidates)):
        best, best_score = -1, -np.inf
        for i in range(len(candidates)):
            if i in picked:
                continue
            score = lam * rel[i] - (1 - lam) * max(float(unit[i] @ unit[j]) for j in picked)
            if score > best_score:
                best, best_score = i, score
        picked.append(best)
    return [candidates[i] for i in picked]


@pytest.mark.parametrize("lam", [0.0, 1.0])
@pytest.mark.parametrize(("k", "fetch_k"), [(4, 20), (6, 12), (3, 40)])
def test_by_vector_equals_langchains_mmr_where_the_semantics_coincide(
    stores: tuple[RRFVectorStore, InMemoryVectorStore], embedding: DeterministicFakeEmbedding, lam: float, k: int,
    fetch_k: int,
) -> None:
    ours, theirs = stores
    for query in ("topic 3 notes", "note 17", "something else"):
        vector = embedding.embed_query(query)
        got = _ids(ours.max_marginal_relevance_search_by_vector(vector, k=k, fetch_k=fetch_k, lambda_mult=lam))
        assert got == _ids(theirs.max_marginal_relevance_search_by_vector(vector, k=k, fetch_k=fetch_k,
                                                                          lambda_mult=lam))
        candidates = theirs.similarity_search_by_vector(vector, k=fetch_k)  # LangChain's own pool
        chosen = maximal_marginal_relevance(np.array(vector), [embedding.embed_query(d.page_content)
                                                               for d in candidates], lambda_mult=lam, k=k)
        assert got == [str(candidates[i].id) for i in chosen]


@pytest.mark.parametrize("lam", [0.0, 0.2, 0.5, 0.8, 1.0])
async def test_by_vector_is_our_stage_over_the_dense_candidates(
    stores: tuple[RRFVectorStore, InMemoryVectorStore], embedding: DeterministicFakeEmbedding, lam: float,
) -> None:
    ours, _ = stores
    dense = ours.retriever.engine.legs["dense"].store
    for query in ("topic 1", "note 33 about"):
        vector = embedding.embed_query(query)
        candidates = _ids(ours.similarity_search_by_vector(vector, k=15))  # the dense leg's order
        expected = reference_mmr(vector, candidates, dense.get_vectors(candidates), lam, 5)
        got = _ids(ours.max_marginal_relevance_search_by_vector(vector, k=5, fetch_k=15, lambda_mult=lam))
        assert got == expected
        assert _ids(await ours.amax_marginal_relevance_search_by_vector(vector, k=5, fetch_k=15,
                                                                        lambda_mult=lam)) == expected
        # the text path, keyword leg off, embeds the same vector: the same answer
        assert _ids(ours.max_marginal_relevance_search(query, k=5, fetch_k=15, lambda_mult=lam,
                                                       weights={"keyword": 0.0})) == expected


def test_by_vector_takes_the_filter_and_the_search_options(
    stores: tuple[RRFVectorStore, InMemoryVectorStore], embedding: DeterministicFakeEmbedding,
) -> None:
    ours, theirs = stores
    vector = embedding.embed_query("topic 2")
    got = ours.max_marginal_relevance_search_by_vector(vector, k=4, fetch_k=10, lambda_mult=0.0,
                                                       filter={"kind": "odd"})
    assert {d.metadata["kind"] for d in got} == {"odd"} and len(got) == 4
    assert _ids(got) == _ids(theirs.max_marginal_relevance_search_by_vector(
        vector, k=4, fetch_k=10, lambda_mult=0.0, filter=lambda d: d.metadata["kind"] == "odd"))
    first = _ids(got)[0]
    without = ours.max_marginal_relevance_search_by_vector(vector, k=4, fetch_k=10, lambda_mult=0.0,
                                                           filter={"kind": "odd"}, exclude_ids=[first])
    assert first not in _ids(without) and len(without) == 4
    assert all("rrf_score" not in d.metadata for d in got)  # the user's metadata only, as every search


async def test_by_vector_refuses_bad_input_with_our_errors(stores: tuple[RRFVectorStore, InMemoryVectorStore],
                                                           embedding: DeterministicFakeEmbedding) -> None:
    ours, _ = stores
    vector = embedding.embed_query("x")
    with pytest.raises(InvalidArgumentError, match="query_vector"):
        ours.max_marginal_relevance_search_by_vector(vector, query_vector=vector)
    with pytest.raises(DimensionMismatchError, match="dimension"):
        ours.max_marginal_relevance_search_by_vector([1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="lambda_mult"):
        ours.max_marginal_relevance_search_by_vector(vector, lambda_mult=1.5)
    with pytest.raises(InvalidArgumentError, match="fetch_k"):
        await ours.amax_marginal_relevance_search_by_vector(vector, k=5, fetch_k=3)
    with pytest.raises(InvalidArgumentError, match="unknown"):
        ours.max_marginal_relevance_search_by_vector(vector, nonsense=1)


def test_lambda_mult_is_langchains_where_langchain_qdrant_has_it_the_other_way_round(
    stores: tuple[RRFVectorStore, InMemoryVectorStore], embedding: DeterministicFakeEmbedding,
) -> None:
    """What the README says of langchain-qdrant 1.1 (it hands lambda_mult to Qdrant's MMR as ``diversity``)."""
    qdrant_client = pytest.importorskip("qdrant_client")
    langchain_qdrant = pytest.importorskip("langchain_qdrant")
    client = qdrant_client.QdrantClient(":memory:")
    models = qdrant_client.models
    client.create_collection("t", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    qdrant = langchain_qdrant.QdrantVectorStore(client, "t", embedding)
    uuids = [f"00000000-0000-0000-0000-{i:012d}" for i in range(len(TEXTS))]
    qdrant.add_texts(TEXTS, ids=uuids)
    ours, _ = stores
    vector = embedding.embed_query("topic 3")
    by_similarity = _ids(ours.similarity_search_by_vector(vector, k=5))
    assert _ids(ours.max_marginal_relevance_search_by_vector(vector, k=5, fetch_k=20, lambda_mult=1.0)) == (
        by_similarity)
    theirs = qdrant.max_marginal_relevance_search_by_vector(vector, k=5, fetch_k=20, lambda_mult=0.0)
    assert [IDS[uuids.index(d.metadata["_id"])] for d in theirs] == by_similarity
