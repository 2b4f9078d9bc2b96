"""Every Qdrant store returns exactly the documents :func:`rrf_retriever.scope.tree.matches` accepts, for random nested
filters over random metadata (:mod:`tests.unit.stores.filter_strategies`), and ``ids_matching`` lists exactly
those ids. Plus integers past 2**53 next to range bounds, where Qdrant compares in float64.

Stores: QdrantDenseStore and QdrantKeywordStore on qdrant-client local mode, QdrantEdgeDenseStore (with the
payload indexes it builds) and QdrantEdgeKeywordStore (``max_auto_indexes=0``: every filter scans payloads), and
the joint collections (QdrantHybridStore's dense leg on local mode, QdrantEdgeHybridStore's BM25 leg). One
store per kind serves every example (emptied in between). 100 examples each in ``make test-fast``, 2000 marked
slow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.qdrant import (
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    QdrantEdgeHybridStore,
    QdrantEdgeKeywordStore,
    QdrantHybridStore,
    QdrantKeywordStore,
)
from tests.unit.stores.filter_strategies import QUERY_WORD, assert_store_scopes_exactly, cases

_FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SLOW = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DIM = 16
STORES = ["local-dense", "edge-dense", "local-keyword", "edge-keyword", "local-joint-dense", "edge-joint-keyword"]
#: Drawing a case costs more than checking it in a store: each example is checked in every store.


def _make(kind: str, path: Path) -> Any:
    if kind == "local-dense":
        return QdrantDenseStore(HashingEmbedding(dim=DIM))
    if kind == "edge-dense":
        return QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path)
    if kind == "local-keyword":
        return QdrantKeywordStore()
    if kind == "local-joint-dense":
        return QdrantHybridStore(HashingEmbedding(dim=DIM))  # the store's own search is the dense leg
    if kind == "edge-joint-keyword":
        return QdrantEdgeHybridStore(HashingEmbedding(dim=DIM), path=path, max_auto_indexes=0)
    return QdrantEdgeKeywordStore(path=path, max_auto_indexes=0)


def _joint_keyword_search(store: Any, limit: int, flt: Any, excluded: frozenset[str]) -> list[Any]:
    return store.keyword_search(QUERY_WORD, limit, filter=flt, exclude_ids=excluded)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    made = {kind: _make(kind, tmp_path_factory.mktemp(kind)) for kind in STORES}
    yield made
    for store in made.values():
        store.close()


def _emptied(store: Any) -> Any:
    ids = store.ids_matching()
    if ids:
        store.delete(ids)
    assert store.count() == 0
    return store


def _dense_search(store: Any, limit: int, flt: Any, excluded: frozenset[str]) -> list[Any]:
    return store.search(store.embedding.embed_query(QUERY_WORD), limit, filter=flt, exclude_ids=excluded)


def _check(stores: dict[str, Any], case: tuple[Any, Any, frozenset[str]]) -> None:
    docs, flt, excluded = case
    for kind, store in stores.items():
        kwargs = ({"search": _joint_keyword_search} if kind == "edge-joint-keyword"
                  else {"search": _dense_search} if hasattr(store, "embedding") else {})
        try:
            assert_store_scopes_exactly(lambda s=store: _emptied(s), docs, flt, excluded, close=False, **kwargs)
        except AssertionError as exc:
            raise AssertionError(f"{kind}: {exc}") from None


@_FAST
@given(case=cases())
def test_every_qdrant_store_scopes_exactly_like_the_reference(stores: dict[str, Any],
                                                              case: tuple[Any, Any, frozenset[str]]) -> None:
    _check(stores, case)


@pytest.mark.slow
@_SLOW
@given(case=cases())
def test_every_qdrant_store_scopes_exactly_like_the_reference_2000(stores: dict[str, Any],
                                                                   case: tuple[Any, Any, frozenset[str]]) -> None:
    _check(stores, case)


# -- integers past 2**53 next to a bound: Qdrant reads them in float64 (edge, no index or a float index) or
# exactly (local mode, an integer index); both must give the exact answer.
@st.composite
def _big_cases(draw: st.DrawFn) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    base = draw(st.sampled_from([2**52, 2**53, 2**54 + 6, 2**60, 1_700_000_000_000_000_123, 2**63 - 1]))
    sign = draw(st.sampled_from([1, -1]))
    step = int(math.ulp(float(base)))
    offsets = st.integers(-3 * step - 2, 3 * step + 2)
    bound_value = max(-(2**63), min(2**63 - 1, sign * base + draw(offsets)))
    bound: int | float = draw(st.sampled_from([bound_value, float(bound_value)]))
    ops = draw(st.lists(st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]), min_size=1, max_size=2,
                        unique=True))
    if {"$eq", "$ne"} & set(ops):
        bound = max(-(2**63), min(2**63 - 1, int(bound)))
    values = draw(st.lists(offsets.map(lambda d: max(-(2**63), min(2**63 - 1, sign * base + d))),
                           min_size=1, max_size=10))
    docs: list[tuple[str, dict[str, Any]]] = []
    for i, v in enumerate(values):
        value: Any = float(v) if draw(st.booleans()) else v
        docs.append((f"d{i}", {"n": value}))
    return docs, {"n": {op: bound for op in ops}}


@pytest.fixture(scope="module")
def big_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    path = tmp_path_factory.mktemp("edge-integer-index")
    with_int_index = QdrantEdgeKeywordStore(path=path)
    with_int_index.add(["seed"], ["alpha"], [{"n": 1}])
    with_int_index.close()
    shard = qe.EdgeShard.load(str(path / "shard"))
    shard.update(qe.UpdateOperation.create_field_index("metadata.n", qe.PayloadSchemaType.Integer))
    shard.close()
    made = {
        "local": QdrantKeywordStore(),
        "edge-noindex": QdrantEdgeKeywordStore(path=tmp_path_factory.mktemp("edge-noindex"), max_auto_indexes=0),
        "edge-float-index": QdrantEdgeKeywordStore(path=tmp_path_factory.mktemp("edge-float"), index_keys=["n"]),
        # Integer index kept: only Match / $ne here touch it ($gt & co. turn it into a float index first).
        "edge-integer-index": QdrantEdgeKeywordStore(path=path),
    }
    yield made
    for store in made.values():
        store.close()


@pytest.mark.slow  # 4 x 150 examples; make test-fast keeps the closed-form 2**53 cases (test_filters.py)
@pytest.mark.parametrize("kind", ["local", "edge-noindex", "edge-float-index", "edge-integer-index"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_big_cases())
def test_integers_past_2_53_next_to_a_bound_are_exact(big_stores: dict[str, Any], kind: str,
                                                      case: tuple[list[tuple[str, dict[str, Any]]], Any]) -> None:
    docs, flt = case
    store = _emptied(big_stores[kind])
    store.add([d for d, _ in docs], ["alpha"] * len(docs), [m for _, m in docs])
    node = normalize_filter(flt)
    # qdrant-edge 0.9 stores some floats one step off (test_qdrant_edge_stores_some_floats_one_step_off; a payload
    # index written with the point keeps the exact value until its segment is optimized): those documents have
    # no single truth and are left out.
    held = {r.id: r.metadata for r in store.get([d for d, _ in docs])}
    kept = {d for d, m in docs if held[d] == m}
    if kind == "local":
        assert kept == set(held)
    want = sorted(d for d, m in docs if d in kept and matches(m, node))
    assert [d for d in store.ids_matching(flt) if d in kept] == want, (flt, docs)
    assert sorted(h.id for h in store.search("alpha", 20, filter=flt) if h.id in kept) == want


def test_a_list_next_to_a_big_bound_may_be_missed_but_never_leaks(tmp_path: Path) -> None:
    # The documented limit: 2**60 - 1 reads as 2**60 in float64, so "$gte 2**60" lists it as wrong with
    # must_not, which sees the whole list: [2**60 - 1, 2**61] is missed. A leak would be worse; there is none.
    big = 2**60
    with QdrantEdgeKeywordStore(path=tmp_path, max_auto_indexes=0) as store:
        store.add(["under", "list", "over"], ["alpha"] * 3, [{"n": big - 1}, {"n": [big - 1, 2**61]}, {"n": big}])
        got = store.ids_matching({"n": {"$gte": big}})
        assert "under" not in got and "over" in got
        assert set(got) <= {"list", "over"}


_ODD_FLOAT = 415266.62493766355  # qdrant-edge 0.9 holds it in the payload as 415266.6249376635


@pytest.mark.xfail(strict=True, reason="qdrant-edge 0.9 parses payload floats to within one step, not exactly")
def test_qdrant_edge_stores_some_floats_one_step_off(tmp_path: Path) -> None:
    # Measured: about 1 in 9 random floats needing 16-17 digits come back one float64 step off (hits' metadata, and
    # what a filter WITHOUT a payload index reads), e.g. 415266.62493766355 -> 415266.6249376635. Local mode and
    # ints are exact. When this passes, qdrant-edge got exact: drop the notes in stores/qdrant/backend_edge.py and
    # filters.py, and this test.
    with QdrantEdgeKeywordStore(path=tmp_path, max_auto_indexes=0) as store:
        store.add(["a"], ["alpha"], [{"x": _ODD_FLOAT}])
        assert store.ids_matching({"x": {"$gte": _ODD_FLOAT}}) == ["a"]
        assert store.get(["a"])[0].metadata == {"x": _ODD_FLOAT}


# -- many integers in one Match: a flat list of ranges, or (a field without a numeric index on qdrant-edge) a tree.
_NUMBERS = st.one_of(st.integers(-60, 60), st.integers(-60, 60).map(float), st.sampled_from([0.5, -2.5, 59.5]),
                     st.sampled_from(["1", True, False]))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", "edge-noindex", "edge-float-index"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wanted=st.lists(st.integers(-60, 60), min_size=0, max_size=40, unique=True),
       values=st.lists(st.one_of(_NUMBERS, st.lists(_NUMBERS, max_size=3)), min_size=1, max_size=12),
       negate=st.booleans())
def test_many_integers_in_one_match_are_exact(big_stores: dict[str, Any], kind: str, wanted: list[int],
                                              values: list[Any], negate: bool) -> None:
    store = _emptied(big_stores[kind])
    docs = [(f"d{i}", {"n": v}) for i, v in enumerate(values)]
    store.add([d for d, _ in docs], ["alpha"] * len(docs), [m for _, m in docs])
    flt = {"n": {"$nin" if negate else "$in": wanted}}
    node = normalize_filter(flt)
    want = sorted(d for d, m in docs if matches(m, node))
    assert store.ids_matching(flt) == want, (flt, docs)
