"""The relevance score (rrf_retriever.relevance): in [0, 1], non-increasing along the fused order, level-carrying."""

from __future__ import annotations

import math
from itertools import accumulate

from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.relevance import CosineBackground, cosine_background, query_level, relevance_scores

unit = st.floats(0.0, 1.0, allow_nan=False)
cosine = st.floats(-1.0, 1.0, allow_nan=False)
WORDS = ["disk", "quota", "sync", "token", "backup", "restore", "error", "upload", "network", "folder", "E42", "cat"]


@given(st.lists(st.tuples(unit, st.floats(-2.0, 3.0, allow_nan=False)), max_size=30))
def test_relevance_keeps_the_order_and_stays_in_0_1(pairs: list[tuple[float, float]]) -> None:
    ordered = sorted((n for n, _ in pairs), reverse=True)
    levels = [level for _, level in pairs]
    out = relevance_scores(ordered, levels)
    assert len(out) == len(ordered)
    assert all(0.0 <= r <= 1.0 for r in out)
    assert all(a >= b for a, b in zip(out, out[1:]))
    assert all(r <= n * max(0.0, min(1.0, level)) for r, n, level in zip(out, ordered, levels))
    # the formula by hand: each clipped product, capped by the running minimum of those before it
    by_hand = list(accumulate((max(0.0, min(1.0, n * max(0.0, min(1.0, lv)))) for n, lv in zip(ordered, levels)), min))
    assert out == by_hand
    assert relevance_scores(ordered, [1.0] * len(ordered)) == ordered  # no level evidence: the normalized score


@given(cosine, cosine, st.floats(-0.5, 0.9), st.floats(0.01, 0.5))
def test_level_is_in_0_1_and_rises_with_the_top_cosine(low: float, high: float, mean: float, sd: float) -> None:
    low, high = sorted((low, high))
    bg = CosineBackground(mean, sd, 100)
    a, b = query_level(low, bg), query_level(high, bg)
    assert 0.0 <= a <= b <= 1.0


def test_no_evidence_means_level_one_and_the_midpoint_is_half() -> None:
    assert query_level(None, CosineBackground(0.1, 0.1, 10)) == 1.0
    assert query_level(0.5, None) == 1.0
    assert math.isclose(query_level(0.1 + 2.7 * 0.1, CosineBackground(0.1, 0.1, 10)), 0.5)
    assert cosine_background([[1.0, 0.0], [0.0, 1.0]] * 2) is None  # too few vectors
    assert cosine_background([[1.0, 0.0]] * 40) is None  # near-duplicates only: no scale


def test_background_is_the_pairwise_cosine_mean_and_spread() -> None:
    # MIN_BACKGROUND_VECTORS (12) distinct vectors and a zero one; the reference cosines computed by hand below
    vectors = [[float(i == k or ((i + 1) % 6 == k and j == 1)) for k in range(6)] for i in range(6) for j in (0, 1)]
    vectors[1] = [2.0 * x for x in vectors[1]]  # a length does not matter, only the direction
    vectors.append([0.0] * 6)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    units = vectors[:-1]
    pairs = [cos(a, b) for i, a in enumerate(units) for b in units[i + 1:]]
    pairs = [c for c in pairs if c <= 0.98]  # near-duplicates left out
    mean = sum(pairs) / len(pairs)
    bg = cosine_background(vectors)
    assert bg is not None and bg.vectors == 12  # the zero vector is left out
    assert math.isclose(bg.mean, mean) and math.isclose(bg.sd, math.sqrt(sum((c - mean) ** 2 for c in pairs) / len(pairs)))
    assert cosine_background(vectors[:11]) is None  # 11 vectors: too few to say what "unrelated" scores


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=14),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
       st.sampled_from([None, {"keyword": 0.0}, {"dense": 0.0}, {"dense": 1.0, "keyword": 3.0}]))
def test_every_result_is_in_the_fused_order_and_in_0_1(docs: list[list[str]], query: list[str],
                                                       weights: dict[str, float] | None) -> None:
    retriever = EnsembleRRFRetriever.from_texts([" ".join(d) for d in docs], HashingEmbedding(32),
                                                ids=[f"d{i}" for i in range(len(docs))])
    try:
        hits = retriever.search(" ".join(query), k=20, weights=weights).hits
    finally:
        retriever.close()
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(0.0 <= h.relevance <= h.normalized_score <= 1.0 for h in hits)
    assert all(a.relevance >= b.relevance for a, b in zip(hits, hits[1:]))
