"""How the legs of one query run: threads (:func:`run_in_threads`) or asyncio tasks (:func:`run_in_tasks`).

Both do the same three steps: start the legs that need no query vector, embed the query once per model, start
the dense legs. What the outcomes mean is decided once, in :func:`rrf_retriever.engine.query.finish`.

The head start: a store that keeps the GIL while it searches (qdrant-edge-py, ``holds_gil = True``) stalls every
other thread, even one that would release the GIL inside C (SQLite), until it is done: the legs would run one
after the other. So such a leg starts once the other legs have been called and have had
:class:`HeadStart` ``seconds`` to reach their C code (less if they finish first); the wait for a pool thread to
pick the other legs up is bounded (``start_wait``), never the request. Measured in
``benchmarks/speed/bench_hybrid_speed.py`` and ``benchmarks/speed/bench_head_start.py``.

Joint requests: active legs whose stores share a ``batch_group`` (e.g. the dense and keyword views of one Qdrant
collection, :class:`~rrf_retriever.stores.qdrant.QdrantHybridStore`) and implement
:class:`~rrf_retriever.stores.base.BatchSearch` run as ONE
task: one :class:`~rrf_retriever.stores.base.SearchRequest` per leg, one call, each leg's outcome its share of
the reply (a leg's own failure stays that leg's). The group starts once the query vector is there; only
planned (active) legs are sent, so a weight-0 leg never is. A group left with one leg runs that leg alone.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from rrf_retriever.engine.legs import Leg, StoreLeg, ties_by_id
from rrf_retriever.engine.query import Embedded, LegOutcome, Query
from rrf_retriever.errors import EmbeddingError
from rrf_retriever.stores.base import BatchSearch, SearchRequest
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


def _outcome(hits: list[Hit] | None, t0: float, error: BaseException | None = None, *,
             timed_out: bool = False) -> LegOutcome:
    """A leg's outcome, its call started at ``t0`` and ended now."""
    ended = time.perf_counter()
    return LegOutcome(hits, (ended - t0) * 1000, error, timed_out, t0, ended)


class _Called:
    """When a leg's thread called its store, and when that call ended: the leg's latency is the time between them,
    both taken in the leg's own thread (not when the caller collects the result: a leg that finished first would
    else show the slower leg's time; nor when ``pool.submit()`` returned: a leg may be done by then)."""

    __slots__ = ("at", "ended", "event")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.at = 0.0
        self.ended = 0.0

    def mark(self) -> None:
        self.at = time.perf_counter()
        self.event.set()

    def end(self) -> None:
        self.ended = time.perf_counter()

    def outcome(self, hits: list[Hit] | None, error: BaseException | None = None, *, timed_out: bool = False,
                submitted: float = 0.0) -> LegOutcome:
        """The leg's outcome, timed from its call's start (from ``submitted`` if it never started) to the call's
        end (to now while it runs)."""
        ended = self.ended or time.perf_counter()
        started = self.at or submitted
        return LegOutcome(hits, (ended - started) * 1000, error, timed_out, started, ended)


def _batch_store(leg: Leg) -> BatchSearch | None:
    """The leg's store if it can run in one request with the legs whose stores share its ``batch_group``."""
    return leg.batch_store if isinstance(leg, StoreLeg) else None


def _batches(q: Query) -> list[list[tuple[str, Leg]]]:
    """The active legs that run as one request: groups of two or more sharing a ``batch_group``."""
    groups: dict[int, list[tuple[str, Leg]]] = {}
    for name, leg in q.active:
        store = _batch_store(leg)
        if store is not None:
            groups.setdefault(id(store.batch_group), []).append((name, leg))
    return [members for members in groups.values() if len(members) > 1]


def _plan_batches(
    q: Query, batches: list[list[tuple[str, Leg]]], vectors: Mapping[int, Sequence[float]]
) -> tuple[list[tuple[str, Leg]], list[list[tuple[str, Leg]]]]:
    """Once the query vectors are known: the grouped legs that can run (a dense one needs its vector), as single
    legs (a group left with one) and as groups."""
    singles: list[tuple[str, Leg]] = []
    groups: list[list[tuple[str, Leg]]] = []
    for members in batches:
        now = [(n, leg) for n, leg in members if leg.embedding is None or id(leg.embedding) in vectors]
        if len(now) == 1:
            singles.extend(now)
        elif now:
            groups.append(now)
    return singles, groups


def _requests(q: Query, members: list[tuple[str, Leg]], vectors: Mapping[int, Sequence[float]]) -> list[SearchRequest]:
    """The group's requests, one per leg (:meth:`Query.request`), as the legs alone would have sent them."""
    return [q.request(leg, None if leg.embedding is None else vectors[id(leg.embedding)]) for _, leg in members]


def _share(result: Any, index: int | None) -> list[Hit]:
    """A leg's hits from its task's result (a group's: its entry, raised if it is that leg's error)."""
    if index is None:
        return cast(list[Hit], result)  # a single leg's task returns its hits
    mine = result[index]
    if isinstance(mine, BaseException):
        raise mine
    return ties_by_id(mine)


def inline_legs(q: Query) -> bool:
    """Whether the query's legs run in the calling thread, one after the other: every active leg's store keeps
    the GIL while it searches (in threads they would run one after the other anyway, after two thread hand-offs
    and the head start's wait), none is part of a joint request, and no ``leg_timeout`` may have to abandon one."""
    return (q.settings.leg_timeout is None and bool(q.active) and all(leg.holds_gil for _, leg in q.active)
            and not _batches(q))


def _run_inline(q: Query, pool: concurrent.futures.ThreadPoolExecutor) -> tuple[dict[str, LegOutcome], Embedded]:
    """:func:`inline_legs`'s case: the query embedding (a model releases the GIL) runs in ``pool`` while the
    keyword legs run here; then the dense legs."""
    models = q.embeddings()
    given = _given_vector(q, models) if models else None
    t0 = time.perf_counter()
    pending = {} if given is not None else {id(m): pool.submit(m.embed_query, q.text) for m in models}
    done: list[float] = []  # when each embedding ended (the keyword legs run meanwhile: not the embedding's time)
    for future in pending.values():
        future.add_done_callback(lambda _: done.append(time.perf_counter()))

    def call(leg: Leg, vector: Sequence[float] | None) -> LegOutcome:
        started = time.perf_counter()
        try:
            return _outcome(leg.search(q.request(leg, vector)), started)
        except Exception as exc:
            return _outcome(None, started, exc)

    outcomes = {name: call(leg, None) for name, leg in q.text_legs()}
    embedded = given or _collect_embeddings(pending, t0, None)
    if done:
        embedded.ms = (max(done) - t0) * 1000
    for name, leg in q.dense_ready(embedded.vectors):
        outcomes[name] = call(leg, embedded.vectors[id(leg.embedding)])
    return outcomes, embedded


def run_in_threads(
    q: Query, pool: concurrent.futures.ThreadPoolExecutor, head_start: HeadStart = HeadStart()
) -> tuple[dict[str, LegOutcome], Embedded]:
    """Run the query's legs concurrently in ``pool``; each leg and the embedding bounded by ``leg_timeout``.
    Legs that all keep the GIL run in the calling thread instead (:func:`inline_legs`)."""
    if inline_legs(q):
        return _run_inline(q, pool)
    timeout = q.settings.leg_timeout
    futures: dict[str, tuple[concurrent.futures.Future[Any], float, int | None]] = {}
    called: list[_Called] = []
    marks: dict[str, _Called] = {}

    def submit(name: str, leg: Leg, vector: Sequence[float] | None) -> None:
        mark = _Called()
        called.append(mark)
        request = q.request(leg, vector)

        def call() -> list[Hit]:
            mark.mark()
            try:
                return leg.search(request)
            finally:
                mark.end()

        submitted = time.perf_counter()  # before submit: leg_timeout counts from the hand-over
        futures[name] = (pool.submit(call), submitted, None)
        marks[name] = mark

    def submit_group(members: list[tuple[str, Leg]], vectors: Mapping[int, Sequence[float]]) -> None:
        mark = _Called()
        called.append(mark)
        store = cast(BatchSearch, _batch_store(members[0][1]))  # a group is made of legs over batch stores
        requests = _requests(q, members, vectors)

        def call() -> Sequence[Any]:
            mark.mark()
            try:
                return store.search_batch(requests)
            finally:
                mark.end()

        submitted = time.perf_counter()
        future = pool.submit(call)
        for index, (name, _) in enumerate(members):
            futures[name] = (future, submitted, index)
            marks[name] = mark

    batches = _batches(q)
    grouped = {name for members in batches for name, _ in members}
    for name, leg in q.text_legs():
        if name not in grouped:
            submit(name, leg, None)
    embedded = _embed_in_threads(q, pool)
    ready = [(n, leg) for n, leg in q.dense_ready(embedded.vectors) if n not in grouped]
    singles, groups = _plan_batches(q, batches, embedded.vectors)
    starting = ready + singles + [member for group in groups for member in group]
    if futures and head_start.seconds > 0 and any(leg.holds_gil for _, leg in starting):
        _wait_head_start([f for f, _, _ in futures.values()], called, head_start)
    for name, leg in ready + singles:
        submit(name, leg, None if leg.embedding is None else embedded.vectors[id(leg.embedding)])
    for group in groups:
        submit_group(group, embedded.vectors)
    outcomes: dict[str, LegOutcome] = {}
    for name, (future, submitted, index) in futures.items():
        remaining = None if timeout is None else max(0.0, submitted + timeout - time.perf_counter())
        mark = marks[name]
        try:
            outcomes[name] = mark.outcome(_share(future.result(timeout=remaining), index))
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            outcomes[name] = mark.outcome(None, exc, timed_out=True, submitted=submitted)
        except Exception as exc:
            outcomes[name] = mark.outcome(None, exc, submitted=submitted)
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
    """The caller's ``query_vector`` for every dense leg (a vector shared with other lookups; no embedding call)."""
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
    t0 = time.perf_counter()
    pending = {id(m): pool.submit(m.embed_query, q.text) for m in models}
    return _collect_embeddings(pending, t0, q.settings.leg_timeout)


def _collect_embeddings(
    pending: Mapping[int, concurrent.futures.Future[Any]], t0: float, timeout: float | None
) -> Embedded:
    """The query vectors of the embeddings submitted at ``t0`` (each bounded by ``timeout`` from then)."""
    embedded = Embedded()
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
            hits = await asyncio.wait_for(leg.asearch(q.request(leg, vector)), timeout)
            return _outcome(hits, t0)
        except asyncio.TimeoutError as exc:
            return _outcome(None, t0, exc, timed_out=True)
        except Exception as exc:
            return _outcome(None, t0, exc)

    async def run_group(members: list[tuple[str, Leg]], vectors: Mapping[int, Sequence[float]]) -> list[LegOutcome]:
        store = cast(BatchSearch, _batch_store(members[0][1]))  # a group is made of legs over batch stores
        t0 = time.perf_counter()
        try:
            result = await asyncio.wait_for(store.asearch_batch(_requests(q, members, vectors)), timeout)
        except asyncio.TimeoutError as exc:
            return [_outcome(None, t0, exc, timed_out=True) for _ in members]
        except Exception as exc:
            return [_outcome(None, t0, exc) for _ in members]
        ended = time.perf_counter()  # one call for the group: every member shares its time
        outcomes = []
        for index in range(len(members)):
            try:
                hits: list[Hit] | None = _share(result, index)
                error: BaseException | None = None
            except Exception as exc:
                hits, error = None, exc
            outcomes.append(LegOutcome(hits, (ended - t0) * 1000, error, started=t0, ended=ended))
        return outcomes

    batches = _batches(q)
    grouped = {name for members in batches for name, _ in members}
    tasks: dict[str, asyncio.Task[LegOutcome]] = {
        name: asyncio.ensure_future(run(leg, None)) for name, leg in q.text_legs() if name not in grouped
    }
    t0 = time.perf_counter()
    embedded = await _embed_in_tasks(q)
    ready = [(n, leg) for n, leg in q.dense_ready(embedded.vectors) if n not in grouped]
    singles, groups = _plan_batches(q, batches, embedded.vectors)
    starting = ready + singles + [member for group in groups for member in group]
    if tasks and head_start.seconds > 0 and any(leg.holds_gil for _, leg in starting):
        remaining = head_start.seconds - (time.perf_counter() - t0)
        if remaining > 0:
            await asyncio.wait(list(tasks.values()), timeout=remaining)
    for name, leg in ready + singles:
        tasks[name] = asyncio.ensure_future(
            run(leg, None if leg.embedding is None else embedded.vectors[id(leg.embedding)]))
    group_tasks = [(group, asyncio.ensure_future(run_group(group, embedded.vectors))) for group in groups]
    outcomes = dict(zip(tasks, await asyncio.gather(*tasks.values())))
    for group, task in group_tasks:
        outcomes.update(zip((name for name, _ in group), await task))
    return outcomes, embedded


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
