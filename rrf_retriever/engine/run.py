"""How the legs of one query run: threads (:func:`run_in_threads`) or asyncio tasks (:func:`run_in_tasks`).

Both do the same three steps: start the legs that need no query vector, embed the query once per model, start
the dense legs. What the outcomes mean is decided once, in :func:`rrf_retriever.engine.query.finish`.

The head start: a store that keeps the GIL while it searches (qdrant-edge-py, ``holds_gil = True``) stalls every
other thread, even one that would release the GIL inside C (SQLite), until it is done: the legs would run one
after the other. So such a leg starts once the other legs have been called and have had
:class:`HeadStart` ``seconds`` to reach their C code (less if they finish first); the wait for a pool thread to
pick the other legs up is bounded (``start_wait``), never the request. Measured in
``benchmarks/bench_hybrid_speed.py`` and ``benchmarks/bench_head_start.py``.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rrf_retriever.engine.legs import Leg
from rrf_retriever.engine.query import Embedded, LegOutcome, Query
from rrf_retriever.errors import EmbeddingError
from rrf_retriever.types import Hit

__all__ = ["HeadStart", "run_in_tasks", "run_in_threads"]


@dataclass(frozen=True)
class HeadStart:
    """The head start the other legs get before a leg whose store holds the GIL starts (see the module doc).

    Attributes:
        seconds: How long the other legs get to reach their C code (0 switches the head start off).
        start_wait: Bound on waiting for a pool thread to pick the other legs up: when every worker is busy the
            head start cannot help, and the GIL-holding leg should not wait longer.

    Example:
        >>> HeadStart().seconds, HeadStart.OFF.seconds
        (0.001, 0.0)
    """

    seconds: float = 0.001
    start_wait: float = 0.005
    OFF: ClassVar[HeadStart]


HeadStart.OFF = HeadStart(0.0, 0.0)


def _ms_since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


class _Called:
    """When a leg's thread called its store."""

    __slots__ = ("at", "event")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.at = 0.0

    def mark(self) -> None:
        self.at = time.perf_counter()
        self.event.set()


def run_in_threads(
    q: Query, pool: concurrent.futures.ThreadPoolExecutor, head_start: HeadStart = HeadStart()
) -> tuple[dict[str, LegOutcome], Embedded]:
    """Run the query's legs concurrently in ``pool``; each leg and the embedding bounded by ``leg_timeout``."""
    timeout = q.settings.leg_timeout
    futures: dict[str, tuple[concurrent.futures.Future[list[Hit]], float]] = {}
    called: list[_Called] = []

    def submit(name: str, leg: Leg, vector: Sequence[float] | None) -> None:
        mark = _Called()
        called.append(mark)

        def call() -> list[Hit]:
            mark.mark()
            return leg.search(q.text, vector, q.fetch_k, q.flt, q.excl)

        futures[name] = (pool.submit(call), time.perf_counter())

    for name, leg in q.text_legs():
        submit(name, leg, None)
    embedded = _embed_in_threads(q, pool)
    ready = q.dense_ready(embedded.vectors)
    if futures and head_start.seconds > 0 and any(leg.holds_gil for _, leg in ready):
        _wait_head_start([f for f, _ in futures.values()], called, head_start)
    for name, leg in ready:
        submit(name, leg, embedded.vectors[id(leg.embedding)])
    outcomes: dict[str, LegOutcome] = {}
    for name, (future, submitted) in futures.items():
        remaining = None if timeout is None else max(0.0, submitted + timeout - time.perf_counter())
        try:
            outcomes[name] = LegOutcome(future.result(timeout=remaining), _ms_since(submitted))
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            outcomes[name] = LegOutcome(None, _ms_since(submitted), exc, timed_out=True)
        except Exception as exc:
            outcomes[name] = LegOutcome(None, _ms_since(submitted), exc)
    return outcomes, embedded


def _wait_head_start(
    running: list[concurrent.futures.Future[list[Hit]]], called: list[_Called], head_start: HeadStart
) -> None:
    deadline = time.perf_counter() + head_start.start_wait
    for mark in called:
        mark.event.wait(max(0.0, deadline - time.perf_counter()))
    last_called = max((m.at for m in called if m.event.is_set()), default=time.perf_counter())
    remaining = head_start.seconds - (time.perf_counter() - last_called)
    if remaining > 0:
        concurrent.futures.wait(running, timeout=remaining)


def _given_vector(q: Query, models: list[Any]) -> Embedded | None:
    """The caller's ``query_vector`` for every dense leg (seed 000: shared with other lookups; no embedding call)."""
    if q.query_vector is None:
        return None
    return Embedded(vectors={id(m): q.query_vector for m in models})


def _embed_in_threads(q: Query, pool: concurrent.futures.ThreadPoolExecutor) -> Embedded:
    embedded = Embedded()
    models = q.embeddings()
    if not models:
        return embedded
    given = _given_vector(q, models)
    if given is not None:
        return given
    timeout = q.settings.leg_timeout
    t0 = time.perf_counter()
    pending = {id(m): pool.submit(m.embed_query, q.text) for m in models}
    for key, future in pending.items():
        remaining = None if timeout is None else max(0.0, t0 + timeout - time.perf_counter())
        try:
            embedded.vectors[key] = future.result(timeout=remaining)
        except concurrent.futures.TimeoutError:
            future.cancel()
            embedded.errors[key] = EmbeddingError(f"query embedding timed out after {timeout} s")
        except Exception as exc:
            embedded.errors[key] = exc
    embedded.ms = _ms_since(t0)
    return embedded


async def run_in_tasks(q: Query, head_start: HeadStart = HeadStart()) -> tuple[dict[str, LegOutcome], Embedded]:
    """Async twin of :func:`run_in_threads`: the legs run concurrently as asyncio tasks.

    In async code a task cannot see its thread start, so the head start is time-based only.
    """
    import asyncio

    timeout = q.settings.leg_timeout

    async def run(leg: Leg, vector: Sequence[float] | None) -> LegOutcome:
        t0 = time.perf_counter()
        try:
            hits = await asyncio.wait_for(leg.asearch(q.text, vector, q.fetch_k, q.flt, q.excl), timeout)
            return LegOutcome(hits, _ms_since(t0))
        except asyncio.TimeoutError as exc:
            return LegOutcome(None, _ms_since(t0), exc, timed_out=True)
        except Exception as exc:
            return LegOutcome(None, _ms_since(t0), exc)

    tasks: dict[str, asyncio.Task[LegOutcome]] = {
        name: asyncio.ensure_future(run(leg, None)) for name, leg in q.text_legs()
    }
    t0 = time.perf_counter()
    embedded = await _embed_in_tasks(q)
    ready = q.dense_ready(embedded.vectors)
    if tasks and head_start.seconds > 0 and any(leg.holds_gil for _, leg in ready):
        remaining = head_start.seconds - (time.perf_counter() - t0)
        if remaining > 0:
            await asyncio.wait(list(tasks.values()), timeout=remaining)
    for name, leg in ready:
        tasks[name] = asyncio.ensure_future(run(leg, embedded.vectors[id(leg.embedding)]))
    return dict(zip(tasks, await asyncio.gather(*tasks.values()))), embedded


async def _embed_in_tasks(q: Query) -> Embedded:
    import asyncio

    embedded = Embedded()
    models = q.embeddings()
    if not models:
        return embedded
    given = _given_vector(q, models)
    if given is not None:
        return given
    timeout = q.settings.leg_timeout
    t0 = time.perf_counter()

    async def embed(model: Any) -> Sequence[float]:
        return await asyncio.wait_for(model.aembed_query(q.text), timeout)

    results = await asyncio.gather(*(embed(m) for m in models), return_exceptions=True)
    for model, result in zip(models, results):
        if isinstance(result, BaseException):
            if isinstance(result, asyncio.TimeoutError):
                result = EmbeddingError(f"query embedding timed out after {timeout} s")
            embedded.errors[id(model)] = result
        else:
            embedded.vectors[id(model)] = result
    embedded.ms = _ms_since(t0)
    return embedded
