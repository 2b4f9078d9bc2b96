"""A LlamaIndex ``BaseNodePostprocessor`` as an engine reranker.

The engine knows only its own shapes (:mod:`rrf_retriever.engine.rerank`); this edge converts. The retriever does
it by itself (``scoped(reranker=postprocessor)``, ``update_settings(reranker=postprocessor)``); wrap a
postprocessor in :class:`PostprocessorReranker` to give it to the engine, the CLI (``--reranker module:attr``) or
the service.

A postprocessor gets ``NodeWithScore`` s (node id = our id, score = the fused score) and the query string; the
score it sets (e.g. a cross-encoder's) becomes ``rrf_rerank_score``, its order is kept (a node without a score
is scored by its position).

Example:
    >>> from llama_index.core.postprocessor import LongContextReorder
    >>> from rrf_retriever.types import FusedHit
    >>> hits = [FusedHit(i, f"text {i}", {}, s, {}, {}) for i, s in (("a", 0.3), ("b", 0.2), ("c", 0.1))]
    >>> [doc_id for doc_id, _ in PostprocessorReranker(LongContextReorder()).rerank_hits("q", hits)]
    ['a', 'c', 'b']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rrf_retriever.errors import missing_dependency
from rrf_retriever.frameworks.results import RRF_METADATA_KEYS, reranker_score, result_metadata
from rrf_retriever.types import FusedHit

try:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import NodeWithScore, TextNode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("llama-index-core", "llama-index", "rrf_retriever.llama_index") from exc

__all__ = ["PostprocessorReranker", "as_postprocessor_reranker"]


class PostprocessorReranker:
    """A LlamaIndex ``BaseNodePostprocessor`` as an engine reranker (``rerank_hits``)."""

    def __init__(self, postprocessor: BaseNodePostprocessor) -> None:
        self.postprocessor = postprocessor
        self.name = f"llama_index:{type(postprocessor).__module__}.{type(postprocessor).__qualname__}"

    def rerank_hits(self, query: str, hits: Sequence[FusedHit]) -> list[tuple[str, float]]:
        """The node ids the postprocessor returned, in its order, each with its score (see the module docstring)."""
        nodes = [
            NodeWithScore(node=TextNode(id_=h.id, text=h.text, metadata=result_metadata(h),
                                        excluded_llm_metadata_keys=list(RRF_METADATA_KEYS),
                                        excluded_embed_metadata_keys=list(RRF_METADATA_KEYS)), score=h.score)
            for h in hits
        ]
        returned = list(self.postprocessor.postprocess_nodes(nodes, query_str=query))
        return [(nws.node.node_id, reranker_score(nws.score, position, len(returned)))
                for position, nws in enumerate(returned)]


def as_postprocessor_reranker(reranker: Any) -> PostprocessorReranker | None:
    """``reranker`` wrapped if it is a LlamaIndex postprocessor, else None (the LlamaIndex side's reranker hook).

    Example:
        >>> as_postprocessor_reranker(len) is None
        True
    """
    return PostprocessorReranker(reranker) if isinstance(reranker, BaseNodePostprocessor) else None
