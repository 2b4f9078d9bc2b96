"""One query from options to result: prepare (take the settings, plan the legs), then one finishing step shared by
the sync and async runners (collect the leg outcomes, degrade or raise, fuse, run the result stages, build the
trace). The options are :class:`~rrf_retriever.engine.options.SearchOptions` (validated when built); the stages and
their order are :data:`rrf_retriever.engine.stages.STAGES`.

The runners (:mod:`rrf_retriever.engine.run`) only decide HOW the legs run (threads or asyncio tasks); everything
a query decides is here, once.

Example:
    >>> from rrf_retriever.engine.legs import as_leg
    >>> from rrf_retriever.engine.options import SearchOptions
    >>> from rrf_retriever.engine.settings import RetrievalSettings
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> legs = {"keyword": as_leg("keyword", FTS5KeywordStore())}
    >>> q = prepare(legs, RetrievalSettings(weights={"keyword": 1.0}), "hello", SearchOptions(top_k=5))
    >>> q.fetch_k, [name for name, _ in q.active]
    (40, ['keyword'])
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from rrf_retriever.diversity import cosine
from rrf_retriever.engine import stages
from rrf_retriever.engine.background import BackgroundCache
from rrf_retriever.engine.legs import Leg, NotedHits
from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.engine.paths import main_dense_leg, path_legs
from rrf_retriever.engine.settings import RetrievalSettings, refuse_all_zero
from rrf_retriever.engine.stages import StageRun, Vectors, warn_degraded
from rrf_retriever.engine.weak_legs import leg_views, weak_leg_weights
from rrf_retriever.errors import (
    AllLegsFailedError,
    EmbeddingError,
    RRFRetrieverError,
    StoreError,
)
from rrf_retriever.fusion import fuse_validated
from rrf_retriever.relevance import query_level
from rrf_retriever.scope.parse import Scope
from rrf_retriever.scope.tree import NormalizedFilter
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.types import FusedHit, Hit, LegTrace, Record, SearchResult, Trace
from rrf_retriever.validate import check_query

__all__ = ["Embedded", "LegOutcome", "Query", "empty_result", "finish", "prepare"]

logger = logging.getLogger("rrf_retriever")


@dataclass
class Query:
    """Everything one query reads, taken once: the settings snapshot, the options resolved against it, the plan.

    Attributes:
        options: The call's options with the settings' values where they defer to them
            (:meth:`~rrf_retriever.engine.options.SearchOptions.resolved`): what the stages read.
        top_k: ``options.top_k``.
        scope: The validated scope (``options.scope``: the filter parsed once, when the options were built), which
            every leg searches within (:meth:`request`) and the stages keep to (``flt``, ``excl``).
        fetch_k: Hits each leg fetches (the call's ``fetch_k``, else the settings' for ``top_k``; whatever the
            offset: pages slice one list).
        weights: The weight of every source and dense path, resolved once (:func:`prepare`).
    """

    text: str
    settings: RetrievalSettings
    options: SearchOptions
    top_k: int
    fetch_k: int
    weights: dict[str, float]
    scope: Scope
    order: tuple[str, ...]
    started: float = field(default_factory=time.perf_counter)
    active: list[tuple[str, Leg]] = field(default_factory=list)
    idle: list[LegTrace] = field(default_factory=list)

    @property
    def flt(self) -> NormalizedFilter | None:
        """The query's filter tree (None: unfiltered)."""
        return self.scope.filter

    @property
    def excl(self) -> frozenset[str]:
        """The ids the query never returns."""
        return self.scope.exclude_ids

    def request(self, leg: Leg, vector: Sequence[float] | None) -> SearchRequest:
        """The ONE request of ``leg`` for this query (``vector``: its query vector, None for a leg without an
        embedding): the runners build it when the leg starts and hand it, unchanged, through the leg to its store.

        Example:
            >>> from rrf_retriever.engine.legs import FunctionLeg
            >>> q = Query("hi", RetrievalSettings(weights={"f": 1.0}), SearchOptions(), 5, 40, {"f": 1.0},
            ...           Scope(None, frozenset({"x"})), ("f",))
            >>> request = q.request(FunctionLeg(lambda text, k: []), None)
            >>> request.kind, request.limit, request.scope
            ('retriever', 40, Scope(filter=None, exclude_ids=frozenset({'x'})))
        """
        return SearchRequest(leg.kind, self.text, vector, self.fetch_k, leg.scope_for(self.scope))

    @property
    def query_vector(self) -> list[float] | None:
        """The caller's query vector (None: embed the query)."""
        return cast("list[float] | None", self.options.query_vector)  # the options keep it as a list of floats

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
    """What one leg's call gave: hits, or the error (``timed_out`` when it passed ``leg_timeout``).

    ``started`` and ``ended`` are the ``time.perf_counter()`` of the call's start (taken inside the call: when it
    never started, when it was handed to the pool) and end; ``latency_ms`` is the time between them.
    """

    hits: list[Hit] | None
    latency_ms: float
    error: BaseException | None = None
    timed_out: bool = False
    started: float = 0.0
    ended: float = 0.0


@dataclass
class Embedded:
    """The query vectors by embedding model (``id(model)``), the failures, and the time it took."""

    vectors: dict[int, Sequence[float]] = field(default_factory=dict)
    errors: dict[int, BaseException] = field(default_factory=dict)
    ms: float = 0.0


def prepare(legs: Mapping[str, Leg], settings: RetrievalSettings, query: object, options: SearchOptions) -> Query:
    """Resolve a query's (validated) options against the settings snapshot and plan its legs.

    A leg whose weight is 0 is not called at all (the zero-weight guard); a leg that has nothing to search for
    (no keyword term survives) sits out. An empty query plans no leg (but the dense legs, given a
    ``query_vector``: a LlamaIndex query may be a vector alone). A page (``offset``) is a slice of ONE fused
    list: the legs fetch ``fetch_k`` for the page size whatever the offset, so pages never overlap or skip.
    Options given as None take the settings' (:meth:`~rrf_retriever.engine.options.SearchOptions.resolved`).

    Raises:
        DimensionMismatchError: a ``query_vector`` whose length is not the dimension of a dense store of the
            engine (whatever its weight: the vector is wrong for it); a store never written has none yet.
    """
    text = check_query(query)
    resolved = options.resolved(settings)
    vector = cast("list[float] | None", resolved.query_vector)  # the options keep it as a list of floats
    if vector is not None:  # bad input: refused before any leg runs, not one dense leg failing (degraded)
        for leg in legs.values():
            leg.check_query_vector(vector)
    top_k = cast(int, resolved.top_k)  # resolved: the settings' top_k when not given
    paths = path_legs(legs, resolved.dense_paths or {})
    weights = _weights(legs, settings, resolved.weights, [name for name, _ in paths])
    all_legs = {**legs, **dict(paths)}
    # not the offset: every page slices the list fused at one depth; a call's fetch_k, never below top_k
    fetch_k = settings.effective_fetch_k(top_k) if resolved.fetch_k is None else max(resolved.fetch_k, top_k)
    q = Query(text, settings, resolved, top_k, fetch_k, weights, resolved.scope, tuple(all_legs))
    for name, leg in all_legs.items():
        weight = weights[name]
        empty = not text.strip() and (vector is None or leg.embedding is None)
        reason = "empty query" if empty else "weight 0" if weight == 0.0 else leg.sits_out(text)
        if reason is None:
            q.active.append((name, leg))
        else:
            q.idle.append(LegTrace(name, leg.kind, weight, called=False, note=reason))
    return q


def _weights(legs: Mapping[str, Leg], settings: RetrievalSettings, weights: Mapping[str, float] | None,
             paths: list[str]) -> dict[str, float]:
    """The query's weight per source and per dense path: the call's, else the settings', else 1.0 (a path: the
    main dense leg's). The values are trusted (the options and the settings validated them when built): only the
    names are resolved here (:meth:`RetrievalSettings.merged_weights`), and the all-zero rule."""
    if not paths:
        return dict(settings.weights) if weights is None else refuse_all_zero(settings.merged_weights(weights))
    given = weights or {}
    resolved = settings.merged_weights({n: w for n, w in given.items() if n not in paths}, list(legs))
    main = resolved[main_dense_leg(legs)]
    for name in paths:
        resolved[name] = given.get(name, settings.weights.get(name, main))
    return refuse_all_zero(resolved)


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
    background: BackgroundCache | None = None,
    measured: Mapping[str, str] | None = None,
) -> SearchResult:
    """Collect the leg outcomes (degrade or raise), fuse, run the result stages, and build the trace.

    The stages run in the order :data:`rrf_retriever.engine.stages.STAGES` declares, each one that applies to the
    query (the normalized score, ``pinned_ids`` looked up by ``lookup``, ``score_threshold``, ``diversity`` over the
    stored vectors ``vectors`` gives, the reranker, pinned hits back on the first page, the page, 1-hop expansion
    by ``expand``). The pool they see is the fused list to the deepest depth one of them needs
    (:func:`~rrf_retriever.engine.stages.pool_depth`). The relevance's level reads the hits' dense cosines
    against ``background`` (:func:`~rrf_retriever.relevance.query_level`; None: level 1.0), hit by hit.

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
                note = outcome.hits.note if isinstance(outcome.hits, NotedHits) else None  # what this call did
                traces.append(LegTrace(name, leg.kind, weight, True, outcome.latency_ms, len(outcome.hits), note=note))
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
        warn_degraded(text)
    run = StageRun(q, lookup, vectors, expand, warnings=warning_texts,
                   level=_level(q, ranked, background, vectors))
    t0 = time.perf_counter()
    used = {name: q.weights[name] for name in ranked}
    if q.settings.weak_legs and q.options.weights is None and len(ranked) > 1:
        used, traces = _weak_legs(q, ranked, used, traces, run, measured)
    depth = stages.pool_depth(run, stages.STAGES)
    # the settings validated the method and rrf_k, the options the weights: fused without a second check
    hits = fuse_validated(q.settings.fusion, ranked, used, q.settings.rrf_k, depth) if ranked else []
    fusion_ms = (time.perf_counter() - t0) * 1000
    hits = stages.run_stages(hits, run, stages.STAGES)
    trace = _trace(q, traces, tuple(warning_texts), embedded.ms, fusion_ms, run.ms, run.counts)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("rrf_retriever query trace: %s", trace)
    return SearchResult(hits, trace)


def _level(q: Query, ranked: Mapping[str, list[Hit]], background: BackgroundCache | None,
           vectors: Vectors | None) -> Callable[[list[FusedHit]], list[float]] | None:
    """The hits' levels from their cosines: in the main dense leg (a hit it did not return: that leg's lowest
    cosine, an upper bound of its own), else, when that leg sat out but the caller gave the query vector, with the
    hits' stored vectors (as the diversity stage reads them). None (level 1.0): no cosine to read, or no background."""
    name = background.dense_leg() if background is not None else None
    if background is None or name is None:
        return None
    dense = ranked.get(name)
    query_vector = q.query_vector
    if not dense and (query_vector is None or vectors is None):
        return None

    def levels(hits: list[FusedHit]) -> list[float]:
        scale = background.get()
        if scale is None:
            return [1.0] * len(hits)
        if dense:
            floor = min(float(h.score) for h in dense)
            return [query_level(h.scores.get(name, floor), scale) for h in hits]
        stored = vectors([h.id for h in hits]) if vectors is not None else {}
        return [query_level(cosine(query_vector, stored[h.id]) if h.id in stored else None, scale) for h in hits]

    return levels


def _weak_legs(q: Query, ranked: Mapping[str, list[Hit]], used: dict[str, float], traces: list[LegTrace],
               run: StageRun, measured: Mapping[str, str] | None) -> tuple[dict[str, float], list[LegTrace]]:
    """The weak-leg rule (:mod:`~rrf_retriever.engine.weak_legs`) over the legs that answered: the weights to fuse
    with, and the traces saying what it did (the leg's weight and note; ``stage_counts["weak_legs"]``). The query's
    weights become the ones used (the trace's and the normalized score's)."""
    decision = weak_leg_weights(ranked, used, leg_views([(n, leg) for n, leg in q.active if n in ranked]), measured)
    if not decision.notes:
        return used, traces
    q.weights = {**q.weights, **decision.weights}
    run.counts["weak_legs"] = sum(1 for n in decision.notes if decision.weights[n] < used[n])
    noted = [replace(t, weight=q.weights[t.name], note="; ".join(x for x in (t.note, decision.notes[t.name]) if x))
             if t.name in decision.notes else t for t in traces]
    return decision.weights, noted


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
