"""The LlamaIndex side: ``NodeWithScore`` conversion, LlamaIndex retrievers as legs, :class:`LlamaIndexRRFRetriever`.

Importable with only ``llama-index-core`` installed (``pip install 'rrf-retriever[llama-index]'``); it never imports
LangChain.

Example:
    >>> from rrf_retriever.frameworks.llama_index import LlamaIndexRRFRetriever  # doctest: +SKIP
    >>> from rrf_retriever import HashingEmbedding  # doctest: +SKIP
    >>> r = LlamaIndexRRFRetriever.from_texts(["FTS5 error E42", "vector search"], HashingEmbedding())  # doctest: +SKIP
    >>> r.retrieve("E42")[0].node.metadata["rrf_ranks"]  # doctest: +SKIP
    {'keyword': 1, 'dense': 2}
"""

from __future__ import annotations

from typing import Any

from rrf_retriever.engine import FunctionLeg, HybridEngine
from rrf_retriever.errors import missing_dependency
from rrf_retriever.frameworks.base import RRF_METADATA_KEYS, FrameworkSide, RetrieverCore, result_metadata
from rrf_retriever.types import FusedHit, Hit

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode
    from pydantic import BaseModel
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("llama-index-core", "llama-index", "the LlamaIndex retriever") from exc

__all__ = ["LlamaIndexRRFRetriever", "LlamaIndexSide", "RRFRetrievalTraceEvent", "to_node_with_score"]

dispatcher = get_dispatcher(__name__)


class RRFRetrievalTraceEvent(BaseEvent):
    """LlamaIndex instrumentation event carrying the trace of one hybrid query (per-leg latency, hits, errors)."""

    query: str
    trace: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "RRFRetrievalTraceEvent"


def to_node_with_score(hit: FusedHit) -> NodeWithScore:
    """A fused hit as a LlamaIndex ``NodeWithScore`` (rrf_* keys hidden from the LLM and the embedder)."""
    node = TextNode(
        id_=hit.id,
        text=hit.text,
        metadata=result_metadata(hit),
        excluded_llm_metadata_keys=list(RRF_METADATA_KEYS),
        excluded_embed_metadata_keys=list(RRF_METADATA_KEYS),
    )
    return NodeWithScore(node=node, score=hit.score)


def _hit(nws: NodeWithScore) -> Hit:
    return Hit(nws.node.node_id, nws.node.get_content(), dict(nws.node.metadata), float(nws.score or 0.0))


class LlamaIndexSide(FrameworkSide):
    """LlamaIndex's half: ``retrieve``/``aretrieve`` answer through ``_retrieve`` / ``_aretrieve``.

    LlamaIndex calls ``_aretrieve(query_bundle=...)`` by keyword: the parameter is named ``query_bundle``.
    ``retrieve(query)`` takes no search keywords: scope it with ``scoped(filter=..., exclude_ids=...)``.
    """

    framework_kwargs = frozenset({"callback_manager", "object_map", "verbose"})

    @staticmethod
    def leg_for(source: Any, id_key: str | None) -> FunctionLeg | None:
        """A LlamaIndex retriever as a read-only leg (its node ids and scores are kept)."""
        if not isinstance(source, BaseRetriever):
            return None

        def search(query: str, limit: int) -> list[Hit]:
            return [_hit(n) for n in source.retrieve(query)[:limit]]

        async def asearch(query: str, limit: int) -> list[Hit]:
            return [_hit(n) for n in (await source.aretrieve(query))[:limit]]

        return FunctionLeg(search, asearch)

    @staticmethod
    def document_parts(doc: Any) -> tuple[str | None, str, dict[str, Any]] | None:
        if isinstance(doc, BaseNode):
            return doc.node_id, doc.get_content(), dict(doc.metadata)
        return None

    def _init_side(self, engine: HybridEngine, search_kwargs: dict[str, Any], kwargs: dict[str, Any]) -> None:
        if not isinstance(self, BaseModel):  # LlamaIndex alone: a plain class, no pydantic fields to hold these
            self.engine = engine
            self.search_kwargs = search_kwargs
        BaseRetriever.__init__(self, callback_manager=kwargs.get("callback_manager"),
                               object_map=kwargs.get("object_map"), verbose=kwargs.get("verbose", False))

    def _side_kwargs(self) -> dict[str, Any]:
        return {"callback_manager": self.callback_manager, "object_map": self.object_map}  # type: ignore[attr-defined]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.search(query_bundle.query_str)  # type: ignore[attr-defined]
        dispatcher.event(RRFRetrievalTraceEvent(query=query_bundle.query_str, trace=result.trace.to_dict()))
        return [to_node_with_score(h) for h in result.hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.asearch(query_bundle.query_str)  # type: ignore[attr-defined]
        dispatcher.event(RRFRetrievalTraceEvent(query=query_bundle.query_str, trace=result.trace.to_dict()))
        return [to_node_with_score(h) for h in result.hits]


class LlamaIndexRRFRetriever(RetrieverCore, LlamaIndexSide, BaseRetriever):
    """The hybrid retriever as a LlamaIndex ``BaseRetriever`` only (see :class:`~rrf_retriever.EnsembleRRFRetriever`
    for the arguments; this class takes the same ones, plus LlamaIndex's ``callback_manager``, ``object_map`` and
    ``verbose``)."""

    _sides = (LlamaIndexSide,)
