"""One query from arguments to result: prepare (validate, plan the legs), then one finishing step shared by the
sync and async runners (collect the leg outcomes, degrade or raise, fuse, run the result stages, build the trace).

The runners (:mod:`rrf_retriever.engine.run`) only decide HOW the legs run (threads or asyncio tasks); everything
a query decides is here, once.

Example:
    >>> from rrf_retriever.engine.legs import as_leg
    >>> from rrf_retriever.engine.settings import RetrievalSettings
    >>> from rrf_retriever.stores.fts5 import FTS5KeywordStore
    >>> legs = {"keyword": as_leg("keyword", FTS5KeywordStore())}
    >>> q = prepare(legs, RetrievalSettings(weights={"keyword": 1.0}), "hello", 5, None, None, None)
    >>> q.fetch_k, [name for name, _ in q.active]
    (10, ['keyword'])
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rrf_retriever.engine.legs import Leg
from rrf_retriever.engine.settings import RetrievalSettings
from rrf_retriever.errors import AllLegsFailedError, EmbeddingError, RRFRetrieverError, StoreError
from rrf_retriever.fusion import fuse
from rrf_retriever.scope import FilterSpec, NormalizedFilter, matches, normalize_scope
from rrf_retriever.types import FusedHit, Hit, LegTrace, Record, SearchResult, Trace
from rrf_retriever.validate import (
    MAX_TOP_K,
    check_ids,
    check_int,
    check_number,
    check_query,
    check_top_k,
    to_float_vector,
)

__all__ = ["Embedded", "LegOutcome", "Query", "empty_result", "finish", "prepare"]

logger = logging.getLogger("rrf_retriever")


@dataclass
class Query:
    """Everything one query reads, taken once: the settings snapshot, the resolved arguments, the plan."""

    text: str
    settings: RetrievalSettings
    top_k: int
    fetch_k: int
    weights: dict[str, float]
    flt: NormalizedFilter | None
    excl: frozenset[str]
    order: tuple[str, ...]
    offset: int = 0
    query_vector: list[float] | None = None
    score_threshold: float | None = None
    pinned_ids: tuple[str, ...] = ()
    started: float = field(default_factory=time.perf_counter)
    active: list[tuple[str, Leg]] = field(default_factory=list)
    idle: list[LegTrace] = field(default_factory=list)

    def embeddings(self) -> list[Any]:
        """Distinct embedding models of the active dense legs (the query is embedded once per model)."""
        seen: dict[int, Any] = {}
        for _, leg in self.active:
            if leg.embedding is not None:
                seen.setdefault(id(leg.embedding), leg.embedding)
        return list(seen.values())

    def text_legs(self) -> list[tuple[str, Leg]]:
        """The active legs that need no query vector (they start first)."""
        return [(n, leg) for n, leg in self.active if leg.embedding is None]

    def dense_ready(self, vectors: Mapping[int, Sequence[float]]) -> list[tuple[str, Leg]]:
        """The active dense legs whose query vector is there (a failed embedding leaves its legs out)."""
        return [(n, leg) for n, leg in self.active if leg.embedding is not None and id(leg.embedding) in vectors]


@dataclass
class LegOutcome:
    """What one leg's call gave: hits, or the error (``timed_out`` when it passed ``leg_timeout``)."""

    hits: list[Hit] | None
    latency_ms: float
    error: BaseException | None = None
    timed_out: bool = False


@dataclass
class Embedded:
    """The query vectors by embedding model (``id(model)``), the failures, and the time it took."""

    vectors: dict[int, Sequence[float]] = field(default_factory=dict)
    errors: dict[int, BaseException] = field(default_factory=dict)
    ms: float = 0.0


def prepare(
    legs: Mapping[str, Leg],
    settings: RetrievalSettings,
    query: object,
    top_k: int | None,
    filter: FilterSpec | None,
    exclude_ids: Iterable[str] | None,
    weights: Mapping[str, float] | None,
    *,
    offset: int = 0,
    query_vector: Sequence[float] | None = None,
    score_threshold: float | None = None,
    pinned_ids: Iterable[str] | None = None,
) -> Query:
    """Validate a query's arguments against the settings snapshot and plan its legs.

    A leg whose weight is 0 is not called at all (the zero-weight guard); a leg that has nothing to search for
    (no keyword term survives) sits out. An empty query plans no leg. A page (``offset``) is a slice of the list
    fused for ``offset + top_k``: the legs fetch for that depth.
    """
    text = check_query(query)
    top_k = settings.top_k if top_k is None else check_top_k(top_k)
    offset = check_int(offset, "offset", 0, MAX_TOP_K)
    resolved = settings.with_weights(weights)
    flt, excl = normalize_scope(filter, exclude_ids)
    vector = None if query_vector is None else to_float_vector(query_vector, "query_vector")
    threshold = None if score_threshold is None else check_number(score_threshold, "score_threshold", high=1.0)
    pinned = () if pinned_ids is None else tuple(check_ids(pinned_ids, "pinned_ids")[:MAX_TOP_K])
    q = Query(text, settings, top_k, settings.effective_fetch_k(min(offset + top_k, MAX_TOP_K)), resolved, flt,
              excl, tuple(legs), offset, vector, threshold, pinned)
    for name, leg in legs.items():
        weight = resolved[name]
        reason = "empty query" if not text.strip() else "weight 0" if weight == 0.0 else leg.sits_out(text)
        if reason is None:
            q.active.append((name, leg))
        else:
            q.idle.append(LegTrace(name, leg.kind, weight, called=False, note=reason))
    return q


def empty_result(q: Query) -> SearchResult:
    """The answer to a query that planned no leg (an empty query)."""
    return SearchResult([], _trace(q, list(q.idle), (), 0.0, 0.0))


def finish(
    q: Query,
    outcomes: Mapping[str, LegOutcome],
    embedded: Embedded,
    expand: Callable[[list[FusedHit], Query], list[FusedHit]] | None = None,
    lookup: Callable[[list[str]], list[Record]] | None = None,
) -> SearchResult:
    """Collect the leg outcomes (degrade or raise), fuse, run the result stages, and build the trace.

    Stages, in DESIGN 7b's order: the normalized score on every hit, ``pinned_ids`` (in scope: always in the first
    page, marked ``rrf_pinned``; looked up by ``lookup``), ``score_threshold`` (on the normalized score; pinned hits
    stay), the page (``offset``), then 1-hop expansion (``expand``) of the page.

    Raises:
        AllLegsFailedError: every active leg failed (with ``on_error="degrade"``).
        The leg's own error: with ``on_error="raise"``.
    """
    traces: list[LegTrace] = list(q.idle)
    ranked: dict[str, list[Hit]] = {}
    warning_texts: list[str] = []
    first_error: BaseException | None = None
    for name, leg in q.active:
        weight = q.weights[name]
        error: BaseException | None
        if leg.embedding is not None and id(leg.embedding) in embedded.errors:
            error = embedded.errors[id(leg.embedding)]
            if not isinstance(error, RRFRetrieverError):
                error = EmbeddingError(f"query embedding failed: {type(error).__name__}: {error}")
            text = f"{name}: query embedding failed ({error}); leg dropped"
            traces.append(LegTrace(name, leg.kind, weight, called=False, error=str(error), note="no embedding"))
        else:
            outcome = outcomes[name]
            error = outcome.error
            if error is None and outcome.hits is not None:
                ranked[name] = outcome.hits
                traces.append(LegTrace(name, leg.kind, weight, True, outcome.latency_ms, len(outcome.hits)))
                continue
            detail = (f"timed out after {q.settings.leg_timeout} s" if outcome.timed_out
                      else f"{type(error).__name__}: {error}")
            text = f"{name}: leg failed ({detail}); leg dropped"
            traces.append(LegTrace(name, leg.kind, weight, True, outcome.latency_ms, 0, detail))
        if q.settings.on_error == "raise":
            raise error if error is not None else StoreError(text)
        first_error = first_error or error
        warning_texts.append(text)
    if q.active and not ranked:
        msg = "every leg of the query failed: " + "; ".join(warning_texts)
        raise AllLegsFailedError(msg) from first_error
    for text in warning_texts:
        logger.warning("rrf_retriever degraded query: %s", text)
        warnings.warn(text, RuntimeWarning, stacklevel=4)
    t0 = time.perf_counter()
    used = {name: q.weights[name] for name in ranked}
    hits = fuse(q.settings.fusion, ranked, used, rrf_k=q.settings.rrf_k, limit=q.offset + q.top_k)
    fusion_ms = (time.perf_counter() - t0) * 1000
    stages_ms: dict[str, float] = {}
    hits = _normalized(hits, q)
    if q.pinned_ids and lookup is not None:
        t0 = time.perf_counter()
        hits = _pinned(hits, q, lookup)
        stages_ms["pinned"] = (time.perf_counter() - t0) * 1000
    if q.score_threshold is not None:
        threshold = q.score_threshold
        hits = [h for h in hits if h.normalized_score >= threshold or h.metadata.get("rrf_pinned")]
    hits = hits[q.offset : q.offset + q.top_k]
    if expand is not None:
        t0 = time.perf_counter()
        hits = hits + expand(hits, q)
        stages_ms["expand"] = (time.perf_counter() - t0) * 1000
    trace = _trace(q, traces, tuple(warning_texts), embedded.ms, fusion_ms, stages_ms)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("rrf_retriever query trace: %s", trace)
    return SearchResult(hits, trace)


def best_possible_score(q: Query) -> float:
    """The fused score of a document first in every active leg, for the query's weights and ``rrf_k`` (the score
    fusions give each leg at most its weight)."""
    total = math.fsum(q.weights[name] for name, _ in q.active)
    return total / (q.settings.rrf_k + 1) if q.settings.fusion == "rrf" else total


def _normalized(hits: list[FusedHit], q: Query) -> list[FusedHit]:
    best = best_possible_score(q)
    if best <= 0:
        return hits
    return [replace(h, normalized_score=min(1.0, h.score / best)) for h in hits]


def _pinned(hits: list[FusedHit], q: Query, lookup: Callable[[list[str]], list[Record]]) -> list[FusedHit]:
    """Every pinned id in scope is in the first page (``top_k``): the missing ones take its last places, the hits
    they displace move down. Out of scope (filter or ``exclude_ids``) or unknown: never."""
    wanted = [i for i in q.pinned_ids if i not in q.excl]
    present = {h.id for h in hits}
    records = {r.id: r for r in lookup([i for i in wanted if i not in present])} if wanted else {}
    added = [FusedHit(r.id, r.text, {**r.metadata, "rrf_pinned": True}, 0.0, {}, {})
             for i in wanted if (r := records.get(i)) is not None and matches(r.metadata, q.flt)]
    pinned = set(wanted)
    marked = [replace(h, metadata={**h.metadata, "rrf_pinned": True}) if h.id in pinned else h for h in hits]
    head, tail = marked[: q.top_k], marked[q.top_k :]
    displaced: list[FusedHit] = []
    for _ in range(max(0, len(head) + len(added) - q.top_k)):
        last_free = next((i for i in range(len(head) - 1, -1, -1) if not head[i].metadata.get("rrf_pinned")), None)
        if last_free is None:
            break
        displaced.insert(0, head.pop(last_free))
    return head + added + displaced + tail


def _trace(q: Query, traces: list[LegTrace], warning_texts: tuple[str, ...], embed_ms: float,
           fusion_ms: float, stages_ms: Mapping[str, float] | None = None) -> Trace:
    position = {name: i for i, name in enumerate(q.order)}
    return Trace(
        legs=tuple(sorted(traces, key=lambda t: position[t.name])),
        weights=dict(q.weights),
        rrf_k=q.settings.rrf_k,
        top_k=q.top_k,
        fetch_k=q.fetch_k,
        fusion=q.settings.fusion,
        embed_ms=embed_ms,
        fusion_ms=fusion_ms,
        total_ms=(time.perf_counter() - q.started) * 1000,
        warnings=warning_texts,
        stages_ms=dict(stages_ms or {}),
    )
