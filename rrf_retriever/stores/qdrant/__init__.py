"""Stores on Qdrant: one class per kind (dense; keyword, BM25 as sparse vectors; joint, both legs in one
collection), each on one backend: qdrant-client (memory, local path, server, cluster) or qdrant-edge (in-process).

Re-exports only.
"""

from rrf_retriever.stores.qdrant.client_stores import QdrantDenseStore, QdrantHybridStore, QdrantKeywordStore
from rrf_retriever.stores.qdrant.edge_stores import QdrantEdgeDenseStore, QdrantEdgeHybridStore, QdrantEdgeKeywordStore
from rrf_retriever.stores.qdrant.joint_views import HybridDenseView, HybridKeywordView
from rrf_retriever.stores.qdrant.points import (
    CONTENT_KEY,
    DENSE_VECTOR_NAME,
    DOC_ID_KEY,
    ID_NAMESPACE,
    METADATA_KEY,
    point_id,
)

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
