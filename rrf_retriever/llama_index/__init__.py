"""The LlamaIndex edge: the hybrid retriever as a LlamaIndex ``BaseRetriever`` (nodes kept whole), LlamaIndex
``MetadataFilters`` as our filters, postprocessors as rerankers, and our embedding models as a LlamaIndex
``BaseEmbedding``.

Needs ``llama-index-core`` (``pip install 'rrf-retriever[llama-index]'``) and never imports LangChain. Re-exports
only, each module loaded on first use of a name (PEP 562: the retriever alone skips the vector store's imports),
from :mod:`~rrf_retriever.llama_index.retriever`, :mod:`~rrf_retriever.llama_index.nodes`,
:mod:`~rrf_retriever.llama_index.result_nodes` (``RRFTextNode``: a result node, hashed without ``rrf_*`` keys),
:mod:`~rrf_retriever.llama_index.filters`, :mod:`~rrf_retriever.llama_index.rerankers`,
:mod:`~rrf_retriever.llama_index.embeddings` and :mod:`~rrf_retriever.llama_index.vector_store` (``RRFVectorStore``,
a LlamaIndex vector store). ``rrf_retriever.EnsembleRRFRetriever`` is this retriever when
LlamaIndex is the only framework installed, and with LangChain too it is both frameworks' retriever at once.

Example:
    >>> from rrf_retriever import FTS5KeywordStore
    >>> from rrf_retriever.llama_index import LlamaIndexRRFRetriever
    >>> r = LlamaIndexRRFRetriever(keyword=FTS5KeywordStore(), top_k=1)
    >>> r.add_texts(["error E42 in the index", "vector search"], ids=["e42", "vec"])
    ['e42', 'vec']
    >>> [(n.node.node_id, n.node.metadata["rrf_ranks"]) for n in r.retrieve("E42")]
    [('e42', {'keyword': 1})]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rrf_retriever.lazy import lazy_attribute

if TYPE_CHECKING:
    from rrf_retriever.llama_index.embeddings import RRFLlamaIndexEmbedding
    from rrf_retriever.llama_index.filters import from_llama_index
    from rrf_retriever.llama_index.nodes import to_node_with_score
    from rrf_retriever.llama_index.rerankers import PostprocessorReranker
    from rrf_retriever.llama_index.result_nodes import RRFTextNode
    from rrf_retriever.llama_index.retriever import LlamaIndexRRFRetriever, RRFRetrievalTraceEvent
    from rrf_retriever.llama_index.vector_store import RRFVectorStore

_LAZY: dict[str, str] = {
    "RRFLlamaIndexEmbedding": "rrf_retriever.llama_index.embeddings",
    "from_llama_index": "rrf_retriever.llama_index.filters",
    "to_node_with_score": "rrf_retriever.llama_index.nodes",
    "PostprocessorReranker": "rrf_retriever.llama_index.rerankers",
    "RRFTextNode": "rrf_retriever.llama_index.result_nodes",
    "LlamaIndexRRFRetriever": "rrf_retriever.llama_index.retriever",
    "RRFRetrievalTraceEvent": "rrf_retriever.llama_index.retriever",
    "RRFVectorStore": "rrf_retriever.llama_index.vector_store",
}

__all__ = [
    "LlamaIndexRRFRetriever",
    "PostprocessorReranker",
    "RRFLlamaIndexEmbedding",
    "RRFRetrievalTraceEvent",
    "RRFTextNode",
    "RRFVectorStore",
    "from_llama_index",
    "to_node_with_score",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name, globals())


def __dir__() -> list[str]:
    return __all__
