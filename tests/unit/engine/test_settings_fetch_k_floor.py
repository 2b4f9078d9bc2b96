"""fetch_k below top_k is refused by the settings type itself, so the constructor, update_settings, the retriever
and PATCH /settings share one rule (a fetch_k below top_k would be reported but never used)."""

from __future__ import annotations

import pytest

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.settings import RetrievalSettings
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore


def _named_both(excinfo: pytest.ExceptionInfo[InvalidArgumentError], fetch_k: int, top_k: int) -> None:
    text = str(excinfo.value)
    assert f"fetch_k ({fetch_k})" in text and f"top_k ({top_k})" in text, text


def test_the_settings_type_refuses_fetch_k_below_top_k() -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        RetrievalSettings(weights={"keyword": 1.0}, top_k=10, fetch_k=3)
    _named_both(excinfo, 3, 10)
    assert RetrievalSettings(weights={"keyword": 1.0}, top_k=10, fetch_k=10).fetch_k == 10


def test_the_engine_constructor_refuses_fetch_k_below_top_k() -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        HybridEngine({"keyword": FTS5KeywordStore()}, fetch_k=3, top_k=10)
    _named_both(excinfo, 3, 10)


def test_the_retriever_constructor_refuses_fetch_k_below_top_k() -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        EnsembleRRFRetriever(QdrantDenseStore(HashingEmbedding(16)), FTS5KeywordStore(), fetch_k=3, top_k=10)
    _named_both(excinfo, 3, 10)


@pytest.mark.parametrize(("first", "second", "fetch_k", "top_k"), [
    ({}, {"fetch_k": 3}, 3, 10),
    ({"fetch_k": 30}, {"top_k": 40}, 30, 40),  # raising top_k past a set fetch_k
    ({}, {"top_k": 20, "fetch_k": 10}, 10, 20),
])
def test_update_settings_refuses_fetch_k_below_top_k_and_changes_nothing(
    first: dict, second: dict, fetch_k: int, top_k: int
) -> None:
    engine = HybridEngine({"keyword": FTS5KeywordStore()})
    engine.add(["a"], ["hybrid search"])
    engine.update_settings(**first)
    before = engine.settings
    with pytest.raises(InvalidArgumentError) as excinfo:
        engine.update_settings(**second)
    _named_both(excinfo, fetch_k, top_k)
    assert engine.settings is before
    assert engine.search("hybrid").trace.fetch_k >= engine.settings.top_k


def test_the_retrievers_update_settings_refuses_it_too() -> None:
    retriever = EnsembleRRFRetriever(QdrantDenseStore(HashingEmbedding(16)), FTS5KeywordStore())
    with pytest.raises(InvalidArgumentError) as excinfo:
        retriever.update_settings(fetch_k=3)
    _named_both(excinfo, 3, 10)
    assert retriever.settings.fetch_k is None


def test_fetch_k_equal_to_top_k_or_none_is_fine() -> None:
    engine = HybridEngine({"keyword": FTS5KeywordStore()}, top_k=20, fetch_k=20)
    assert engine.update_settings(top_k=40, fetch_k=None).fetch_k is None
    assert engine.update_settings(fetch_k=40, top_k=40).fetch_k == 40
