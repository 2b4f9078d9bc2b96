"""Qdrant-specific behaviour: id mapping, payload layout, langchain-qdrant compatibility, clients, locks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from langchain_qdrant import QdrantVectorStore
from qdrant_client import AsyncQdrantClient, QdrantClient, models

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)
from rrf_retriever.langchain import RRFLangChainEmbeddings
from rrf_retriever.progress import progress_shown
from rrf_retriever.stores.qdrant import (
    CONTENT_KEY,
    DOC_ID_KEY,
    ID_NAMESPACE,
    METADATA_KEY,
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    point_id,
)

DIM = 16


def test_point_id_mapping() -> None:
    canonical = "550e8400-e29b-41d4-a716-446655440000"
    assert point_id(canonical) == canonical  # a canonical UUID is its own point (langchain-qdrant's points)
    for spelling in (canonical.replace("-", ""), canonical.upper(), "{" + canonical + "}", "urn:uuid:" + canonical):
        assert point_id(spelling) == str(uuid.uuid5(ID_NAMESPACE, spelling)) != canonical  # ids are exact strings
    assert point_id("doc-1") == str(uuid.uuid5(ID_NAMESPACE, "doc-1"))
    # Hashed point ids are version 5, and a version-5 id is hashed in turn: no id used verbatim is another's point.
    v5 = str(uuid.uuid5(uuid.NAMESPACE_URL, "x"))
    assert point_id(v5) == str(uuid.uuid5(ID_NAMESPACE, v5))
    assert point_id(point_id("doc-1")) != point_id("doc-1")
    assert len({point_id(f"d{i}") for i in range(1000)}) == 1000


def test_get_checks_the_doc_id_a_point_carries() -> None:
    client = QdrantClient(":memory:")
    store = QdrantDenseStore(HashingEmbedding(dim=DIM), client=client, collection_name="c")
    canonical = str(uuid.uuid4())
    store.add([canonical], ["mine"])
    # Another writer puts a document with another id at that point: it is not `canonical`'s document.
    payload = {CONTENT_KEY: "theirs", METADATA_KEY: {}, DOC_ID_KEY: "other"}
    client.upsert("c", [models.PointStruct(id=canonical, vector=[0.5] * DIM, payload=payload)])
    assert store.get([canonical]) == []
    assert [h.id for h in store.search([0.5] * DIM, 5)] == ["other"]


def test_payload_layout_is_langchain_qdrant_default() -> None:
    client = QdrantClient(":memory:")
    store = QdrantDenseStore(HashingEmbedding(dim=DIM), client=client, collection_name="c")
    store.add(["doc-1"], ["hello world"], [{"lang": "en"}])
    info = client.get_collection("c")
    assert isinstance(info.config.params.vectors, models.VectorParams)  # one unnamed vector
    assert info.config.params.vectors.distance == models.Distance.COSINE
    (point,) = client.retrieve("c", [point_id("doc-1")], with_payload=True)
    assert point.payload == {CONTENT_KEY: "hello world", METADATA_KEY: {"lang": "en"}, DOC_ID_KEY: "doc-1"}


def test_reads_and_scopes_a_collection_written_by_langchain_qdrant() -> None:
    client = QdrantClient(":memory:")
    embedding = HashingEmbedding(dim=DIM)
    client.create_collection("lc", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    lc_store = QdrantVectorStore(client=client, collection_name="lc", embedding=RRFLangChainEmbeddings(embedding))
    lc_ids = lc_store.add_texts(
        ["red apples", "blue sky", "red car"], metadatas=[{"session_id": 1}, {"session_id": 2}, {"session_id": 2}]
    )

    ours = QdrantDenseStore(embedding, client=client, collection_name="lc")
    assert ours.dimension == DIM and ours.count() == 3
    query = embedding.embed_query("red")
    hits = ours.search(query, 3)
    canonical = [str(uuid.UUID(i)) for i in lc_ids]  # langchain-qdrant returns uuid4().hex
    assert {h.id for h in hits} == set(canonical)  # no doc_id key: the id is str(point.id)
    by_id = {h.id: h for h in hits}
    assert by_id[canonical[0]].text == "red apples"
    assert dict(by_id[canonical[0]].metadata) == {"session_id": 1}
    assert {h.id for h in ours.search(query, 3, filter={"session_id": 2})} == {canonical[1], canonical[2]}
    assert canonical[2] not in {h.id for h in ours.search(query, 3, exclude_ids=[canonical[2]])}
    assert [(r.id, r.text) for r in ours.get([canonical[1]])] == [(canonical[1], "blue sky")]
    # The hex spelling langchain-qdrant returns is another id (ids are exact strings): it names no document here.
    assert canonical[2] in {h.id for h in ours.search(query, 3, exclude_ids=[lc_ids[2]])}
    assert ours.get([lc_ids[1]]) == []
    ours.delete([lc_ids[1]])
    assert ours.count() == 3
    ours.delete([canonical[1]])
    assert ours.count() == 2

    # And the other way round: langchain-qdrant reads what we wrote.
    ours.add(["mine"], ["green tea"], [{"session_id": 7}])
    docs = lc_store.similarity_search("green tea", k=1)
    assert docs[0].page_content == "green tea"
    assert docs[0].metadata["session_id"] == 7
    assert docs[0].metadata["_id"] == point_id("mine")


def test_version_5_ids_written_by_langchain_qdrant_are_found() -> None:
    # LangChain's indexing API gives documents uuid5 ids; langchain-qdrant stores them as the point ids.
    client = QdrantClient(":memory:")
    embedding = HashingEmbedding(dim=DIM)
    client.create_collection("lc", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    lc_store = QdrantVectorStore(client=client, collection_name="lc", embedding=RRFLangChainEmbeddings(embedding))
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, t)) for t in ("red", "blue", "green")]
    lc_store.add_texts(["red apples", "blue sky", "green tea"], ids=ids)

    ours = QdrantDenseStore(embedding, client=client, collection_name="lc")
    query = embedding.embed_query("red apples")
    assert ours.search(query, 1)[0].id == ids[0]
    assert [(r.id, r.text) for r in ours.get(ids[::-1])] == [
        (ids[2], "green tea"),
        (ids[1], "blue sky"),
        (ids[0], "red apples"),
    ]
    assert ids[0] not in {h.id for h in ours.search(query, 3, exclude_ids=[ids[0]])}
    ours.delete([ids[1]])
    assert ours.count() == 2 and ours.get([ids[1]]) == []
    ours.add([ids[2]], ["green tea, rewritten"])  # moves to its own point id: still one document
    assert ours.count() == 2
    assert [r.text for r in ours.get([ids[2]])] == ["green tea, rewritten"]
    assert {h.id for h in ours.search(query, 5)} == {ids[0], ids[2]}


def test_named_vector_collection_is_refused() -> None:
    client = QdrantClient(":memory:")
    client.create_collection(
        "named", vectors_config={"dense": models.VectorParams(size=4, distance=models.Distance.COSINE)}
    )
    with pytest.raises(StoreError, match="named vectors"):
        QdrantDenseStore(HashingEmbedding(dim=4), client=client, collection_name="named")


def test_local_path_second_client_is_store_locked(tmp_path: Path) -> None:
    first = QdrantDenseStore(HashingEmbedding(dim=DIM), path=tmp_path / "q")
    try:
        with pytest.raises(StoreLockedError):
            QdrantDenseStore(HashingEmbedding(dim=DIM), path=tmp_path / "q")
    finally:
        first.close()


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_unreachable_server_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailableError):
        QdrantDenseStore(HashingEmbedding(dim=DIM), url="http://127.0.0.1:1")


def test_native_async_client() -> None:
    async def scenario() -> None:
        aclient = AsyncQdrantClient(location=":memory:")
        store = QdrantDenseStore(HashingEmbedding(dim=DIM), async_client=aclient, collection_name="a")
        await store.aadd(["a", "b"], ["red apples", "blue sky"], [{"k": True}, {"k": 1}])
        assert await store.acount() == 2
        assert await aclient.count("a") == models.CountResult(count=2)  # written through the async client
        q = store.embedding.embed_query("red apples")
        assert [h.id for h in await store.asearch(q, 5, filter={"k": True})] == ["a"]
        assert await store.asearch(q, 5, exclude_ids=["a", "b"]) == []
        assert [r.id for r in await store.aget(["b", "a"])] == ["b", "a"]  # read through the async client too
        await store.adelete(["a"])
        assert await store.acount() == 1
        await aclient.close()

    asyncio.run(scenario())


def test_large_add_is_batched_with_progress(capsys: pytest.CaptureFixture[str]) -> None:
    store = QdrantDenseStore(HashingEmbedding(dim=8), batch_size=500)
    n = 1200
    vectors = np.random.default_rng(0).normal(size=(n, 8)).astype(np.float32)
    store.add([f"d{i}" for i in range(n)], [f"t{i}" for i in range(n)], vectors=vectors)
    assert store.count() == n
    assert capsys.readouterr().err == ""  # stderr is not a terminal here: no bar by default
    with progress_shown(True):
        store.add([f"d{i}" for i in range(n)], [f"t{i}" for i in range(n)], vectors=vectors)
    assert "upserting" in capsys.readouterr().err


# -- qdrant-edge ------------------------------------------------------------------------------------------
def test_edge_lock_holds_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "edge"
    store = QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path)
    store.add(["a"], ["hello"])
    code = (
        "import sys\n"
        "from rrf_retriever.embeddings import HashingEmbedding\n"
        "from rrf_retriever.errors import StoreLockedError\n"
        "from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore\n"
        "try:\n"
        f"    QdrantEdgeDenseStore(HashingEmbedding(dim={DIM}), path={str(path)!r})\n"
        "except StoreLockedError:\n"
        "    print('locked')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "locked"
    assert store.count() == 1  # the first handle still works
    store.close()


def test_edge_temporary_directory_and_closed_store() -> None:
    store = QdrantEdgeDenseStore(HashingEmbedding(dim=DIM))
    store.add(["a"], ["hello"])
    path = store.path
    assert path.is_dir()
    store.close()
    assert not path.exists()
    with pytest.raises(StoreError):
        store.search([0.1] * DIM, 3)
    store.close()  # idempotent


def test_edge_optimize_keeps_results(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(500, 8)).astype(np.float32)
    with QdrantEdgeDenseStore(HashingEmbedding(dim=8), path=tmp_path / "e") as store:
        store.add([f"d{i}" for i in range(500)], ["t"] * 500, vectors=vectors)
        query = rng.normal(size=8).tolist()
        before = [h.id for h in store.search(query, 10)]
        assert isinstance(store.optimize(), bool)
        assert store.count() == 500
        assert [h.id for h in store.search(query, 10)] == before


def test_new_filter_keys_on_the_query_path_build_a_bounded_number_of_payload_indexes(tmp_path: Path) -> None:
    # An attacker (or a careless client) sending 100 different filter keys used to build 100 persistent indexes on
    # the query path, stalling every other query; now at most max_auto_indexes are built there (and only on keys
    # documents hold: tests/unit/stores/qdrant/test_common_index_budget.py).
    with QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp_path, max_auto_indexes=4) as store:
        store.add([f"d{i}" for i in range(20)], [f"text {i}" for i in range(20)],
                  [{"s": i % 3, **{f"key{n}": 0 for n in range(i * 5, i * 5 + 5)}} for i in range(20)])
        query = store.embedding.embed_query("text")
        for n in range(100):
            assert store.search(query, 5, filter={f"key{n}": 1}) == []  # no document has key<n> 1: still correct
        assert len(store.indexed_keys) == 4
        assert [h.id for h in store.search(query, 20, filter={"s": 1})]  # unindexed keys still filter correctly
    with QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp_path, max_auto_indexes=4) as reopened:
        assert len(reopened.indexed_keys) == 4  # persisted with the shard, counted against the budget


def test_declared_index_keys_are_indexed_on_the_write_path_not_the_query_path(tmp_path: Path) -> None:
    with QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp_path, index_keys=["session_id"],
                              max_auto_indexes=0) as store:
        store.add(["a", "b"], ["alpha", "beta"], [{"session_id": 1, "lang": "en"}, {"session_id": "x"}])
        # One index per field (Qdrant keeps one): float when numbers come, exact for ints, floats and ranges.
        assert store.indexed_keys == {("session_id", "float")}
        query = store.embedding.embed_query("alpha")
        assert [h.id for h in store.search(query, 5, filter={"lang": "en"})] == ["a"]
        assert store.indexed_keys == {("session_id", "float")}


@pytest.mark.parametrize("store_class", [QdrantDenseStore, QdrantEdgeDenseStore])
def test_some_ids_gives_stored_ids_without_listing_them_all(store_class: type) -> None:
    """``some_ids`` (the engine's cosine background samples from it): distinct stored ids, as many as asked for
    while there are enough, the same ones each call, and every id once a limit passes the count."""
    ids = [f"doc-{i}" for i in range(700)]
    with store_class(HashingEmbedding(dim=DIM)) as store:
        assert store.some_ids(10) == []  # nothing stored yet
        store.add(ids, [f"text {i}" for i in range(700)])
        some = store.some_ids(300)
        assert len(some) == len(set(some)) == 300 and set(some) <= set(ids)
        assert store.some_ids(300) == some  # a fixed order
        assert store.some_ids(5) == some[:5]
        assert sorted(store.some_ids(5_000)) == sorted(ids)
        store.delete(some[:3])
        assert not set(store.some_ids(5_000)) & set(some[:3])
        assert store.some_ids(0) == []
        for bad in (-1, "5", True, 2.5):
            with pytest.raises((InvalidArgumentError, InvalidTypeError), match="limit"):
                store.some_ids(bad)
