"""Stores on Qdrant: qdrant-client (memory, local path, server, cluster) and qdrant-edge (in-process).

Re-exports only.
"""

from rrf_retriever.stores.qdrant.base import CONTENT_KEY, DOC_ID_KEY, ID_NAMESPACE, METADATA_KEY, point_id
from rrf_retriever.stores.qdrant.client import QdrantDenseStore
from rrf_retriever.stores.qdrant.edge import QdrantEdgeDenseStore

__all__ = [
    "CONTENT_KEY",
    "DOC_ID_KEY",
    "ID_NAMESPACE",
    "METADATA_KEY",
    "QdrantDenseStore",
    "QdrantEdgeDenseStore",
    "point_id",
]
