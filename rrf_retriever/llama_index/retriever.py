"""The LlamaIndex side: ``NodeWithScore`` conversion, LlamaIndex retrievers as legs, :class:`LlamaIndexRRFRetriever`.

Importable with only ``llama-index-core`` installed (``pip install 'rrf-retriever[llama-index]'``); it never imports
LangChain.

Example:
    >>> from rrf_retriever.llama_index import LlamaIndexRRFRetriever  # doctest: +SKIP
    >>> from rrf_retriever import HashingEmbedding  # doctest: +SKIP
    >>> r = LlamaIndexRRFRetriever.from_texts(["FTS5 error E42", "vector search"], HashingEmbedding())  # doctest: +SKIP
    >>> r.retrieve("E42")[0].node.metadata["rrf_ranks"]  # doctest: +SKIP
    {'keyword': 1, 'dense': 2}

The framework's query objects are honoured: ``QueryBundle.embedding``, when set, is the dense query vector (no
embedding call); else ``QueryBundle.custom_embedding_strs`` (what ``HyDEQueryTransform`` sets: the hypothetical
document, and the query with ``include_original``) are embedded by the dense leg's model and averaged, as
LlamaIndex's own retriever does; the keyword leg always searches ``query_str``.

``score=`` (a constructor keyword): what ``NodeWithScore.score`` holds: ``"raw"`` (default, as before) the fused
RRF score (about 1/61 for a first place: comparable within one query only), ``"normalized"`` the fused score over
the best the active weights allow, in [0, 1] (``rrf_score_normalized``: rank-based, the first in every leg is 1.0
whatever the query), ``"relevance"`` that times how strongly the corpus matches the query (``rrf_relevance``,
:mod:`rrf_retriever.relevance`: low for an unrelated query), the one a ``SimilarityPostprocessor`` cutoff means
something for. All three stay in the metadata either way.

Nodes keep what a LlamaIndex vector store keeps (id, text, metadata, ``ref_doc_id``, relationships, excluded keys,
templates; see :mod:`rrf_retriever.llama_index.nodes`): ``insert_nodes(nodes)`` upserts by node id,
``delete_ref_doc(ref_doc_id)`` removes every chunk of a source document from every store.

Built without an embedding (``from_texts(texts)``, ``from_documents(nodes)``), the retriever embeds with LlamaIndex's
``Settings.embed_model`` when it was set (logged at INFO), as ``VectorStoreIndex`` does; LlamaIndex's own default
(OpenAI) is never resolved: with nothing set, an embedding is asked for.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rrf_retriever.engine import FunctionLeg, HybridEngine
from rrf_retriever.engine.paths import main_dense_leg
from rrf_retriever.engine.rerank import HitReranker
from rrf_retriever.errors import InvalidArgumentError, RRFRetrieverError, missing_dependency
from rrf_retriever.frameworks.core import RetrieverCore
from rrf_retriever.frameworks.sides import FrameworkSide
from rrf_retriever.llama_index.filters import from_llama_index, is_llama_index_filter
from rrf_retriever.llama_index.nodes import index_objects, node_batch, node_record, to_node_with_score
from rrf_retriever.llama_index.rerankers import as_postprocessor_reranker
from rrf_retriever.metadata import REF_DOC_ID_KEY
from rrf_retriever.progress import progress_shown
from rrf_retriever.scope.tree import FilterNode
from rrf_retriever.types import FusedHit, Hit, SearchResult
from rrf_retriever.validate import check_id

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
    from llama_index.core.settings import Settings
    from pydantic import BaseModel
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("llama-index-core", "llama-index", "rrf_retriever.llama_index") from exc

__all__ = ["LlamaIndexRRFRetriever", "LlamaIndexSide", "RRFRetrievalTraceEvent", "can_size", "sized"]

dispatcher = get_dispatcher(__name__)
#: What ``NodeWithScore.score`` may hold (the ``score=`` keyword).
SCORES = ("raw", "normalized", "relevance")


class RRFRetrievalTraceEvent(BaseEvent):
    """LlamaIndex instrumentation event carrying the trace of one hybrid query (per-leg latency, hits, errors)."""

    query: str
    trace: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "RRFRetrievalTraceEvent"


def _hit(nws: NodeWithScore) -> Hit:
    # In the stored layout, so the fused result gives back the source's node whole (relationships, excluded keys).
    try:
        node_id, text, metadata = node_record(nws.node)
    except RRFRetrieverError:  # a source id we would not store (empty, NUL): the plain node
        node_id, text, metadata = nws.node.node_id, nws.node.get_content(), dict(nws.node.metadata)
    return Hit(node_id, text, metadata, float(nws.score or 0.0))


def can_size(retriever: BaseRetriever) -> bool:
    """Whether ``retriever`` says how many results it gives by a settable int ``similarity_top_k`` (an attribute,
    as ``BM25Retriever`` has, or a property with a setter, as ``VectorIndexRetriever`` has)."""
    attr = inspect.getattr_static(retriever, "similarity_top_k", None)
    if isinstance(attr, property):
        return attr.fset is not None and isinstance(attr.__get__(retriever), int)
    return isinstance(attr, int) and not isinstance(attr, bool)


def sized(retriever: BaseRetriever, k: int) -> BaseRetriever:
    """A shallow copy of ``retriever`` asked for ``k`` results through its ``similarity_top_k`` (:func:`can_size`),
    at most a ``BM25Retriever``'s corpus size (it refuses a larger k); else ``retriever`` itself. The user's
    retriever is never changed (the copy shares its index).

    Example:
        >>> from llama_index.core.schema import NodeWithScore
        >>> class Fixed(BaseRetriever):
        ...     similarity_top_k = 2
        ...     def _retrieve(self, query_bundle) -> list[NodeWithScore]:
        ...         return []
        >>> mine = Fixed()
        >>> sized(mine, 12).similarity_top_k, mine.similarity_top_k
        (12, 2)
    """
    if not can_size(retriever):
        return retriever
    scores = getattr(retriever.__dict__.get("bm25"), "scores", None)  # llama-index-retrievers-bm25's bm25s index
    if isinstance(scores, dict) and scores.get("num_docs"):
        k = min(k, int(scores["num_docs"]))
    out = copy.copy(retriever)
    out.similarity_top_k = k  # type: ignore[attr-defined]  # can_size checked it is a settable int
    return out


class LlamaIndexSide(FrameworkSide, BaseRetriever):
    """LlamaIndex's half, a LlamaIndex ``BaseRetriever``: ``retrieve``/``aretrieve`` answer through ``_retrieve`` /
    ``_aretrieve`` (LlamaIndex's base is a plain class, so the side carries it; LangChain's is a pydantic model,
    whose fields only the concrete class can declare).

    LlamaIndex calls ``_aretrieve(query_bundle=...)`` by keyword: the parameter is named ``query_bundle``.
    ``retrieve(query)`` takes no search keywords: scope it with ``scoped(filter=..., exclude_ids=...)``.
    """

    framework_kwargs = frozenset({"callback_manager", "object_map", "verbose", "score"})
    default_embedding_name = "LlamaIndex's Settings.embed_model"
    if TYPE_CHECKING:  # set by _init_side (a pydantic private attribute on the dual class: no class default here)
        _node_score: str

    @staticmethod
    def leg_for(source: Any, id_key: str | None) -> FunctionLeg | None:
        """A LlamaIndex retriever as a read-only leg (its node ids and scores are kept). Each call asks a copy of it
        for the number of hits wanted (:func:`sized`): under a filter, the post-filter then fills the page
        (:class:`~rrf_retriever.engine.FunctionLeg`); a retriever without ``similarity_top_k`` gives what it gives,
        and the trace says so."""
        if not isinstance(source, BaseRetriever):
            return None

        def search(query: str, limit: int) -> list[Hit]:
            return [_hit(n) for n in sized(source, limit).retrieve(query)[:limit]]

        async def asearch(query: str, limit: int) -> list[Hit]:
            return [_hit(n) for n in (await sized(source, limit).aretrieve(query))[:limit]]

        return FunctionLeg(search, asearch, sized=can_size(source))

    @staticmethod
    def document_parts(doc: Any) -> tuple[str | None, str, dict[str, Any]] | None:
        if isinstance(doc, BaseNode):
            return node_record(doc)
        return None

    @staticmethod
    def reranker_for(reranker: Any) -> HitReranker | None:
        return as_postprocessor_reranker(reranker)

    @staticmethod
    def default_embedding() -> Any | None:
        """``Settings.embed_model`` when the user set one (as ``VectorStoreIndex`` would use it), else None. Read
        without resolving: an unset ``Settings.embed_model``, read, becomes LlamaIndex's OpenAI default (a key, the
        network), so the field itself is read."""
        return Settings._embed_model

    @staticmethod
    def filter_for(flt: Any) -> FilterNode | None:
        """A LlamaIndex ``MetadataFilters`` / ``MetadataFilter`` translated (:mod:`~.llama_index.filters`)."""
        return from_llama_index(flt) if is_llama_index_filter(flt) else None

    def insert_nodes(self, nodes: Sequence[BaseNode], *, show_progress: bool | None = None) -> list[str]:
        """Upsert LlamaIndex nodes by node id into every store (all or none), as a LlamaIndex index does.

        Each node keeps its id, text, metadata, ``ref_doc_id``, relationships and excluded keys (they come back
        from ``retrieve``). An ``IndexNode(obj=..., index_id=...)`` comes back an ``IndexNode``; its object is kept
        in memory in ``object_map`` (not stored: after a reopen, pass ``object_map={index_id: obj}``), so
        ``retrieve`` follows it as LlamaIndex's own indexes do (the object's results replace the node). The text
        is embedded by the retriever's own model: ``node.embedding`` is not used (a vector of the right size from
        another model would rank silently wrong). ``show_progress``: as for ``add_texts``.

        Returns:
            The node ids written.

        Example:
            >>> from llama_index.core.schema import TextNode  # doctest: +SKIP
            >>> retriever.insert_nodes([TextNode(id_="c1", text="chunk one")])  # doctest: +SKIP
            ['c1']
        """
        with progress_shown(show_progress):
            written = self.engine.add(*node_batch(nodes))
        self._keep_objects(nodes)  # type: ignore[attr-defined]  # RetrieverCore's: asks every side
        return written

    async def ainsert_nodes(self, nodes: Sequence[BaseNode], *, show_progress: bool | None = None) -> list[str]:
        """Async twin of :meth:`insert_nodes`."""
        with progress_shown(show_progress):
            written = await self.engine.aadd(*node_batch(nodes))
        self._keep_objects(nodes)  # type: ignore[attr-defined]  # RetrieverCore's: asks every side
        return written

    def _keep_objects(self, documents: Sequence[Any]) -> None:
        """An ``IndexNode``'s object (a retriever, a query engine, ...) into ``object_map`` under its ``index_id``,
        as LlamaIndex's indexes do: ``retrieve`` follows it (see :mod:`~rrf_retriever.llama_index.nodes`)."""
        self.object_map.update(index_objects(documents))

    def delete_ref_doc(self, ref_doc_id: str) -> int:
        """Delete every node of the source document ``ref_doc_id`` (its chunks, or a ``Document`` inserted whole)
        from every store, all or none; a document in only some stores is removed too.

        Returns:
            The number of nodes deleted (0 for an unknown ``ref_doc_id``).

        Raises:
            InvalidTypeError / InvalidFilterError: ``ref_doc_id`` is not a string of 1 to 1024 characters without NUL.

        Example:
            >>> retriever.delete_ref_doc("manual.pdf")  # doctest: +SKIP
            12
        """
        source = check_id(ref_doc_id, field_name="ref_doc_id")
        return self.engine.delete_where({REF_DOC_ID_KEY: source})

    async def adelete_ref_doc(self, ref_doc_id: str) -> int:
        """Async twin of :meth:`delete_ref_doc`."""
        source = check_id(ref_doc_id, field_name="ref_doc_id")
        return await self.engine.adelete_where({REF_DOC_ID_KEY: source})

    def _init_side(self, engine: HybridEngine, search_kwargs: dict[str, Any], kwargs: dict[str, Any]) -> None:
        score = kwargs.get("score", "raw")
        if score not in SCORES:
            msg = f"score must be one of {list(SCORES)} (what NodeWithScore.score holds), not {score!r}"
            raise InvalidArgumentError(msg)
        if not isinstance(self, BaseModel):  # LlamaIndex alone: a plain class, no pydantic fields to hold these
            self.engine = engine
            self.search_kwargs = search_kwargs
        self._node_score = score
        BaseRetriever.__init__(self, callback_manager=kwargs.get("callback_manager"),
                               object_map=kwargs.get("object_map"), verbose=kwargs.get("verbose", False))
        if kwargs.get("object_map") is not None:  # the caller's dict itself, even empty: a scoped copy shares it
            self.object_map = kwargs["object_map"]

    def _side_kwargs(self) -> dict[str, Any]:
        return {"callback_manager": self.callback_manager, "object_map": self.object_map, "score": self._node_score}

    def _dense_model(self, bundle: QueryBundle) -> Any:
        """The dense leg's model when the bundle's ``custom_embedding_strs`` are to be embedded, else None."""
        if bundle.embedding is not None or not bundle.custom_embedding_strs:
            return None
        try:
            return self.engine.legs[main_dense_leg(self.engine.legs)].embedding
        except InvalidArgumentError:  # no dense store: the keyword legs need no vector
            return None

    def _nodes(self, bundle: QueryBundle, result: SearchResult) -> list[NodeWithScore]:
        dispatcher.event(RRFRetrievalTraceEvent(query=bundle.query_str, trace=result.trace.to_dict()))
        return [self._scored(h) for h in result.hits]

    def _scored(self, hit: FusedHit) -> NodeWithScore:
        nws = to_node_with_score(hit)
        if self._node_score == "normalized":
            nws.score = hit.normalized_score
        elif self._node_score == "relevance":
            nws.score = hit.relevance
        return nws

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        vector, model = query_bundle.embedding, self._dense_model(query_bundle)
        if model is not None:
            vector = _mean([model.embed_query(s) for s in query_bundle.custom_embedding_strs or ()])
        extra = {} if vector is None else {"query_vector": vector}
        result = self.search(query_bundle.query_str, **extra)  # type: ignore[attr-defined]  # RetrieverCore's
        return self._nodes(query_bundle, result)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        vector, model = query_bundle.embedding, self._dense_model(query_bundle)
        if model is not None:
            vector = _mean([await model.aembed_query(s) for s in query_bundle.custom_embedding_strs or ()])
        extra = {} if vector is None else {"query_vector": vector}
        result = await self.asearch(query_bundle.query_str, **extra)  # type: ignore[attr-defined]  # RetrieverCore's
        return self._nodes(query_bundle, result)


def _mean(vectors: list[list[float]]) -> list[float]:
    """The element-wise mean (LlamaIndex's ``get_agg_embedding_from_queries``)."""
    return [sum(column) / len(vectors) for column in zip(*vectors)]


class LlamaIndexRRFRetriever(RetrieverCore, LlamaIndexSide):
    """The hybrid retriever as a LlamaIndex ``BaseRetriever`` only (see :class:`~rrf_retriever.EnsembleRRFRetriever`
    for the arguments; this class takes the same ones, plus LlamaIndex's ``callback_manager``, ``object_map`` and
    ``verbose``)."""

    _sides = (LlamaIndexSide,)
