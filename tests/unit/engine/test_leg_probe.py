"""The legs measured on the corpus when an index is built or grows: real qdrant-edge stores, plumbing embedders.

The embedders here are deterministic stand-ins whose strength on the corpus is known by construction: one that
gives every text a random vector (a dense leg that finds nothing), one that maps every word of a document to that
document's direction (a dense leg that always finds its document), over corpora whose sentences share words with
the rest of their document or none (a keyword leg that finds its document, or nothing).
"""

from __future__ import annotations

import json
import logging
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.engine.leg_probe import MIN_DOCS, LegProbe, MeasuredLegs, WeightsExplanation
from rrf_retriever.engine.leg_strength import MIN_PSEUDO, MIN_RATIO, LegStrength
from rrf_retriever.engine.weak_legs import WEAK_FACTOR

DIM = 128


def random_vectors(texts: list[str]) -> list[list[float]]:
    """A vector per text from a hash of the whole text: no two texts alike, a dense leg that finds nothing."""
    out = []
    for t in texts:
        v = np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM)
        out.append((v / np.linalg.norm(v)).tolist())
    return out


def topic_vectors(texts: list[str]) -> list[list[float]]:
    """Every word ``t<i>...`` points to document ``i``'s direction: a dense leg that always finds its document."""
    out = []
    for t in texts:
        v = np.zeros(DIM)
        for word in t.split():
            if word.startswith("t") and "x" in word:
                v[int(word[1:word.index("x")]) % DIM] += 1.0
        v[DIM - 1] += 1e-3  # never a zero vector
        out.append((v / np.linalg.norm(v)).tolist())
    return out


def shared_words_corpus(n: int) -> list[str]:
    """Documents of three sentences that share their document's words (a keyword leg finds the source)."""
    return [" ".join(f"Sentence {j} of t{i}x0 t{i}x1 t{i}x2 mentions t{i}x{j + 3} here." for j in range(3))
            for i in range(n)]


def disjoint_words_corpus(n: int) -> list[str]:
    """Documents of three sentences, none sharing a word with another (a keyword leg finds nothing)."""
    return [" ".join(" ".join(f"t{i}x{j}w{m}" for m in range(5)) + "." for j in range(3)) for i in range(n)]


def build(texts: list[str], embed: Any, **kwargs: Any) -> EnsembleRRFRetriever:
    return EnsembleRRFRetriever.from_texts(texts, embed, ids=[f"d{i}" for i in range(len(texts))], **kwargs)


def test_a_build_measures_the_legs_and_a_weak_dense_leg_is_weighted_down_in_every_query() -> None:
    with build(shared_words_corpus(80), random_vectors) as r:
        measured = r.engine.leg_probe.measured
        assert measured is not None and measured.strength is not None
        assert measured.doc_count == 80 and measured.sample_docs == 80 and measured.strength.n >= MIN_PSEUDO
        ratios = measured.strength.ratios()
        assert ratios["keyword"] == 1.0 and ratios["dense"] < MIN_RATIO
        trace = r.search("t5x0 t5x1 mentions").trace
        legs = {t.name: t for t in trace.legs}
        assert legs["dense"].weight == pytest.approx(1.0 * WEAK_FACTOR)
        assert "pseudo-queries from the corpus" in (legs["dense"].note or "")
        assert legs["keyword"].weight == pytest.approx(1.25) and trace.stage_counts["weak_legs"] == 1
        explained = r.explain_weights()
        assert isinstance(explained, WeightsExplanation)
        by_name = {leg.name: leg for leg in explained.legs}
        assert by_name["dense"].corpus_weight == pytest.approx(WEAK_FACTOR) and by_name["keyword"].corpus_weight == 1.25
        assert "dense (dense): weight 1 -> 0.05" in str(explained)


def test_a_weak_keyword_leg_beside_a_strong_dense_leg_is_weighted_down() -> None:
    with build(disjoint_words_corpus(80), topic_vectors) as r:
        measured = r.engine.leg_probe.measured
        assert measured is not None and measured.strength is not None
        assert measured.strength.mrr["dense"] == 1.0 and measured.strength.mrr["keyword"] == 0.0
        legs = {t.name: t for t in r.search("t7x0w0 t7x1w1").trace.legs}
        assert legs["keyword"].weight == pytest.approx(1.25 * WEAK_FACTOR)
        assert legs["dense"].weight == 1.0 and legs["dense"].note is None


def test_legs_that_both_find_their_documents_keep_their_weights_and_rank_as_without_the_rule() -> None:
    texts = shared_words_corpus(80)
    with build(texts, topic_vectors) as r:
        measured = r.engine.leg_probe.measured
        assert measured is not None and measured.reasons() == {}
        with_rule = [r.search(f"t{i}x0 mentions t{i}x4").ids for i in range(0, 80, 7)]
        r.update_settings(weak_legs=False)
        assert [r.search(f"t{i}x0 mentions t{i}x4").ids for i in range(0, 80, 7)] == with_rule


def test_the_legs_are_measured_again_only_when_the_corpus_has_doubled() -> None:
    texts = shared_words_corpus(200)
    with build(texts[:MIN_DOCS], random_vectors) as r:
        first = r.engine.leg_probe.measured
        assert first is not None and first.doc_count == MIN_DOCS
        r.add_texts(texts[MIN_DOCS:100], ids=[f"d{i}" for i in range(MIN_DOCS, 100)])
        assert r.engine.leg_probe.measured is first  # 100 < 2 x 60
        r.add_texts(texts[100:130], ids=[f"d{i}" for i in range(100, 130)])
        again = r.engine.leg_probe.measured
        assert again is not first and again is not None and again.doc_count == 130


def test_a_corpus_too_small_or_the_rule_turned_off_is_not_measured() -> None:
    texts = shared_words_corpus(MIN_DOCS)
    with build(texts[:-1], random_vectors) as r:
        assert r.engine.leg_probe.measured is None
        assert "not measured yet" in str(r.explain_weights())
        assert {t.name: t.weight for t in r.search("t3x0").trace.legs} == {"dense": 1.0, "keyword": 1.25}
    with build([], random_vectors) as r:
        r.update_settings(weak_legs=False)
        r.add_texts(texts, ids=[f"d{i}" for i in range(len(texts))])
        assert r.engine.leg_probe.measured is None
        assert "weak-leg rule: off" in str(r.explain_weights())


def test_documents_of_one_sentence_give_no_estimate_and_say_so() -> None:
    texts = [f"memory {i} about t{i}x0" for i in range(100)]
    with build(texts, random_vectors) as r:
        measured = r.engine.leg_probe.measured
        assert measured is not None and measured.strength is None and measured.reasons() == {}
        assert measured.reason is not None and "0 pseudo-queries" in measured.reason
        assert {t.name: t.weight for t in r.search("memory 3").trace.legs} == {"dense": 1.0, "keyword": 1.25}


def test_an_embedder_failing_during_the_measurement_keeps_the_write_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    texts = shared_words_corpus(80)
    known = set(texts)

    def only_the_corpus(batch: list[str]) -> list[list[float]]:
        if any(t not in known for t in batch):
            msg = "the embedding service is down"
            raise RuntimeError(msg)
        return random_vectors(batch)

    with caplog.at_level(logging.WARNING, logger="rrf_retriever.engine.leg_probe"), build(texts, only_the_corpus) as r:
        assert r.engine.count() == {"dense": 80, "keyword": 80}
        measured = r.engine.leg_probe.measured
        assert measured is not None and measured.strength is None
        assert measured.reason is not None and "the embedding service is down" in measured.reason
        assert "measuring the legs failed" in caplog.text
        assert r.search(texts[5]).ids[0] == "d5"  # a text the model still embeds


def test_the_manifest_keeps_the_measurement_and_a_reopened_index_measures_no_more(tmp_path: Path) -> None:
    texts = shared_words_corpus(80)
    calls: list[int] = []

    def counted(batch: list[str]) -> list[list[float]]:
        calls.append(len(batch))
        return random_vectors(batch)

    with build(texts, counted, path=tmp_path) as r:
        measured = r.engine.leg_probe.measured
        assert measured is not None
    saved = json.loads((tmp_path / "rrf-index.json").read_text())["leg_strength"]
    assert saved == measured.as_dict()
    calls.clear()
    with EnsembleRRFRetriever.open(tmp_path, counted) as r:
        assert r.engine.leg_probe.measured == MeasuredLegs.from_dict(saved)
        assert sum(calls) <= 1  # the open checks the model's dimension on one text; no measurement
        legs = {t.name: t for t in r.search("t5x0 t5x1").trace.legs}
        assert legs["dense"].weight == pytest.approx(WEAK_FACTOR)


@pytest.mark.parametrize("damaged", [{"doc_count": "80"}, [1, 2], {"doc_count": 80, "sample_docs": 80, "n": 50,
                                     "seconds": 1.0, "reason": None, "mrr": {"dense": 7.0}, "success": {}}])
def test_a_damaged_measurement_in_the_manifest_is_not_trusted(tmp_path: Path, damaged: Any,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    texts = shared_words_corpus(80)
    build(texts, random_vectors, path=tmp_path).close()
    manifest = json.loads((tmp_path / "rrf-index.json").read_text())
    if isinstance(damaged, dict):
        manifest["leg_strength"] = damaged
        (tmp_path / "rrf-index.json").write_text(json.dumps(manifest))
        with caplog.at_level(logging.WARNING), EnsembleRRFRetriever.open(tmp_path, random_vectors) as r:
            assert r.engine.leg_probe.measured is None
            assert "leg_strength" in caplog.text
            assert {t.name: t.weight for t in r.search("t5x0").trace.legs} == {"dense": 1.0, "keyword": 1.25}
    else:  # not even an object: the manifest's own field check refuses it
        manifest["leg_strength"] = damaged
        (tmp_path / "rrf-index.json").write_text(json.dumps(manifest))
        from rrf_retriever.errors import IndexDirectoryError

        with pytest.raises(IndexDirectoryError, match="leg_strength"):
            EnsembleRRFRetriever.open(tmp_path, random_vectors)


shares = st.dictionaries(st.sampled_from(["dense", "keyword", "other"]), st.floats(0, 1), max_size=3)


@settings(max_examples=200, deadline=None)
@given(count=st.integers(0, 2**40), docs=st.integers(0, 10_000), n=st.none() | st.integers(0, 200),
       mrr=shares, success=shares, seconds=st.floats(0, 1e4), reason=st.none() | st.text(max_size=20))
def test_a_measurement_round_trips_through_its_dict(count: int, docs: int, n: int | None, mrr: dict[str, float],
                                                     success: dict[str, float], seconds: float,
                                                     reason: str | None) -> None:
    strength = None if n is None else LegStrength(n, mrr, success)
    measured = MeasuredLegs(count, strength, docs, seconds, reason if n is not None else reason or "not measured")
    back = MeasuredLegs.from_dict(json.loads(json.dumps(measured.as_dict())))
    assert back is not None and back.doc_count == count and back.sample_docs == docs
    assert back.reason == measured.reason and back.seconds == pytest.approx(round(seconds, 3))
    if strength is None:
        assert back.strength is None
    else:
        assert back.strength is not None and back.strength.n == n
        assert back.strength.mrr == pytest.approx({k: round(v, 6) for k, v in mrr.items()})


@pytest.mark.parametrize("raw", [None, "x", 3, {}, {"doc_count": -1, "sample_docs": 0, "seconds": 0},
                                 {"doc_count": True, "sample_docs": 0, "seconds": 0},
                                 {"doc_count": 5, "sample_docs": 0, "seconds": -1},
                                 {"doc_count": 5, "sample_docs": 0, "seconds": 0, "n": 40, "mrr": {"dense": "a"},
                                  "success": {}},
                                 {"doc_count": 5, "sample_docs": 0, "seconds": 0, "n": 40, "mrr": [], "success": {}},
                                 {"doc_count": 5, "sample_docs": 0, "seconds": 0, "reason": 7},
                                 {"doc_count": 5, "sample_docs": 0, "seconds": True},
                                 {"doc_count": 5, "sample_docs": 0, "seconds": float("nan")},
                                 {"doc_count": 5, "sample_docs": 0, "seconds": 0, "n": 40, "mrr": {"dense": True},
                                  "success": {}}])
def test_anything_but_a_measurement_is_refused(raw: Any) -> None:
    assert MeasuredLegs.from_dict(raw) is None
    probe = LegProbe({}, lambda ids: [])
    assert probe.restore(raw) is False and probe.measured is None


def test_two_threads_writing_at_once_measure_once_per_doubling_and_lose_nothing() -> None:
    import threading

    texts = shared_words_corpus(240)
    with build([], random_vectors) as r:
        errors: list[BaseException] = []

        def write(part: range) -> None:
            try:
                for start in range(part.start, part.stop, 20):
                    r.add_texts(texts[start:start + 20], ids=[f"d{i}" for i in range(start, start + 20)])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(range(0, 120),)),
                   threading.Thread(target=write, args=(range(120, 240),))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert r.engine.count() == {"dense": 240, "keyword": 240}
        measured = r.engine.leg_probe.measured
        assert measured is not None and measured.strength is not None and measured.doc_count >= MIN_DOCS
        # a doubling skipped while the other thread measured is measured by the next write (an upsert here)
        r.add_texts(texts[:1], ids=["d0"])
        measured = r.engine.leg_probe.measured
        assert measured is not None and 2 * measured.doc_count > 240
        assert {t.name: t.weight for t in r.search("t5x0 t5x1").trace.legs}["dense"] == pytest.approx(WEAK_FACTOR)
