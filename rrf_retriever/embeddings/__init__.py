"""Embeddings: adapters for plain callables and for LangChain / LlamaIndex models, and the offline MiniLM.

Re-exports only; framework-free (models are recognised by their methods; the views exposing an adapter as a
framework's embedding live in :mod:`rrf_retriever.langchain` and :mod:`rrf_retriever.llama_index`). The modules:

* :mod:`~rrf_retriever.embeddings.base`: the :class:`EmbeddingAdapter` protocol, :class:`BaseEmbeddingAdapter`
  (checks, batching, progress, async twins, model errors) and :class:`CallableEmbedding`;
* :mod:`~rrf_retriever.embeddings.adapters`: :func:`as_embedding` and the adapters over models with LangChain's or
  LlamaIndex's embedding methods (duck typed: no framework import);
* :mod:`~rrf_retriever.embeddings.hashing`: :class:`HashingEmbedding` (plumbing tests);
* :mod:`~rrf_retriever.embeddings.minilm`: :class:`MiniLMEmbedding` (onnxruntime, no torch; extra ``local``),
  over the int8 quantisation :mod:`~rrf_retriever.embeddings.int8_graph` builds (the default) or, with
  ``precision="fp32"``, the exact graph :mod:`~rrf_retriever.embeddings.onnx_graph` builds;
* :mod:`~rrf_retriever.embeddings.cache`: :func:`cached_embed_documents`.

Example:
    >>> from rrf_retriever.embeddings import as_embedding, HashingEmbedding
    >>> emb = as_embedding(lambda texts: [[1.0, 0.0] for _ in texts])
    >>> emb.embed_query("hello"), emb.dimension
    ([1.0, 0.0], 2)
    >>> len(HashingEmbedding(dim=8).embed_query("hello world"))
    8
"""

from rrf_retriever.embeddings.adapters import (
    LangChainEmbeddingAdapter,
    LlamaIndexEmbeddingAdapter,
    as_embedding,
)
from rrf_retriever.embeddings.base import BaseEmbeddingAdapter, CallableEmbedding, EmbeddingAdapter
from rrf_retriever.embeddings.cache import cached_embed_documents
from rrf_retriever.embeddings.hashing import HashingEmbedding
from rrf_retriever.embeddings.minilm import MiniLMEmbedding, default_cache_dir

__all__ = [
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
