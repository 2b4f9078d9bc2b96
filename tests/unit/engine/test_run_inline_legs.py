"""Legs whose stores all keep the GIL (qdrant-edge) run in the calling thread, one after the other: the same
answers as in threads, a failing leg degrades as in threads, and any other mix (or a ``leg_timeout``) still runs
in the pool."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import StoreError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeKeywordStore
from rrf_retriever.types import Hit

WORDS = "rocket fuel orbit engine nozzle thrust valve pump tank sensor".split()
IDS = [f"d{i}" for i in range(80)]
TEXTS = [f"{WORDS[i % 10]} note {i} {WORDS[(i * 7) % 10]} {WORDS[(i * 3) % 10]}" for i in range(80)]
METAS = [{"session_id": i % 4} for i in range(80)]
QUERIES = ["rocket fuel", "orbit valve pump", "sensor", "thrust nozzle tank"]


class _Where:
    """Records the thread each search ran in."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def saw(self) -> None:
        self.threads.append(threading.get_ident())


class _EdgeDense(QdrantEdgeDenseStore):
    def __init__(self, where: _Where) -> None:
        super().__init__(HashingEmbedding(32))
        self.where = where

    def search_request(self, *args: Any, **kwargs: Any) -> list[Hit]:
        self.where.saw()
        return super().search_request(*args, **kwargs)


class _EdgeKeyword(QdrantEdgeKeywordStore):
    def __init__(self, where: _Where, fail: bool = False) -> None:
        super().__init__()
        self.where = where
        self.fail = fail

    def search_request(self, *args: Any, **kwargs: Any) -> list[Hit]:
        self.where.saw()
        if self.fail:
            msg = "the keyword shard is gone"
            raise StoreError(msg)
        return super().search_request(*args, **kwargs)


def _engine(keyword: Any, dense: Any, **settings: Any) -> HybridEngine:
    engine = HybridEngine({"dense": dense, "keyword": keyword}, **settings)
    engine.add(IDS, TEXTS, METAS)
    return engine


def _answers(engine: HybridEngine) -> list[list[tuple[str, float]]]:
    out = []
    for q in QUERIES:
        for flt in (None, {"session_id": [1, 3]}):
            out.append([(h.id, round(h.score, 9)) for h in engine.search(q, top_k=10, filter=flt).hits])
    return out


def test_gil_holding_legs_run_in_the_calling_thread_with_the_threaded_answers() -> None:
    where = _Where()
    inline = _engine(_EdgeKeyword(where), _EdgeDense(where))
    threaded = _engine(_EdgeKeyword(_Where()), _EdgeDense(_Where()), leg_timeout=60.0)  # a timeout: the pool
    try:
        where.threads.clear()
        got = _answers(inline)
        assert got == _answers(threaded)
        assert any(got)
        assert set(where.threads) == {threading.get_ident()}  # both legs, every query: this thread
        trace = inline.search("rocket fuel").trace
        assert all(leg.called and leg.latency_ms >= 0 for leg in trace.legs)
    finally:
        inline.close()
        threaded.close()


@pytest.mark.parametrize("leg_timeout", [None, 60.0])
def test_a_failing_gil_holding_leg_degrades_as_in_threads(leg_timeout: float | None) -> None:
    where = _Where()
    engine = _engine(_EdgeKeyword(where), _EdgeDense(where), leg_timeout=leg_timeout)
    try:
        engine.legs["keyword"].store.fail = True
        with pytest.warns(RuntimeWarning, match="leg failed"):
            result = engine.search("rocket fuel", top_k=5)
        assert len(result.ids) == 5  # the dense leg's answer
        failed = {leg.name: leg.error for leg in result.trace.legs if leg.error}
        assert list(failed) == ["keyword"] and "gone" in str(failed["keyword"])
    finally:
        engine.close()


def test_a_leg_that_releases_the_gil_keeps_the_legs_in_threads() -> None:
    where = _Where()
    dense = _EdgeDense(where)

    class _FTS5(FTS5KeywordStore):
        def search_request(self, *args: Any, **kwargs: Any) -> list[Hit]:
            where.saw()
            return super().search_request(*args, **kwargs)

    engine = _engine(_FTS5(":memory:"), dense)
    try:
        where.threads.clear()
        assert engine.search("rocket fuel").ids
        assert threading.get_ident() not in where.threads
    finally:
        engine.close()
