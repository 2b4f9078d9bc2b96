"""The DenseStore contract, run on both Qdrant stores (qdrant-client local mode and qdrant-edge).

Real Qdrant engines, deterministic hashing embeddings (plumbing only: no test here speaks about quality).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import (
    DimensionMismatchError,
    FilterError,
    InvalidArgumentError,
    InvalidTypeError,
    StoreLockedError,
)
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.base import DenseStore
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore, point_id

DIM = 32
StoreFactory = Callable[..., Any]

DOCS = {
    "a": ("red apples and green pears", {"session_id": 1, "lang": "en", "flag": True}),
    "b": ("blue sky over the red barn", {"session_id": 2, "lang": "fr", "flag": 1}),
    "c": ("red red red", {"session_id": 3, "lang": "en", "flag": False}),
    "d": ("green fields", {"session_id": [1, 4], "lang": "de", "flag": 0}),
    "e": ("nothing in common", {"lang": "en"}),
}


def _open(kind: str, path: Path | None, dim: int = DIM) -> Any:
    emb = HashingEmbedding(dim=dim)
    if kind == "qdrant":
        return QdrantDenseStore(emb, path=str(path)) if path else QdrantDenseStore(emb)
    return QdrantEdgeDenseStore(emb, path=path)


@pytest.fixture(params=["qdrant", "edge"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def make_store(kind: str, tmp_path: Path) -> Iterator[StoreFactory]:
    opened: list[Any] = []

    def factory(path: Path | None = None, dim: int = DIM) -> Any:
        store = _open(kind, path, dim)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> Any:
    s = make_store()
    ids = list(DOCS)
    s.add(ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])
    return s


def _ids(hits: list[Any]) -> list[str]:
    return [h.id for h in hits]


def _query(store: Any, text: str = "red") -> list[float]:
    return store.embedding.embed_query(text)


# -- protocol, add / upsert / delete / get / count ---------------------------------------------------
def test_satisfies_dense_store_protocol(store: Any) -> None:
    assert isinstance(store, DenseStore)
    assert store.embedding.dimension == DIM


def test_add_get_count(store: Any) -> None:
    assert store.count() == 5
    records = store.get(["c", "missing", "a"])
    assert [r.id for r in records] == ["c", "a"]
    assert records[0].text == "red red red"
    assert dict(records[0].metadata) == DOCS["c"][1]
    assert records[0].vector is None


def test_get_with_vectors_returns_unit_vectors(store: Any) -> None:
    (record,) = store.get(["a"], with_vectors=True)
    assert record.vector is not None and len(record.vector) == DIM
    expected = store.embedding.embed_documents([DOCS["a"][0]])[0]
    assert np.allclose(record.vector, expected, atol=1e-6)


def test_upsert_replaces_text_metadata_and_vector(store: Any) -> None:
    store.add(["a"], ["a new text about oceans"], [{"lang": "it"}])
    assert store.count() == 5
    (record,) = store.get(["a"])
    assert record.text == "a new text about oceans"
    assert dict(record.metadata) == {"lang": "it"}
    assert _ids(store.search(_query(store, "oceans"), 1)) == ["a"]


def test_delete(store: Any) -> None:
    store.delete(["a", "not-there"])
    assert store.count() == 4
    assert store.get(["a"]) == []
    assert "a" not in _ids(store.search(_query(store), 10))
    store.delete([])
    assert store.count() == 4


def test_scores_are_cosine_similarity_descending(store: Any) -> None:
    q = _query(store, "red apples green pears")
    hits = store.search(q, 5)
    assert len(hits) == 5
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    vecs = {r.id: r.vector for r in store.get(_ids(hits), with_vectors=True)}
    for hit in hits:
        v = np.asarray(vecs[hit.id])
        cos = float(np.dot(q, v) / (np.linalg.norm(q) * np.linalg.norm(v)))
        assert math.isclose(hit.score, cos, abs_tol=1e-5)
    assert hits[0].id == "a"


def test_hit_carries_text_and_metadata(store: Any) -> None:
    hit = store.search(_query(store, "green fields"), 1)[0]
    assert (hit.id, hit.text, dict(hit.metadata)) == ("d", "green fields", DOCS["d"][1])


# -- scope ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"lang": "en"}, {"a", "c", "e"}),
        ({"lang": ["en", "de"]}, {"a", "c", "d", "e"}),
        ({"session_id": 1}, {"a", "d"}),  # d's metadata list [1, 4] matches any element
        ({"session_id": [2, 4]}, {"b", "d"}),
        ({"session_id": 1, "lang": "en"}, {"a"}),
        ({"flag": True}, {"a"}),  # True is not 1
        ({"flag": 1}, {"b"}),  # 1 is not True
        ({"flag": False}, {"c"}),
        ({"flag": 0}, {"d"}),
        ({"flag": [True, 0]}, {"a", "d"}),
        ({"flag": [True, False, "x"]}, {"a", "c"}),
        ({"lang": []}, set()),
        ({"missing_key": "x"}, set()),
    ],
)
def test_filter_semantics_match_reference(store: Any, flt: dict[str, Any], expected: set[str]) -> None:
    reference = {i for i, (_, meta) in DOCS.items() if matches(meta, normalize_filter(flt))}
    assert reference == expected
    assert set(_ids(store.search(_query(store), 10, filter=flt))) == expected


def test_filters_in_sequence_on_one_store(store: Any) -> None:
    # Payload indexes are created on first use of a key (per value type); later filters of other types on the
    # same key must stay exact, before and after a reopen-free sequence of mixed queries.
    cases = [
        {"flag": 1}, {"flag": True}, {"flag": [True, 0]}, {"flag": False}, {"flag": "x"}, {"flag": 0},
        {"session_id": 1}, {"session_id": [2, 4]}, {"lang": "en"}, {"lang": ["en", "de"], "flag": [True, 0]},
    ]
    for _ in range(2):
        for flt in cases:
            expected = {i for i, (_, meta) in DOCS.items() if matches(meta, normalize_filter(flt))}
            assert set(_ids(store.search(_query(store), 10, filter=flt))) == expected, flt


def test_exclude_ids_applied_before_top_k(store: Any) -> None:
    q = _query(store)
    top2 = _ids(store.search(q, 2))
    hits = store.search(q, 2, exclude_ids=top2)
    assert len(hits) == 2
    assert not set(_ids(hits)) & set(top2)
    assert store.search(q, 10, exclude_ids=list(DOCS)) == []


def test_filter_and_exclude_together(store: Any) -> None:
    assert set(_ids(store.search(_query(store), 10, filter={"lang": "en"}, exclude_ids=["a"]))) == {"c", "e"}


def test_bad_scope_raises_our_error(store: Any) -> None:
    with pytest.raises(FilterError):
        store.search(_query(store), 5, filter={"bad key!": 1})
    with pytest.raises(InvalidTypeError):
        store.search(_query(store), 5, exclude_ids="a")


# -- limits and empty stores --------------------------------------------------------------------------
def test_limit_zero_and_bad_limits(store: Any) -> None:
    assert store.search(_query(store), 0) == []
    with pytest.raises(InvalidArgumentError):
        store.search(_query(store), -1)
    with pytest.raises(InvalidTypeError):
        store.search(_query(store), 2.5)


def test_empty_store(make_store: StoreFactory) -> None:
    s = make_store()
    assert s.count() == 0
    assert s.search([0.1] * DIM, 10) == []
    assert s.search([0.1] * DIM, 10, filter={"lang": "en"}, exclude_ids=["x"]) == []
    assert s.get(["x"]) == []
    s.delete(["x"])
    s.add([], [])
    assert s.count() == 0


# -- bad vectors --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "vectors",
    [
        [[0.1] * DIM, [0.1] * (DIM - 1)],
        [[0.1] * DIM, [float("nan")] * DIM],
        [[0.1] * DIM, [float("inf")] + [0.0] * (DIM - 1)],
        [[0.1] * DIM],
    ],
    ids=["wrong-dim", "nan", "inf", "wrong-count"],
)
def test_bad_vectors_write_nothing(store: Any, vectors: list[list[float]]) -> None:
    with pytest.raises(DimensionMismatchError):
        store.add(["x", "y"], ["x", "y"], vectors=vectors)
    assert store.count() == 5
    assert store.get(["x", "y"]) == []


def test_wrong_dimension_against_collection(store: Any) -> None:
    with pytest.raises(DimensionMismatchError):
        store.add(["x"], ["x"], vectors=[[0.5] * (DIM + 1)])
    with pytest.raises(DimensionMismatchError):
        store.search([0.5] * (DIM + 1), 3)
    with pytest.raises(DimensionMismatchError):
        store.search([float("nan")] * DIM, 3)
    assert store.count() == 5


def test_bad_batch_writes_nothing(store: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        store.add(["x", "x"], ["a", "b"])
    with pytest.raises(InvalidArgumentError):
        store.add(["x"], ["a"], [{"v": float("nan")}])
    with pytest.raises(InvalidArgumentError, match="Unicode"):
        store.add(["x"], ["a"], [{"v": "lone \ud800"}])
    assert store.count() == 5


def test_explicit_vectors_are_used(make_store: StoreFactory) -> None:
    s = make_store()
    s.add(["x", "y"], ["same", "same"], vectors=np.eye(DIM, dtype=np.float32)[:2])
    assert _ids(s.search([0.0, 1.0] + [0.0] * (DIM - 2), 1)) == ["y"]


# -- persistence and locking ---------------------------------------------------------------------------
def test_reopen_from_path(make_store: StoreFactory, tmp_path: Path) -> None:
    path = tmp_path / "store"
    s = make_store(path)
    s.add(["a", "b"], ["red apples", "blue sky"], [{"n": 1}, {"n": 2}])
    s.delete(["b"])
    assert _ids(s.search(_query(s), 5, filter={"n": 1})) == ["a"]  # builds a payload index where supported
    s.close()
    reopened = make_store(path)
    assert _ids(reopened.search(_query(reopened), 5, filter={"n": [1, 2]})) == ["a"]
    assert reopened.search(_query(reopened), 5, filter={"n": 2}) == []
    assert reopened.count() == 1
    assert reopened.dimension == DIM
    (hit,) = reopened.search(reopened.embedding.embed_query("red"), 5)
    assert (hit.id, hit.text, dict(hit.metadata)) == ("a", "red apples", {"n": 1})
    reopened.add(["c"], ["more"])
    assert reopened.count() == 2


def test_second_opener_gets_store_locked(make_store: StoreFactory, tmp_path: Path) -> None:
    path = tmp_path / "store"
    first = make_store(path)
    first.add(["a"], ["red apples"])
    with pytest.raises(StoreLockedError):
        make_store(path)
    # The first handle is intact after the refused open.
    first.add(["b"], ["blue"])
    assert first.count() == 2
    first.close()
    assert make_store(path).count() == 2


# -- async twins -----------------------------------------------------------------------------------------
def test_async_twins(make_store: StoreFactory) -> None:
    s = make_store()

    async def scenario() -> None:
        await s.aadd(["a", "b"], ["red apples", "blue sky"], [{"k": 1}, {"k": 2}])
        assert await s.acount() == 2
        q = await s.embedding.aembed_query("red")
        hits = await s.asearch(q, 5, filter={"k": [1, 2]}, exclude_ids=["b"])
        assert [h.id for h in hits] == ["a"]
        assert [r.id for r in await s.aget(["b"])] == ["b"]
        await s.adelete(["a"])
        assert await s.acount() == 1

    asyncio.run(scenario())


# -- property: top-k among allowed documents only (exact search) -----------------------------------------
_metadata = st.fixed_dictionaries(
    {
        "session_id": st.one_of(st.integers(0, 4), st.lists(st.integers(0, 4), min_size=1, max_size=2)),
        "lang": st.sampled_from(["en", "fr"]),
        "flag": st.sampled_from([True, False, 0, 1]),
    }
)
_filters = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["session_id", "lang", "flag"]),
        st.one_of(
            st.integers(0, 4),
            st.sampled_from(["en", "fr", True, False]),
            st.lists(st.sampled_from([0, 1, 2, 3, 4, True, False, "en"]), max_size=3),
        ),
        max_size=3,
    ),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    metas=st.lists(_metadata, min_size=1, max_size=30),
    flt=_filters,
    n_excluded=st.integers(0, 5),
    limit=st.integers(0, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_top_k_among_allowed_only(
    kind: str,
    metas: list[dict[str, Any]],
    flt: dict[str, Any] | None,
    n_excluded: int,
    limit: int,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(len(metas), 8)).astype(np.float32)
    query = rng.normal(size=8).astype(np.float32)
    ids = [f"doc-{i}" for i in range(len(metas))]
    excluded = random.Random(seed).sample(ids, min(n_excluded, len(ids)))
    store = _open(kind, None, dim=8)
    try:
        store.add(ids, ids, metas, vectors=vectors)
        hits = store.search(query.tolist(), limit, filter=flt, exclude_ids=excluded)
    finally:
        store.close()
    normalized = normalize_filter(flt)
    allowed = [i for i, meta in zip(ids, metas) if matches(meta, normalized) and i not in excluded]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = dict(zip(ids, (unit @ (query / np.linalg.norm(query))).tolist()))
    expected = sorted(allowed, key=lambda i: -cos[i])[:limit]
    assert len(hits) == len(expected)
    assert {h.id for h in hits} <= set(allowed)
    # Compare by score (ties between random floats are improbable, near-ties reorder within float32 noise).
    assert np.allclose([h.score for h in hits], [cos[i] for i in expected], atol=1e-5)
    for h in hits:
        assert math.isclose(h.score, cos[h.id], abs_tol=1e-5)


# -- ids are exact strings: one id, one point ------------------------------------------------------------
CANONICAL = "550e8400-e29b-41d4-a716-446655440000"
SPELLINGS = [CANONICAL, CANONICAL.replace("-", ""), CANONICAL.upper(), "{" + CANONICAL + "}"]


@pytest.mark.parametrize("together", [True, False], ids=["one-add", "separate-adds"])
def test_spellings_of_one_uuid_are_distinct_documents(make_store: StoreFactory, together: bool) -> None:
    # Security: '550e8400-e29b-...' and '550e8400e29b...' once shared a Qdrant point, so the dense store held 1
    # document where the keyword store held 2, and deleting one removed the other's vector.
    s = make_store()
    texts = [f"text {i} about red apples" for i in range(len(SPELLINGS))]
    if together:
        s.add(SPELLINGS, texts)
    else:
        for doc_id, text in zip(SPELLINGS, texts):
            s.add([doc_id], [text])
    assert s.count() == len(SPELLINGS)
    assert [(r.id, r.text) for r in s.get(SPELLINGS[::-1])] == list(zip(SPELLINGS, texts))[::-1]
    q = _query(s)
    assert sorted(_ids(s.search(q, 10))) == sorted(SPELLINGS)
    for doc_id in SPELLINGS:  # excluding one spelling hides that document only
        assert sorted(_ids(s.search(q, 10, exclude_ids=[doc_id]))) == sorted(set(SPELLINGS) - {doc_id})
    s.delete([SPELLINGS[1]])  # the hex form: the canonical one keeps its text and vector
    assert s.count() == len(SPELLINGS) - 1
    assert s.get([SPELLINGS[1]]) == []
    (record,) = s.get([CANONICAL], with_vectors=True)
    assert record.text == texts[0] and record.vector is not None
    s.delete([CANONICAL])
    assert [r.id for r in s.get(SPELLINGS)] == SPELLINGS[2:]


def test_an_id_spelling_another_ids_point_id_is_a_distinct_document(make_store: StoreFactory) -> None:
    # The point ids are public (uuid5 in a published namespace): an id chosen to be "doc-1"'s point id in canonical
    # form must not overwrite, return, hide or delete "doc-1".
    s = make_store()
    crafted = point_id("doc-1")
    s.add(["doc-1"], ["the victim's red apples"])
    s.add([crafted], ["the crafted red apples"])
    assert s.count() == 2
    assert [(r.id, r.text) for r in s.get(["doc-1", crafted])] == [
        ("doc-1", "the victim's red apples"),
        (crafted, "the crafted red apples"),
    ]
    assert _ids(s.search(_query(s), 10, exclude_ids=[crafted])) == ["doc-1"]
    s.delete([crafted])
    assert [r.id for r in s.get(["doc-1", crafted])] == ["doc-1"]


@pytest.mark.parametrize("big", [1e300, 1e20])
def test_a_vector_too_large_for_qdrants_float32_is_refused_not_a_nan_score_or_a_silent_drop(big: float) -> None:
    from rrf_retriever.embeddings import HashingEmbedding
    from rrf_retriever.errors import DimensionMismatchError
    from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

    for store in (QdrantDenseStore(HashingEmbedding(4)), QdrantEdgeDenseStore(HashingEmbedding(4))):
        store.add(["ok"], ["fine"], vectors=[[0.0, 1.0, 0.0, 0.0]])
        with pytest.raises(DimensionMismatchError, match="too large"):
            store.add(["huge"], ["x"], vectors=[[big, big, 0.0, 0.0]])
        with pytest.raises(DimensionMismatchError, match="too large"):
            store.search([big, big, 0.0, 0.0], 5)
        assert [h.id for h in store.search([0.0, 1.0, 0.0, 0.0], 5)] == ["ok"] and store.count() == 1
        store.close()


@pytest.mark.parametrize(("kind", "index"), [("qdrant", None), ("edge", None), ("edge", "plain"), ("edge", "int8")])
def test_equal_scores_are_ordered_by_id_whatever_the_insertion_order(kind: str, index: str | None,
                                                                      tmp_path: Path) -> None:
    # 30 identical texts (identical vectors: every score ties) written one at a time in a shuffled order: the id
    # decides, and the cut at the limit keeps the smallest ids (Qdrant orders a tie by its internal ids).
    emb = HashingEmbedding(dim=DIM)
    store = QdrantDenseStore(emb) if kind == "qdrant" else QdrantEdgeDenseStore(emb, path=tmp_path, index=index)
    ids = [f"m{i:02d}" for i in range(30)]
    order = ids[:]
    random.Random(11).shuffle(order)
    store.add([f"f{i}" for i in range(20)], [f"other words {i}" for i in range(20)])
    for doc_id in order:
        store.add([doc_id], ["memory note about rotating tokens"], [{"session_id": 1}])
    vec = emb.embed_query("memory note about rotating tokens")
    assert [h.id for h in store.search(vec, 10)] == ids[:10]
    assert [h.id for h in store.search(vec, 10, filter={"session_id": 1}, exclude_ids=["m00"])] == ids[1:11]
    store.close()
