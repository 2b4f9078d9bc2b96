"""The result stages that run after fusion, as ONE declared order: :data:`STAGES`.

Each :class:`Stage` has a ``name``, ``applies(run)`` (does this query ask for it?) and ``run(hits, run)``; the
engine's :func:`~rrf_retriever.engine.query.finish` runs every stage that applies, in this order:

1. ``normalize``: the normalized score on every hit (score / the best possible score, in [0, 1]) and the
   relevance (times the hit's level, non-increasing: :mod:`rrf_retriever.relevance`);
2. ``pinned``: ``pinned_ids`` in scope are in the first page, marked ``rrf_pinned`` (:func:`pin`);
3. ``threshold``: ``score_threshold`` on the normalized score (pinned hits stay);
4. ``diversity``: MMR over the candidates' stored vectors (:func:`diversify`);
5. ``rerank``: the reranker over ``rerank_k`` candidates (:func:`rerank`; one that raises is skipped with a
   warning under ``on_error="degrade"``);
6. ``pinned_first``: pinned hits back on the first page (:func:`pinned_first`);
7. ``page``: the page (``offset``, ``top_k``) of the one fused list;
8. ``expand``: with 1-hop expansion, the page instead: the page of the expanded list, built page by page so that
   no fused result is skipped (:class:`NeighbourExpansion`, :func:`fit_expansion`).

A stage may say how deep the fused pool must go for it (``depth``): the pool is the deepest of them
(:func:`pool_depth`). Adding a stage is one entry in :data:`STAGES`.

Pinned documents are always in the result: the threshold keeps them, diversity leaves them where the pinned
stage put them, a reranker that drops one is overruled (it comes back after the reranked ones, marked
``rrf_pinned``), and :func:`pinned_first` brings any that moved below the first page back onto it.

Example:
    >>> [stage.name for stage in STAGES]
    ['normalize', 'pinned', 'threshold', 'diversity', 'rerank', 'pinned_first', 'page', 'expand']
    >>> NeighbourExpansion(links_key="links").wanted([])
    []
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import TYPE_CHECKING, Any, cast

from rrf_retriever.diversity import mmr_order
from rrf_retriever.engine.rerank import call_reranker
from rrf_retriever.errors import InvalidTypeError
from rrf_retriever.relevance import relevance_scores
from rrf_retriever.scope.tree import NormalizedFilter, matches
from rrf_retriever.types import FusedHit, Record
from rrf_retriever.validate import MAX_LINKS, MAX_TOP_K, check_top_k

if TYPE_CHECKING:
    from rrf_retriever.engine.query import Query

__all__ = ["PINNED_KEY", "RERANK_SCORE_KEY", "STAGES", "Expand", "NeighbourExpansion", "Stage", "StageRun",
           "Vectors", "best_possible_score", "diversify", "fit_expansion", "pin", "pinned_first", "pool_depth",
           "rerank", "run_stages", "warn_degraded"]

logger = logging.getLogger("rrf_retriever")

#: Metadata key marking a pinned result.
PINNED_KEY = "rrf_pinned"
#: Metadata key holding the reranker's score (the fused ``rrf_score`` and ``rrf_ranks`` stay).
RERANK_SCORE_KEY = "rrf_rerank_score"
#: ``ids -> {id: stored dense vector}`` (ids without a stored vector are absent).
Vectors = Callable[[list[str]], Mapping[str, Sequence[float]]]


def _is_pinned(hit: FusedHit) -> bool:
    return bool(hit.metadata.get(PINNED_KEY))


def pin(hits: list[FusedHit], pinned_ids: Sequence[str], top_k: int, flt: NormalizedFilter | None,
        excl: frozenset[str], lookup: Callable[[list[str]], list[Record]]) -> list[FusedHit]:
    """Every pinned id in scope is in the first page (``top_k``): the missing ones take its last places, the hits
    they displace move down. Out of scope (filter or ``exclude_ids``) or unknown: never.

    Example:
        >>> hits = [FusedHit(i, "", {}, 1.0, {}, {}) for i in "abc"]
        >>> [h.id for h in pin(hits, ["c"], 2, None, frozenset(), lambda ids: [])]
        ['a', 'c', 'b']
    """
    wanted = [i for i in pinned_ids if i not in excl]
    present = {h.id for h in hits}
    records = {r.id: r for r in lookup([i for i in wanted if i not in present])} if wanted else {}
    added = [FusedHit(r.id, r.text, {**r.metadata, PINNED_KEY: True}, 0.0, {}, {})
             for i in wanted if (r := records.get(i)) is not None and matches(r.metadata, flt)]
    pinned = set(wanted)
    marked = [replace(h, metadata={**h.metadata, PINNED_KEY: True}) if h.id in pinned else h for h in hits]
    return pinned_first(marked, top_k, added)


def pinned_first(hits: list[FusedHit], top_k: int, added: Sequence[FusedHit] = ()) -> list[FusedHit]:
    """Pinned hits below the first page (and ``added`` ones) move onto it, taking its last non-pinned places;
    the hits they displace move down, in order. Hits already on the first page do not move.

    Example:
        >>> hits = [FusedHit("a", "", {}, 1, {}, {}), FusedHit("b", "", {}, 1, {}, {}),
        ...         FusedHit("p", "", {"rrf_pinned": True}, 0, {}, {})]
        >>> [h.id for h in pinned_first(hits, 2)]
        ['a', 'p', 'b']
    """
    head, tail = hits[:top_k], hits[top_k:]
    late = [*(h for h in tail if _is_pinned(h)), *added]
    if not late:
        return hits
    tail = [h for h in tail if not _is_pinned(h)]
    head = head + late
    displaced: list[FusedHit] = []
    for _ in range(max(0, len(head) - top_k)):
        last_free = next((i for i in range(len(head) - 1, -1, -1) if not _is_pinned(head[i])), None)
        if last_free is None:
            break
        displaced.insert(0, head.pop(last_free))
    return head + displaced + tail


def diversify(hits: list[FusedHit], lambda_: float, picks: int, vectors: Vectors | None) -> tuple[list[FusedHit], int]:
    """MMR (:func:`rrf_retriever.diversity.mmr_order`) over the candidates, by their STORED dense vectors.

    Relevance is the fused score divided by the best fused score among the candidates: the fused score is the
    hybrid relevance (it holds the keyword evidence too, and every candidate has one, with or without a query
    vector), and dividing by the best puts it on the scale of a cosine similarity (the top candidate is 1.0), so
    ``lambda_`` means the same trade-off for every query whatever ``rrf_k`` or the number of legs. A candidate
    without a stored vector (a foreign leg's document) is never judged redundant: it competes on relevance alone.
    Pinned hits keep their places and take no part. ``lambda_ = 1`` returns ``hits`` unchanged (no vector read).

    Args:
        hits: The candidates, in fused order.
        lambda_: The MMR lambda in [0, 1].
        picks: How many places MMR fills; the candidates not picked follow in fused order.
        vectors: ``ids -> {id: vector}`` (None: no vectors; the order stays the fused one).

    Returns:
        The re-ordered hits and how many candidates had a stored vector.
    """
    free = [h for h in hits if not _is_pinned(h)]
    if lambda_ >= 1.0 or len(free) < 2 or vectors is None:
        return hits, 0
    found = vectors([h.id for h in free])
    best = max(h.score for h in free)
    relevance = [h.score / best if best > 0 else 0.0 for h in free]
    order = mmr_order(relevance, [found.get(h.id) for h in free], lambda_, min(picks, len(free)))
    chosen = set(order)
    ranked = iter([free[i] for i in order] + [h for i, h in enumerate(free) if i not in chosen])
    return [h if _is_pinned(h) else next(ranked) for h in hits], sum(1 for h in free if h.id in found)


def rerank(hits: list[FusedHit], query: str, reranker: Any, rerank_k: int) -> tuple[list[FusedHit], int]:
    """The first ``rerank_k`` candidates in the reranker's order (each with ``rrf_rerank_score``), then the rest in
    fused order. A candidate the reranker drops is removed, unless it is pinned: then it stays, right after the
    reranked ones. Whatever the reranker raises propagates (the engine degrades or re-raises).

    Returns:
        The hits and how many candidates the reranker saw.
    """
    head, tail = hits[:rerank_k], hits[rerank_k:]
    if not head:
        return hits, 0
    by_id = {h.id: h for h in head}
    ranked = call_reranker(reranker, query, head)
    kept = {doc_id for doc_id, _ in ranked}
    out = [replace(by_id[i], metadata={**by_id[i].metadata, RERANK_SCORE_KEY: score}) for i, score in ranked]
    out += [h for h in head if h.id not in kept and _is_pinned(h)]  # a pinned document is never dropped
    return out + tail, len(head)

#: A function that names a result's neighbours: ``FusedHit -> [neighbour ids]``.
Expand = Callable[[FusedHit], Sequence[str]]


class NeighbourExpansion:
    """1-hop expansion: the fused results' neighbours (in seed order, within the same scope).

    Neighbours come from ``expand(hit)`` or from the metadata key ``links_key``; each comes once, marked
    ``rrf_expanded_from`` (the seed's id) with score 0, at most ``limit`` of them (default: ``top_k``), from the
    first :data:`~rrf_retriever.validate.MAX_LINKS` ids of each hit. The engine fits them into the page with
    :func:`fit_expansion`, so a result never has more than ``top_k`` hits.

    Args:
        expand: A callable ``FusedHit -> [neighbour ids]``, or None to read ``links_key``.
        links_key: The metadata key holding neighbour ids (default ``"links"``).
        limit: At most this many neighbours; None: the query's ``top_k``.
    """

    def __init__(self, expand: Expand | None = None, links_key: str | None = None, limit: int | None = None) -> None:
        if expand is not None and not callable(expand):
            msg = "expand must be a callable FusedHit -> list of neighbour ids"
            raise InvalidTypeError(msg)
        self.expand = expand
        self.links_key = links_key or "links"
        self.limit = None if limit is None else check_top_k(limit, "expand_limit")

    def wanted(self, hits: Sequence[FusedHit], excl: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """``(neighbour id, seed id)`` pairs in seed order, each neighbour once, none already a result."""
        present = {h.id for h in hits}
        out: list[tuple[str, str]] = []
        for hit in hits:
            ids: Any = self.expand(hit) if self.expand is not None else hit.metadata.get(self.links_key) or []
            if isinstance(ids, str):
                ids = [ids]
            elif not isinstance(ids, (Sequence, set, frozenset)):
                continue  # a malformed links value (a number, a mapping) names no neighbour
            for nid in islice(ids, MAX_LINKS):  # a document's first MAX_LINKS only (the cap of a write)
                if isinstance(nid, str) and nid not in present and nid not in excl:
                    present.add(nid)
                    out.append((nid, hit.id))
        return out

    def neighbours(
        self,
        hits: Sequence[FusedHit],
        top_k: int,
        flt: NormalizedFilter | None,
        excl: frozenset[str],
        lookup: Callable[[list[str]], list[Record]],
        limit: int | None = None,
    ) -> list[FusedHit]:
        """The neighbours of ``hits`` as results, looked up by ``lookup`` (ids -> stored records): at most
        ``limit`` (the query's ``expand_limit``), else this stage's ``limit``, else ``top_k``."""
        wanted = self.wanted(hits, excl)
        if not wanted:
            return []
        limit = limit or self.limit or top_k
        step = max(2 * limit, 64)  # looked up a part at a time: no more is read than the neighbours kept need
        out: list[FusedHit] = []
        for start in range(0, len(wanted), step):
            part = wanted[start : start + step]
            records = {r.id: r for r in lookup([nid for nid, _ in part])}
            for nid, seed in part:
                record = records.get(nid)
                if record is None or not matches(record.metadata, flt):
                    continue  # the scope holds for neighbours too: nothing outside the filter leaks
                out.append(FusedHit(nid, record.text, {**record.metadata, "rrf_expanded_from": seed}, 0.0, {}, {}))
                if len(out) >= limit:
                    return out
        return out


def fit_expansion(page: Sequence[FusedHit], added: Sequence[FusedHit], top_k: int) -> list[FusedHit]:
    """The page with its neighbours, within ``top_k``: neighbours take the last slots of the page.

    Neighbours are taken in seed order while their seed keeps its place: each one taken shortens the fused part
    by one, and a neighbour whose seed would fall off the page (with every later one) is left out. Pinned hits
    (first on the page) are never pushed off.

    Example:
        >>> hit = lambda i, seed=None: FusedHit(i, "", {} if seed is None else {"rrf_expanded_from": seed}, 0.0, {}, {})
        >>> [h.id for h in fit_expansion([hit("a"), hit("b"), hit("c")], [hit("x", "a"), hit("y", "c")], 3)]
        ['a', 'b', 'x']
    """
    rank = {h.id: i for i, h in enumerate(page)}
    floor = sum(1 for h in page if _is_pinned(h))
    chosen: list[FusedHit] = []
    for neighbour in added:
        keep = min(len(page), top_k - len(chosen) - 1)
        seed_rank = rank.get(str(neighbour.metadata.get("rrf_expanded_from")), len(page))
        if keep < floor or seed_rank >= keep:
            break  # seeds come in page order: no later neighbour's seed fits either
        chosen.append(neighbour)
    return list(page[: min(len(page), top_k - len(chosen))]) + chosen


# -- the stages, in their order ---------------------------------------------------------------------------------


@dataclass
class StageRun:
    """One query's pass through the stages: what they read and what they report for the trace.

    Attributes:
        query: The query (its resolved ``options`` say which stages apply, and how).
        lookup: ``ids -> stored records`` (the pinned stage's look-up); None: no pinning.
        vectors: ``ids -> stored dense vectors`` (the diversity stage's); None: no vectors.
        expand: The engine's 1-hop expansion (``(page, query) -> neighbours``); None: none configured.
        ms: Each timed stage's time, by name (the trace's ``stages_ms``).
        counts: What the stages counted (the trace's ``stage_counts``).
        warnings: The query's warnings (a stage that degrades adds its own).
        level: The hits' levels (:func:`~rrf_retriever.relevance.query_level` of their dense cosines); None: 1.0.
    """

    query: Query
    lookup: Callable[[list[str]], list[Record]] | None = None
    vectors: Vectors | None = None
    expand: Callable[[list[FusedHit], Query], list[FusedHit]] | None = None
    ms: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    level: Callable[[list[FusedHit]], list[float]] | None = None


@dataclass(frozen=True)
class Stage:
    """One result stage.

    Attributes:
        name: Its name (the key of its time in the trace's ``stages_ms`` when ``timed``).
        applies: Whether this query runs it.
        run: ``(hits, run) -> hits``.
        timed: Its time goes in the trace.
        depth: How deep the fused pool must go for it (None: no demand).
    """

    name: str
    applies: Callable[[StageRun], bool]
    run: Callable[[list[FusedHit], StageRun], list[FusedHit]]
    timed: bool = False
    depth: Callable[[Query], int] | None = None


def run_stages(hits: list[FusedHit], run: StageRun, stages: Sequence[Stage]) -> list[FusedHit]:
    """Every stage of ``stages`` that applies, in order, over ``hits``; timed stages record their time."""
    for stage in stages:
        if not stage.applies(run):
            continue
        if not stage.timed:
            hits = stage.run(hits, run)
            continue
        t0 = time.perf_counter()
        try:
            hits = stage.run(hits, run)
        finally:
            run.ms[stage.name] = (time.perf_counter() - t0) * 1000
    return hits


def pool_depth(run: StageRun, stages: Sequence[Stage]) -> int:
    """How deep the fused list goes: the deepest depth a stage that applies needs (the page: ``offset + top_k``;
    diversity: the fetch depth; the reranker: ``rerank_k``), at most :data:`~rrf_retriever.validate.MAX_TOP_K`."""
    depths = [stage.depth(run.query) for stage in stages if stage.depth is not None and stage.applies(run)]
    return min(max(depths, default=run.query.top_k), MAX_TOP_K)


def warn_degraded(text: str, stacklevel: int = 5) -> None:
    """Log and warn (``RuntimeWarning``) that a query was degraded; ``stacklevel`` points at the caller's line."""
    logger.warning("rrf_retriever degraded query: %s", text)
    warnings.warn(text, RuntimeWarning, stacklevel=stacklevel)


def best_possible_score(q: Query) -> float:
    """The fused score of a document first in every active leg, for the query's weights and ``rrf_k`` (the score
    fusions give each leg at most its weight)."""
    total = math.fsum(q.weights[name] for name, _ in q.active)
    return total / (q.settings.rrf_k + 1) if q.settings.fusion == "rrf" else total


def _always(run: StageRun) -> bool:
    return True


def _normalized(hits: list[FusedHit], run: StageRun) -> list[FusedHit]:
    best = best_possible_score(run.query)
    if best <= 0:
        return hits
    normalized = [min(1.0, h.score / best) for h in hits]
    levels = [1.0] * len(hits) if run.level is None else run.level(hits)
    return [replace(h, normalized_score=n, relevance=r)
            for h, n, r in zip(hits, normalized, relevance_scores(normalized, levels))]


def _pinned(hits: list[FusedHit], run: StageRun) -> list[FusedHit]:
    q, lookup = run.query, run.lookup
    if lookup is None:  # the stage applies only with a lookup
        return hits
    hits = pin(hits, tuple(q.options.pinned_ids or ()), q.top_k, q.flt, q.excl, lookup)
    run.counts["pinned"] = sum(1 for h in hits if _is_pinned(h))
    return hits


def _threshold(hits: list[FusedHit], run: StageRun) -> list[FusedHit]:
    threshold = run.query.options.score_threshold or 0.0
    kept = [h for h in hits if h.normalized_score >= threshold or _is_pinned(h)]
    run.counts["threshold_dropped"] = len(hits) - len(kept)
    return kept


def _diversifies(run: StageRun) -> bool:
    lam = run.query.options.diversity
    return lam is not None and lam < 1.0


def _diversified(hits: list[FusedHit], run: StageRun) -> list[FusedHit]:
    o = run.query.options
    picks = max(o.offset + run.query.top_k, o.rerank_k or 0)
    hits, with_vector = diversify(hits, cast(float, o.diversity), picks, run.vectors)  # applies: not None
    run.counts["diversity_pool"] = len(hits)
    run.counts["diversity_vectors"] = with_vector
    return hits


def _reranked(hits: list[FusedHit], run: StageRun) -> list[FusedHit]:
    """The reranker stage; a reranker that raises keeps the fused order (``on_error="degrade"``) or re-raises."""
    q = run.query
    try:
        hits, seen = rerank(hits, q.text, q.options.reranker, q.options.rerank_k or 0)
    except Exception as exc:
        if q.settings.on_error == "raise":
            raise
        text = f"reranker failed ({type(exc).__name__}: {exc}); the fused order is kept"
        run.warnings.append(text)
        run.counts["rerank_failed"] = 1
        warn_degraded(text, stacklevel=7)  # the caller of search: stages, finish and the engine sit in between
        return hits
    run.counts["reranked"] = seen
    return hits


def _page(hits: list[FusedHit], run: StageRun) -> list[FusedHit]:
    start = run.query.options.offset
    return hits[start : start + run.query.top_k]


def _expanded_page(hits: list[FusedHit], run: StageRun) -> list[FusedHit]:
    """The page of the expanded list: pages are filled from the first one on, each with its seeds' neighbours in
    its last slots (:func:`fit_expansion`); the fused results a page's neighbours push out open the next page, and
    a document shown as a neighbour is not shown again. So every page is a slice of one list, as without
    expansion, and no fused result is skipped."""
    expand, top_k, start = run.expand, run.query.top_k, run.query.options.offset
    if expand is None:  # the stage applies only with an expansion
        return _page(hits, run)
    shown: list[FusedHit] = []
    rest = list(hits)
    while rest and len(shown) < start + top_k:
        seeds = rest[:top_k]
        earlier = {h.id for h in shown}
        page = fit_expansion(seeds, [n for n in expand(seeds, run.query) if n.id not in earlier], top_k)
        placed = {h.id for h in page}
        used = sum(1 for h in page if "rrf_expanded_from" not in h.metadata)
        shown.extend(page)
        rest = [h for h in rest[used:] if h.id not in placed]
    page = shown[start : start + top_k]
    run.counts["expanded"] = sum(1 for h in page if "rrf_expanded_from" in h.metadata)
    return page


#: The result stages, in the order they run (the module doc says what each does).
STAGES: tuple[Stage, ...] = (
    Stage("normalize", _always, _normalized),
    Stage("pinned", lambda r: bool(r.query.options.pinned_ids) and r.lookup is not None, _pinned, timed=True),
    Stage("threshold", lambda r: r.query.options.score_threshold is not None, _threshold),
    Stage("diversity", _diversifies, _diversified, timed=True, depth=lambda q: q.fetch_k),
    Stage("rerank", lambda r: r.query.options.reranker is not None, _reranked, timed=True,
          depth=lambda q: q.options.rerank_k or 0),
    Stage("pinned_first", lambda r: bool(r.query.options.pinned_ids),
          lambda hits, r: pinned_first(hits, r.query.top_k)),
    Stage("page", lambda r: r.expand is None, _page, depth=lambda q: q.options.offset + q.top_k),
    Stage("expand", lambda r: r.expand is not None, _expanded_page, timed=True,
          depth=lambda q: q.options.offset + q.top_k),
)
