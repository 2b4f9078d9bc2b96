"""The LangChain edge: the hybrid retriever as a LangChain ``BaseRetriever``, LangChain compressors as rerankers,
and our embedding models as a LangChain ``Embeddings``.

Needs ``langchain-core`` (``pip install 'rrf-retriever[langchain]'``) and never imports LlamaIndex. Re-exports
only, from :mod:`~rrf_retriever.langchain.retriever`, :mod:`~rrf_retriever.langchain.rerankers` and
:mod:`~rrf_retriever.langchain.embeddings`. ``rrf_retriever.EnsembleRRFRetriever`` is this retriever when LangChain
is the only framework installed, and with LlamaIndex too it is both frameworks' retriever at once.

Example:
    >>> from rrf_retriever import FTS5KeywordStore
    >>> from rrf_retriever.langchain import LangChainRRFRetriever
    >>> r = LangChainRRFRetriever(keyword=FTS5KeywordStore(), top_k=1)
    >>> r.add_texts(["error E42 in the index", "vector search"], ids=["e42", "vec"])
    ['e42', 'vec']
    >>> [(d.id, d.metadata["rrf_ranks"]) for d in r.invoke("E42")]
    [('e42', {'keyword': 1})]
"""

from rrf_retriever.langchain.embeddings import RRFLangChainEmbeddings
from rrf_retriever.langchain.rerankers import CompressorReranker
from rrf_retriever.langchain.retriever import TRACE_EVENT, LangChainRRFRetriever, to_langchain_document

__all__ = [
    "TRACE_EVENT",
    "CompressorReranker",
    "LangChainRRFRetriever",
    "RRFLangChainEmbeddings",
    "to_langchain_document",
]
