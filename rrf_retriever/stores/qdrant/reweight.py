"""The reweight pass of a BM25 collection (keyword or joint): two scrolls over every point, one to measure the mean
analyzed length, one to rewrite every point's BM25 values with a new avgdl. Same point ids, same payloads; a joint
collection keeps its dense vectors (the rewrite is a vector update there).

The store drives it (:meth:`~rrf_retriever.stores.qdrant.keyword.Bm25Store.reweight`); these steps only read and
write points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.stores.qdrant.backend import Backend
from rrf_retriever.stores.qdrant.bm25_params import terms_of, values_of
from rrf_retriever.stores.qdrant.ops import Op, Steps
from rrf_retriever.stores.qdrant.points import SCROLL_PAGE, Point
from rrf_retriever.stores.qdrant.sparse_values import document_length

__all__ = ["mean_length_steps", "rewrite_steps"]


def mean_length_steps(backend: Backend, analyzer: Analyzer, title_weight: float) -> Steps[float | None]:
    """The mean analyzed length of the stored documents (documents without terms count, as in bm25s); None: no
    document has a term."""
    total = count = 0
    offset = None
    while True:
        points, offset = yield Op(backend.scroll, (offset, SCROLL_PAGE), "scroll")
        for p in points:
            total += document_length(*terms_of(analyzer, p.payload), title_weight)
            count += 1
        if offset is None:
            break
    return total / count if total else None


def rewrite_steps(
    backend: Backend, analyzer: Analyzer, params: Mapping[str, Any], rewrite: Callable[[list[Point]], Op]
) -> Steps[None]:
    """Every point's BM25 values anew with ``params``; ``rewrite(points)`` is the op that writes a page (points
    carry the payload read back, and no dense vector)."""
    offset = None
    while True:
        points, offset = yield Op(backend.scroll, (offset, SCROLL_PAGE), "scroll")
        rewritten = [
            Point(str(p.id), None, values_of(terms_of(analyzer, p.payload), params), dict(p.payload or {}))
            for p in points
        ]
        if rewritten:
            yield rewrite(rewritten)
        if offset is None:
            break
