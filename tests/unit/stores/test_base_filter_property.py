"""The Done-when of the filter language: every store we own returns exactly the documents
:func:`rrf_retriever.scope.tree.matches` accepts, for random nested filters of every operator over random metadata
(:mod:`tests.unit.stores.filter_strategies`), and ``ids_matching`` lists exactly those ids.

Stores: FTS5KeywordStore (SQL over the typed side table), BM25KeywordStore with both engines (a numpy mask),
and a FunctionLeg over a plain callable (a post-filter). 100 examples each in ``make test-fast``; 2000 each
marked slow.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from rrf_retriever.engine.legs import FunctionLeg
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.types import Hit
from tests.unit.stores.filter_strategies import assert_store_scopes_exactly, cases

_FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SLOW = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _CallableRetriever:
    """A plain ``(query, k) -> hits`` function over a list, behind a FunctionLeg (as a framework retriever is)."""

    def __init__(self) -> None:
        self.docs: list[Hit] = []
        self.leg = FunctionLeg(lambda query, k: [h for h in self.docs if query in h.text][:k])

    def add(self, ids: list[str], texts: list[str], metas: list[dict[str, Any]]) -> None:
        self.docs += [Hit(i, t, m, 1.0) for i, t, m in zip(ids, texts, metas)]


def _leg_search(store: _CallableRetriever, limit: int, flt: Any, excl: frozenset[str]) -> list[Hit]:
    from rrf_retriever.scope.parse import normalize_scope
    from rrf_retriever.stores.base import SearchRequest

    return store.leg.search(SearchRequest("retriever", "alpha", None, limit, normalize_scope(flt, excl)))


def _check(store: str, case: tuple[Any, Any, frozenset[str]]) -> None:
    docs, flt, excluded = case
    if store == "fts5":
        assert_store_scopes_exactly(FTS5KeywordStore, docs, flt, excluded)
    elif store == "bm25s":
        assert_store_scopes_exactly(BM25KeywordStore, docs, flt, excluded)
    elif store == "rank_bm25":
        # rank-bm25 gives a word in most documents a negative IDF: padding documents make "alpha" rare enough.
        assert_store_scopes_exactly(lambda: BM25KeywordStore(engine="rank_bm25"), docs, flt, excluded,
                                    padding=len(docs) + 1)
    else:
        assert_store_scopes_exactly(_CallableRetriever, docs, flt, excluded, search=_leg_search)


STORES = ["fts5", "bm25s", "rank_bm25", "function_leg"]


@pytest.mark.parametrize("store", STORES)
@_FAST
@given(case=cases())
def test_store_scopes_exactly_like_the_reference(store: str, case: tuple[Any, Any, frozenset[str]]) -> None:
    _check(store, case)


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
@_SLOW
@given(case=cases())
def test_store_scopes_exactly_like_the_reference_2000(store: str, case: tuple[Any, Any, frozenset[str]]) -> None:
    _check(store, case)
