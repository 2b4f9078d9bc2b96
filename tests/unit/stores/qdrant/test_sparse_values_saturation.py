"""BM25's query-term saturation in the sparse keyword leg: the pure weight ``qtf * (k3 + 1) / (qtf + k3)``, the
query vector it makes (k3 = 0 is "each term once", inf the raw counts, short queries once), and the stores'
``k3`` / ``short_query_terms`` settings on real qdrant-edge and qdrant-client local mode."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from qdrant_client import QdrantClient

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.qdrant import QdrantEdgeHybridStore, QdrantEdgeKeywordStore, QdrantKeywordStore
from rrf_retriever.stores.qdrant.sparse_values import (
    DEFAULT_K3,
    DEFAULT_SHORT_QUERY_TERMS,
    check_k3,
    check_short_query_terms,
    query_term_weight,
    query_vector,
    term_id,
)

K3S = st.one_of(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), st.just(math.inf))
QTF = st.integers(min_value=1, max_value=1000)
TERMS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "eps"]), max_size=30)


# -- the pure weight ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("qtf", "k3", "expected"),
    [
        (1, 0.0, 1.0), (5, 0.0, 1.0),  # k3 = 0: once
        (1, math.inf, 1.0), (5, math.inf, 5.0),  # inf: the raw count
        (2, 1.0, 4 / 3), (3, 2.0, 9 / 5), (4, 1.5, 10 / 5.5), (1, 7.0, 1.0),  # closed form
    ],
)
def test_query_term_weight_closed_form(qtf: int, k3: float, expected: float) -> None:
    assert query_term_weight(qtf, k3) == pytest.approx(expected, rel=1e-12)


@given(QTF, K3S)
def test_weight_is_bounded_by_k3_plus_one_and_by_the_count(qtf: int, k3: float) -> None:
    w = query_term_weight(qtf, k3)
    assert 1.0 - 1e-12 <= w <= qtf * (1 + 1e-12)
    assert w <= k3 + 1.0 + 1e-9


@given(QTF, K3S)
def test_weight_is_monotone_in_qtf(qtf: int, k3: float) -> None:
    assert query_term_weight(qtf + 1, k3) >= query_term_weight(qtf, k3) - 1e-12


@given(QTF, K3S, K3S)
def test_weight_is_monotone_in_k3(qtf: int, a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert query_term_weight(qtf, low) <= query_term_weight(qtf, high) + 1e-9


@given(TERMS)
def test_k3_zero_is_each_term_once(terms: list[str]) -> None:
    assert query_vector(terms, k3=0.0) == query_vector(list(dict.fromkeys(terms)))


@given(TERMS)
def test_k3_inf_is_the_raw_counts(terms: list[str]) -> None:
    indices, values = query_vector(terms, k3=math.inf, short_query_terms=0)
    assert dict(zip(indices, values)) == {term_id(t): float(terms.count(t)) for t in set(terms)}
    assert query_vector(terms) == query_vector(terms, k3=DEFAULT_K3, short_query_terms=DEFAULT_SHORT_QUERY_TERMS)


@given(TERMS, st.integers(min_value=0, max_value=6), K3S)
def test_short_queries_count_each_term_once(terms: list[str], short: int, k3: float) -> None:
    got = query_vector(terms, k3=k3, short_query_terms=short)
    if len(set(terms)) <= short:
        assert got == query_vector(terms, k3=0.0)
    else:
        assert got == query_vector(terms, k3=k3, short_query_terms=0)


@pytest.mark.parametrize("bad", [-1, -0.5, math.nan, -math.inf])
def test_k3_out_of_range_is_refused(bad: float) -> None:
    with pytest.raises(InvalidArgumentError, match="k3"):
        check_k3(bad)


@pytest.mark.parametrize("bad", [True, "2", None, [1]])
def test_k3_of_another_type_is_refused(bad: object) -> None:
    with pytest.raises(InvalidTypeError, match="k3"):
        check_k3(bad)


@pytest.mark.parametrize(("bad", "error"), [(-1, InvalidArgumentError), (2.0, InvalidTypeError),
                                            (True, InvalidTypeError)])
def test_short_query_terms_is_a_non_negative_int(bad: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="short_query_terms"):
        check_short_query_terms(bad)


# -- the stores ---------------------------------------------------------------------------------------------
IDS = ["a", "b", "c", "d"]
TEXTS = [
    "solar panels on the roof and a solar inverter",
    "wind turbines and solar farms",
    "the wind is strong over the farms",
    "a roof of slate",
]
# "solar" twice: with raw counts the solar documents win; counted once, "wind" and "farms" weigh as much.
QUERY = "solar solar wind farms"


def ranking(store: object, query: str = QUERY) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 5)) for h in store.search(query, 4)]  # type: ignore[attr-defined]  # any store


def test_edge_store_k3_zero_ranks_as_the_deduplicated_query() -> None:
    with QdrantEdgeKeywordStore(k3=0) as once, QdrantEdgeKeywordStore(short_query_terms=0) as raw:
        once.add(IDS, TEXTS)
        raw.add(IDS, TEXTS)
        assert ranking(once) == ranking(raw, "solar wind farms")
        assert ranking(once) != ranking(raw)  # the repeated term counts again in the raw store


def test_short_query_terms_counts_once_up_to_the_bound() -> None:
    with QdrantEdgeKeywordStore(short_query_terms=3) as short, QdrantEdgeKeywordStore(k3=0) as once, \
            QdrantEdgeKeywordStore(short_query_terms=0) as raw:
        for store in (short, once, raw):
            store.add(IDS, TEXTS)
        assert ranking(short) == ranking(once)  # 3 distinct terms: once
        long_query = "solar solar wind farms roof"  # 4 distinct terms: raw counts
        assert ranking(short, long_query) == ranking(raw, long_query)


def test_k3_between_lies_between_once_and_raw_on_qdrant_client_local() -> None:
    client = QdrantClient(location=":memory:")
    stores = {k3: QdrantKeywordStore(client=client, collection_name=f"kw{i}", k3=k3, short_query_terms=0)
              for i, k3 in enumerate((0.0, 1.0, math.inf))}
    for store in stores.values():
        store.add(IDS, TEXTS)
    score = {k3: dict(ranking(s))["a"] for k3, s in stores.items()}  # "a" holds solar twice, no wind or farms
    assert score[0.0] < score[1.0] < score[math.inf]
    assert score[1.0] == pytest.approx(score[0.0] * query_term_weight(2, 1.0), rel=1e-5)


def test_default_counts_a_short_query_once_and_a_long_one_raw() -> None:
    assert DEFAULT_SHORT_QUERY_TERMS == 20
    short, long_query = ["a", "a", "b"], ["a", "a", *[f"t{i}" for i in range(20)]]
    assert query_vector(short) == query_vector(short, k3=0.0)
    assert query_vector(long_query) == query_vector(long_query, k3=math.inf, short_query_terms=0)
    with QdrantEdgeKeywordStore() as default, QdrantEdgeKeywordStore(k3=0) as once:
        default.add(IDS, TEXTS)
        once.add(IDS, TEXTS)
        assert default.short_query_terms == 20
        assert ranking(default) == ranking(once)


def test_joint_store_keyword_leg_takes_the_settings() -> None:
    with QdrantEdgeHybridStore(HashingEmbedding(dim=8), k3=0) as joint, QdrantEdgeKeywordStore(k3=0) as alone:
        joint.add(IDS, TEXTS)
        alone.add(IDS, TEXTS)
        assert ranking(joint.keyword) == ranking(alone)
        assert joint.k3 == 0.0


@pytest.mark.parametrize(("kwargs", "error"), [({"k3": -1}, InvalidArgumentError), ({"k3": "x"}, InvalidTypeError),
                                               ({"short_query_terms": -2}, InvalidArgumentError)])
def test_store_refuses_bad_settings(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        QdrantEdgeKeywordStore(**kwargs)  # type: ignore[arg-type]  # a bad value on purpose
