"""Fusion methods: closed-form values, validation, hypothesis properties, LangChain parity."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.fusion import (
    distribution_based_score_fusion,
    normalize_scores,
    relative_score_fusion,
    weighted_rrf,
)
from rrf_retriever.types import FusedHit, Hit
from rrf_retriever.validate import check_weights


def hits(*ids: str, scores: Sequence[float] | None = None) -> list[Hit]:
    scores = scores if scores is not None else [float(len(ids) - i) for i in range(len(ids))]
    return [Hit(i, text=f"text of {i}", metadata={"id": i}, score=s) for i, s in zip(ids, scores)]


# ---- closed-form values --------------------------------------------------------------------------------


def test_rrf_closed_form_two_sources() -> None:
    out = weighted_rrf({"dense": hits("a", "b", "c"), "keyword": hits("c", "a")})
    got = {h.id: h.score for h in out}
    assert got["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert got["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert got["b"] == pytest.approx(1 / 62)
    assert [h.id for h in out] == ["a", "c", "b"]


def test_rrf_weights_multiply_each_sources_contribution() -> None:
    out = weighted_rrf({"dense": hits("a"), "keyword": hits("b")}, {"dense": 0.3, "keyword": 0.7}, k=10)
    assert {h.id: h.score for h in out} == pytest.approx({"a": 0.3 / 11, "b": 0.7 / 11})
    assert [h.id for h in out] == ["b", "a"]


def test_rrf_k_zero_and_custom_k() -> None:
    out = weighted_rrf({"s": hits("a", "b")}, k=0)
    assert [h.score for h in out] == [1.0, 0.5]
    out = weighted_rrf({"s": hits("a", "b")}, k=1.5)
    assert [h.score for h in out] == pytest.approx([1 / 2.5, 1 / 3.5])


def test_fused_hit_reports_ranks_and_raw_scores_per_source() -> None:
    out = weighted_rrf({"dense": hits("a", "b", scores=[0.9, 0.8]), "keyword": hits("b", scores=[12.5])})
    b = next(h for h in out if h.id == "b")
    assert dict(b.ranks) == {"dense": 2, "keyword": 1}
    assert dict(b.scores) == {"dense": 0.8, "keyword": 12.5}
    assert b.text == "text of b" and b.metadata == {"id": "b"}
    assert isinstance(b, FusedHit)


def test_duplicates_within_a_source_count_once_at_their_first_position() -> None:
    out = weighted_rrf({"s": hits("a", "b", "a", "c")})
    assert [h.id for h in out] == ["a", "b", "c"]
    assert [h.score for h in out] == pytest.approx([1 / 61, 1 / 62, 1 / 63])  # c moved up to rank 3
    assert dict(out[0].ranks) == {"s": 1}


def test_text_and_metadata_come_from_the_source_that_ranked_the_document_best() -> None:
    dense = [Hit("x", "dense text", {"from": "dense"}), Hit("d", "dense d")]
    keyword = [Hit("d", "keyword d", {"from": "keyword"})]
    out = {h.id: h for h in weighted_rrf({"dense": dense, "keyword": keyword})}
    assert out["d"].text == "keyword d" and out["d"].metadata == {"from": "keyword"}


def test_ties_break_by_best_single_rank_then_id() -> None:
    # a: ranks 1 and 3 in two sources; b: rank 2 in both. With k=0: a = 1 + 1/3, b = 1/2 + 1/2 -> distinct.
    # Construct exact ties: y and x both rank 2 in one source each -> same score, same best rank -> id order.
    out = weighted_rrf({"s1": hits("a", "y"), "s2": hits("b", "x")})
    assert [h.id for h in out] == ["a", "b", "x", "y"]
    # Same score, different best rank: p = 1/(k+1) + 1/(k+4) vs q = 1/(k+2) + 1/(k+2)? Not equal in general;
    # with k=0 and weights, build: p rank 1 in s1 (w=1) ; q rank 2 in s1 and s2 with weights 1 each -> 1/2+1/2 = 1.
    out = weighted_rrf({"s1": hits("p", "q"), "s2": hits("z", "q")}, k=0)
    scores = {h.id: h.score for h in out}
    assert scores["p"] == scores["q"] == scores["z"] == 1.0
    assert [h.id for h in out] == ["p", "z", "q"]  # p and z have best rank 1, q only 2


def test_limit_keeps_the_best() -> None:
    full = weighted_rrf({"a": hits(*"abcdefgh"), "b": hits(*"hgfedcba")})
    assert weighted_rrf({"a": hits(*"abcdefgh"), "b": hits(*"hgfedcba")}, limit=3) == full[:3]
    assert weighted_rrf({"a": hits("a")}, limit=0) == []


def test_empty_inputs() -> None:
    assert weighted_rrf({}) == []
    assert weighted_rrf({"a": [], "b": []}) == []


# ---- zero-weight guard ---------------------------------------------------------------------------------


def test_zero_weight_source_cannot_introduce_a_document() -> None:
    out = weighted_rrf({"dense": hits("a", "b"), "keyword": hits("z", "a")}, {"keyword": 0})
    assert [h.id for h in out] == ["a", "b"]
    assert all("keyword" not in h.ranks and "keyword" not in h.scores for h in out)


def test_all_weights_zero_gives_empty() -> None:
    assert weighted_rrf({"dense": hits("a"), "keyword": hits("b")}, {"dense": 0, "keyword": 0.0}) == []


# ---- validation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -0.5])
def test_bad_weight_values_name_the_source(bad: float) -> None:
    with pytest.raises(InvalidArgumentError, match="keyword"):
        weighted_rrf({"dense": hits("a"), "keyword": hits("b")}, {"keyword": bad})


@pytest.mark.parametrize("bad", ["1", None, True, [1.0]])
def test_non_numeric_weights_are_type_errors(bad: object) -> None:
    with pytest.raises(InvalidTypeError, match="keyword"):
        weighted_rrf({"keyword": hits("b")}, {"keyword": bad})  # type: ignore[dict-item]


def test_weight_for_unknown_source_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown source"):
        weighted_rrf({"dense": hits("a")}, {"dense": 1.0, "sparse": 1.0})


@pytest.mark.parametrize("bad_k", [math.nan, math.inf, -1, -0.001])
def test_bad_k(bad_k: float) -> None:
    with pytest.raises(InvalidArgumentError, match="k must be"):
        weighted_rrf({"a": hits("a")}, k=bad_k)


def test_bad_limit_and_bad_shapes() -> None:
    with pytest.raises(InvalidArgumentError):
        weighted_rrf({"a": hits("a")}, limit=-1)
    with pytest.raises(InvalidTypeError):
        weighted_rrf([hits("a")])  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        weighted_rrf({"a": "abc"})  # type: ignore[dict-item]


def test_missing_weight_means_one() -> None:
    assert check_weights(["a", "b"], {"a": 2}) == {"a": 2.0, "b": 1.0}
    assert check_weights(["a"], None) == {"a": 1.0}


# ---- score fusions -------------------------------------------------------------------------------------


def test_relative_score_fusion_closed_form() -> None:
    ranked = {"dense": hits("a", "b", "c", scores=[0.9, 0.5, 0.1]), "keyword": hits("c", "a", scores=[10.0, 5.0])}
    out = {h.id: h.score for h in relative_score_fusion(ranked, {"dense": 0.5, "keyword": 1.0})}
    assert out == pytest.approx({"a": 0.5 * 1.0 + 0.0, "b": 0.5 * 0.5, "c": 0.0 + 1.0})


def test_relative_score_fusion_constant_scores_give_one() -> None:
    out = relative_score_fusion({"s": hits("a", "b", scores=[3.0, 3.0])})
    assert [h.score for h in out] == [1.0, 1.0]


def test_dbsf_closed_form() -> None:
    # scores 1, 2, 3: mean 2, sigma sqrt(2/3); normalised (s - (2 - 3 sigma)) / (6 sigma)
    sigma = math.sqrt(2 / 3)
    out = {h.id: h.score for h in distribution_based_score_fusion({"s": hits("a", "b", "c", scores=[3, 2, 1])})}
    assert out == pytest.approx({x: (s - (2 - 3 * sigma)) / (6 * sigma) for x, s in zip("abc", [3, 2, 1])})
    assert out["b"] == pytest.approx(0.5)


def test_dbsf_constant_scores_give_half_and_nan_is_refused() -> None:
    assert [h.score for h in distribution_based_score_fusion({"s": hits("a", "b", scores=[1, 1])})] == [0.5, 0.5]
    with pytest.raises(InvalidArgumentError, match="finite"):
        distribution_based_score_fusion({"s": hits("a", scores=[math.nan])})
    with pytest.raises(InvalidArgumentError, match="finite"):
        relative_score_fusion({"s": hits("a", scores=[math.inf])})


def test_score_fusions_respect_the_zero_weight_guard() -> None:
    ranked = {"dense": hits("a"), "keyword": hits("z")}
    for fuse in (relative_score_fusion, distribution_based_score_fusion):
        assert [h.id for h in fuse(ranked, {"keyword": 0})] == ["a"]


def test_normalize_scores_min_max_and_purity() -> None:
    original = hits("a", "b", "c", scores=[4.0, 2.0, 3.0])
    snapshot = copy.deepcopy(original)
    out = normalize_scores(original)
    assert [h.score for h in out] == [1.0, 0.0, 0.5]
    assert [h.id for h in out] == ["a", "b", "c"]
    assert original == snapshot
    assert normalize_scores([]) == []
    fused = weighted_rrf({"s": hits("a", "b")})
    assert [h.score for h in normalize_scores(fused)] == [1.0, 0.0]


# ---- properties ----------------------------------------------------------------------------------------

IDS = st.sampled_from([f"d{i}" for i in range(12)])
RANKED_LIST = st.lists(IDS, max_size=10).map(lambda ids: hits(*ids))
SOURCES = st.dictionaries(st.sampled_from(["dense", "keyword", "temporal", "extra"]), RANKED_LIST, max_size=4)
WEIGHT = st.one_of(st.just(0.0), st.floats(min_value=0.01, max_value=10, allow_nan=False))


@st.composite
def ranked_and_weights(draw: st.DrawFn) -> tuple[dict[str, list[Hit]], dict[str, float]]:
    ranked = draw(SOURCES)
    weights = {name: draw(WEIGHT) for name in ranked}
    return ranked, weights


def _ids(out: Sequence[FusedHit]) -> list[str]:
    return [h.id for h in out]


@given(RANKED_LIST)
def test_one_source_keeps_its_order(ranked: list[Hit]) -> None:
    first_seen = list(dict.fromkeys(h.id for h in ranked))
    assert _ids(weighted_rrf({"only": ranked})) == first_seen


@given(ranked_and_weights(), st.sampled_from([0.25, 0.5, 2.0, 8.0]))
def test_scaling_all_weights_keeps_the_order(data: tuple[dict, dict], factor: float) -> None:
    ranked, weights = data
    scaled = {s: w * factor for s, w in weights.items()}
    assert _ids(weighted_rrf(ranked, weights)) == _ids(weighted_rrf(ranked, scaled))


@given(ranked_and_weights(), st.randoms())
def test_permuting_sources_with_their_weights_changes_nothing(data: tuple[dict, dict], rnd) -> None:
    ranked, weights = data
    names = list(ranked)
    rnd.shuffle(names)
    permuted = {n: ranked[n] for n in names}
    assert weighted_rrf(permuted, weights) == weighted_rrf(ranked, weights)


@given(ranked_and_weights(), RANKED_LIST)
def test_adding_a_zero_weight_source_equals_leaving_it_out(data: tuple[dict, dict], ghost: list[Hit]) -> None:
    ranked, weights = data
    with_ghost = {**ranked, "ghost": ghost}
    assert weighted_rrf(with_ghost, {**weights, "ghost": 0.0}) == weighted_rrf(ranked, weights)


@given(ranked_and_weights())
def test_output_invariants(data: tuple[dict, dict]) -> None:
    ranked, weights = data
    before = copy.deepcopy(ranked)
    out = weighted_rrf(ranked, weights)
    ids = _ids(out)
    assert len(ids) == len(set(ids))  # ids unique
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))  # non-increasing
    assert out == weighted_rrf(ranked, weights)  # same input, same output
    assert ranked == before  # inputs not mutated
    live = {s for s, w in weights.items() if w > 0}
    expected_ids = {h.id for s in live for h in ranked[s]}
    assert set(ids) == expected_ids  # exactly the docs of sources with weight > 0
    for h in out:
        assert set(h.ranks) <= live and set(h.ranks) == set(h.scores)
        assert h.score == pytest.approx(sum(weights[s] / (60 + r) for s, r in h.ranks.items()))


@given(ranked_and_weights(), st.integers(min_value=0, max_value=15))
def test_limit_is_a_prefix(data: tuple[dict, dict], limit: int) -> None:
    ranked, weights = data
    assert weighted_rrf(ranked, weights, limit=limit) == weighted_rrf(ranked, weights)[:limit]


@given(ranked_and_weights())
def test_score_fusions_share_the_invariants(data: tuple[dict, dict]) -> None:
    ranked, weights = data
    for fuse in (relative_score_fusion, distribution_based_score_fusion):
        out = fuse(ranked, weights)
        ids = _ids(out)
        assert len(ids) == len(set(ids))
        assert all(a.score >= b.score for a, b in zip(out, out[1:]))
        assert set(ids) == {h.id for s, w in weights.items() if w > 0 for h in ranked[s]}


# ---- parity with LangChain's EnsembleRetriever ---------------------------------------------------------


def _langchain_ensemble(weights: list[float]):
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager) -> list[Document]:
            return []

    return EnsembleRetriever(retrievers=[Fixed() for _ in weights], weights=weights, id_key="doc_id")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(IDS, max_size=10, unique=True), min_size=1, max_size=4),
    st.data(),
)
def test_order_matches_langchain_ensemble_retriever(lists: list[list[str]], data: st.DataObject) -> None:
    from langchain_core.documents import Document

    weights = [data.draw(st.floats(min_value=0.05, max_value=5)) for _ in lists]
    ensemble = _langchain_ensemble(weights)
    theirs = ensemble.weighted_reciprocal_rank(
        [[Document(page_content=i, metadata={"doc_id": i}) for i in ids] for ids in lists]
    )
    ranked: Mapping[str, list[Hit]] = {f"s{n}": hits(*ids) for n, ids in enumerate(lists)}
    ours = weighted_rrf(ranked, {f"s{n}": w for n, w in enumerate(weights)})
    our_score = {h.id: h.score for h in ours}
    their_ids = [d.metadata["doc_id"] for d in theirs]
    assert set(their_ids) == set(our_score)
    # Same order wherever the scores differ; LangChain leaves exact ties in input order, we break them by rank/id.
    for a, b in zip(their_ids, their_ids[1:]):
        assert our_score[a] >= our_score[b] - 1e-15
    assert sorted(our_score.values(), reverse=True) == [h.score for h in ours]
