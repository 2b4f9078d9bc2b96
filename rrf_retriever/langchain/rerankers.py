"""A LangChain ``BaseDocumentCompressor`` as an engine reranker.

The engine knows only its own shapes (:mod:`rrf_retriever.engine.rerank`); this edge converts. The retriever does
it by itself (``invoke(q, reranker=compressor)``, ``update_settings(reranker=compressor)``); wrap a compressor in
:class:`CompressorReranker` to give it to the engine, the CLI (``--reranker module:attr``) or the service.

A compressor gets LangChain ``Document`` s (``id`` = our id, the result metadata). It may drop documents (they
are removed from the result, pinned ones excepted) and may return NEW ``Document`` objects: each is matched back
by ``Document.id``, else by its exact text, else by carrying our metadata back unchanged (what extractors such
as ``LLMChainExtractor`` do, a ``relevance_score`` key aside; ours holds ``rrf_score`` and ``rrf_ranks``), each
candidate once. One matching none of the candidates is ignored. Our text and metadata are kept, the compressor's
content is not. Its score: ``metadata["relevance_score"]`` when it sets one (Cohere, FlashRank), else its position.

Example:
    >>> from langchain_core.documents.compressor import BaseDocumentCompressor
    >>> from rrf_retriever.types import FusedHit
    >>> class Reverse(BaseDocumentCompressor):
    ...     def compress_documents(self, documents, query, callbacks=None):
    ...         return list(reversed(documents))
    >>> hits = [FusedHit("a", "first", {}, 0.2, {}, {}), FusedHit("b", "second", {}, 0.1, {}, {})]
    >>> CompressorReranker(Reverse()).rerank_hits("q", hits)
    [('b', 2.0), ('a', 1.0)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rrf_retriever.errors import missing_dependency
from rrf_retriever.frameworks.results import reranker_score, result_metadata
from rrf_retriever.types import FusedHit

try:
    from langchain_core.documents import Document
    from langchain_core.documents.compressor import BaseDocumentCompressor
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("langchain-core", "langchain", "rrf_retriever.langchain") from exc

__all__ = ["CompressorReranker", "as_compressor_reranker"]


class CompressorReranker:
    """A LangChain ``BaseDocumentCompressor`` as an engine reranker (``rerank_hits``)."""

    def __init__(self, compressor: BaseDocumentCompressor) -> None:
        self.compressor = compressor
        self.name = f"langchain:{type(compressor).__module__}.{type(compressor).__qualname__}"

    def rerank_hits(self, query: str, hits: Sequence[FusedHit]) -> list[tuple[str, float]]:
        """The ids the compressor kept, best first, each with its score (see the module docstring)."""
        metas = [result_metadata(h) for h in hits]
        docs = [Document(id=h.id, page_content=h.text, metadata=m) for h, m in zip(hits, metas)]
        returned = list(self.compressor.compress_documents(docs, query))
        unused = dict.fromkeys(h.id for h in hits)  # candidates not matched yet, in fused order
        text_of = {h.id: h.text for h in hits}
        meta_of = {h.id: m for h, m in zip(hits, metas)}
        out: list[tuple[str, float]] = []
        for position, doc in enumerate(returned):
            doc_id = doc.id if doc.id in unused else None
            if doc_id is None:
                doc_id = next((i for i in unused if text_of[i] == doc.page_content), None)
            if doc_id is None:
                carried = {k: v for k, v in doc.metadata.items() if k != "relevance_score"}
                doc_id = next((i for i in unused if meta_of[i] == carried), None)
            if doc_id is None:
                continue
            del unused[doc_id]
            out.append((doc_id, reranker_score(doc.metadata.get("relevance_score"), position, len(returned))))
        return out


def as_compressor_reranker(reranker: Any) -> CompressorReranker | None:
    """``reranker`` wrapped if it is a LangChain compressor, else None (the LangChain side's reranker hook).

    Example:
        >>> as_compressor_reranker(len) is None
        True
    """
    return CompressorReranker(reranker) if isinstance(reranker, BaseDocumentCompressor) else None
