"""Scope isolation, the security property: a session never sees another session's memory.

Random corpora tagged with session ids (and a tenant, and list-valued tags), random scoped queries with
exclusions, on every leg alone (weights zeroing the other), on the fused result, and on the stores themselves;
through the engine, LangChain ``invoke(filter=..., exclude_ids=...)`` and LlamaIndex ``scoped(...).retrieve``;
over every pairing of FTS5 / BM25 with Qdrant local mode / qdrant-edge. Not one returned document may lie
outside the filter or inside ``exclude_ids``. (The soak runs thousands of queries.)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from tests.reliability.workloads import WORDS, run_scope_isolation, scope_corpus, scope_engine


def test_no_document_leaves_its_scope_on_any_leg_or_framework() -> None:
    result = run_scope_isolation(n_queries=320, seed=3)
    assert result["leaks"] == []
    assert result["queries"] == 320
    # The scopes are not trivially empty: the property is really exercised. (About 3 in 10 scopes ask for a
    # numeric-looking string such as "042" that only documents carrying that exact string may match.)
    assert result["nonempty"] > 200


_CORPUS = scope_corpus(random.Random(5), 150, 6)
_META = {c[0]: c[2] for c in _CORPUS}
_values = st.one_of(st.integers(0, 6), st.sampled_from(["acme", "globex", "red", "blue", "0"]), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    flt=st.dictionaries(st.sampled_from(["session_id", "tenant", "tags", "missing"]),
                        st.one_of(_values, st.lists(_values, max_size=4)), min_size=1, max_size=3),
    excluded=st.lists(st.sampled_from(sorted(_META)), max_size=10),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    weights=st.sampled_from([{"dense": 1.0, "keyword": 0.0}, {"dense": 0.0, "keyword": 1.0},
                             {"dense": 1.0, "keyword": 1.0}]),
)
def test_arbitrary_filters_follow_the_reference_semantics(
    tmp_path_factory: Any, flt: dict[str, Any], excluded: list[str], query: str, weights: dict[str, float]
) -> None:
    """Any filter (bools vs ints, strings vs ints, list-valued metadata): results obey ``scope.matches``."""
    normalized = normalize_filter(flt)
    for engine in _engines(tmp_path_factory):
        result = engine.search(query, top_k=50, filter=flt, exclude_ids=excluded, weights=weights)
        for doc_id in result.ids:
            assert doc_id not in excluded
            assert matches(_META[doc_id], normalized), (doc_id, _META[doc_id], flt)


_ENGINES: list[Any] = []
_OPEN: list[Any] = []  # the context managers, kept alive (a collected one would close its stores)


def _engines(tmp_path_factory: Any) -> list[Any]:
    if not _ENGINES:
        tmp = Path(tmp_path_factory.mktemp("scope-prop"))
        for kw, dn in (("fts5", "qdrant"), ("bm25", "edge")):
            manager = scope_engine(kw, dn, _CORPUS, tmp)
            _OPEN.append(manager)
            _ENGINES.append(manager.__enter__())
    return _ENGINES
