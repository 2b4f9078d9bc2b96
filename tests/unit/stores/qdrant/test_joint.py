"""Both legs in one Qdrant collection (QdrantHybridStore on qdrant-client local mode, QdrantEdgeHybridStore on
qdrant-edge): one upsert writes both legs, a failure leaves neither, one request searches both, the zero-weight
leg is never sent, reweight keeps the dense vectors, reopen, and the engine's guard on the keyword view.

Real engines, deterministic hashing embeddings (plumbing only). The request counting uses a real ``QdrantClient``
subclass that counts its own calls (no mock: every call reaches local mode).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError, StoreError
from rrf_retriever.stores.base import DenseStore, KeywordStore, SearchRequest, SomeIds
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import (
    QdrantDenseStore,
    QdrantEdgeHybridStore,
    QdrantHybridStore,
    QdrantKeywordStore,
)

DIM = 32
TEXTS = {
    "a": "configure the qdrant collection",
    "b": "cooking pasta with tomato sauce",
    "c": "qdrant sparse vectors for keyword search",
    "d": "the collection of tomato recipes",
}


class CountingClient(QdrantClient):
    """A real local-mode client that counts its search requests."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches: list[int] = []
        self.single_queries = 0

    def query_batch_points(self, collection_name: str, requests: Any, **kwargs: Any) -> Any:
        self.batches.append(len(requests))
        return super().query_batch_points(collection_name, requests, **kwargs)

    def query_points(self, *args: Any, **kwargs: Any) -> Any:
        self.single_queries += 1
        return super().query_points(*args, **kwargs)


def _open(kind: str, path: Path | None = None, **kwargs: Any) -> Any:
    emb = HashingEmbedding(dim=DIM)
    if kind == "client":
        return QdrantHybridStore(emb, path=path, **kwargs) if path else QdrantHybridStore(emb, **kwargs)
    return QdrantEdgeHybridStore(emb, path=path, **kwargs)


@pytest.fixture(params=["client", "edge"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(kind: str, tmp_path: Path) -> Iterator[Any]:
    s = _open(kind, tmp_path / "store")
    s.add(list(TEXTS), list(TEXTS.values()), [{"n": i} for i in range(len(TEXTS))])
    yield s
    s.close()


def _both_legs(store: Any, query: str = "qdrant collection tomato") -> tuple[set[str], set[str]]:
    vector = store.embedding.embed_query(query)
    dense = {h.id for h in store.dense.search(vector, 100)}
    keyword = {h.id for h in store.keyword.search(query, 100)}
    return dense, keyword


def test_views_satisfy_the_protocols_and_share_the_store(store: Any) -> None:
    assert isinstance(store.dense, DenseStore) and not isinstance(store.dense, KeywordStore)
    assert isinstance(store.keyword, KeywordStore) and not isinstance(store.keyword, DenseStore)
    assert store.dense.batch_group is store.keyword.batch_group is store
    assert store.count() == store.dense.count() == store.keyword.count() == 4


def test_one_add_writes_both_legs_and_a_delete_removes_both(store: Any) -> None:
    store.add(["e"], ["qdrant tomato collection"])
    assert _both_legs(store) == ({"a", "b", "c", "d", "e"}, {"a", "c", "d", "e"} | {"b"})
    store.delete(["e", "b"])
    dense, keyword = _both_legs(store)
    assert "e" not in dense | keyword and "b" not in dense | keyword
    assert store.count() == 3
    [record] = store.get(["a"], with_vectors=True)
    assert record.text == TEXTS["a"] and record.metadata == {"n": 0} and len(record.vector) == DIM


def test_both_views_list_ids_by_filter_and_delete_where_empties_both_legs(store: Any) -> None:
    assert store.dense.ids_matching({"n": {"$gte": 2}}) == store.keyword.ids_matching({"n": {"$gte": 2}}) == ["c", "d"]
    engine = HybridEngine({"dense": store.dense, "keyword": store.keyword})
    assert engine.delete_where({"n": {"$in": [0, 2]}}) == 2
    dense, keyword = _both_legs(store)
    assert not {"a", "c"} & (dense | keyword) and store.count() == 2


def test_both_views_give_some_ids_as_the_store_does(store: Any) -> None:
    """The cosine background samples the joint store's ids through its dense view's ``some_ids`` (no listing)."""
    assert isinstance(store.dense, SomeIds) and isinstance(store.keyword, SomeIds)
    assert store.dense.some_ids(3) == store.keyword.some_ids(3) == store.some_ids(3)
    assert sorted(store.dense.some_ids(100)) == sorted(TEXTS)


def test_a_vector_of_the_wrong_dimension_writes_neither_leg(store: Any) -> None:
    with pytest.raises(DimensionMismatchError):
        store.add(["x", "y"], ["qdrant tomato", "qdrant"], vectors=[[0.1] * DIM, [0.1] * (DIM - 1)])
    with pytest.raises(DimensionMismatchError):  # the whole batch of the wrong dimension
        store.add(["x"], ["qdrant tomato"], vectors=[[0.1] * (DIM + 3)])
    dense, keyword = _both_legs(store)
    assert "x" not in dense and "x" not in keyword and store.count() == 4


def test_a_failing_leg_rolls_the_joint_write_back_in_both_legs(store: Any, tmp_path: Path) -> None:
    # A third source whose store fails for real (a closed FTS5 database) makes the write unit roll back: the joint
    # collection must lose the new document in BOTH legs and get the replaced one back in both.
    broken = FTS5KeywordStore(tmp_path / "fts.sqlite3")
    engine = HybridEngine({"dense": store.dense, "keyword": store.keyword, "fts": broken})
    broken.close()
    with pytest.raises(StoreError):
        engine.add(["a", "new"], ["pasta now", "qdrant tomato collection"])
    dense, keyword = _both_legs(store)
    assert "new" not in dense and "new" not in keyword
    assert [r.text for r in store.get(["a"])] == [TEXTS["a"]]
    assert "a" in {h.id for h in store.keyword.search("configure", 5)}
    assert not store.keyword.search("now", 5)  # the rolled-back text is in neither leg


def test_a_closed_client_fails_the_write_and_leaves_the_collection_as_it_was(tmp_path: Path) -> None:
    store = QdrantHybridStore(HashingEmbedding(dim=DIM), path=tmp_path / "q")
    store.add(["a"], [TEXTS["a"]])
    store.client.close()
    with pytest.raises(StoreError):
        store.add(["b"], [TEXTS["b"]])
    reopened = QdrantHybridStore(HashingEmbedding(dim=DIM), path=tmp_path / "q")
    assert reopened.count() == 1 and _both_legs(reopened) == ({"a"}, {"a"})
    reopened.close()


def test_readers_never_see_a_document_in_one_leg_only(kind: str, tmp_path: Path) -> None:
    store = _open(kind, tmp_path / "s")
    store.add(["seed"], ["common seed"])
    vector = store.embedding.embed_query("common")
    stop = threading.Event()
    mismatches: list[tuple[set[str], set[str]]] = []

    def read() -> None:
        while not stop.is_set():
            dense, keyword = store.search_batch([SearchRequest("dense", "common", vector, 1000),
                                                 SearchRequest("keyword", "common", None, 1000)])
            if {h.id for h in dense} != {h.id for h in keyword}:
                mismatches.append(({h.id for h in dense}, {h.id for h in keyword}))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(40):  # every document shares the term "common": each is in both legs or in neither
            store.add([f"d{i}", f"e{i}"], [f"common {i}", f"common other {i}"])
            if i % 3 == 0:
                store.delete([f"d{i}"])
    finally:
        stop.set()
        reader.join()
    assert mismatches == []
    store.close()


def test_one_request_runs_both_legs_and_a_zero_weight_leg_is_not_sent() -> None:
    client = CountingClient(location=":memory:")
    store = QdrantHybridStore(HashingEmbedding(dim=DIM), client=client)
    engine = HybridEngine({"dense": store.dense, "keyword": store.keyword})
    engine.add(list(TEXTS), list(TEXTS.values()))
    client.batches.clear()
    result = engine.search("qdrant collection")
    assert client.batches == [2] and client.single_queries == 0
    assert {leg.name: leg.hits > 0 for leg in result.trace.legs} == {"dense": True, "keyword": True}
    engine.search("qdrant collection", weights={"keyword": 0.0})
    engine.search("qdrant collection", weights={"dense": 0.0})
    assert client.batches == [2, 1, 1]  # the weight-0 leg never reaches Qdrant
    asyncio.run(engine.asearch("qdrant collection"))
    assert client.batches == [2, 1, 1, 2]
    engine.search("how do I do it?")  # no keyword term survives: the keyword leg sits out, the dense runs alone
    assert client.batches[-1] == 1
    engine.close()


def test_the_joint_request_ranks_as_the_legs_do_alone(store: Any) -> None:
    engine = HybridEngine({"dense": store.dense, "keyword": store.keyword})
    joint = engine.search("qdrant collection tomato")
    vector = store.embedding.embed_query("qdrant collection tomato")
    alone = HybridEngine({"dense": QdrantDenseStore(store.embedding), "keyword": QdrantKeywordStore()})
    alone.add(list(TEXTS), list(TEXTS.values()), [{"n": i} for i in range(len(TEXTS))])
    separate = alone.search("qdrant collection tomato")
    assert joint.ids == separate.ids
    assert {h.id: h.ranks for h in joint.hits} == {h.id: h.ranks for h in separate.hits}
    assert [h.id for h in store.dense.search(vector, 10)] == [h.id for h in sorted(
        (h for h in joint.hits if "dense" in h.ranks), key=lambda h: h.ranks["dense"])]
    alone.close()


def test_a_bad_request_fails_its_own_leg_only(store: Any) -> None:
    vector = store.embedding.embed_query("qdrant")
    dense, keyword, bad = store.search_batch([
        SearchRequest("dense", "qdrant", vector, 3),
        SearchRequest("keyword", "qdrant", None, 3),
        SearchRequest("dense", "qdrant", [1.0, 0.0], 3),
    ])
    assert len(dense) == 3 and {h.id for h in keyword} == {"a", "c"}
    assert isinstance(bad, DimensionMismatchError)
    with pytest.raises(InvalidArgumentError):
        store.search_batch([SearchRequest("sparse", "qdrant", None, 3)])


def test_reweight_keeps_the_dense_vectors(store: Any) -> None:
    before = {r.id: r.vector for r in store.get(list(TEXTS), with_vectors=True)}
    store.add(["long"], [" ".join(["tomato qdrant"] * 40)])  # moves the mean length
    store.reweight()
    after = {r.id: r.vector for r in store.get(list(TEXTS), with_vectors=True)}
    assert all(after[i] == pytest.approx(before[i]) for i in TEXTS)
    dense, keyword = _both_legs(store)
    assert dense == set(TEXTS) | {"long"} and "long" in keyword


def test_reopen_from_path_keeps_both_legs_and_the_bm25_settings(kind: str, tmp_path: Path) -> None:
    first = _open(kind, tmp_path / "s", k1=1.5)
    first.add(list(TEXTS), list(TEXTS.values()))
    params, expected = first.params, _both_legs(first)
    first.close()
    again = _open(kind, tmp_path / "s")
    assert again.params == params and again.k1 == 1.5 and again.dimension == DIM
    assert _both_legs(again) == expected
    again.close()


def test_another_kind_of_collection_is_refused(tmp_path: Path) -> None:
    client = QdrantClient(location=":memory:")
    QdrantDenseStore(HashingEmbedding(dim=DIM), client=client, collection_name="dense_only").add(["a"], ["x"])
    with pytest.raises(StoreError):
        QdrantHybridStore(HashingEmbedding(dim=DIM), client=client, collection_name="dense_only")
    QdrantKeywordStore(client=client, collection_name="kw_only").add(["a"], ["x"])
    with pytest.raises(StoreError):
        QdrantHybridStore(HashingEmbedding(dim=DIM), client=client, collection_name="kw_only")


def test_cluster_settings_are_checked_and_passed_on_creation() -> None:
    client = QdrantClient(location=":memory:")
    store = QdrantHybridStore(HashingEmbedding(dim=DIM), client=client, shard_number=2, replication_factor=1,
                              write_consistency_factor=1)
    store.add(["a"], ["x"])
    assert store.cluster == {"shard_number": 2, "replication_factor": 1, "write_consistency_factor": 1}
    with pytest.raises(InvalidArgumentError):
        QdrantHybridStore(HashingEmbedding(dim=DIM), replication_factor=0)
    with pytest.raises(InvalidArgumentError):
        QdrantHybridStore(HashingEmbedding(dim=DIM), shard_number=True)


def test_the_keyword_view_alone_is_refused_by_the_engine(store: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="written through"):
        HybridEngine({"keyword": store.keyword})
    HybridEngine({"keyword": store.keyword, "dense": store.dense}, weights={"dense": 0.0})  # fine: weight 0


async def test_async_twins(store: Any) -> None:
    await store.dense.aadd(["e"], ["qdrant tomato"])
    vector = store.embedding.embed_query("qdrant")
    assert "e" in {h.id for h in await store.dense.asearch(vector, 10)}
    assert "e" in {h.id for h in await store.keyword.asearch("qdrant", 10)}
    dense, keyword = await store.asearch_batch([SearchRequest("dense", "q", vector, 10),
                                                SearchRequest("keyword", "qdrant", None, 10)])
    assert "e" in {h.id for h in dense} and "e" in {h.id for h in keyword}
    await store.dense.adelete(["e"])
    assert await store.acount() == 4


def test_from_texts_puts_both_legs_in_one_collection(tmp_path: Path) -> None:
    emb = HashingEmbedding(dim=DIM)
    retriever = EnsembleRRFRetriever.from_texts(list(TEXTS.values()), emb, ids=list(TEXTS), keyword="qdrant",
                                                dense="qdrant")
    legs = retriever.engine.legs
    assert legs["dense"].store.store is legs["keyword"].store.store
    assert {"a", "c", "d"} <= set(retriever.search("qdrant collection").ids)
    retriever.close()
    index = tmp_path / "idx"
    retriever = EnsembleRRFRetriever.from_texts(list(TEXTS.values()), emb, ids=list(TEXTS), keyword="qdrant",
                                                dense="qdrant", path=index)
    expected = retriever.search("tomato").ids
    retriever.close()
    assert not (index / "keyword-qdrant").exists()  # one collection, in qdrant/
    reopened = EnsembleRRFRetriever.from_texts([], emb, path=index)
    assert reopened.search("tomato").ids == expected and reopened.engine.count() == {"dense": 4, "keyword": 4}
    reopened.close()
    with pytest.raises(InvalidArgumentError):
        EnsembleRRFRetriever.from_texts([], emb, keyword="fts5", dense="qdrant", url="http://localhost:6333")
