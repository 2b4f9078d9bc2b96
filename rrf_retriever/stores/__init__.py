"""Stores: keyword (SQLite FTS5, in-memory BM25) and dense (Qdrant). Loaded lazily.

Example:
    >>> from rrf_retriever.stores import FTS5KeywordStore  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rrf_retriever.lazy import lazy_attribute

if TYPE_CHECKING:
    from rrf_retriever.stores.base import DenseStore, KeywordStore
    from rrf_retriever.stores.bm25.store import BM25KeywordStore
    from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    from rrf_retriever.stores.qdrant import (
        QdrantDenseStore,
        QdrantEdgeDenseStore,
        QdrantEdgeKeywordStore,
        QdrantKeywordStore,
    )

_LAZY: dict[str, str] = {
    "DenseStore": "rrf_retriever.stores.base",
    "KeywordStore": "rrf_retriever.stores.base",
    "FTS5KeywordStore": "rrf_retriever.stores.fts5.store",
    "BM25KeywordStore": "rrf_retriever.stores.bm25.store",
    "QdrantDenseStore": "rrf_retriever.stores.qdrant",
    "QdrantEdgeDenseStore": "rrf_retriever.stores.qdrant",
    "QdrantKeywordStore": "rrf_retriever.stores.qdrant",
    "QdrantEdgeKeywordStore": "rrf_retriever.stores.qdrant",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name, globals())


def __dir__() -> list[str]:
    return __all__
