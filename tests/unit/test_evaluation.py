"""evaluation.py: BEIR metrics through ranx (slow: ranx's first call compiles with numba)."""

from __future__ import annotations

import pytest

from rrf_retriever.evaluation import evaluate, remove_identical_ids

pytestmark = pytest.mark.slow


def test_a_document_whose_id_equals_its_query_id_counts_by_default() -> None:
    # MED, CACM and NPL number queries and documents alike ("1".."93"): doc "1" is not query "1". Dropping it by
    # default (BEIR's ArguAna rule) silently removed real hits there; only ArguAna-like sets opt in.
    run = {"1": {"1": 2.0, "7": 1.0}}
    qrels = {"1": {"1": 1}}
    assert evaluate(run, qrels, ("mrr@10",)) == {"mrr@10": 1.0}
    assert evaluate(run, qrels, ("mrr@10",), ignore_identical_ids=True) == {"mrr@10": 0.0}
    assert remove_identical_ids(run) == {"1": {"7": 1.0}}
