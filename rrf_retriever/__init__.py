"""rrf-retriever: hybrid dense + keyword retrieval fused by weighted Reciprocal Rank Fusion.

Re-exports only. Everything heavy (LangChain, LlamaIndex, Qdrant, numpy) loads on first use of the name
that needs it (PEP 562), so ``import rrf_retriever`` stays fast and light.

Example:
    >>> import rrf_retriever
    >>> from rrf_retriever import weighted_rrf, Hit
    >>> [h.id for h in weighted_rrf({"dense": [Hit("a")], "keyword": [Hit("b"), Hit("a")]})]
    ['a', 'b']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rrf_retriever.lazy import lazy_attribute

if TYPE_CHECKING:
    from rrf_retriever.analysis.analyzer import Analyzer
    from rrf_retriever.analysis.languages import tokenize
    from rrf_retriever.embeddings import (
        EmbeddingAdapter,
        HashingEmbedding,
        MiniLMEmbedding,
        as_embedding,
    )
    from rrf_retriever.engine import HybridEngine, RetrievalSettings, SearchOptions, SearchResult
    from rrf_retriever.engine.journal import Journal
    from rrf_retriever.errors import (
        AllLegsFailedError,
        DimensionMismatchError,
        EmbeddingError,
        EngineClosedError,
        FilterError,
        InvalidArgumentError,
        InvalidFilterError,
        InvalidTypeError,
        InvalidVectorError,
        MissingDependencyError,
        RRFRetrieverError,
        StoreError,
        StoreLockedError,
        StoreUnavailableError,
    )
    from rrf_retriever.fusion import (
        calibrated_score_fusion,
        distribution_based_score_fusion,
        normalize_scores,
        relative_score_fusion,
        weighted_rrf,
    )
    from rrf_retriever.retriever import EnsembleRRFRetriever
    from rrf_retriever.stores import (
        BM25KeywordStore,
        FTS5KeywordStore,
        QdrantDenseStore,
        QdrantEdgeDenseStore,
        QdrantEdgeKeywordStore,
        QdrantKeywordStore,
    )
    from rrf_retriever.stores.fts5.match import build_match_query
    from rrf_retriever.types import FusedHit, Hit, Record

_LAZY: dict[str, str] = {
    # light, pure modules
    "weighted_rrf": "rrf_retriever.fusion",
    "relative_score_fusion": "rrf_retriever.fusion",
    "distribution_based_score_fusion": "rrf_retriever.fusion",
    "calibrated_score_fusion": "rrf_retriever.fusion",
    "normalize_scores": "rrf_retriever.fusion",
    "Analyzer": "rrf_retriever.analysis.analyzer",
    "build_match_query": "rrf_retriever.stores.fts5.match",
    "tokenize": "rrf_retriever.analysis.languages",
    "Hit": "rrf_retriever.types",
    "FusedHit": "rrf_retriever.types",
    "Record": "rrf_retriever.types",
    "RRFRetrieverError": "rrf_retriever.errors",
    "InvalidArgumentError": "rrf_retriever.errors",
    "InvalidTypeError": "rrf_retriever.errors",
    "FilterError": "rrf_retriever.errors",
    "InvalidFilterError": "rrf_retriever.errors",
    "MissingDependencyError": "rrf_retriever.errors",
    "StoreError": "rrf_retriever.errors",
    "StoreLockedError": "rrf_retriever.errors",
    "StoreUnavailableError": "rrf_retriever.errors",
    "EmbeddingError": "rrf_retriever.errors",
    "EngineClosedError": "rrf_retriever.errors",
    "DimensionMismatchError": "rrf_retriever.errors",
    "InvalidVectorError": "rrf_retriever.errors",
    "AllLegsFailedError": "rrf_retriever.errors",
    # stores
    "FTS5KeywordStore": "rrf_retriever.stores.fts5.store",
    "BM25KeywordStore": "rrf_retriever.stores.bm25.store",
    "QdrantDenseStore": "rrf_retriever.stores.qdrant",
    "QdrantEdgeDenseStore": "rrf_retriever.stores.qdrant",
    "QdrantKeywordStore": "rrf_retriever.stores.qdrant",
    "QdrantEdgeKeywordStore": "rrf_retriever.stores.qdrant",
    # embeddings
    "EmbeddingAdapter": "rrf_retriever.embeddings",
    "HashingEmbedding": "rrf_retriever.embeddings",
    "MiniLMEmbedding": "rrf_retriever.embeddings",
    "as_embedding": "rrf_retriever.embeddings",
    # engine and the framework retriever
    "HybridEngine": "rrf_retriever.engine",
    "RetrievalSettings": "rrf_retriever.engine",
    "SearchOptions": "rrf_retriever.engine",
    "SearchResult": "rrf_retriever.engine",
    "Journal": "rrf_retriever.engine.journal",
    "EnsembleRRFRetriever": "rrf_retriever.retriever",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("rrf-retriever")
        except PackageNotFoundError:  # running from a source tree that was never installed
            return "0.0.0+unknown"
    return lazy_attribute(__name__, _LAZY, name, globals())


def __dir__() -> list[str]:
    return __all__
