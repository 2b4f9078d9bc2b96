"""One query from arguments to result: prepare (validate, plan the legs), then one finishing step shared by the
sync and async runners (collect the leg outcomes, degrade or raise, fuse, run the result stages, build the trace).
The stages themselves live in :mod:`rrf_retriever.engine.stages`.

The runners (:mod:`rrf_retriever.engine.run`) only decide HOW the legs run (threads or asyncio tasks); everything
a query decides is here, once.

Example:
    >>> from rrf_retriever.engine.legs import as_leg
    >>> from rrf_retriever.engine.settings import RetrievalSettings
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> legs = {"keyword": as_leg("keyword", FTS5KeywordStore())}
    >>> q = prepare(legs, RetrievalSettings(weights={"keyword": 1.0}), "hello", 5, None, None, None)
    >>> q.fetch_k, [name for name, _ in q.active]
    (40, ['keyword'])
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
from rrf_retriever.engine.paths import main_dense_leg, path_legs
from rrf_retriever.engine.rerank import check_reranker, default_rerank_k
from rrf_retriever.engine.settings import RetrievalSettings, check_dense_paths, check_diversity
from rrf_retriever.engine.stages import PINNED_KEY, Vectors, diversify, fit_expansion, pin, pinned_first, rerank
from rrf_retriever.errors import (
    AllLegsFailedError,
    EmbeddingError,
    InvalidArgumentError,
    RRFRetrieverError,
    StoreError,
)
from rrf_retriever.fusion import fuse
from rrf_retriever.scope.parse import normalize_scope
from rrf_retriever.scope.tree import FilterSpec, NormalizedFilter
from rrf_retriever.types import FusedHit, Hit, LegTrace, Record, SearchResult, Trace
from rrf_retriever.validate import (
    MAX_TOP_K,
    MAX_WEIGHT,
    check_ids,
    check_int,
    check_mapping,
    check_number,
    check_query,
    check_top_k,
    check_weights,
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
    diversity: float | None = None
    reranker: Any = None
    rerank_k: int = 0
    expand_limit: int | None = None
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
    diversity: float | None = None,
    reranker: Any = None,
    rerank_k: int | None = None,
    dense_paths: Mapping[str, FilterSpec | None] | None = None,
    expand_limit: int | None = None,
) -> Query:
    """Validate a query's arguments against the settings snapshot and plan its legs.

    A leg whose weight is 0 is not called at all (the zero-weight guard); a leg that has nothing to search for
    (no keyword term survives) sits out. An empty query plans no leg. A page (``offset``) is a slice of the list
    fused for ``offset + top_k``: the legs fetch for that depth. ``diversity``, ``reranker``, ``rerank_k``,
    ``dense_paths`` and ``expand_limit`` given as None take the settings' (``reranker=False``: none this call).
    """
    text = check_query(query)
    top_k = settings.top_k if top_k is None else check_top_k(top_k)
    offset = check_int(offset, "offset", 0, MAX_TOP_K)
    flt, excl = normalize_scope(filter, exclude_ids)
    vector = None if query_vector is None else to_float_vector(query_vector, "query_vector")
    threshold = None if score_threshold is None else check_number(score_threshold, "score_threshold", high=1.0)
    pinned = () if pinned_ids is None else tuple(check_ids(pinned_ids, "pinned_ids")[:MAX_TOP_K])
    lam = settings.diversity if diversity is None else check_diversity(diversity)
    chosen = settings.reranker if reranker is None else None if reranker is False else check_reranker(reranker)
    depth = settings.rerank_k if rerank_k is None else check_top_k(rerank_k, "rerank_k")
    neighbours = settings.expand_limit if expand_limit is None else check_top_k(expand_limit, "expand_limit")
    paths = path_legs(legs, settings.dense_paths if dense_paths is None else check_dense_paths(dense_paths) or {})
    resolved = _weights(legs, settings, weights, [name for name, _ in paths])
    all_legs = {**legs, **dict(paths)}
    q = Query(text, settings, top_k, settings.effective_fetch_k(min(offset + top_k, MAX_TOP_K)), resolved, flt,
              excl, tuple(all_legs), offset, vector, threshold, pinned, lam, chosen,
              default_rerank_k(top_k, depth) if chosen is not None else 0, neighbours)
    for name, leg in all_legs.items():
        weight = resolved[name]
        reason = "empty query" if not text.strip() else "weight 0" if weight == 0.0 else leg.sits_out(text)
        if reason is None:
            q.active.append((name, leg))
        else:
            q.idle.append(LegTrace(name, leg.kind, weight, called=False, note=reason))
    return q


def _weights(legs: Mapping[str, Leg], settings: RetrievalSettings, weights: Mapping[str, float] | None,
             paths: list[str]) -> dict[str, float]:
    """The query's weight per source and per dense path. A path's weight: the call's, else the settings', else
    the main dense leg's."""
    if not paths:
        return settings.with_weights(weights)
    given = dict(check_mapping(weights or {}, "weights", "source name to weight"))
    path_given = {name: given.pop(name) for name in paths if name in given}
    resolved = check_weights(list(legs), {**{n: settings.weights[n] for n in legs if n in settings.weights}, **given})
    main = resolved[main_dense_leg(legs)]
    for name in paths:
        value = path_given.get(name, settings.weights.get(name, main))
        resolved[name] = check_number(value, f"weight of dense path {name!r}", high=MAX_WEIGHT)
    if not any(resolved.values()):
        msg = f"every source's weight is 0 ({sorted(resolved)}): nothing would be searched; give one a weight > 0"
        raise InvalidArgumentError(msg)
    return resolved


def empty_result(q: Query) -> SearchResult:
    """The answer to a query that planned no leg (an empty query)."""
    return SearchResult([], _trace(q, list(q.idle), (), 0.0, 0.0))


def finish(
    q: Query,
    outcomes: Mapping[str, LegOutcome],
    embedded: Embedded,
    expand: Callable[[list[FusedHit], Query], list[FusedHit]] | None = None,
    lookup: Callable[[list[str]], list[Record]] | None = None,
    vectors: Vectors | None = None,
) -> SearchResult:
    """Collect the leg outcomes (degrade or raise), fuse, run the result stages, and build the trace.

    Stages, in DESIGN 7b's order (:mod:`rrf_retriever.engine.stages`): the normalized score on every hit,
    ``pinned_ids`` (in scope: always in the first page, marked ``rrf_pinned``; looked up by ``lookup``),
    ``score_threshold`` (on the normalized score; pinned hits stay), ``diversity`` (MMR over the stored vectors
    ``vectors`` gives), ``reranker`` (over ``rerank_k`` candidates; one that raises is skipped with a warning
    under ``on_error="degrade"``), pinned hits back on the first page, the page (``offset``), then 1-hop
    expansion (``expand``) of the page. The pool the stages see is the fused list to the deepest depth one of
    them needs (``offset + top_k``; the fetch depth with ``diversity``; ``rerank_k`` with a reranker).

    A query whose legs were all dropped because the query embedding failed (only dense legs active: an embedding
    outage with the keyword weight at 0) answers no hits, degraded, rather than fail.

    Raises:
        AllLegsFailedError: every leg that was called failed (with ``on_error="degrade"``).
        The leg's (or the embedding's, or the reranker's) own error: with ``on_error="raise"``.
    """
    traces: list[LegTrace] = list(q.idle)
    ranked: dict[str, list[Hit]] = {}
    warning_texts: list[str] = []
    first_error: BaseException | None = None
    called_failed = False
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
                traces.append(LegTrace(name, leg.kind, weight, True, outcome.latency_ms, len(outcome.hits),
                                       note=leg.scope_note(q.fetch_k, q.flt, q.excl)))
                continue
            detail = (f"timed out after {q.settings.leg_timeout} s" if outcome.timed_out
                      else f"{type(error).__name__}: {error}")
            text = f"{name}: leg failed ({detail}); leg dropped"
            traces.append(LegTrace(name, leg.kind, weight, True, outcome.latency_ms, 0, detail))
            called_failed = True
        if q.settings.on_error == "raise":
            raise error if error is not None else StoreError(text)
        first_error = first_error or error
        warning_texts.append(text)
    if q.active and not ranked and called_failed:
        msg = "every leg of the query failed: " + "; ".join(warning_texts)
        raise AllLegsFailedError(msg) from first_error
    for text in warning_texts:
        _warn(text)
    t0 = time.perf_counter()
    used = {name: q.weights[name] for name in ranked}
    hits = fuse(q.settings.fusion, ranked, used, rrf_k=q.settings.rrf_k, limit=_pool_depth(q)) if ranked else []
    fusion_ms = (time.perf_counter() - t0) * 1000
    stages = _Stages()
    hits = _normalized(hits, q)
    if q.pinned_ids and lookup is not None:
        with stages.timed("pinned"):
            hits = pin(hits, q.pinned_ids, q.top_k, q.flt, q.excl, lookup)
            stages.counts["pinned"] = sum(1 for h in hits if h.metadata.get(PINNED_KEY))
    if q.score_threshold is not None:
        threshold = q.score_threshold
        before = len(hits)
        hits = [h for h in hits if h.normalized_score >= threshold or h.metadata.get(PINNED_KEY)]
        stages.counts["threshold_dropped"] = before - len(hits)
    if q.diversity is not None and q.diversity < 1.0:
        with stages.timed("diversity"):
            picks = max(q.offset + q.top_k, q.rerank_k)
            hits, with_vector = diversify(hits, q.diversity, picks, vectors)
            stages.counts["diversity_pool"] = len(hits)
            stages.counts["diversity_vectors"] = with_vector
    if q.reranker is not None:
        with stages.timed("rerank"):
            hits = _reranked(q, hits, stages, warning_texts)
    if q.pinned_ids:
        hits = pinned_first(hits, q.top_k)
    hits = hits[q.offset : q.offset + q.top_k]
    if expand is not None:
        with stages.timed("expand"):
            hits = fit_expansion(hits, expand(hits, q), q.top_k)
            stages.counts["expanded"] = sum(1 for h in hits if "rrf_expanded_from" in h.metadata)
    trace = _trace(q, traces, tuple(warning_texts), embedded.ms, fusion_ms, stages.ms, stages.counts)
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


def _pool_depth(q: Query) -> int:
    """How deep the fused list goes: the page, and the pool diversity (the fetch depth) or the reranker needs."""
    depth = q.offset + q.top_k
    if q.diversity is not None and q.diversity < 1.0:
        depth = max(depth, q.fetch_k, q.rerank_k)
    return min(max(depth, q.rerank_k), MAX_TOP_K)


def _warn(text: str) -> None:
    logger.warning("rrf_retriever degraded query: %s", text)
    warnings.warn(text, RuntimeWarning, stacklevel=5)


def _reranked(q: Query, hits: list[FusedHit], stages: _Stages, warning_texts: list[str]) -> list[FusedHit]:
    """The reranker stage; a reranker that raises keeps the fused order (``on_error="degrade"``) or re-raises."""
    try:
        hits, seen = rerank(hits, q.text, q.reranker, q.rerank_k)
    except Exception as exc:
        if q.settings.on_error == "raise":
            raise
        text = f"reranker failed ({type(exc).__name__}: {exc}); the fused order is kept"
        warning_texts.append(text)
        stages.counts["rerank_failed"] = 1
        _warn(text)
        return hits
    stages.counts["reranked"] = seen
    return hits


class _Stages:
    """Each stage's time (ms) and counts, for the trace."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def timed(self, name: str) -> _Timer:
        return _Timer(self.ms, name)


class _Timer:
    def __init__(self, into: dict[str, float], name: str) -> None:
        self.into, self.name, self.t0 = into, name, 0.0

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.into[self.name] = (time.perf_counter() - self.t0) * 1000


def _trace(q: Query, traces: list[LegTrace], warning_texts: tuple[str, ...], embed_ms: float,
           fusion_ms: float, stages_ms: Mapping[str, float] | None = None,
           stage_counts: Mapping[str, int] | None = None) -> Trace:
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
        stage_counts=dict(stage_counts or {}),
    )
