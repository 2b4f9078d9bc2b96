"""Framework rerankers as engine rerankers: LangChain ``BaseDocumentCompressor``, LlamaIndex ``BaseNodePostprocessor``.

The engine knows only its own shapes (:mod:`rrf_retriever.engine.rerank`); this edge converts. Nothing here
imports a framework: an object can only be a compressor if ``langchain_core`` is already loaded, and only a
postprocessor if ``llama_index.core`` is, so :func:`as_reranker` looks at ``sys.modules``.

* A compressor gets LangChain ``Document`` s (``id`` = our id, the result metadata). It may drop documents (they
  are removed from the result, pinned ones excepted) and may return NEW ``Document`` objects: each is matched back
  by ``Document.id``, else by its exact text, else by carrying our metadata back unchanged (what extractors such
  as ``LLMChainExtractor`` do, a ``relevance_score`` key aside; ours holds ``rrf_score`` and ``rrf_ranks``), each
  candidate once. One matching none
  of the candidates is ignored. Our text and metadata are kept, the compressor's content is not.
  Its score: ``metadata["relevance_score"]`` when it sets one (Cohere, FlashRank), else its position.
* A postprocessor gets ``NodeWithScore`` s (node id = our id, score = the fused score) and the query string; the
  score it sets (e.g. a cross-encoder's) becomes ``rrf_rerank_score``, its order is kept.

Example:
    >>> as_reranker(None) is None
    True
    >>> load_reranker("builtins:len") is len
    True
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Sequence
from typing import Any

from rrf_retriever.engine.rerank import check_reranker
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.frameworks.core import RRF_METADATA_KEYS, result_metadata
from rrf_retriever.types import FusedHit

__all__ = ["CompressorReranker", "PostprocessorReranker", "as_reranker", "load_reranker"]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


class CompressorReranker:
    """A LangChain ``BaseDocumentCompressor`` as an engine reranker (``rerank_hits``)."""

    def __init__(self, compressor: Any) -> None:
        self.compressor = compressor
        self.name = f"langchain:{type(compressor).__module__}.{type(compressor).__qualname__}"

    def rerank_hits(self, query: str, hits: Sequence[FusedHit]) -> list[tuple[str, float]]:
        from langchain_core.documents import Document

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
            score = _number(doc.metadata.get("relevance_score"))
            out.append((doc_id, float(len(returned) - position) if score is None else score))
        return out


class PostprocessorReranker:
    """A LlamaIndex ``BaseNodePostprocessor`` as an engine reranker (``rerank_hits``)."""

    def __init__(self, postprocessor: Any) -> None:
        self.postprocessor = postprocessor
        self.name = f"llama_index:{type(postprocessor).__module__}.{type(postprocessor).__qualname__}"

    def rerank_hits(self, query: str, hits: Sequence[FusedHit]) -> list[tuple[str, float]]:
        from llama_index.core.schema import NodeWithScore, TextNode

        nodes = [
            NodeWithScore(node=TextNode(id_=h.id, text=h.text, metadata=result_metadata(h),
                                        excluded_llm_metadata_keys=list(RRF_METADATA_KEYS),
                                        excluded_embed_metadata_keys=list(RRF_METADATA_KEYS)), score=h.score)
            for h in hits
        ]
        returned = list(self.postprocessor.postprocess_nodes(nodes, query_str=query))
        out: list[tuple[str, float]] = []
        for position, nws in enumerate(returned):
            score = _number(nws.score)
            out.append((nws.node.node_id, float(len(returned) - position) if score is None else score))
        return out


def _is_instance(obj: Any, module: str, name: str) -> bool:
    loaded = sys.modules.get(module)
    base = getattr(loaded, name, None) if loaded is not None else None
    return isinstance(base, type) and isinstance(obj, base)


def as_reranker(reranker: Any) -> Any:
    """The engine reranker for ``reranker``: a LangChain compressor or a LlamaIndex postprocessor is wrapped, a
    callable ``(query, texts) -> scores`` or an object with ``rerank_hits`` is returned as is; None and ``False``
    (no reranker for this call) pass through.

    Raises:
        InvalidTypeError: anything else.

    Example:
        >>> f = lambda query, texts: [0.0] * len(texts)
        >>> as_reranker(f) is f
        True
    """
    if reranker is None or reranker is False:
        return reranker
    if _is_instance(reranker, "langchain_core.documents.compressor", "BaseDocumentCompressor"):
        return CompressorReranker(reranker)
    if _is_instance(reranker, "llama_index.core.postprocessor.types", "BaseNodePostprocessor"):
        return PostprocessorReranker(reranker)
    return check_reranker(reranker)


def load_reranker(path: str) -> Any:
    """A reranker named by an import path ``module:attribute`` (the CLI's ``--reranker``, the service's
    ``serve --reranker``): the attribute is the reranker, or a class built with no arguments. Converted by
    :func:`as_reranker`.

    Raises:
        InvalidArgumentError: not ``module:attribute``, or the module or attribute does not exist.
        InvalidTypeError: what it names is not a reranker.
    """
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        msg = f"a reranker is given as module:attribute (e.g. mypkg.rerank:score), got {path!r}"
        raise InvalidArgumentError(msg)
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        msg = f"cannot load the reranker {path!r}: {type(exc).__name__}: {exc}"
        raise InvalidArgumentError(msg) from None
    if isinstance(target, type):
        target = target()
    return as_reranker(target)
