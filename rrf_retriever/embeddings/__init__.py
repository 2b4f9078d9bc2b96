"""Embeddings: adapters for LangChain, LlamaIndex and plain callables, and the offline MiniLM.

Re-exports only.
"""

from rrf_retriever.embeddings.adapters import (
    PROGRESS_THRESHOLD,
    BaseEmbeddingAdapter,
    CallableEmbedding,
    EmbeddingAdapter,
    HashingEmbedding,
    LangChainEmbeddingAdapter,
    LlamaIndexEmbeddingAdapter,
    MiniLMEmbedding,
    as_embedding,
    cached_embed_documents,
    default_cache_dir,
)

__all__ = [
    "PROGRESS_THRESHOLD",
    "BaseEmbeddingAdapter",
    "CallableEmbedding",
    "EmbeddingAdapter",
    "HashingEmbedding",
    "LangChainEmbeddingAdapter",
    "LlamaIndexEmbeddingAdapter",
    "MiniLMEmbedding",
    "as_embedding",
    "cached_embed_documents",
    "default_cache_dir",
]
