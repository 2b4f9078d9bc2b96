"""Stores on Qdrant: qdrant-client (memory, local path, server, cluster) and qdrant-edge (in-process); dense and
BM25-as-sparse-vectors keyword stores.

Re-exports only.
"""

from rrf_retriever.stores.qdrant.base import CONTENT_KEY, DOC_ID_KEY, ID_NAMESPACE, METADATA_KEY, point_id
from rrf_retriever.stores.qdrant.client import QdrantDenseStore
from rrf_retriever.stores.qdrant.edge import QdrantEdgeDenseStore
from rrf_retriever.stores.qdrant.hybrid import DENSE_VECTOR_NAME
from rrf_retriever.stores.qdrant.hybrid_client import QdrantHybridStore
from rrf_retriever.stores.qdrant.hybrid_edge import QdrantEdgeHybridStore
from rrf_retriever.stores.qdrant.hybrid_views import HybridDenseView, HybridKeywordView
from rrf_retriever.stores.qdrant.keyword_client import QdrantKeywordStore
from rrf_retriever.stores.qdrant.keyword_edge import QdrantEdgeKeywordStore

__all__ = [
    "CONTENT_KEY",
    "DENSE_VECTOR_NAME",
    "DOC_ID_KEY",
    "ID_NAMESPACE",
    "METADATA_KEY",
    "HybridDenseView",
    "HybridKeywordView",
    "QdrantDenseStore",
    "QdrantEdgeDenseStore",
    "QdrantEdgeHybridStore",
    "QdrantEdgeKeywordStore",
    "QdrantHybridStore",
    "QdrantKeywordStore",
    "point_id",
]
