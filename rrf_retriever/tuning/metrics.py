"""Per-query IR metrics in pure Python, as ranx and trec_eval define them (closed forms, no numba start-up).

Example:
    >>> parse_metric("ndcg@10"), metric_value("hit_rate", ["a", "b"], {"b": 2}, 5)
    (('ndcg', 10), 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError

__all__ = ["METRICS", "metric_value", "parse_metric"]

#: Per-query metrics this module computes (the ``metric`` argument is ``"<name>@<cutoff>"``, e.g. ``"ndcg@10"``).
METRICS = ("ndcg", "mrr", "recall", "precision", "map", "hit_rate")


def parse_metric(metric: str) -> tuple[str, int | None]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"mrr"`` -> ``("mrr", None)`` (cutoff: the retriever's ``top_k``).

    Example:
        >>> parse_metric("recall@20"), parse_metric("MRR")
        (('recall', 20), ('mrr', None))
    """
    if not isinstance(metric, str):
        msg = f"metric must be a string such as 'ndcg@10', not {type(metric).__name__}"
        raise InvalidTypeError(msg)
    name, _, cut = metric.strip().lower().partition("@")
    if name not in METRICS:
        msg = f"unknown metric {metric!r}; use one of {list(METRICS)}, with an optional @cutoff (e.g. 'ndcg@10')"
        raise InvalidArgumentError(msg)
    if not cut:
        return name, None
    if not cut.isdigit() or int(cut) < 1:
        msg = f"the cutoff of {metric!r} must be a positive integer (e.g. 'ndcg@10')"
        raise InvalidArgumentError(msg)
    return name, int(cut)


def metric_value(name: str, ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """One query's metric over its ranked ids (best first), as ranx and trec_eval define it.

    A document is relevant when its grade is > 0. ``ndcg`` uses the grade as the gain and ``log2(rank + 1)`` as
    the discount (trec_eval's, ranx's ``ndcg``); ``map`` divides by the number of relevant documents; a query
    with no relevant document scores 0 on every metric.

    Example:
        >>> metric_value("ndcg", ["a", "b"], {"b": 1}, 10)  # 1 / log2(3)
        0.6309297535714575
        >>> metric_value("mrr", ["a", "b"], {"b": 1}, 1)
        0.0
    """
    top = list(dict.fromkeys(ranked))[:k]  # an id counts once, at its best rank
    relevant = {d: g for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    if name == "ndcg":
        dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top))
        ideal = sorted(relevant.values(), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        return dcg / idcg
    if name == "mrr":
        return next((1.0 / (i + 1) for i, d in enumerate(top) if d in relevant), 0.0)
    hits = [d in relevant for d in top]
    if name == "recall":
        return sum(hits) / len(relevant)
    if name == "precision":
        return sum(hits) / k
    if name == "hit_rate":
        return 1.0 if any(hits) else 0.0
    if name == "map":
        found, total = 0, 0.0
        for i, hit in enumerate(hits):
            if hit:
                found += 1
                total += found / (i + 1)
        return total / len(relevant)
    msg = f"unknown metric {name!r}; use one of {list(METRICS)}"
    raise InvalidArgumentError(msg)
