"""Fuzz: arbitrary queries, filters, ids, weights and sizes give results or OUR errors, never a raw traceback.

Hypothesis drives ``build_match_query``, ``FTS5KeywordStore.search``, ``BM25KeywordStore.search`` and the
retriever's ``search`` / LangChain ``invoke`` / LlamaIndex ``scoped(...).retrieve`` with strings holding NUL,
lone surrogates, control characters, FTS5 syntax and up to megabytes, with filters of random keys and values of
random types, random ids, weights (NaN, inf, negative, strings) and counts. Any exception that is not an
:class:`~rrf_retriever.errors.RRFRetrieverError` (a raw sqlite3, Qdrant, pydantic or numpy error) fails the test.
The soak runs >= 10,000 inputs; this runs 6 x 120.
"""

from __future__ import annotations

import pytest

from tests.reliability.workloads import FUZZ_TARGETS, run_fuzz


@pytest.mark.slow
def test_fuzzed_inputs_give_results_or_our_errors_only() -> None:
    result = run_fuzz(examples_per_target=120, seed=1)
    assert result["unexpected"] == []
    assert result["inputs"] == 6 * 120
    for target in FUZZ_TARGETS:
        # Most inputs are valid-but-hostile, so the calls reach the stores, not only the argument checks.
        assert result["outcomes"].get(f"{target}:ok", 0) > 40, (target, result["outcomes"])
