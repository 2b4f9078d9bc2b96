"""``fuse_validated`` (the engine's fusion over inputs checked where they entered) against ``fuse`` (which checks
them): on any valid input the two give the same list, bit for bit, or the same error."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.fusion import FUSIONS, fuse, fuse_validated
from rrf_retriever.types import FusedHit, Hit
from rrf_retriever.validate import MAX_RRF_K, MAX_WEIGHT, check_weights

SOURCES = ["dense", "keyword", "temporal", "extra"]
SCORE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.sampled_from([0.0, 1.0, 1.0, 2.5])
HIT = st.builds(Hit, st.sampled_from([f"d{i}" for i in range(10)]), st.just("t"), st.just({}), SCORE)
RANKED = st.dictionaries(st.sampled_from(SOURCES), st.lists(HIT, max_size=12), max_size=4)  # duplicates, ties
WEIGHT = st.sampled_from([0.0, 1.0, 1.25]) | st.floats(min_value=0.0, max_value=MAX_WEIGHT, allow_nan=False)
RRF_K = st.sampled_from([0.0, 60.0]) | st.floats(min_value=0.0, max_value=MAX_RRF_K, allow_nan=False)
LIMIT = st.none() | st.integers(min_value=0, max_value=15)


def _both(method: str, ranked: dict[str, list[Hit]], weights: dict[str, float], rrf_k: float,
          limit: int | None) -> tuple[list[FusedHit], list[FusedHit]]:
    checked = fuse(method, ranked, weights, rrf_k=rrf_k, limit=limit)
    # the engine's weights: one for every source (check_weights resolves the missing ones to 1.0, as fuse does)
    return checked, fuse_validated(method, ranked, check_weights(list(ranked), weights), rrf_k, limit)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(FUSIONS)), RANKED, st.data(), RRF_K, LIMIT)
def test_fuse_validated_is_fuse_exactly(method: str, ranked: dict[str, list[Hit]], data: st.DataObject,
                                        rrf_k: float, limit: int | None) -> None:
    # some sources named with a weight, others left to the default
    weights = {name: data.draw(WEIGHT) for name in ranked if data.draw(st.booleans())}
    checked, validated = _both(method, ranked, weights, rrf_k, limit)
    assert validated == checked  # dataclass equality: ids, order, scores to the last bit, ranks, raw scores
    assert [h.score for h in validated] == [h.score for h in checked]  # also -0.0 vs 0.0 and nothing approx


@pytest.mark.parametrize("method", ["relative_score", "dbsf", "calibrated"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_fuse_validated_still_refuses_a_non_finite_score_as_fuse_does(method: str, bad: float) -> None:
    # a store's scores are not inputs the options validated: both doors refuse them, with one message
    ranked = {"dense": [Hit("a", score=1.0), Hit("b", score=bad)]}
    with pytest.raises(InvalidArgumentError, match="finite scores; source 'dense'"):
        fuse(method, ranked)
    with pytest.raises(InvalidArgumentError, match="finite scores; source 'dense'"):
        fuse_validated(method, ranked, {"dense": 1.0}, 60.0, None)


def test_fuse_validated_zero_weight_source_adds_nothing_as_fuse() -> None:
    ranked = {"dense": [Hit("a", score=1.0)], "keyword": [Hit("b", score=9.0)]}
    for method in sorted(FUSIONS):
        out = fuse_validated(method, ranked, {"dense": 0.0, "keyword": 1.0}, 60.0, None)
        assert [h.id for h in out] == ["b"]
        assert out == fuse(method, ranked, {"dense": 0.0}, rrf_k=60.0)
