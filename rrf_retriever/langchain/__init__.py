"""The LangChain edge: the hybrid retriever as a LangChain ``BaseRetriever`` and as a ``VectorStore``, LangChain
compressors as rerankers, our embedding models as a LangChain ``Embeddings``, and ``SelfQueryRetriever``'s
structured query translated into our filters.

Needs ``langchain-core`` (``pip install 'rrf-retriever[langchain]'``) and never imports LlamaIndex. Re-exports
only, each module loaded on first use of a name (PEP 562: the retriever alone skips the vector store's imports),
from :mod:`~rrf_retriever.langchain.retriever`, :mod:`~rrf_retriever.langchain.vectorstore`,
:mod:`~rrf_retriever.langchain.documents`, :mod:`~rrf_retriever.langchain.rerankers`,
:mod:`~rrf_retriever.langchain.embeddings` and
:mod:`~rrf_retriever.langchain.structured_query`. ``rrf_retriever.EnsembleRRFRetriever`` is this retriever when
LangChain is the only framework installed, and with LlamaIndex too it is both frameworks' retriever at once.

Example:
    >>> from rrf_retriever import FTS5KeywordStore
    >>> from rrf_retriever.langchain import LangChainRRFRetriever
    >>> r = LangChainRRFRetriever(keyword=FTS5KeywordStore(), top_k=1)
    >>> r.add_texts(["error E42 in the index", "vector search"], ids=["e42", "vec"])
    ['e42', 'vec']
    >>> [(d.id, d.metadata["rrf_ranks"]) for d in r.invoke("E42")]
    [('e42', {'keyword': 1})]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rrf_retriever.lazy import lazy_attribute

if TYPE_CHECKING:
    from rrf_retriever.langchain.documents import RRFDocument
    from rrf_retriever.langchain.embeddings import RRFLangChainEmbeddings
    from rrf_retriever.langchain.rerankers import CompressorReranker
    from rrf_retriever.langchain.retriever import TRACE_EVENT, LangChainRRFRetriever, to_langchain_document
    from rrf_retriever.langchain.structured_query import RRFTranslator
    from rrf_retriever.langchain.vectorstore import RRFVectorStore

_LAZY: dict[str, str] = {
    "RRFDocument": "rrf_retriever.langchain.documents",
    "RRFLangChainEmbeddings": "rrf_retriever.langchain.embeddings",
    "CompressorReranker": "rrf_retriever.langchain.rerankers",
    "TRACE_EVENT": "rrf_retriever.langchain.retriever",
    "LangChainRRFRetriever": "rrf_retriever.langchain.retriever",
    "to_langchain_document": "rrf_retriever.langchain.retriever",
    "RRFTranslator": "rrf_retriever.langchain.structured_query",
    "RRFVectorStore": "rrf_retriever.langchain.vectorstore",
}

__all__ = [
    "TRACE_EVENT",
    "CompressorReranker",
    "LangChainRRFRetriever",
    "RRFDocument",
    "RRFLangChainEmbeddings",
    "RRFTranslator",
    "RRFVectorStore",
    "to_langchain_document",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name, globals())


def __dir__() -> list[str]:
    return __all__
