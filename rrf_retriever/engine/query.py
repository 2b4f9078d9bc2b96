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
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rrf_retriever.engine.legs import Leg
from rrf_retriever.engine.settings import RetrievalSettings
from rrf_retriever.errors import AllLegsFailedError, EmbeddingError, RRFRetrieverError, StoreError
from rrf_retriever.fusion import fuse
from rrf_retriever.scope import FilterSpec, NormalizedFilter, normalize_scope
from rrf_retriever.types import FusedHit, Hit, LegTrace, SearchResult, Trace
from rrf_retriever.validate import check_query, check_top_k

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
) -> Query:
    """Validate a query's arguments against the settings snapshot and plan its legs.

    A leg whose weight is 0 is not called at all (the zero-weight guard); a leg that has nothing to search for
    (no keyword term survives) sits out. An empty query plans no leg.
    """
    text = check_query(query)
    top_k = settings.top_k if top_k is None else check_top_k(top_k)
    resolved = settings.with_weights(weights)
    flt, excl = normalize_scope(filter, exclude_ids)
    q = Query(text, settings, top_k, settings.effective_fetch_k(top_k), resolved, flt, excl, tuple(legs))
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
) -> SearchResult:
    """Collect the leg outcomes (degrade or raise), fuse, expand, and build the trace.

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
    hits = fuse(q.settings.fusion, ranked, used, rrf_k=q.settings.rrf_k, limit=q.top_k)
    fusion_ms = (time.perf_counter() - t0) * 1000
    if expand is not None:
        hits = hits + expand(hits, q)
    trace = _trace(q, traces, tuple(warning_texts), embedded.ms, fusion_ms)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("rrf_retriever query trace: %s", trace)
    return SearchResult(hits, trace)


def _trace(q: Query, traces: list[LegTrace], warning_texts: tuple[str, ...], embed_ms: float,
           fusion_ms: float) -> Trace:
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
    )
