"""The LangChain side: ``Document`` conversion, LangChain retrievers as legs, compressors as rerankers, and
:class:`LangChainRRFRetriever`.

Importable with only ``langchain-core`` installed (``pip install 'rrf-retriever[langchain]'``); it never imports
LlamaIndex, so a LangChain user who has both installed can import this class and skip LlamaIndex's import cost.

Example:
    >>> from rrf_retriever.langchain import LangChainRRFRetriever  # doctest: +SKIP
    >>> from rrf_retriever import HashingEmbedding  # doctest: +SKIP
    >>> r = LangChainRRFRetriever.from_texts(["FTS5 error E42", "vector search"], HashingEmbedding())  # doctest: +SKIP
    >>> r.invoke("E42", k=1)[0].metadata["rrf_ranks"]  # doctest: +SKIP
    {'keyword': 1, 'dense': 2}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from rrf_retriever.engine import FunctionLeg, HybridEngine
from rrf_retriever.engine.rerank import HitReranker
from rrf_retriever.errors import missing_dependency
from rrf_retriever.frameworks.core import RetrieverCore
from rrf_retriever.frameworks.results import RRF_METADATA_KEYS, content_id, result_metadata
from rrf_retriever.frameworks.sides import FrameworkSide
from rrf_retriever.langchain.documents import RRFDocument
from rrf_retriever.langchain.rerankers import as_compressor_reranker
from rrf_retriever.scope.dialects import from_dialect
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.types import FusedHit, Hit

if TYPE_CHECKING:
    from rrf_retriever.scope.tree import FilterNode

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.callbacks.manager import ahandle_event, handle_event
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("langchain-core", "langchain", "rrf_retriever.langchain") from exc

__all__ = ["TRACE_EVENT", "LangChainRRFRetriever", "LangChainSide", "to_langchain_document"]

#: Name of the LangChain custom callback event (``on_custom_event``) that carries each query's trace.
TRACE_EVENT = "rrf_retriever_trace"


def to_langchain_document(hit: FusedHit, id_key: str | None = None) -> RRFDocument:
    """A fused hit as a LangChain ``Document`` (an :class:`~rrf_retriever.langchain.documents.RRFDocument`: ``id``
    set, rrf_* keys added to the metadata and left out of equality). With ``id_key``, the id is also written into
    ``metadata[id_key]`` (as LangChain's ``EnsembleRetriever(id_key=...)`` reads it), unless the stored metadata
    has that key already.

    Example:
        >>> from rrf_retriever.types import FusedHit
        >>> hit = FusedHit("a", "text", {}, 0.5, {"keyword": 1}, {})
        >>> to_langchain_document(hit, id_key="doc_id").metadata["doc_id"]
        'a'
    """
    metadata = result_metadata(hit)
    if id_key is not None and id_key not in metadata:
        metadata[id_key] = hit.id
    return RRFDocument(id=hit.id, page_content=hit.text, metadata=metadata)


def _hit(doc: Document, score: float, id_key: str | None) -> Hit:
    doc_id = doc.id or (str(doc.metadata[id_key]) if id_key and id_key in doc.metadata else None)
    return Hit(doc_id or content_id(doc.page_content), doc.page_content, dict(doc.metadata), score)


def sized(retriever: BaseRetriever, k: int) -> BaseRetriever:
    """A copy of ``retriever`` asked for ``k`` results, where its fields say how (``k``, as BM25Retriever and
    TFIDFRetriever have, or ``search_kwargs["k"]``, as a VectorStoreRetriever has); else ``retriever`` itself.
    The user's retriever is never changed.

    Example:
        >>> from langchain_core.retrievers import BaseRetriever
        >>> class Fixed(BaseRetriever):
        ...     k: int = 4
        ...     def _get_relevant_documents(self, query, *, run_manager):
        ...         return []
        >>> sized(Fixed(), 12).k
        12
    """
    fields = type(retriever).model_fields
    if "k" in fields and isinstance(retriever.__dict__.get("k"), int):
        return retriever.model_copy(update={"k": k})
    search_kwargs = retriever.__dict__.get("search_kwargs")
    if "search_kwargs" in fields and isinstance(search_kwargs, dict):
        return retriever.model_copy(update={"search_kwargs": {**search_kwargs, "k": k}})
    return retriever


class LangChainSide(FrameworkSide):
    """LangChain's half: ``invoke``/``ainvoke`` answer through ``_get_relevant_documents`` and its async twin."""

    framework_kwargs = frozenset({"tags", "metadata", "name", "id_key"})

    @staticmethod
    def leg_for(source: Any, id_key: str | None) -> FunctionLeg | None:
        """A LangChain retriever as a read-only leg. Ids: ``Document.id``, else ``metadata[id_key]``, else a hash of
        the content, so the same document from two sources fuses into one result. LangChain gives no score, so the
        reciprocal of the rank stands in (only ranks matter to RRF)."""
        if not isinstance(source, BaseRetriever):
            return None

        def search(query: str, limit: int) -> list[Hit]:
            docs = sized(source, limit).invoke(query)
            return [_hit(d, 1.0 / r, id_key) for r, d in enumerate(docs[:limit], 1)]

        async def asearch(query: str, limit: int) -> list[Hit]:
            docs = await sized(source, limit).ainvoke(query)
            return [_hit(d, 1.0 / r, id_key) for r, d in enumerate(docs[:limit], 1)]

        return FunctionLeg(search, asearch, sized=sized(source, 1) is not source)

    @staticmethod
    def document_parts(doc: Any) -> tuple[str | None, str, dict[str, Any]] | None:
        if isinstance(doc, Document):
            # A retrieved result added again (as the LlamaIndex side does): our per-query keys are not stored.
            metadata = {k: v for k, v in doc.metadata.items() if k not in RRF_METADATA_KEYS}
            return doc.id, doc.page_content, metadata
        return None

    @staticmethod
    def reranker_for(reranker: Any) -> HitReranker | None:
        return as_compressor_reranker(reranker)

    @staticmethod
    def filter_for(flt: Any) -> FilterNode | None:
        """Other LangChain vector stores' filters at the door (:func:`~rrf_retriever.scope.dialects.from_dialect`):
        PGVector's operators (``{"year": {"gte": 2020}}``, ``{"and": [...]}``) translated, Weaviate / Qdrant /
        Elasticsearch / Milvus filters refused by name. Ours and LlamaIndex's pass through (None: the next side)."""
        if not isinstance(flt, (Mapping, str, list, tuple)) and not type(flt).__module__.startswith("qdrant_client"):
            return None  # a parsed node, a LlamaIndex MetadataFilters: not LangChain's dialects
        translated = from_dialect(flt)
        return None if translated == flt else normalize_filter(translated)  # type: ignore[arg-type]  # parser checks

    def _init_side(self, engine: HybridEngine, search_kwargs: dict[str, Any], kwargs: dict[str, Any]) -> None:
        fields = {"engine": engine, "search_kwargs": search_kwargs, **kwargs}
        BaseRetriever.__init__(self, **fields)  # type: ignore[arg-type]  # self: the concrete class, a BaseRetriever

    def _side_kwargs(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.framework_kwargs}  # BaseRetriever's fields

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = self.search(query, **kwargs)  # type: ignore[attr-defined]  # RetrieverCore's, first in the bases
        if run_manager.handlers:  # the trace's dict only for a listener (dataclasses.asdict: ~0.05 ms a query)
            handle_event(run_manager.handlers, "on_custom_event", "ignore_custom_event", TRACE_EVENT,
                         result.trace.to_dict(), run_id=run_manager.run_id, tags=run_manager.tags,
                         metadata=run_manager.metadata)
        id_key = self.id_key  # type: ignore[attr-defined]  # a pydantic field of the concrete class
        return [to_langchain_document(h, id_key) for h in result.hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = await self.asearch(query, **kwargs)  # type: ignore[attr-defined]  # RetrieverCore's
        if run_manager.handlers:
            await ahandle_event(run_manager.handlers, "on_custom_event", "ignore_custom_event", TRACE_EVENT,
                                result.trace.to_dict(), run_id=run_manager.run_id, tags=run_manager.tags,
                                metadata=run_manager.metadata)
        id_key = self.id_key  # type: ignore[attr-defined]  # a pydantic field of the concrete class
        return [to_langchain_document(h, id_key) for h in result.hits]


class LangChainRRFRetriever(RetrieverCore, LangChainSide, BaseRetriever):
    """The hybrid retriever as a LangChain ``BaseRetriever`` only (see :class:`~rrf_retriever.EnsembleRRFRetriever`
    for the arguments; this class takes the same ones, plus LangChain's ``tags``, ``metadata`` and ``name``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    _sides: ClassVar[tuple[type[FrameworkSide], ...]] = (LangChainSide,)

    engine: Any = Field(default=None, exclude=True)
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    id_key: str | None = None
