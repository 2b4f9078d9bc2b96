"""The weak-leg rule: its pure decision (closed-form cases, properties) and what the engine does with it."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever import Analyzer, FTS5KeywordStore, HashingEmbedding, QdrantEdgeDenseStore, as_embedding
from rrf_retriever.embeddings import MiniLMEmbedding
from rrf_retriever.embeddings.base import declared_languages, declared_window
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.legs import DenseLeg, KeywordLeg
from rrf_retriever.engine.weak_legs import (
    MIN_COVERAGE,
    TOP_N,
    WEAK_FACTOR,
    LegView,
    corpus_language,
    coverage,
    leg_views,
    weak_leg_weights,
)
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.types import Hit

WEIGHTS = {"dense": 1.0, "keyword": 1.25}
ENGLISH_DENSE = LegView("dense", speaks_corpus=True, language="english", window_tokens=256)
KEYWORD = LegView("keyword", language="english")


def ranked_hits(prefix: str, n: int, *, text: str = "short text", flat: bool = False) -> list[Hit]:
    return [Hit(f"{prefix}{i}", text=text, score=1.0 if flat else 1.0 - i / 100) for i in range(n)]


# ---- the decision, closed form -------------------------------------------------------------------------


def test_identical_legs_change_nothing() -> None:
    same = ranked_hits("d", 12)
    decision = weak_leg_weights({"dense": same, "keyword": same}, WEIGHTS, {"dense": ENGLISH_DENSE,
                                                                             "keyword": KEYWORD})
    assert decision.weights == WEIGHTS and decision.notes == {}


def test_flat_scores_are_not_an_input() -> None:
    # equal top scores (templated texts): the keyword leg still says which documents matched; nothing changes
    ranked = {"dense": ranked_hits("d", TOP_N, flat=True), "keyword": ranked_hits("k", TOP_N, flat=True)}
    assert weak_leg_weights(ranked, WEIGHTS, {"dense": ENGLISH_DENSE, "keyword": KEYWORD}).notes == {}


def test_corpus_language_not_spoken_weights_dense_down() -> None:
    german = LegView("dense", speaks_corpus=False, language="german", window_tokens=256)
    decision = weak_leg_weights({"dense": ranked_hits("d", 5), "keyword": ranked_hits("k", 5)}, WEIGHTS,
                                {"dense": german, "keyword": KEYWORD})
    assert decision.weights["dense"] == pytest.approx(WEAK_FACTOR * 1.0)
    assert decision.weights["keyword"] == 1.25
    assert "corpus language (german)" in decision.notes["dense"]


def test_long_documents_weight_dense_down_and_short_ones_do_not() -> None:
    long_text = "word " * 600  # ~800 tokens: a 256-token model reads ~32%
    ranked = {"dense": ranked_hits("d", 5, text=long_text), "keyword": ranked_hits("k", 5, text=long_text)}
    views = {"dense": ENGLISH_DENSE, "keyword": KEYWORD}
    decision = weak_leg_weights(ranked, WEIGHTS, views)
    assert decision.weights["dense"] == pytest.approx(WEAK_FACTOR)
    assert "long documents" in decision.notes["dense"] and "~32%" in decision.notes["dense"]
    short = {"dense": ranked_hits("d", 5), "keyword": ranked_hits("k", 5)}
    assert weak_leg_weights(short, WEIGHTS, views).notes == {}
    undeclared = {"dense": LegView("dense"), "keyword": KEYWORD}  # no window declared: not judged
    assert weak_leg_weights(ranked, WEIGHTS, undeclared).notes == {}


def test_coverage_is_the_median_share_read() -> None:
    texts = ["word " * 96, "word " * 384, "word " * 768]  # 128, 512, 1024 tokens
    assert coverage([Hit(str(i), text=t) for i, t in enumerate(texts)], 256) == pytest.approx(0.5)
    assert coverage([Hit("a", text="x"), Hit("b")], 256) is None  # too few texts to judge
    assert 0.32 < MIN_COVERAGE <= 0.75  # the long-document case below is judged weak, a 75% read is not


def test_every_leg_weak_keeps_the_weights_and_says_so() -> None:
    german = LegView("dense", speaks_corpus=False, language="german")
    ranked = {"dense": ranked_hits("d", 5), "dense_recent": ranked_hits("r", 5)}
    weights = {"dense": 1.0, "dense_recent": 0.5}
    decision = weak_leg_weights(ranked, weights, {"dense": german, "dense_recent": german})
    assert decision.weights == weights
    assert all(note.startswith("weight kept") for note in decision.notes.values())


def test_one_leg_or_a_zero_weight_leg_is_never_touched() -> None:
    german = LegView("dense", speaks_corpus=False, language="german")
    only = weak_leg_weights({"dense": ranked_hits("d", 3)}, {"dense": 1.0}, {"dense": german})
    assert only.weights == {"dense": 1.0} and only.notes == {}
    silent = weak_leg_weights({"dense": ranked_hits("d", 3), "keyword": []}, WEIGHTS, {"dense": german})
    assert silent.weights == WEIGHTS  # the keyword leg found nothing: dense is all there is
    zero = weak_leg_weights({"dense": ranked_hits("d", 3), "keyword": ranked_hits("k", 3)},
                            {"dense": 1.0, "keyword": 0.0}, {"dense": german})
    assert zero.weights == {"dense": 1.0, "keyword": 0.0}


# ---- properties ----------------------------------------------------------------------------------------

TEXT = st.sampled_from(["", "short text", "word " * 50, "word " * 700])
HITS = st.lists(st.builds(lambda i, s, t: Hit(f"d{i}", text=t, score=s), st.integers(0, 15),
                          st.floats(allow_nan=True, allow_infinity=True), TEXT), max_size=14)
VIEW = st.builds(LegView, st.sampled_from(["dense", "keyword", "retriever"]), st.booleans(),
                 st.sampled_from([None, "german", "english"]), st.one_of(st.none(), st.integers(1, 1024)))
NAMES = st.sampled_from(["dense", "keyword", "extra"])


@given(st.dictionaries(NAMES, HITS, max_size=3), st.dictionaries(NAMES, VIEW, max_size=3),
       st.lists(st.floats(min_value=0, max_value=10), min_size=3, max_size=3))
def test_weights_stay_within_zero_and_the_given_weight_and_nothing_raises(ranked, views, values) -> None:
    weights = dict(zip(["dense", "keyword", "extra"], values))
    before = copy.deepcopy((ranked, views, weights))
    decision = weak_leg_weights(ranked, weights, views)
    assert (ranked, views, weights) == before  # inputs never mutated
    assert set(decision.weights) == set(weights)
    assert all(0.0 <= decision.weights[n] <= weights[n] for n in weights)
    assert set(decision.notes) <= set(ranked)
    live = [n for n in ranked if ranked[n] and weights[n] > 0]
    assert any(decision.weights[n] == weights[n] for n in live) or not live  # never every leg down


# ---- what the embedders declare, and the legs' views ---------------------------------------------------


def test_minilm_declares_english_and_its_window() -> None:
    assert MiniLMEmbedding.languages == frozenset({"english"})
    assert declared_languages(HashingEmbedding()) is None and declared_window(HashingEmbedding()) is None


def test_a_wrapped_model_passes_its_declarations_through() -> None:
    class Model:
        languages = ("German", "English")
        window_tokens = 512

        def embed_documents(self, texts):
            return [[1.0, 0.0] for _ in texts]

        def embed_query(self, text):
            return [1.0, 0.0]

    adapter = as_embedding(Model())
    assert adapter.languages == frozenset({"german", "english"}) and adapter.window_tokens == 512


def english_embedding() -> HashingEmbedding:
    emb = HashingEmbedding()
    emb.languages = frozenset({"english"})
    return emb


def test_leg_views_read_the_corpus_language_from_the_keyword_analyzer() -> None:
    dense = DenseLeg(QdrantEdgeDenseStore(english_embedding()))
    german = KeywordLeg(FTS5KeywordStore(analyzer=Analyzer(language="de")))
    assert corpus_language([("dense", dense), ("keyword", german)]) == "german"
    views = leg_views([("dense", dense), ("keyword", german)])
    assert views["dense"].speaks_corpus is False and views["keyword"].kind == "keyword"
    english = KeywordLeg(FTS5KeywordStore())
    assert leg_views([("dense", dense), ("keyword", english)])["dense"].speaks_corpus is True
    silent = DenseLeg(QdrantEdgeDenseStore(HashingEmbedding()))  # declares nothing: speaks the corpus
    assert leg_views([("dense", silent), ("keyword", german)])["dense"].speaks_corpus is True


# ---- the engine ----------------------------------------------------------------------------------------

DOCS = ["Das Haus am See ist alt", "Der Hund schläft im Haus", "Die Katze sitzt auf dem Dach",
        "Ein Baum steht im Garten", "Das Auto fährt schnell"]


def german_engine() -> HybridEngine:
    engine = HybridEngine({"dense": QdrantEdgeDenseStore(english_embedding()),
                           "keyword": FTS5KeywordStore(analyzer=Analyzer(language="german"))})
    engine.add([f"d{i}" for i in range(len(DOCS))], DOCS)
    return engine


def test_the_trace_says_the_dense_leg_was_weighted_down() -> None:
    with german_engine() as engine:
        result = engine.search("Haus")
        dense = next(t for t in result.trace.legs if t.name == "dense")
        assert dense.weight == pytest.approx(WEAK_FACTOR)
        assert "corpus language (german)" in (dense.note or "")
        as_dict = result.trace.to_dict()
        assert as_dict["stage_counts"]["weak_legs"] == 1
        assert as_dict["weights"]["dense"] == pytest.approx(WEAK_FACTOR)
        assert result.ids[:2] == ["d0", "d1"] or result.ids[:2] == ["d1", "d0"]  # the keyword matches first


def test_explicit_call_weights_hold_and_the_rule_can_be_switched_off() -> None:
    with german_engine() as engine:
        given = engine.search("Haus", weights={"dense": 1.0})
        dense = next(t for t in given.trace.legs if t.name == "dense")
        assert dense.weight == 1.0 and not (dense.note or "")
        assert "weak_legs" not in given.trace.stage_counts
        engine.update_settings(weak_legs=False)
        off = engine.search("Haus")
        assert next(t for t in off.trace.legs if t.name == "dense").weight == 1.0
        with pytest.raises(InvalidArgumentError, match="weak_legs"):
            engine.update_settings(weak_legs="no")
