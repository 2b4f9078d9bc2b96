"""Evaluate an index on judged queries: ONE definition, which ``rrf-retriever eval`` reports and :func:`tune` scores
its current settings by (so the two agree exactly).

The definition: each judged query is searched through the engine with its own ``filter`` and ``exclude_ids`` (the
shipped set's session-scoped queries carry a filter), at ``top_k = max(cutoff, settings.top_k)`` for a metric
``name@cutoff`` (one search per distinct depth: ``ndcg@10`` and ``mrr@10`` read the same list, ``recall@100`` a
deeper one), and the metric is computed in pure Python (:mod:`~rrf_retriever.tuning.metrics`, the closed forms ranx
and trec_eval use; no ranx, so no numba compile on the first run). A degraded result (a leg failed) is refused:
its figure would describe an outage, not the index.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> from rrf_retriever.engine import HybridEngine
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> engine = HybridEngine({"keyword": FTS5KeywordStore()})
    >>> engine.add(["a", "b"], ["rocket fuel", "orbit maths"], [{"s": 1}, {"s": 2}])
    ['a', 'b']
    >>> figures = evaluate_index(engine, {"q": {"text": "rocket orbit", "filter": {"s": 2}}}, {"q": {"b": 1}},
    ...                          ("mrr@10",))
    >>> figures.metrics
    {'mrr@10': 1.0}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rrf_retriever.errors import InvalidTypeError, StoreError
from rrf_retriever.evaluation import DEFAULT_METRICS
from rrf_retriever.tuning.judged_input import judged_queries
from rrf_retriever.tuning.metrics import metric_value, parse_metric
from rrf_retriever.validate import MAX_TOP_K

__all__ = ["IndexEvaluation", "evaluate_index", "ranking_depth"]

#: One judged query: ``(query_id, text, filter, exclude_ids)``.


@dataclass(frozen=True)
class IndexEvaluation:
    """The figures of an index on judged queries.

    Attributes:
        metrics: The mean of each metric over the queries, by its name as given (``"ndcg@10"``).
        per_query: Each metric's value per query id, in qrels order.
    """

    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]


def ranking_depth(cutoff: int, top_k: int) -> int:
    """The ``top_k`` a metric at ``cutoff`` is read at: the engine's ranking at its own ``top_k``, deeper when the
    cutoff asks for more (a fused list's head depends on how deep the legs fetched, so the depth is part of the
    definition).

    Example:
        >>> ranking_depth(10, 10), ranking_depth(100, 10), ranking_depth(5, 20)
        (10, 100, 20)
    """
    return min(max(cutoff, top_k), MAX_TOP_K)


def evaluate_index(
    engine: Any,
    queries: Mapping[str, Any],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    ignore_identical_ids: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> IndexEvaluation:
    """The figures of the engine's index on judged queries, as the module doc defines them.

    Args:
        engine: A :class:`~rrf_retriever.engine.HybridEngine`, with the settings to evaluate.
        queries: ``{query_id: text}`` or ``{query_id: {"text", "filter", "exclude_ids"}}`` (ids not judged are
            ignored).
        qrels: ``{query_id: {doc_id: grade}}``; grade > 0 is relevant; a query with none scores 0.
        metrics: ``"name@cutoff"`` names of :mod:`~rrf_retriever.tuning.metrics` (no cutoff: the settings'
            ``top_k``).
        ignore_identical_ids: Drop a retrieved document whose id is the query's (BEIR's rule for ArguAna); the
            search then asks for one more hit, so the cut still holds ``cutoff`` others.
        progress: Called as ``progress(done, total)`` after each query.

    Raises:
        InvalidArgumentError / InvalidTypeError: bad queries, qrels or metric names.
        StoreError: a leg failed on a query (the result was degraded).
    """
    if isinstance(metrics, str) or not metrics:
        msg = f"metrics must be a non-empty sequence of names such as ('ndcg@10',), not {metrics!r}"
        raise InvalidTypeError(msg)
    specs, qrels = judged_queries(queries, qrels)  # one door for tune and eval: ids, grades, texts
    top_k = engine.settings.top_k
    parsed = [(label, *parse_metric(label)) for label in metrics]
    cut = {label: top_k if c is None else c for label, _, c in parsed}
    depths = sorted({ranking_depth(c, top_k) for c in cut.values()})
    per_query: dict[str, dict[str, float]] = {label: {} for label, _, _ in parsed}
    for done, (qid, text, flt, excl) in enumerate(specs, 1):
        ranked: dict[int, list[str]] = {}
        for depth in depths:
            asked = min(depth + 1, MAX_TOP_K) if ignore_identical_ids else depth
            result = engine.search(text, top_k=asked, filter=flt, exclude_ids=excl)
            if result.trace.warnings:
                msg = f"cannot evaluate on degraded results: query {qid!r}: " + "; ".join(result.trace.warnings)
                raise StoreError(msg)
            ranked[depth] = [h.id for h in result.hits if not (ignore_identical_ids and h.id == qid)]
        for label, name, _ in parsed:
            c = cut[label]
            per_query[label][qid] = metric_value(name, ranked[ranking_depth(c, top_k)], qrels[qid], c)
        if progress is not None:
            progress(done, len(specs))
    n = max(len(specs), 1)
    means = {label: math.fsum(values.values()) / n for label, values in per_query.items()}
    return IndexEvaluation(means, per_query)
