"""EnsembleRRFRetriever: ONE object that is both a LangChain and a LlamaIndex retriever.

It is a ``langchain_core.retrievers.BaseRetriever`` (``invoke``, ``ainvoke``, ``batch``, LCEL, ``as_tool``) and a
``llama_index.core.retrievers.BaseRetriever`` (``retrieve``, ``aretrieve``, query engines) over the
framework-neutral :class:`~rrf_retriever.engine.HybridEngine`. Framework types live only here, at the edge.

Four things make the double inheritance work (each guarded by a test):

1. LlamaIndex keeps instance state (``callback_manager``, ``object_map``, ``_verbose``) that a pydantic model would
   refuse: the first two are declared as excluded pydantic fields, ``_verbose`` as a private attribute, and both
   ``__init__`` s are called.
2. LlamaIndex calls ``_aretrieve(query_bundle=...)`` by keyword: the parameter is named ``query_bundle``.
3. ``get_prompts`` clashes (LangChain's takes a config and returns a list, LlamaIndex's takes nothing and returns a
   dict): a retriever has no prompts, so it returns ``[]`` when LangChain passes a config and ``{}`` otherwise.
4. Both async paths are native (``asearch``), not a sync call in disguise.

Naming: the RRF constant is ``rrf_k`` (default 2); the number of results is ``top_k``. LangChain users write ``k``
for the number of results (``as_retriever(search_kwargs={"k": 4})``), so a bare ``k`` given to this retriever is
taken as ``top_k``, never as the RRF constant.

Example:
    >>> from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding  # doctest: +SKIP
    >>> r = EnsembleRRFRetriever.from_texts(["FTS5 error E42", "vector search"], HashingEmbedding())  # doctest: +SKIP
    >>> r.invoke("E42", k=1)[0].metadata["rrf_ranks"]  # doctest: +SKIP
    {'keyword': 1, 'dense': 2}
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rrf_retriever.engine import DEFAULT_HYBRID_RRF_K, FunctionLeg, HybridEngine, RetrievalSettings
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, missing_dependency
from rrf_retriever.layout import JOURNAL_FILE, make_dense_store, make_keyword_store
from rrf_retriever.types import FusedHit, Hit, Record, SearchResult
from rrf_retriever.validate import check_mapping, check_top_k

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.callbacks.manager import ahandle_event, handle_event
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever as LangChainBaseRetriever
    from llama_index.core.base.base_retriever import BaseRetriever as LlamaIndexBaseRetriever
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode
    from pydantic import ConfigDict, Field, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised only without the extras
    raise missing_dependency(
        exc.name or "langchain-core / llama-index-core", "langchain,llama-index", "EnsembleRRFRetriever"
    ) from exc

__all__ = ["RRF_METADATA_KEYS", "TRACE_EVENT", "EnsembleRRFRetriever", "RRFRetrievalTraceEvent"]

#: Metadata keys this retriever adds to every result; excluded from LlamaIndex's LLM and embedding metadata.
RRF_METADATA_KEYS = ("rrf_score", "rrf_ranks", "rrf_scores", "rrf_expanded_from")
#: Name of the LangChain custom callback event (``on_custom_event``) that carries each query's trace.
TRACE_EVENT = "rrf_retriever_trace"
_SEARCH_KWARGS = {"top_k", "k", "filter", "exclude_ids", "weights"}

dispatcher = get_dispatcher(__name__)


class RRFRetrievalTraceEvent(BaseEvent):
    """LlamaIndex instrumentation event carrying the trace of one hybrid query (per-leg latency, hits, errors)."""

    query: str
    trace: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "RRFRetrievalTraceEvent"


def _result_metadata(hit: FusedHit) -> dict[str, Any]:
    metadata = dict(hit.metadata)
    metadata["rrf_score"] = hit.score
    metadata["rrf_ranks"] = dict(hit.ranks)
    metadata["rrf_scores"] = dict(hit.scores)
    return metadata


def to_langchain_document(hit: FusedHit) -> Document:
    """A fused hit as a LangChain ``Document`` (``id`` set, rrf_* keys added to the metadata)."""
    return Document(id=hit.id, page_content=hit.text, metadata=_result_metadata(hit))


def to_node_with_score(hit: FusedHit) -> NodeWithScore:
    """A fused hit as a LlamaIndex ``NodeWithScore`` (rrf_* keys hidden from the LLM and the embedder)."""
    node = TextNode(
        id_=hit.id,
        text=hit.text,
        metadata=_result_metadata(hit),
        excluded_llm_metadata_keys=list(RRF_METADATA_KEYS),
        excluded_embed_metadata_keys=list(RRF_METADATA_KEYS),
    )
    return NodeWithScore(node=node, score=hit.score)


def _content_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _hit_from_langchain(doc: Document, score: float, id_key: str | None) -> Hit:
    doc_id = doc.id or (str(doc.metadata[id_key]) if id_key and id_key in doc.metadata else None)
    return Hit(doc_id or _content_id(doc.page_content), doc.page_content, dict(doc.metadata), score)


def _hit_from_node(nws: NodeWithScore) -> Hit:
    node = nws.node
    return Hit(node.node_id, node.get_content(), dict(node.metadata), float(nws.score or 0.0))


def retriever_leg(source: Any, id_key: str | None = None) -> FunctionLeg:
    """Wrap any LangChain or LlamaIndex retriever as a read-only leg.

    Ids come from ``Document.id`` / ``node_id``, else ``metadata[id_key]``, else a hash of the content, so the same
    document from two sources fuses into one result. Raw scores: LlamaIndex's score; LangChain has none, so the
    reciprocal of the rank stands in (only ranks matter to RRF).
    """
    if isinstance(source, LangChainBaseRetriever):

        def search(query: str, limit: int) -> list[Hit]:
            docs = source.invoke(query)[:limit]
            return [_hit_from_langchain(d, 1.0 / r, id_key) for r, d in enumerate(docs, 1)]

        async def asearch(query: str, limit: int) -> list[Hit]:
            docs = (await source.ainvoke(query))[:limit]
            return [_hit_from_langchain(d, 1.0 / r, id_key) for r, d in enumerate(docs, 1)]

        return FunctionLeg(search, asearch)
    if isinstance(source, LlamaIndexBaseRetriever):

        def li_search(query: str, limit: int) -> list[Hit]:
            return [_hit_from_node(n) for n in source.retrieve(query)[:limit]]

        async def li_asearch(query: str, limit: int) -> list[Hit]:
            return [_hit_from_node(n) for n in (await source.aretrieve(query))[:limit]]

        return FunctionLeg(li_search, li_asearch)
    msg = f"not a LangChain or LlamaIndex retriever: {type(source).__name__}"
    raise InvalidTypeError(msg)


def _is_framework_retriever(source: Any) -> bool:
    return isinstance(source, (LangChainBaseRetriever, LlamaIndexBaseRetriever))


def _document_parts(doc: Any) -> tuple[str | None, str, dict[str, Any]]:
    """(id, text, metadata) of a LangChain Document or a LlamaIndex node / Document."""
    if isinstance(doc, Document):
        return doc.id, doc.page_content, dict(doc.metadata)
    if isinstance(doc, BaseNode):
        return doc.node_id, doc.get_content(), dict(doc.metadata)
    msg = f"expected a LangChain Document or a LlamaIndex node, got {type(doc).__name__}"
    raise InvalidTypeError(msg)


class EnsembleRRFRetriever(LangChainBaseRetriever, LlamaIndexBaseRetriever):  # type: ignore[misc]
    """Hybrid dense + keyword retriever fused by weighted RRF, for LangChain and LlamaIndex alike.

    Args:
        dense: A dense store (e.g. :class:`~rrf_retriever.stores.qdrant.QdrantDenseStore`), source name "dense".
        keyword: A keyword store (e.g. :class:`~rrf_retriever.stores.fts5.FTS5KeywordStore`), source "keyword".
        sources: More sources, ``{name: store | LangChain retriever | LlamaIndex retriever}``.
        weights: ``{source: weight >= 0}``; a source of weight 0 is not even queried.
        semantic_weight: Shortcut for ``weights["dense"]`` (default 1.0).
        keyword_weight: Shortcut for ``weights["keyword"]`` (default 1.25, tuned: see ``benchmarks/RESULTS.md``).
        rrf_k: The RRF constant (default 2, tuned with the keyword weight; the textbook value is 60).
        top_k: Results per query (default 10). ``k`` is accepted as an alias (LangChain's name for it).
        fetch_k: Hits each leg fetches (default ``2 * top_k``).
        leg_timeout: Seconds a leg may take before it is dropped from the query.
        on_error: ``"degrade"`` (default: a failing leg is dropped, a warning says so) or ``"raise"``.
        fusion: ``"rrf"`` (default), ``"relative_score"`` or ``"dbsf"``.
        search_kwargs: Per-instance search defaults: ``top_k``/``k``, ``filter``, ``exclude_ids``, ``weights``.
        journal: A write-ahead journal (path or :class:`~rrf_retriever.engine.journal.Journal`) that makes multi-store
            writes crash-safe: an interrupted batch is redone in every store when the retriever is built again.
        id_key: Metadata key holding ids for LangChain retrievers used as sources without ``Document.id``.
        engine: An existing :class:`~rrf_retriever.engine.HybridEngine` to wrap instead.

    Example:
        >>> retriever = EnsembleRRFRetriever(dense=dense_store, keyword=fts5_store, top_k=5)  # doctest: +SKIP
        >>> retriever.invoke("error E1234", filter={"session_id": [1, 2]})  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any = Field(default=None, exclude=True)
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    # LlamaIndex's instance state, declared so that pydantic accepts it; never serialised.
    callback_manager: Any = Field(default=None, exclude=True)
    object_map: dict[str, Any] = Field(default_factory=dict, exclude=True)
    _verbose: bool = PrivateAttr(default=False)

    def __init__(
        self,
        dense: Any = None,
        keyword: Any = None,
        *,
        sources: Mapping[str, Any] | None = None,
        weights: Mapping[str, float] | None = None,
        semantic_weight: float | None = None,
        keyword_weight: float | None = None,
        rrf_k: float = DEFAULT_HYBRID_RRF_K,
        top_k: int | None = None,
        k: int | None = None,
        fetch_k: int | None = None,
        leg_timeout: float | None = None,
        on_error: str = "degrade",
        fusion: str = "rrf",
        expand: Any = None,
        links_key: str | None = None,
        search_kwargs: Mapping[str, Any] | None = None,
        id_key: str | None = None,
        engine: HybridEngine | None = None,
        journal: Any = None,
        callback_manager: Any = None,
        object_map: dict[str, Any] | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        top_k = _resolve_top_k(top_k, k)
        if engine is None:
            engine = self._build_engine(
                dense, keyword, sources, weights, semantic_weight, keyword_weight, id_key,
                rrf_k=rrf_k, top_k=10 if top_k is None else top_k, fetch_k=fetch_k, leg_timeout=leg_timeout,
                on_error=on_error, fusion=fusion, expand=expand, links_key=links_key, journal=journal,
            )
        elif not isinstance(engine, HybridEngine):
            msg = f"engine must be a HybridEngine, not {type(engine).__name__}"
            raise InvalidTypeError(msg)
        elif top_k is not None:
            engine.update_settings(top_k=top_k)
        search_kwargs = _check_search_kwargs(dict(search_kwargs or {}))
        LangChainBaseRetriever.__init__(self, engine=engine, search_kwargs=search_kwargs, **kwargs)
        LlamaIndexBaseRetriever.__init__(self, callback_manager=callback_manager, object_map=object_map,
                                         verbose=verbose)

    @staticmethod
    def _build_engine(
        dense: Any,
        keyword: Any,
        sources: Mapping[str, Any] | None,
        weights: Mapping[str, float] | None,
        semantic_weight: float | None,
        keyword_weight: float | None,
        id_key: str | None,
        **settings: Any,
    ) -> HybridEngine:
        legs: dict[str, Any] = {}
        if dense is not None:
            legs["dense"] = dense
        if keyword is not None:
            legs["keyword"] = keyword
        for name, source in (sources or {}).items():
            if name in legs:
                msg = f"source {name!r} is given twice (as a keyword argument and in sources)"
                raise InvalidArgumentError(msg)
            legs[name] = retriever_leg(source, id_key) if _is_framework_retriever(source) else source
        if not legs:
            msg = "EnsembleRRFRetriever needs at least one source: dense=, keyword= or sources={...}"
            raise InvalidArgumentError(msg)
        merged = dict(check_mapping(weights or {}, "weights", "source name to weight"))
        for name, value in (("dense", semantic_weight), ("keyword", keyword_weight)):
            if value is not None:
                if name not in legs:
                    msg = f"{'semantic' if name == 'dense' else 'keyword'}_weight given but there is no {name} source"
                    raise InvalidArgumentError(msg)
                merged[name] = value
        return HybridEngine(legs, merged, **settings)

    # ---- constructors -----------------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        embedding: Any,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        ids: Sequence[str] | None = None,
        *,
        keyword: str | Any = "fts5",
        dense: str | Any = "qdrant-edge",
        path: str | Path | None = None,
        collection_name: str = "rrf_retriever",
        **kwargs: Any,
    ) -> EnsembleRRFRetriever:
        """Build the embedded default stack and index ``texts``.

        Args:
            texts: The documents.
            embedding: A LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter.
            metadatas: One mapping per text (optional).
            ids: One id per text (default: random UUIDs, as LangChain's vector stores do).
            keyword: ``"fts5"`` (default, SQLite FTS5), ``"bm25"`` (in memory) or a keyword store.
            dense: ``"qdrant-edge"`` (default: Qdrant's in-process engine, in ``path`` or a temporary folder;
                exact search ~8 ms at 100k points), ``"qdrant"`` (qdrant-client local mode, ``:memory:`` or
                ``path``; comfortable below ~20k points) or any dense store (e.g. a server by URL).
            path: A folder for persistent stores (``keyword.sqlite3``, ``qdrant-edge/`` and the write-ahead journal
                ``journal.sqlite3``: the layout of a CLI index directory); None keeps all in memory.
            collection_name: The Qdrant collection name.
            **kwargs: Passed on to the constructor (``top_k``, ``k``, ``weights``, ``rrf_k``, ``fetch_k``, ...).
        """
        if path is not None and "journal" not in kwargs:
            Path(path).mkdir(parents=True, exist_ok=True)
            kwargs["journal"] = Path(path) / JOURNAL_FILE
        retriever = cls(
            dense=_make_dense(dense, embedding, path, collection_name),
            keyword=_make_keyword(keyword, path),
            **kwargs,
        )
        if texts:
            retriever.add_texts(texts, metadatas=metadatas, ids=ids)
        return retriever

    @classmethod
    def from_documents(cls, documents: Sequence[Any], embedding: Any, **kwargs: Any) -> EnsembleRRFRetriever:
        """Like :meth:`from_texts`, from LangChain ``Document`` s or LlamaIndex nodes / ``Document`` s."""
        retriever = cls.from_texts([], embedding, **kwargs)
        if documents:
            retriever.add_documents(documents)
        return retriever

    # ---- writes -----------------------------------------------------------------------------------------

    def add_texts(
        self,
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Add (upsert) texts to every store with the same ids; all stores or none. Returns the ids."""
        if isinstance(texts, str):
            msg = "texts must be a list of strings, not a single string"
            raise InvalidTypeError(msg)
        texts = list(texts)
        id_list = list(ids) if ids is not None else [uuid.uuid4().hex for _ in texts]
        return self.engine.add(id_list, texts, metadatas)

    def add_documents(self, documents: Sequence[Any], ids: Sequence[str] | None = None) -> list[str]:
        """Add LangChain ``Document`` s or LlamaIndex nodes; their own ids are kept (new UUIDs where missing)."""
        parts = [_document_parts(d) for d in documents]
        given = list(ids) if ids is not None else [p[0] or uuid.uuid4().hex for p in parts]
        return self.engine.add(given, [p[1] for p in parts], [p[2] for p in parts])

    async def aadd_texts(
        self,
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Async twin of :meth:`add_texts`."""
        texts = list(texts)
        id_list = list(ids) if ids is not None else [uuid.uuid4().hex for _ in texts]
        return await self.engine.aadd(id_list, texts, metadatas)

    async def aadd_documents(self, documents: Sequence[Any], ids: Sequence[str] | None = None) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        parts = [_document_parts(d) for d in documents]
        given = list(ids) if ids is not None else [p[0] or uuid.uuid4().hex for p in parts]
        return await self.engine.aadd(given, [p[1] for p in parts], [p[2] for p in parts])

    def delete(self, ids: Sequence[str]) -> None:
        """Delete ids from every store (all or none)."""
        self.engine.delete(ids)

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`delete`."""
        await self.engine.adelete(ids)

    def get_by_ids(self, ids: Sequence[str]) -> list[Record]:
        """Stored documents by id, in the order asked (missing ids are skipped)."""
        return self.engine.get(ids)

    # ---- settings ---------------------------------------------------------------------------------------

    @property
    def settings(self) -> RetrievalSettings:
        """The engine's current immutable settings snapshot."""
        return self.engine.settings

    def update_settings(
        self,
        *,
        semantic_weight: float | None = None,
        keyword_weight: float | None = None,
        **changes: Any,
    ) -> RetrievalSettings:
        """Change settings at runtime (validated, swapped atomically; the next query uses them).

        Accepts ``weights``, ``semantic_weight``, ``keyword_weight``, ``rrf_k``, ``top_k`` (or ``k``), ``fetch_k``,
        ``leg_timeout``, ``on_error``, ``fusion``. Shared by every copy of this retriever (``scoped``,
        ``configurable_fields``): they wrap the same engine.

        Example:
            >>> retriever.update_settings(keyword_weight=0.0, top_k=5)  # doctest: +SKIP
        """
        if "k" in changes:
            changes["top_k"] = _resolve_top_k(changes.pop("top_k", None), changes.pop("k"))
        weights = dict(check_mapping(changes.pop("weights", None) or {}, "weights", "source name to weight"))
        for name, value in (("dense", semantic_weight), ("keyword", keyword_weight)):
            if value is not None:
                weights[name] = value
        if weights:
            changes["weights"] = weights
        return self.engine.update_settings(**changes)

    def scoped(self, **search_kwargs: Any) -> EnsembleRRFRetriever:
        """A copy with per-instance search defaults (``filter``, ``exclude_ids``, ``top_k``/``k``, ``weights``).

        LlamaIndex's ``retrieve(query)`` takes no keywords; use this to scope it. The copy shares the engine.

        Example:
            >>> retriever.scoped(filter={"session_id": [7]}, exclude_ids=["m1"]).retrieve("deploy")  # doctest: +SKIP
        """
        merged = _check_search_kwargs({**self.search_kwargs, **search_kwargs})
        return type(self)(engine=self.engine, search_kwargs=merged, callback_manager=self.callback_manager,
                          object_map=self.object_map, tags=self.tags, metadata=self.metadata, name=self.name)

    # ---- reads ------------------------------------------------------------------------------------------

    def _search_args(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        merged = _check_search_kwargs({**self.search_kwargs, **kwargs})
        top_k = _resolve_top_k(merged.pop("top_k", None), merged.pop("k", None))
        return {"top_k": top_k, **merged}

    def search(self, query: str, **kwargs: Any) -> SearchResult:
        """Framework-neutral search: fused hits and the trace (see :meth:`HybridEngine.search`)."""
        return self.engine.search(query, **self._search_args(kwargs))

    async def asearch(self, query: str, **kwargs: Any) -> SearchResult:
        """Async twin of :meth:`search`."""
        return await self.engine.asearch(query, **self._search_args(kwargs))

    # LangChain
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = self.search(query, **kwargs)
        handle_event(run_manager.handlers, "on_custom_event", "ignore_custom_event", TRACE_EVENT,
                     result.trace.to_dict(), run_id=run_manager.run_id, tags=run_manager.tags,
                     metadata=run_manager.metadata)
        return [to_langchain_document(h) for h in result.hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = await self.asearch(query, **kwargs)
        await ahandle_event(run_manager.handlers, "on_custom_event", "ignore_custom_event", TRACE_EVENT,
                            result.trace.to_dict(), run_id=run_manager.run_id, tags=run_manager.tags,
                            metadata=run_manager.metadata)
        return [to_langchain_document(h) for h in result.hits]

    # LlamaIndex
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.search(query_bundle.query_str)
        dispatcher.event(RRFRetrievalTraceEvent(query=query_bundle.query_str, trace=result.trace.to_dict()))
        return [to_node_with_score(h) for h in result.hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.asearch(query_bundle.query_str)
        dispatcher.event(RRFRetrievalTraceEvent(query=query_bundle.query_str, trace=result.trace.to_dict()))
        return [to_node_with_score(h) for h in result.hits]

    def get_prompts(self, config: Any = None) -> Any:  # type: ignore[override]
        """No prompts: ``[]`` for LangChain (called with a config), ``{}`` for LlamaIndex (called without)."""
        return [] if config is not None else {}


def _resolve_top_k(top_k: int | None, k: int | None) -> int | None:
    """``k`` is LangChain's name for the number of results: accept it as ``top_k``, never as the RRF constant."""
    if k is not None and top_k is not None and k != top_k:
        msg = f"k ({k}) and top_k ({top_k}) both given and different; k is an alias of top_k"
        raise InvalidArgumentError(msg)
    value = top_k if top_k is not None else k
    return None if value is None else check_top_k(value)


def _check_search_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(kwargs) - _SEARCH_KWARGS)
    if unknown:
        msg = f"unknown search argument(s) {unknown}; accepted: {sorted(_SEARCH_KWARGS)} (rrf_k is a setting)"
        raise InvalidArgumentError(msg)
    return kwargs


def _make_keyword(keyword: str | Any, path: str | Path | None) -> Any:
    return make_keyword_store(keyword, path) if isinstance(keyword, str) else keyword


def _make_dense(dense: str | Any, embedding: Any, path: str | Path | None, collection_name: str) -> Any:
    return make_dense_store(dense, embedding, path, collection_name) if isinstance(dense, str) else dense
