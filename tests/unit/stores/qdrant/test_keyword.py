"""BM25 as Qdrant sparse vectors: the scheme, its parity with bm25s, and congruence of the two engines.

The KeywordStore contract itself (CRUD, scope, hostile input, reopen, threads) runs on both stores in
tests/unit/stores/test_base_keyword_contract.py; here: what is specific to the sparse scheme (term ids, weights, the
frozen avgdl, the IDF of live points, saved settings) and the same random workload on qdrant-client local mode, qdrant-edge and bm25s.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient, models

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError, StoreLockedError
from rrf_retriever.stores.base import DenseStore, KeywordStore
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.qdrant import (
    CONTENT_KEY,
    DOC_ID_KEY,
    METADATA_KEY,
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    QdrantEdgeKeywordStore,
    QdrantKeywordStore,
    point_id,
)
from rrf_retriever.stores.qdrant.points import SPARSE_VECTOR_NAME
from rrf_retriever.stores.qdrant.sparse_values import EMPTY_DOCUMENT_INDEX, document_vector, query_vector, term_id

K1_PLUS_1 = 2.2  # bm25s ("lucene") drops BM25's constant factor k1 + 1: our scores are its scores times 2.2

TEXTS = [
    "How to configure the SQLite database for full text search",
    "Qdrant stores dense vectors and payloads",
    "Reciprocal rank fusion merges ranked lists of search results",
    "Configuring database indexes makes search fast, very fast indeed",
    "Pasta recipes with tomato and basil",
    "BM25 ranks documents by term frequency and inverse document frequency",
    "Vector search with cosine similarity over dense vectors",
    "Tomato soup recipe for a cold evening",
    "the of and a",  # no term survives: an empty document
]
QUERIES = ["configure database search", "tomato recipes", "dense vectors", "frequency of terms", "fast fast search"]


def _kinds() -> list[str]:
    return ["local", "edge"]


def _open(kind: str, tmp_path: Path, **kwargs: Any) -> Any:
    if kind == "local":
        return QdrantKeywordStore(path=tmp_path / "local", **kwargs)
    return QdrantEdgeKeywordStore(tmp_path / "edge", **kwargs)


@pytest.fixture(params=_kinds())
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _scores(store: Any, query: str, **scope: Any) -> dict[str, float]:
    return {h.id: h.score for h in store.search(query, 1000, **scope)}


def _assert_bm25s_parity(store: Any, reference: BM25KeywordStore, queries: list[str] = QUERIES) -> None:
    for query in queries:
        ours = _scores(store, query)
        theirs = {i: s * K1_PLUS_1 for i, s in _scores(reference, query).items()}
        assert set(ours) == set(theirs), query
        for doc_id, score in theirs.items():
            assert ours[doc_id] == pytest.approx(score, rel=1e-5), (query, doc_id)


# ---------------------------------------------------------------- the scheme, pure


def test_term_ids_are_stable_31_bit_hashes() -> None:
    assert term_id("qdrant") == 585620190  # fixed forever: changing it orphans every stored vector
    assert all(0 <= term_id(t) < 2**31 for t in ("a", "configur", "русский", "中文", "x" * 10_000))
    assert len({term_id(f"t{i}") for i in range(10_000)}) == 10_000
    assert EMPTY_DOCUMENT_INDEX >= 2**31  # outside the term space: no query ever holds it


def test_document_values_are_saturated_tf_and_query_values_count_terms() -> None:
    indices, values = document_vector(["red", "red", "car"], k1=1.2, b=0.75, avgdl=6.0)
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 6.0)
    expected = {term_id("red"): 2 * 2.2 / (2 + norm), term_id("car"): 1 * 2.2 / (1 + norm)}
    assert indices == sorted(indices)
    assert dict(zip(indices, values)) == pytest.approx(expected)
    # b = 0: no length normalisation; k1 = 0: every present term is worth 1.
    assert document_vector(["x"] * 5, k1=1.2, b=0.0, avgdl=1.0)[1] == pytest.approx([5 * 2.2 / (5 + 1.2)])
    assert document_vector(["x", "x", "y"], k1=0.0, b=0.75, avgdl=1.0)[1] == pytest.approx([1.0, 1.0])
    assert document_vector([], k1=1.2, b=0.75, avgdl=None) == ([EMPTY_DOCUMENT_INDEX], [1.0])
    with pytest.raises(InvalidArgumentError):
        document_vector(["x"], k1=1.2, b=0.75, avgdl=None)
    q_indices, q_values = query_vector(["red", "car", "red"], short_query_terms=0)
    assert dict(zip(q_indices, q_values)) == {term_id("red"): 2.0, term_id("car"): 1.0}


def test_colliding_terms_share_a_posting_list(kind: str, tmp_path: Path) -> None:
    # A documented limit of hashed term ids: these two distinct terms have the same 31-bit id.
    assert term_id("term20925") == term_id("term40583")
    store = _open(kind, tmp_path, analyzer=Analyzer(stem=None))
    store.add(["a", "b", "c"], ["term20925 alpha", "term40583 beta", "gamma"])
    assert {h.id for h in store.search("term20925", 5)} == {"a", "b"}  # the other term matches too
    # Within one document colliding terms add up (a sparse vector holds each index once).
    indices, values = document_vector(["term20925", "term40583"], k1=1.2, b=0.75, avgdl=2.0)
    assert len(indices) == 1 and values[0] == pytest.approx(2 * 2.2 / (1 + 1.2))
    store.close()


# ---------------------------------------------------------------- parity with bm25s


def test_scores_equal_bm25s_times_k1_plus_1_after_one_batch(kind: str, tmp_path: Path) -> None:
    ids = [f"d{i}" for i in range(len(TEXTS))]
    reference = BM25KeywordStore()
    reference.add(ids, TEXTS)
    store = _open(kind, tmp_path, short_query_terms=0)  # bm25s counts a repeated query term again
    store.add(ids, TEXTS)
    assert store.avgdl == pytest.approx(sum(len(store.analyzer.analyze(t)) for t in TEXTS) / len(TEXTS))
    _assert_bm25s_parity(store, reference)
    store.close()


def test_idf_follows_upserts_and_deletes(kind: str, tmp_path: Path) -> None:
    # Qdrant's own index keeps counting deleted points in IDF until a segment is vacuumed: the stores ask for the
    # IDF of the live points, so deletes and upserts change the scores exactly as they do in bm25s.
    ids = [f"d{i}" for i in range(len(TEXTS))]
    store = _open(kind, tmp_path, avgdl=8.0)
    reference = BM25KeywordStore()
    store.add(ids, TEXTS)
    store.delete(["d0", "d3"])
    store.add(["d5", "d9"], ["tomato database", "search vectors"])
    docs = {i: t for i, t in zip(ids, TEXTS) if i not in ("d0", "d3")} | {"d5": "tomato database", "d9": "search vectors"}
    reference.add(list(docs), list(docs.values()))
    for query in QUERIES:  # bm25s normalises by today's mean length, we by the frozen 8.0: compare IDF only
        ours = _scores(store, query)
        assert set(ours) == set(_scores(reference, query))
    store.reweight(None)  # now the same avgdl as bm25s
    _assert_bm25s_parity(store, reference)
    store.close()


def test_edge_without_live_idf_counts_deleted_points(tmp_path: Path) -> None:
    ids = [f"d{i}" for i in range(len(TEXTS))]
    live = QdrantEdgeKeywordStore(tmp_path / "live", short_query_terms=0)  # raw query counts, as bm25s
    stale = QdrantEdgeKeywordStore(tmp_path / "stale", live_idf=False, short_query_terms=0)
    for store in (live, stale):
        store.add(ids, TEXTS)
        store.delete(["d4"])  # one of the two tomato documents
    assert _scores(live, "tomato")["d7"] > _scores(stale, "tomato")["d7"]  # fewer live documents hold it
    reference = BM25KeywordStore()
    reference.add([i for i in ids if i != "d4"], [t for i, t in zip(ids, TEXTS) if i != "d4"])
    live.reweight(None)
    _assert_bm25s_parity(live, reference)
    live.close()
    stale.close()


def test_avgdl_is_frozen_at_first_write_and_reweight_restores_exact_bm25(kind: str, tmp_path: Path) -> None:
    store = _open(kind, tmp_path, auto_reweight=False)
    store.add(["s1", "s2"], ["short database note", "tomato"])
    frozen = store.avgdl
    assert frozen == pytest.approx(2.0)
    long_texts = [" ".join(f"word{j} database" for j in range(i, i + 20)) for i in range(5)]
    store.add([f"l{i}" for i in range(5)], long_texts)
    assert store.avgdl == frozen  # later batches do not move it
    reference = BM25KeywordStore()
    reference.add(["s1", "s2"] + [f"l{i}" for i in range(5)], ["short database note", "tomato", *long_texts])
    ours, theirs = _scores(store, "database"), _scores(reference, "database")
    assert set(ours) == set(theirs)
    assert ours["s1"] != pytest.approx(theirs["s1"] * K1_PLUS_1, rel=1e-3)  # normalised by the frozen length
    new = store.reweight()
    assert new == pytest.approx((3 + 1 + 5 * 40) / 7)
    assert store.avgdl == new
    _assert_bm25s_parity(store, reference, ["database", "tomato", "word3 note"])
    path = store.path if kind == "edge" else None
    store.close()
    again = _open(kind, tmp_path)  # the new avgdl is saved with the collection
    assert again.avgdl == pytest.approx(new) and again.auto_reweight
    assert path is None or again.path == path
    again.close()


def test_explicit_avgdl_and_a_first_batch_without_terms(kind: str, tmp_path: Path) -> None:
    store = _open(kind, tmp_path, avgdl=50.0)
    store.add(["a"], ["tomato"])
    assert store.avgdl == 50.0
    store.close()
    again = _open(kind, tmp_path)
    assert again.auto_reweight is False  # an avgdl given once stays: never re-frozen, not even after reopening
    again.add(["b", "c", "d"], [" ".join(f"word{i}" for i in range(30))] * 3)
    assert again.avgdl == 50.0
    again.close()
    lazy = _open(kind, tmp_path / "lazy", auto_reweight=False)
    lazy.add(["e"], ["the of and"])  # no term: nothing to measure yet
    assert lazy.avgdl is None and lazy.count() == 1
    lazy.add(["t"], ["tomato soup"])
    assert lazy.avgdl == pytest.approx(2.0)  # the first batch with terms
    assert [h.id for h in lazy.search("tomato", 5)] == ["t"]
    lazy.close()


def test_auto_reweight_converges_when_documents_come_one_at_a_time(kind: str, tmp_path: Path) -> None:
    # One document per add (a chat memory): avgdl starts at the first document's length; each time the documents
    # written double, a mean that moved by more than 10 % re-freezes it, so the store ends close to exact BM25.
    rng = random.Random(5)
    words = [f"w{i}" for i in range(30)]
    texts = [" ".join(rng.choices(words, k=2 if i == 0 else rng.randint(5, 40))) for i in range(64)]
    store = _open(kind, tmp_path)
    rewrites = []
    for i, text in enumerate(texts):
        before = store.avgdl
        store.add([f"d{i}"], [text])
        if before is not None and store.avgdl != before:
            rewrites.append(i + 1)
    assert rewrites and all(n & (n - 1) == 0 for n in rewrites)  # only when the count reaches a power of two
    exact = sum(len(store.analyzer.analyze(t)) for t in texts) / len(texts)
    assert abs(store.avgdl - exact) <= 0.1 * exact
    frozen = _open(kind, tmp_path / "frozen", auto_reweight=False)
    for i, text in enumerate(texts):
        frozen.add([f"d{i}"], [text])
    assert frozen.avgdl == 2.0  # without it: the first document's length, for good
    store.close()
    frozen.close()


def test_equal_scores_come_in_id_order(kind: str, tmp_path: Path) -> None:
    # ArguAna holds the same argument under two ids; Qdrant orders ties by its internal ids, we by document id.
    store = _open(kind, tmp_path)
    ids = ["m", "c", "x", "a", "q"]
    store.add(ids, ["tomato soup"] * 4 + ["tomato"])
    assert [h.id for h in store.search("tomato", 10)] == ["q", "a", "c", "m", "x"]
    store.close()


# ---------------------------------------------------------------- congruence of the two engines


@pytest.mark.parametrize("seed", range(8))
def test_same_workload_same_results_on_local_mode_edge_and_bm25s(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    words = "alpha beta gamma delta omega sigma kappa lambda theta zeta the of".split()
    local = QdrantKeywordStore(avgdl=6.0, short_query_terms=0)  # raw query counts, as bm25s
    edge = QdrantEdgeKeywordStore(tmp_path / "edge", avgdl=6.0, short_query_terms=0)
    live: dict[str, tuple[str, dict[str, Any]]] = {}
    for _ in range(12):  # upserts (new and replaced ids) and deletes, interleaved
        if live and rng.random() < 0.3:
            gone = rng.sample(sorted(live), k=min(len(live), rng.randint(1, 3)))
            for store in (local, edge):
                store.delete([*gone, "never-there"])
            for doc_id in gone:
                live.pop(doc_id)
            continue
        batch = {
            f"d{rng.randint(0, 30)}": (
                " ".join(rng.choices(words, k=rng.randint(0, 9))),
                {"s": rng.randint(0, 3), "lang": rng.choice(["en", "de"])},
            )
            for _ in range(rng.randint(1, 6))
        }
        for store in (local, edge):
            store.add(list(batch), [t for t, _ in batch.values()], [m for _, m in batch.values()])
        live.update(batch)
    assert local.count() == edge.count() == len(live)
    assert local.get(sorted(live)) == edge.get(sorted(live))
    scopes: list[dict[str, Any]] = [{}, {"filter": {"s": [1, 2]}}, {"filter": {"lang": "de"}, "exclude_ids": ["d3"]}]
    for _ in range(10):
        query = " ".join(rng.choices(words, k=rng.randint(1, 4)))
        for scope in scopes:
            a, b = _scores(local, query, **scope), _scores(edge, query, **scope)
            assert list(a) == list(b)  # the same order (equal scores in id order on both engines)
            assert [a[i] for i in a] == pytest.approx([b[i] for i in b], rel=1e-5)
    # Both then equal exact BM25 over the live documents once their avgdl is today's.
    reference = BM25KeywordStore()
    reference.add(list(live), [t for t, _ in live.values()], [m for _, m in live.values()])
    assert local.reweight() == pytest.approx(edge.reweight())
    _assert_bm25s_parity(local, reference, ["alpha beta", "omega omega zeta", "kappa theta lambda"])
    _assert_bm25s_parity(edge, reference, ["alpha beta", "omega omega zeta", "kappa theta lambda"])
    local.close()
    edge.close()


# ---------------------------------------------------------------- layout, settings, protocol


def test_layout_shared_with_the_dense_stores() -> None:
    client = QdrantClient(":memory:")
    store = QdrantKeywordStore(client=client, collection_name="kw")
    store.add(["doc-1"], ["hello world"], [{"lang": "en"}])
    info = client.get_collection("kw")
    assert info.config.params.vectors == {}  # keyword only: no dense vector
    assert info.config.params.sparse_vectors[SPARSE_VECTOR_NAME].modifier == models.Modifier.IDF
    assert info.config.metadata["rrf_retriever_bm25"]["avgdl"] == 2.0
    (point,) = client.retrieve("kw", [point_id("doc-1")], with_payload=True, with_vectors=True)
    assert point.payload == {CONTENT_KEY: "hello world", METADATA_KEY: {"lang": "en"}, DOC_ID_KEY: "doc-1"}
    sparse = point.vector[SPARSE_VECTOR_NAME]
    assert sorted(sparse.indices) == sorted([term_id("hello"), term_id("world")])


def test_protocols_and_gil_claims(tmp_path: Path) -> None:
    local, edge = QdrantKeywordStore(), QdrantEdgeKeywordStore(tmp_path / "e")
    for store in (local, edge):
        assert isinstance(store, KeywordStore) and not isinstance(store, DenseStore)
    assert local.holds_gil is False and edge.holds_gil is True
    edge.close()


def test_settings_are_saved_and_checked_on_reopen(kind: str, tmp_path: Path) -> None:
    store = _open(kind, tmp_path, analyzer=Analyzer(stem=None), k1=0.9, b=0.4)
    store.add(["a"], ["configuring databases"])
    store.close()
    again = _open(kind, tmp_path)  # the saved analyzer and parameters, not the defaults
    assert again.analyzer == Analyzer(stem=None) and (again.k1, again.b) == (0.9, 0.4)
    assert [h.id for h in again.search("databases", 3)] == ["a"]
    assert again.search("database", 3) == []  # unstemmed, as indexed
    again.close()
    for bad in ({"k1": 1.2}, {"b": 0.75}, {"analyzer": Analyzer()}, {"avgdl": 3.0}):
        with pytest.raises(InvalidArgumentError):
            _open(kind, tmp_path, **bad)
    _open(kind, tmp_path, k1=0.9).close()  # the same value is fine


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"k1": -1}, InvalidArgumentError),
        ({"k1": float("nan")}, InvalidArgumentError),
        ({"b": 1.5}, InvalidArgumentError),
        ({"b": "0.5"}, InvalidTypeError),
        ({"avgdl": 0}, InvalidArgumentError),
        ({"avgdl": True}, InvalidTypeError),
        ({"analyzer": "porter"}, InvalidTypeError),
        ({"batch_size": 0}, InvalidArgumentError),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        QdrantKeywordStore(**kwargs)
    with pytest.raises(error):
        QdrantEdgeKeywordStore(**kwargs)


def test_a_dense_collection_or_directory_is_refused(tmp_path: Path) -> None:
    client = QdrantClient(":memory:")
    QdrantDenseStore(HashingEmbedding(dim=8), client=client, collection_name="dense").add(["a"], ["x"])
    with pytest.raises(StoreError, match="sparse vector"):
        QdrantKeywordStore(client=client, collection_name="dense")
    dense = QdrantEdgeDenseStore(HashingEmbedding(dim=8), path=tmp_path / "dense")
    dense.add(["a"], ["x"])
    dense.close()
    with pytest.raises(StoreError, match="another kind of store"):
        QdrantEdgeKeywordStore(tmp_path / "dense")
    keyword = QdrantEdgeKeywordStore(tmp_path / "kw")
    keyword.add(["a"], ["x"])
    keyword.close()
    with pytest.raises(StoreError):
        QdrantEdgeDenseStore(HashingEmbedding(dim=8), path=tmp_path / "kw")
    meta = json.loads((tmp_path / "kw" / "rrf_store.json").read_text())
    assert meta["bm25"]["term_ids"] == "blake2b-4-le-31"


def test_edge_lock_temporary_directory_and_closed_store(tmp_path: Path) -> None:
    store = QdrantEdgeKeywordStore(tmp_path / "e")
    with pytest.raises(StoreLockedError):
        QdrantEdgeKeywordStore(tmp_path / "e")
    store.close()
    temporary = QdrantEdgeKeywordStore()
    temporary.add(["a"], ["hello"])
    path = temporary.path
    assert path.is_dir()
    temporary.close()
    assert not path.exists()
    for call in (lambda: temporary.search("hello", 3), lambda: temporary.add(["b"], ["x"])):
        with pytest.raises(StoreError, match="closed"):
            call()
    temporary.close()  # idempotent


def test_edge_optimize_keeps_results(tmp_path: Path) -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(40)]
    with QdrantEdgeKeywordStore(tmp_path / "e") as store:
        store.add([f"d{i}" for i in range(400)], [" ".join(rng.choices(words, k=12)) for _ in range(400)])
        store.delete([f"d{i}" for i in range(0, 400, 3)])
        before = [(h.id, round(h.score, 4)) for h in store.search("w1 w2 w3", 20)]
        assert isinstance(store.optimize(), bool)
        assert [(h.id, round(h.score, 4)) for h in store.search("w1 w2 w3", 20)] == before


def test_native_async_client() -> None:
    async def scenario() -> None:
        aclient = AsyncQdrantClient(location=":memory:")
        store = QdrantKeywordStore(async_client=aclient, collection_name="a")
        await store.aadd(["a", "b"], ["red apples", "blue sky"], [{"k": True}, {"k": 1}])
        assert await aclient.count("a") == models.CountResult(count=2)  # written through the async client
        assert [h.id for h in await store.asearch("apples", 5, filter={"k": True})] == ["a"]
        assert await store.asearch("apples", 5, exclude_ids=["a"]) == []
        assert [r.id for r in await store.aget(["b", "a"])] == ["b", "a"]
        await store.adelete(["a"])
        assert await store.acount() == 1
        await aclient.close()

    asyncio.run(scenario())


def test_reopening_a_server_style_collection_from_a_second_client(tmp_path: Path) -> None:
    # Two stores on one collection (as two processes on one server): the second reads the first's settings.
    client = QdrantClient(":memory:")
    first = QdrantKeywordStore(client=client, collection_name="shared", k1=1.5)
    second = QdrantKeywordStore(client=client, collection_name="shared")  # before anything is written
    first.add(["a", "b"], ["tomato soup", "pasta"])
    second.add(["c"], ["tomato salad with a long list of other words"])  # reads the collection's settings
    assert second.k1 == 1.5 and second.avgdl == first.avgdl == 1.5
    assert {h.id for h in first.search("tomato", 5)} == {"a", "c"}
