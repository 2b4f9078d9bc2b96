"""Calibrated score fusion: closed-form values and the invariants every fusion keeps."""

from __future__ import annotations

import copy
import math
import statistics
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.fusion import FUSIONS, calibrated_score_fusion, fuse
from rrf_retriever.types import Hit


def hits(*ids: str, scores: Sequence[float]) -> list[Hit]:
    return [Hit(i, text=f"text of {i}", score=s) for i, s in zip(ids, scores)]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def test_closed_form_one_source_odd_count() -> None:
    # scores 3, 2, 1: median 2, population sigma sqrt(2/3)
    sigma = math.sqrt(2 / 3)
    out = {h.id: h.score for h in calibrated_score_fusion({"s": hits("a", "b", "c", scores=[3, 2, 1])})}
    assert out == pytest.approx({"a": _sigmoid(1 / sigma), "b": 0.5, "c": _sigmoid(-1 / sigma)})


def test_closed_form_two_sources_with_weights_and_even_count() -> None:
    dense = hits("a", "b", scores=[0.9, 0.7])  # median 0.8, sigma 0.1: z = +1, -1
    keyword = hits("b", "c", "d", "e", scores=[10.0, 6.0, 4.0, 0.0])  # median 5, sigma sqrt(13)
    sigma_k = statistics.pstdev([10.0, 6.0, 4.0, 0.0])
    out = {h.id: h.score for h in calibrated_score_fusion({"dense": dense, "keyword": keyword},
                                                          {"dense": 2.0, "keyword": 0.5})}
    assert out["a"] == pytest.approx(2.0 * _sigmoid(1.0))
    assert out["b"] == pytest.approx(2.0 * _sigmoid(-1.0) + 0.5 * _sigmoid(5.0 / sigma_k))
    assert out["e"] == pytest.approx(0.5 * _sigmoid(-5.0 / sigma_k))


def test_flat_source_gives_one_half_and_nan_is_refused() -> None:
    assert [h.score for h in calibrated_score_fusion({"s": hits("a", "b", scores=[2, 2])})] == [0.5, 0.5]
    with pytest.raises(InvalidArgumentError, match="finite"):
        calibrated_score_fusion({"s": hits("a", "b", scores=[1.0, math.nan])})


def test_zero_weight_guard_and_the_fuse_entry_point() -> None:
    ranked = {"dense": hits("a", scores=[0.5]), "keyword": hits("z", scores=[3.0])}
    assert [h.id for h in calibrated_score_fusion(ranked, {"keyword": 0})] == ["a"]
    assert "calibrated" in FUSIONS
    assert fuse("calibrated", ranked) == calibrated_score_fusion(ranked)


def test_a_source_adds_at_most_its_weight() -> None:
    ranked = {"x": hits("a", "b", "c", scores=[100.0, 1.0, 0.0]), "y": hits("a", scores=[7.0])}
    best = calibrated_score_fusion(ranked, {"x": 1.5, "y": 1.0})[0]
    assert best.id == "a" and best.score <= 2.5


# ---- properties ----------------------------------------------------------------------------------------

IDS = st.sampled_from([f"d{i}" for i in range(12)])
SCORE = st.floats(min_value=-50, max_value=50, allow_nan=False)
RANKED = st.lists(st.tuples(IDS, SCORE), max_size=10).map(
    lambda pairs: [Hit(i, score=s) for i, s in sorted(pairs, key=lambda p: -p[1])])
SOURCES = st.dictionaries(st.sampled_from(["dense", "keyword", "extra"]), RANKED, max_size=3)
WEIGHT = st.one_of(st.just(0.0), st.floats(min_value=0.01, max_value=10, allow_nan=False))


@st.composite
def ranked_and_weights(draw: st.DrawFn) -> tuple[dict[str, list[Hit]], dict[str, float]]:
    ranked = draw(SOURCES)
    return ranked, {name: draw(WEIGHT) for name in ranked}


@given(ranked_and_weights(), st.randoms())
def test_inputs_untouched_and_permutation_changes_nothing(data: tuple[dict, dict], rnd) -> None:
    ranked, weights = data
    before = copy.deepcopy((ranked, weights))
    out = calibrated_score_fusion(ranked, weights)
    assert (ranked, weights) == before
    names = list(ranked)
    rnd.shuffle(names)
    assert calibrated_score_fusion({n: ranked[n] for n in names}, weights) == out  # to the last bit


@given(ranked_and_weights())
def test_output_invariants(data: tuple[dict, dict]) -> None:
    ranked, weights = data
    out = calibrated_score_fusion(ranked, weights)
    ids = [h.id for h in out]
    assert len(ids) == len(set(ids))
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    live = {s for s, w in weights.items() if w > 0}
    assert set(ids) == {h.id for s in live for h in ranked[s]}  # the zero-weight guard
    for h in out:
        assert set(h.ranks) <= live
        assert 0.0 <= h.score <= math.fsum(weights[s] for s in h.ranks) + 1e-12


@given(RANKED)
def test_one_source_keeps_its_score_order(ranked: list[Hit]) -> None:
    out = calibrated_score_fusion({"only": ranked})
    first = {}
    for h in ranked:
        first.setdefault(h.id, h.score)
    assert [first[h.id] for h in out] == sorted((first[h.id] for h in out), reverse=True)
