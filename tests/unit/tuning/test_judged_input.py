"""``tune()`` at the door: queries and qrels of the wrong shape are our errors, integer ids are strings, grades are
integers from 0 to :data:`~rrf_retriever.tuning.judged_input.MAX_GRADE`, and judged queries whose relevant
documents the index does not hold are refused (the report would be all zeros), through ``tune`` and
``retriever.tune``. Real stores (FTS5, qdrant-client local mode) with the hashing embedder (plumbing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from rrf_retriever.tuning import tune

TEXTS = {f"d{i}": f"document {i} about topic{i} and shared words" for i in range(12)}
QUERIES = {f"q{i}": f"topic{i}" for i in range(6)}
QRELS = {f"q{i}": {f"d{i}": 1} for i in range(6)}


@pytest.fixture(scope="module")
def engine() -> Iterator[HybridEngine]:
    eng = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(16)), "keyword": FTS5KeywordStore()})
    eng.add(list(TEXTS), list(TEXTS.values()))
    yield eng
    eng.close()


def run(engine: HybridEngine, queries: Any = QUERIES, qrels: Any = QRELS) -> Any:
    return tune(engine, queries, qrels, "mrr@10", folds=2, apply=False, resamples=50)


@pytest.mark.parametrize(("grade", "error", "needle"), [
    ("1", InvalidTypeError, "'1'"),
    (None, InvalidTypeError, "None"),
    (1.0, InvalidTypeError, "1.0"),
    (True, InvalidTypeError, "True"),
    (float("nan"), InvalidTypeError, "nan"),
    pytest.param(10**400, InvalidArgumentError, "digits", id="huge"),
    # repr() of it raises ValueError (Python's int-to-str limit): the message must not
    pytest.param(10**5000, InvalidArgumentError, "digits", id="past-the-digit-limit"),
    (-1, InvalidArgumentError, "-1"),
])
def test_a_bad_grade_is_our_error_naming_the_query_and_document(engine: HybridEngine, grade: Any,
                                                                 error: type[Exception], needle: str) -> None:
    qrels = {**QRELS, "q1": {"d1": grade}}
    with pytest.raises(error) as info:
        run(engine, qrels=qrels)
    assert "'q1'" in str(info.value) and "'d1'" in str(info.value) and needle in str(info.value)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize(("queries", "qrels", "needle"), [
    (list(QUERIES.values()), QRELS, "queries"),
    (QUERIES, [("q0", "d0", 1)], "qrels"),
    (QUERIES, {**QRELS, "q1": ["d1"]}, "'q1'"),
    (QUERIES, {**QRELS, "q1": {("d", 1): 1}}, "document id"),
    (QUERIES, {**QRELS, 2.5: {"d1": 1}}, "query id"),
    ({**QUERIES, None: "x"}, QRELS, "query id"),
])
def test_a_wrong_shape_is_our_type_error(engine: HybridEngine, queries: Any, qrels: Any, needle: str) -> None:
    with pytest.raises(InvalidTypeError) as info:
        run(engine, queries, qrels)
    assert needle in str(info.value)


def test_integer_ids_are_strings(engine: HybridEngine) -> None:
    queries = {i: f"topic{i}" for i in range(6)}
    qrels = {i: {f"d{i}": 1} for i in range(6)}
    report = run(engine, queries, qrels)
    assert set(report.per_query) == {str(i) for i in range(6)}
    as_text = run(engine)
    assert report.current_score == as_text.current_score > 0
    mixed = run(engine, {str(i): f"topic{i}" for i in range(6)}, qrels)  # an int in qrels finds its str query
    assert mixed.current_score == report.current_score


def test_an_id_given_both_as_int_and_str_is_refused(engine: HybridEngine) -> None:
    with pytest.raises(InvalidArgumentError, match="'1'"):
        run(engine, {**QUERIES, 1: "again", "1": "twice"}, QRELS)


def test_an_index_holding_none_of_the_judged_documents_is_refused(engine: HybridEngine) -> None:
    qrels = {qid: {"elsewhere-" + doc: 1 for doc in docs} for qid, docs in QRELS.items()}
    with pytest.raises(InvalidArgumentError, match="none of the 6 judged"):
        run(engine, qrels=qrels)


def test_qrels_judging_nothing_relevant_are_refused(engine: HybridEngine) -> None:
    with pytest.raises(InvalidArgumentError, match="relevant"):
        run(engine, qrels={qid: {doc: 0 for doc in docs} for qid, docs in QRELS.items()})


def test_the_retriever_door_refuses_the_same(tmp_path: Any) -> None:
    with EnsembleRRFRetriever.from_texts(list(TEXTS.values()), HashingEmbedding(16), ids=list(TEXTS)) as r:
        with pytest.raises(InvalidArgumentError, match="none of the 6 judged"):
            r.tune(QUERIES, {qid: {"x" + d: 1 for d in docs} for qid, docs in QRELS.items()}, folds=2)
        with pytest.raises(InvalidTypeError):
            r.tune(QUERIES, {**QRELS, "q1": {"d1": "1"}}, folds=2)
        assert r.tune({i: f"topic{i}" for i in range(6)}, {i: {f"d{i}": 1} for i in range(6)}, folds=2,
                      apply=False).n_queries == 6


def test_judged_documents_no_setting_ranks_are_refused_not_reported_as_zeros(engine: HybridEngine) -> None:
    # stored, but every query excludes its own relevant document: every setting scores 0 on every query
    queries = {qid: {"text": text, "exclude_ids": list(QRELS[qid])} for qid, text in QUERIES.items()}
    before = engine.settings
    with pytest.raises(InvalidArgumentError, match="every score is 0"):
        tune(engine, queries, QRELS, "mrr@10", folds=2, resamples=50)
    assert engine.settings is before

