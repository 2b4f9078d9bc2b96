"""Rank and score fusion: weighted RRF (the default), relative-score fusion, DBSF and calibrated score fusion.

Pure functions: no I/O, no framework types, inputs never mutated. One fusion method per function, all
behind one calling convention::

    fuse(ranked: Mapping[source, Sequence[Hit]], weights: Mapping[source, float] | None, *, limit) -> list[FusedHit]

Shared rules:

* Ranks are 1-based within a source. Within one source an id counts once, at its first (best) position;
  later duplicates are dropped before ranking.
* A source missing from ``weights`` has weight 1.0; a weight for a source that is not in ``ranked`` is an
  error; weights must be finite and >= 0.
* Zero-weight guard: a source of weight 0 contributes nothing AND cannot introduce a document. A document
  seen only in zero-weight sources is not in the output, and its ranks/scores do not mention them.
* All weights 0 (or no sources) gives ``[]``.
* Deterministic order: fused score desc, then best single rank asc, then id asc. Contributions are summed
  in source-name order, so permuting the sources (with their weights) changes nothing, not even the last bit.

Example:
    >>> from rrf_retriever.types import Hit
    >>> dense = [Hit("a", score=0.9), Hit("b", score=0.8)]
    >>> keyword = [Hit("b", score=12.0), Hit("c", score=7.0)]
    >>> [(h.id, round(h.score, 5)) for h in weighted_rrf({"dense": dense, "keyword": keyword})]
    [('b', 0.03252), ('a', 0.01639), ('c', 0.01613)]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TypeVar

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.types import FusedHit, Hit
from rrf_retriever.validate import check_int, check_number, check_weights

__all__ = [
    "DEFAULT_RRF_K",
    "FUSIONS",
    "calibrated_score_fusion",
    "distribution_based_score_fusion",
    "fuse",
    "fuse_validated",
    "normalize_scores",
    "relative_score_fusion",
    "weighted_rrf",
]

#: The RRF constant of Cormack et al. (2009), also LangChain's and Elasticsearch's default, and the hybrid engine's
#: (its ``rrf_k`` setting) unless told otherwise: chosen across five collections, leave-one-collection-out
#: (benchmarks/bench_collections.py, benchmarks/RESULTS.md): the k=2 tuned on SciFact alone lost on collections nobody
#: tuned on (worst margin over the best anchor -0.030 vs -0.017).
DEFAULT_RRF_K = 60.0
#: How one source's hits become their contributions (before the weight), by position.
Contribution = Callable[[str, Sequence[Hit]], list[float]]


def _check_ranked(ranked: Mapping[str, Sequence[Hit]]) -> None:
    if not isinstance(ranked, Mapping):
        msg = f"ranked must be a mapping of source name to a ranked list of hits, not {type(ranked).__name__}"
        raise InvalidTypeError(msg)
    for name, hits in ranked.items():
        if not isinstance(name, str):
            msg = f"source names are strings, got {name!r}"
            raise InvalidTypeError(msg)
        if isinstance(hits, (str, bytes)) or not isinstance(hits, Sequence):
            msg = f"source {name!r} must give a sequence of hits, not {type(hits).__name__}"
            raise InvalidTypeError(msg)


def _deduped(hits: Sequence[Hit]) -> Sequence[Hit]:
    """Keep each id at its first (best) position only (the input itself when it has no duplicate)."""
    if len({hit.id for hit in hits}) == len(hits):
        return hits
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        if hit.id not in seen:
            seen.add(hit.id)
            out.append(hit)
    return out


def _fuse(
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float] | None,
    contribution: Contribution,
    limit: int | None,
) -> list[FusedHit]:
    """The public functions' door: ``ranked``, ``weights`` and ``limit`` checked, then :func:`_fused`."""
    _check_ranked(ranked)
    resolved = check_weights(list(ranked), weights)
    return _fused(ranked, resolved, contribution, None if limit is None else check_int(limit, "limit", 0))


def _fused(
    ranked: Mapping[str, Sequence[Hit]],
    resolved: Mapping[str, float],
    contribution: Contribution,
    limit: int | None,
) -> list[FusedHit]:
    """The shared loop over checked inputs (a weight for every source): dedup, zero-weight guard, weighted sum,
    deterministic order, ``limit``.

    Per-source ranks and raw scores are looked up only for the documents that make the cut, so the cost is
    one dictionary update per input hit plus the selection of the best ``limit``.
    """
    if limit == 0:
        return []
    score: dict[str, float] = {}
    best: dict[str, tuple[int, Hit]] = {}  # id -> (best rank, the hit of that source: its text and metadata)
    positions: list[tuple[str, dict[str, tuple[int, Hit]]]] = []
    # Sorted source order: sums are computed in one order whatever order the caller used.
    for source in sorted(ranked):
        weight = resolved[source]
        if weight == 0.0:
            continue  # the zero-weight guard: neither score nor new documents
        hits = _deduped(ranked[source])
        values = contribution(source, hits)
        at: dict[str, tuple[int, Hit]] = {}
        for rank, (hit, value) in enumerate(zip(hits, values), start=1):
            doc_id = hit.id
            at[doc_id] = (rank, hit)
            previous = score.get(doc_id)
            if previous is None:
                score[doc_id] = weight * value
                best[doc_id] = (rank, hit)
            else:
                score[doc_id] = previous + weight * value
                if rank < best[doc_id][0]:  # text/metadata come from the source that ranked it best
                    best[doc_id] = (rank, hit)
        positions.append((source, at))

    keys = [(-value, best[doc_id][0], doc_id) for doc_id, value in score.items()]
    chosen = heapq.nsmallest(limit, keys) if limit is not None and limit < len(keys) else sorted(keys)
    out: list[FusedHit] = []
    for _, _, doc_id in chosen:
        hit = best[doc_id][1]
        ranks: dict[str, int] = {}
        raw: dict[str, float] = {}
        for source, at in positions:
            found = at.get(doc_id)
            if found is not None:
                ranks[source] = found[0]
                raw[source] = found[1].score
        out.append(FusedHit(id=doc_id, text=hit.text, metadata=hit.metadata, score=score[doc_id], ranks=ranks,
                            scores=raw))
    return out


def weighted_rrf(
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float] | None = None,
    *,
    k: float = DEFAULT_RRF_K,
    limit: int | None = None,
) -> list[FusedHit]:
    r"""Weighted Reciprocal Rank Fusion.

    .. math:: \mathrm{score}(d) = \sum_i \frac{w_i}{k + \mathrm{rank}_i(d)}

    with ``rank_i`` 1-based in source ``i``; a source that did not return ``d`` adds 0. This is the
    multiplicative form of Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
    individual Rank Learning Methods", SIGIR 2009, with per-source weights as LangChain's EnsembleRetriever
    and Elasticsearch's weighted RRF apply them. Qdrant's server-side ``Rrf(k, weights)`` is a different
    formula (weights stretch the rank, default k=2): its scores and orders do not match this one.

    Args:
        ranked: ``{source: hits best first}``.
        weights: ``{source: weight >= 0}``; missing sources weigh 1.0.
        k: The RRF constant, finite and >= 0 (default 60, the paper's). Larger k flattens the rank curve. The
            hybrid engine's default is this one too (:data:`DEFAULT_RRF_K`).
        limit: Keep only the best ``limit`` results (None: all).

    Returns:
        Fused hits, best first, each with ``ranks`` and ``scores`` per contributing source.

    Example:
        >>> from rrf_retriever.types import Hit
        >>> out = weighted_rrf({"a": [Hit("x"), Hit("y")], "b": [Hit("y")]}, {"a": 2.0}, k=0)
        >>> [(h.id, h.score, dict(h.ranks)) for h in out]
        [('x', 2.0, {'a': 1}), ('y', 2.0, {'a': 2, 'b': 1})]
    """
    return _fuse(ranked, weights, _rrf(check_number(k, "k")), limit)


def _rrf(k: float) -> Contribution:
    """RRF's contribution, ``1 / (k + rank)``."""

    def contribution(_source: str, hits: Sequence[Hit]) -> list[float]:
        return [1.0 / (k + rank) for rank in range(1, len(hits) + 1)]

    return contribution


def _min_max(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi == lo:
        return [1.0] * len(values)
    span = hi - lo
    return [(v - lo) / span for v in values]


def _finite_scores(source: str, hits: Sequence[Hit]) -> list[float]:
    scores = [float(h.score) for h in hits]
    if not all(math.isfinite(s) for s in scores):
        msg = f"score fusion needs finite scores; source {source!r} returned NaN or infinity"
        raise InvalidArgumentError(msg)
    return scores


def relative_score_fusion(
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float] | None = None,
    *,
    limit: int | None = None,
) -> list[FusedHit]:
    r"""Relative-score fusion: min-max normalise each source's scores, then a weighted sum.

    .. math:: \mathrm{score}(d) = \sum_i w_i \frac{s_i(d) - \min_i}{\max_i - \min_i}

    over the hits each source returned (a source whose hits all score the same gives each 1.0).
    As Weaviate's ``relativeScoreFusion`` (Weaviate 1.20, 2023). Unlike RRF it uses the score gaps, so it
    depends on each store's score scale being meaningful.

    Example:
        >>> from rrf_retriever.types import Hit
        >>> out = relative_score_fusion({"a": [Hit("x", score=3.0), Hit("y", score=1.0)]})
        >>> [(h.id, h.score) for h in out]
        [('x', 1.0), ('y', 0.0)]
    """

    return _fuse(ranked, weights, _relative, limit)


def _relative(source: str, hits: Sequence[Hit]) -> list[float]:
    return _min_max(_finite_scores(source, hits)) if hits else []


def distribution_based_score_fusion(
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float] | None = None,
    *,
    limit: int | None = None,
) -> list[FusedHit]:
    r"""Distribution-based score fusion (DBSF): normalise by mean +/- 3 sigma, then a weighted sum.

    .. math:: \mathrm{score}(d) = \sum_i w_i \frac{s_i(d) - (\mu_i - 3\sigma_i)}{6\sigma_i}

    with :math:`\mu_i, \sigma_i` the mean and population standard deviation of source ``i``'s returned
    scores; a source with :math:`\sigma_i = 0` gives each hit 0.5 (the middle of the range). Not clipped, as
    in Qdrant's ``Fusion.DBSF`` (Qdrant 1.11, 2024), after M. Mazzeschi, "Distribution-Based Score Fusion",
    2023.

    Example:
        >>> from rrf_retriever.types import Hit
        >>> out = distribution_based_score_fusion({"a": [Hit("x", score=2.0), Hit("y", score=0.0)]})
        >>> [(h.id, round(h.score, 4)) for h in out]
        [('x', 0.6667), ('y', 0.3333)]
    """

    return _fuse(ranked, weights, _dbsf, limit)


def _by_spread(source: str, hits: Sequence[Hit], scale: Callable[[list[float], float], list[float]]) -> list[float]:
    """What DBSF and calibrated fusion share: no hits give [], the scores must be finite, and a source whose scores
    are all equal (spread 0) gives each hit 0.5; otherwise ``scale(scores, spread)``."""
    if not hits:
        return []
    scores = _finite_scores(source, hits)
    sigma = _spread(scores)
    if sigma == 0.0:
        return [0.5] * len(scores)
    return scale(scores, sigma)


def _dbsf(source: str, hits: Sequence[Hit]) -> list[float]:
    return _by_spread(source, hits, _dbsf_scaled)


def _dbsf_scaled(scores: list[float], sigma: float) -> list[float]:
    lower = math.fsum(scores) / len(scores) - 3.0 * sigma
    return [(s - lower) / (6.0 * sigma) for s in scores]


def _spread(scores: Sequence[float]) -> float:
    """The population standard deviation of a source's scores (what DBSF and calibrated fusion scale by)."""
    mean = math.fsum(scores) / len(scores)
    return math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def calibrated_score_fusion(
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float] | None = None,
    *,
    limit: int | None = None,
) -> list[FusedHit]:
    r"""Calibrated score fusion: each source's scores become probabilities of relevance, then a weighted sum.

    .. math:: p_i(d) = \sigma\!\left(\frac{s_i(d) - m_i}{\sigma_i}\right), \qquad
              \mathrm{score}(d) = \sum_i w_i \, p_i(d)

    with :math:`\sigma(x) = 1 / (1 + e^{-x})`, :math:`m_i` the median and :math:`\sigma_i` the population standard
    deviation of source ``i``'s returned scores (the sigmoid's midpoint and slope estimated from the source's own
    results, with no relevance labels, as the auto-estimated calibration of Bayesian BM25: J. Jeong, "Bayesian
    BM25", 2026, reference implementation ``bayesian-bm25`` on PyPI); a document a source did not return has
    probability 0 there. A source whose returned scores are all equal gives each hit 0.5: its scores carry no
    order. Each source gives at most its weight, as the other score fusions. Unlike Bayesian BM25 it calibrates
    every source the same way (dense cosines too) and sums the probabilities (CombSUM) rather than their log-odds:
    the sum is bounded and a document one source misses is not vetoed.

    Example:
        >>> from rrf_retriever.types import Hit
        >>> out = calibrated_score_fusion({"a": [Hit("x", score=3.0), Hit("y", score=1.0)]})
        >>> [(h.id, round(h.score, 4)) for h in out]
        [('x', 0.7311), ('y', 0.2689)]
    """

    return _fuse(ranked, weights, _calibrated, limit)


def _calibrated(source: str, hits: Sequence[Hit]) -> list[float]:
    return _by_spread(source, hits, _calibrated_scaled)


def _calibrated_scaled(scores: list[float], sigma: float) -> list[float]:
    ordered = sorted(scores)
    half = len(ordered) // 2
    median = ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2.0
    return [_sigmoid((s - median) / sigma) for s in scores]


H = TypeVar("H", Hit, FusedHit)


def normalize_scores(hits: Sequence[H]) -> list[H]:
    """Min-max the scores of a ranked list to 0..1, for display; order and everything else unchanged.

    A list whose scores are all equal gets 1.0 everywhere. Returns new objects; the input is not mutated.

    Example:
        >>> from rrf_retriever.types import Hit
        >>> [h.score for h in normalize_scores([Hit("a", score=4.0), Hit("b", score=2.0), Hit("c", score=3.0)])]
        [1.0, 0.0, 0.5]
    """
    if not hits:
        return []
    scaled = _min_max([float(h.score) for h in hits])
    return [replace(h, score=s) for h, s in zip(hits, scaled)]


#: The fusion methods by name (the engine's ``fusion=`` setting). Weighted RRF is the default; the score
#: fusions are options (they need comparable raw scores, which RRF does not).
FUSIONS: Mapping[str, Callable[..., list[FusedHit]]] = MappingProxyType(
    {
        "rrf": weighted_rrf,
        "relative_score": relative_score_fusion,
        "dbsf": distribution_based_score_fusion,
        "calibrated": calibrated_score_fusion,
    }
)


def fuse(
    method: str,
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float] | None = None,
    *,
    rrf_k: float = DEFAULT_RRF_K,
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse ``ranked`` with the method of :data:`FUSIONS` named ``method``; ``rrf_k`` applies to ``"rrf"`` only.

    Example:
        >>> [h.id for h in fuse("rrf", {"a": [Hit("x"), Hit("y")], "b": [Hit("y")]}, rrf_k=60)]
        ['y', 'x']
    """
    if method not in FUSIONS:
        msg = f"fusion must be one of {sorted(FUSIONS)}, got {method!r}"
        raise InvalidArgumentError(msg)
    if method == "rrf":
        return weighted_rrf(ranked, weights, k=rrf_k, limit=limit)
    return FUSIONS[method](ranked, weights, limit=limit)


#: The score fusions' contributions by method name (RRF's depends on its ``k``: :func:`_rrf`).
_SCORE_CONTRIBUTIONS: Mapping[str, Contribution] = MappingProxyType(
    {"relative_score": _relative, "dbsf": _dbsf, "calibrated": _calibrated}
)


def fuse_validated(
    method: str,
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    rrf_k: float,
    limit: int | None,
) -> list[FusedHit]:
    """:func:`fuse` over inputs validated where they entered, as the engine holds them: ``method`` one of
    :data:`FUSIONS` and ``rrf_k`` in range (the settings checked both), ``weights`` a checked weight for every source
    of ``ranked`` (the options and the settings), ``limit`` >= 0. Nothing is checked again; a caller with raw
    inputs calls :func:`fuse` or the functions above, which check them.

    Example:
        >>> [h.id for h in fuse_validated("rrf", {"a": [Hit("x"), Hit("y")], "b": [Hit("y")]}, {"a": 1.0, "b": 1.0},
        ...                               60.0, None)]
        ['y', 'x']
    """
    contribution = _rrf(rrf_k) if method == "rrf" else _SCORE_CONTRIBUTIONS[method]
    return _fused(ranked, weights, contribution, limit)
