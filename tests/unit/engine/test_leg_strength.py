"""Legs measured on the corpus: pseudo-queries, the legs' measured strength, and the weights it implies."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever import FTS5KeywordStore
from rrf_retriever.engine.leg_strength import (
    BUDGET,
    EPS,
    MIN_CHARS,
    MIN_PSEUDO,
    MIN_RATIO,
    SPAN_WORDS,
    TOP_N,
    LegStrength,
    bm25_rankings,
    bm25_scores,
    leg_strength,
    pseudo_queries,
    reciprocal_rank,
    sentences,
    strength_weights,
    within_budget,
)
from rrf_retriever.engine.weak_legs import WEAK_FACTOR

WEIGHTS = {"dense": 1.0, "keyword": 1.25}


# ---- sentences and pseudo-queries ------------------------------------------------------------------------


def test_sentences_split_at_end_marks_and_line_breaks() -> None:
    assert sentences("A title\nIt begins here. Does it end? Yes!") == ["A title", "It begins here.", "Does it end?",
                                                                      "Yes!"]
    assert sentences("第一句。第二句！第三") == ["第一句。", "第二句！", "第三"]
    assert sentences("هل هذا سؤال؟ نعم") == ["هل هذا سؤال؟", "نعم"]
    assert sentences("3.5 percent of e.g.x") == ["3.5 percent of e.g.x"]  # no space after the dot: one sentence
    assert sentences("  \n ") == []


def test_a_text_without_end_marks_is_cut_into_word_spans() -> None:
    words = [f"w{i}" for i in range(2 * SPAN_WORDS + 3)]
    parts = sentences(" ".join(words))
    assert parts == [" ".join(words[:SPAN_WORDS]), " ".join(words[SPAN_WORDS:2 * SPAN_WORDS]),
                     " ".join(words[2 * SPAN_WORDS:])]
    assert sentences(" ".join(words[: 2 * SPAN_WORDS - 1])) == [" ".join(words[: 2 * SPAN_WORDS - 1])]


def test_a_pseudo_query_is_a_held_out_sentence_and_the_remainder_the_rest() -> None:
    text = "The first sentence is long enough. The second sentence is long too. A third one, also long."
    (p,) = pseudo_queries([text])
    assert p.index == 0
    assert p.query in sentences(text)
    assert sorted([p.query, *sentences(p.remainder)]) == sorted(sentences(text))
    assert p.query not in p.remainder


def test_documents_of_one_short_sentence_give_no_pseudo_query() -> None:
    assert pseudo_queries(["One sentence, and only one, here.", "Short. Tiny.", ""]) == []


def test_pseudo_queries_are_seeded_bounded_and_nested() -> None:
    texts = [f"Document number {i} talks about topic {i}. It says more about topic {i} here." for i in range(50)]
    ten = pseudo_queries(texts, 10)
    assert len(ten) == 10
    assert pseudo_queries(texts, 10) == ten
    assert pseudo_queries(texts, 4) == ten[:4]
    assert len({p.index for p in pseudo_queries(texts, 50)}) == 50
    assert pseudo_queries(texts, 10, seed=1) != ten
    assert pseudo_queries(texts, 0) == []
    with pytest.raises(ValueError, match="n must be"):
        pseudo_queries(texts, -1)


_SETTINGS = settings(max_examples=100, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_sentence = st.text(st.sampled_from("abc xyz"), min_size=0, max_size=40).map(lambda s: s.strip() + ".")


@_SETTINGS
@given(st.lists(st.lists(_sentence, min_size=0, max_size=5).map(" ".join), max_size=12), st.integers(0, 15))
def test_pseudo_queries_property(texts: list[str], n: int) -> None:
    before = copy.deepcopy(texts)
    out = pseudo_queries(texts, n)
    assert texts == before
    assert len(out) <= n
    assert len({p.index for p in out}) == len(out)
    for p in out:
        assert len(p.query) >= MIN_CHARS and len(p.remainder) >= MIN_CHARS
        assert sorted([p.query, *sentences(p.remainder)]) == sorted(sentences(texts[p.index]))


# ---- the measured strength -------------------------------------------------------------------------------


def test_reciprocal_rank_counts_the_top_only() -> None:
    assert reciprocal_rank(["a", "b"], "a") == 1.0
    assert reciprocal_rank([str(i) for i in range(20)], "3") == 0.25
    assert reciprocal_rank([str(i) for i in range(20)], str(TOP_N)) == 0.0
    assert reciprocal_rank([], "a") == 0.0


def test_leg_strength_closed_form() -> None:
    s = leg_strength({"dense": [["x", "a"], ["b"], []], "keyword": [["a"], ["b"], ["c", "x", "z"]]}, ["a", "b", "z"])
    assert s.n == 3
    assert s.mrr == pytest.approx({"dense": 0.5, "keyword": (1 + 1 + 1 / 3) / 3})
    assert s.success == pytest.approx({"dense": 2 / 3, "keyword": 1.0})
    assert s.ratios()["keyword"] == 1.0
    assert s.ratios()["dense"] == pytest.approx((0.5 + EPS) / (7 / 9 + EPS))


def test_leg_strength_checks_one_answer_per_pseudo_query() -> None:
    with pytest.raises(ValueError, match="2 answers for 1"):
        leg_strength({"dense": [["a"], ["b"]]}, ["a"])
    assert leg_strength({"dense": []}, []).mrr == {"dense": 0.0}


# ---- the weights -----------------------------------------------------------------------------------------


def test_a_weak_dense_leg_is_weighted_down() -> None:
    w, notes = strength_weights(LegStrength(200, {"dense": 0.025, "keyword": 0.69}, {}), WEIGHTS)
    assert w == {"dense": WEAK_FACTOR, "keyword": 1.25}
    assert set(notes) == {"dense"} and "pseudo-queries" in notes["dense"]


def test_a_weak_keyword_leg_is_weighted_down() -> None:
    w, notes = strength_weights(LegStrength(200, {"dense": 0.8, "keyword": 0.1}, {}), WEIGHTS)
    assert w == {"dense": 1.0, "keyword": 1.25 * WEAK_FACTOR}
    assert set(notes) == {"keyword"}


def test_legs_of_comparable_strength_keep_their_weights() -> None:
    # MED: dense 0.617, keyword 0.653 on its pseudo-queries; med-long4-first 0.282 / 0.640 (ratio 0.45)
    for dense, keyword in ((0.617, 0.653), (0.282, 0.640), (0.0, 0.0)):
        assert strength_weights(LegStrength(200, {"dense": dense, "keyword": keyword}, {}), WEIGHTS) == (WEIGHTS, {})


def test_too_few_pseudo_queries_say_nothing() -> None:
    weak = {"dense": 0.0, "keyword": 0.9}
    assert strength_weights(LegStrength(MIN_PSEUDO - 1, weak, {}), WEIGHTS) == (WEIGHTS, {})
    assert strength_weights(LegStrength(MIN_PSEUDO, weak, {}), WEIGHTS)[0]["dense"] == WEAK_FACTOR


def test_the_threshold_is_the_ratio() -> None:
    best = 0.5
    just_below = MIN_RATIO * (best + EPS) - EPS - 1e-6
    just_above = MIN_RATIO * (best + EPS) - EPS + 1e-6
    assert strength_weights(LegStrength(100, {"d": just_below, "k": best}, {}), {"d": 1.0, "k": 1.0})[0]["d"] < 1.0
    assert strength_weights(LegStrength(100, {"d": just_above, "k": best}, {}), {"d": 1.0, "k": 1.0})[0]["d"] == 1.0


def test_a_leg_not_measured_keeps_its_weight() -> None:
    w, _ = strength_weights(LegStrength(100, {"dense": 0.0, "keyword": 0.9}, {}), {"keyword": 1.0, "other": 2.0})
    assert w == {"keyword": 1.0, "other": 2.0}


@_SETTINGS
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(0.0, 1.0), min_size=1),
       st.integers(0, 400), st.floats(0.0, 5.0))
def test_strength_weights_property(mrr: dict[str, float], n: int, weight: float) -> None:
    weights = {leg: weight for leg in mrr}
    strength = LegStrength(n, dict(mrr), {})
    before = (copy.deepcopy(weights), copy.deepcopy(strength))
    out, notes = strength_weights(strength, weights)
    assert (weights, strength) == before
    assert set(out) == set(weights)
    assert all(0.0 <= out[k] <= weights[k] for k in out)
    strongest = max(mrr, key=lambda k: mrr[k])
    assert out[strongest] == weights[strongest]  # never every leg
    assert set(notes) == {k for k in out if out[k] != weights[k]} or weight == 0.0
    if n < MIN_PSEUDO:
        assert out == weights and notes == {}


def test_the_factor_is_a_parameter_in_the_unit_interval() -> None:
    weak = LegStrength(200, {"dense": 0.0, "keyword": 0.9}, {})
    assert strength_weights(weak, WEIGHTS, factor=0.0)[0] == {"dense": 0.0, "keyword": 1.25}
    assert strength_weights(weak, WEIGHTS, factor=0.01)[1]["dense"].startswith("weighted down (x0.01)")
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="factor"):
            strength_weights(weak, WEIGHTS, factor=bad)


def test_within_budget_is_the_longest_prefix_under_the_share_with_a_floor() -> None:
    assert within_budget([5.0] * 200, 10_000, share=0.1) == 200  # 1,000 <= 10% of 10,000
    assert within_budget([5.0] * 200, 5_000, share=0.1) == 100
    assert within_budget([5.0] * 200, 10_000) == int(BUDGET * 10_000 / 5.0)
    assert within_budget([100.0] * 200, 1_000) == MIN_PSEUDO  # a small corpus: the floor
    assert within_budget([1.0] * 10, 0) == 10  # fewer than the floor: all of them
    assert within_budget([], 100) == 0
    assert within_budget([5.0] * 200, 5_000, share=0.2) == 200


@_SETTINGS
@given(st.lists(st.floats(0.0, 1e4), max_size=300), st.floats(0.0, 1e6))
def test_within_budget_property(costs: list[float], corpus: float) -> None:
    n = within_budget(costs, corpus)
    assert min(len(costs), MIN_PSEUDO) <= n <= len(costs)
    if n > MIN_PSEUDO:
        assert sum(costs[:n]) <= BUDGET * corpus + 1e-6


# ---- on a real keyword store -----------------------------------------------------------------------------


def test_pseudo_queries_measure_a_real_keyword_leg_against_a_blind_one() -> None:
    topics = ["volcano lava eruption magma", "violin orchestra concerto bow", "glacier ice melting arctic",
              "compiler parser syntax tokens", "bakery bread dough yeast", "satellite orbit launch rocket"]
    texts = [f"Notes on {t} number {i}. The {t} matter is described at length. More on {t.split()[1]} and "
             f"{t.split()[2]} follows." for i, t in enumerate(topics * 6)]
    ids = [f"d{i}" for i in range(len(texts))]
    sample = pseudo_queries(texts, 36)
    assert len(sample) >= MIN_PSEUDO
    indexed = list(texts)
    for p in sample:
        indexed[p.index] = p.remainder
    store = FTS5KeywordStore()
    try:
        store.add(ids, indexed)
        keyword = [[h.id for h in store.search(p.query, TOP_N)] for p in sample]
    finally:
        store.close()
    blind = [[f"d{(p.index + 7) % len(ids)}"] for p in sample]  # a leg that never finds the source
    s = leg_strength({"keyword": keyword, "dense": blind}, [ids[p.index] for p in sample])
    assert s.success["keyword"] > 0.9 and s.mrr["dense"] == 0.0
    w, notes = strength_weights(s, WEIGHTS)
    assert w == {"dense": WEAK_FACTOR, "keyword": 1.25} and set(notes) == {"dense"}


# ---- BM25 over the sub-corpus ------------------------------------------------------------------------------


terms = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=8)


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(terms, min_size=1, max_size=12), query=st.lists(st.sampled_from(["a", "b", "c", "z"]),
                                                                     min_size=1, max_size=4))
def test_bm25_scores_are_bm25s_lucene_scores_times_k1_plus_1(docs: list[list[str]], query: list[str]) -> None:
    import bm25s

    reference = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    reference.index([d or ["-empty-"] for d in docs], show_progress=False)  # bm25s needs a token per document
    assume_same = all(docs)  # an empty document: bm25s counts the placeholder in the length
    ours = bm25_scores(docs, [query])[0]
    if assume_same:
        expected = reference.get_scores(list(dict.fromkeys(query)))
        for i in range(len(docs)):
            # bm25s' lucene variant drops the constant (k1 + 1) factor (as Lucene 8 does): the same ranking
            assert ours.get(i, 0.0) / 2.2 == pytest.approx(float(expected[i]), rel=1e-5, abs=1e-6)
    assert set(ours) == {i for i, d in enumerate(docs) if set(d) & set(query)}


def test_bm25_rankings_order_by_score_then_index_and_stop_at_the_depth() -> None:
    docs = [["x"], ["x", "y"], ["x"], ["y", "y"]]
    assert bm25_rankings(docs, [["x"]], depth=2) == [[0, 2]]
    assert bm25_rankings(docs, [["y"], ["q"], []]) == [[3, 1], [], []]
    assert bm25_rankings([], [["x"]]) == [[]]
