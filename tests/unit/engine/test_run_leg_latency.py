"""A leg's latency in the trace is the time of its own call: never negative, its start never after its end (it
was taken after ``pool.submit()`` returned, so a leg that finished first showed a negative latency). No duration
bound is asserted: only the order of the timestamps."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path

import pytest

from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.engine.query import prepare
from rrf_retriever.engine.run import run_in_tasks, run_in_threads
from rrf_retriever.index.directory import create_index

WORDS = "rocket fuel orbit engine nozzle thrust valve pump tank sensor".split()
QUERIES = [f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]}" for i in range(200)]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> HybridEngine:
    path: Path = tmp_path_factory.mktemp("latency") / "idx"
    engine = create_index(path, embedder="hashing:32")  # the default stack: qdrant-edge dense + BM25, one shard
    engine.add([f"d{i}" for i in range(60)], [f"{WORDS[i % 10]} note {i} {WORDS[(i * 7) % 10]}" for i in range(60)])
    return engine


def test_every_legs_latency_is_non_negative_over_many_queries(engine: HybridEngine) -> None:
    negative = []
    for text in QUERIES:
        for leg in engine.search(text).trace.legs:
            if leg.called and not leg.latency_ms >= 0:
                negative.append((text, leg.name, leg.latency_ms))
    assert not negative, negative[:5]


def test_each_legs_call_starts_before_it_ends(engine: HybridEngine) -> None:
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for text in QUERIES[:50]:
            q = prepare(engine.legs, engine.settings, text, SearchOptions())
            outcomes, _ = run_in_threads(q, pool)
            assert outcomes
            for name, outcome in outcomes.items():
                assert outcome.error is None, (name, outcome.error)
                assert 0 < outcome.started <= outcome.ended, (name, outcome.started, outcome.ended)
                assert outcome.latency_ms >= 0


def test_async_legs_too(engine: HybridEngine) -> None:
    async def run_all() -> None:
        for text in QUERIES[:50]:
            q = prepare(engine.legs, engine.settings, text, SearchOptions())
            outcomes, _ = await run_in_tasks(q)
            for name, outcome in outcomes.items():
                assert 0 < outcome.started <= outcome.ended, (name, outcome.started, outcome.ended)
                assert outcome.latency_ms >= 0
            assert all(leg.latency_ms >= 0 for leg in (await engine.asearch(text)).trace.legs if leg.called)

    asyncio.run(run_all())
