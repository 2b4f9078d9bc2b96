"""The hybrid engine as a LlamaIndex vector store: :class:`RRFVectorStore` (``VectorStoreIndex``,
``IngestionPipeline``, ``as_retriever(vector_store_query_mode="hybrid", alpha=...)``).

LlamaIndex embeds with its own ``embed_model``: the store takes the nodes' embeddings for the dense leg as they
come (:meth:`RRFVectorStore.add`) and the query's (``VectorStoreQuery.query_embedding``) as the dense query
vector; it embeds nothing itself. The keyword leg indexes the node's text and searches ``query_str``.

Modes (``VectorStoreQuery.mode``):

* ``default``: the dense leg only; ``sparse`` and ``text_search``: the keyword leg only (BM25);
* ``hybrid``: both, fused by weighted RRF. ``alpha`` is LlamaIndex's "0 for bm25, 1 for vector search": the dense
  weight is ``alpha``, the keyword weight ``1 - alpha`` (so 0 and 1 switch a leg off: the zero-weight guard, it is
  not even queried); ``alpha=None`` keeps the store's weights (default dense 1, keyword 1.25);
* ``mmr``: the dense leg, diversified (MMR lambda ``mmr_threshold``, default 0.5) over the stored vectors;
  ``as_retriever(vector_store_query_mode="mmr", vector_store_kwargs={"mmr_threshold": 0.2})`` as for
  ``SimpleVectorStore``. ``vector_store_kwargs={"fetch_k": 100}``: the candidates each leg fetches (and MMR
  re-orders) per query. Any other ``vector_store_kwargs`` key is refused by name.

``node_ids`` restricts a query to those nodes (the other stored nodes are excluded, at most
:data:`NODE_IDS_MAX_OTHERS` of them; ``node_ids`` itself may hold any number of ids).
``VectorStoreIndex.as_retriever()`` passes the ids it keeps in its docstore: over a store that keeps the text (this
one, Qdrant's) those are its ``IndexNode`` s only, so an index of
``IndexNode`` s (recursive retrieval) searches them all, while an index mixing text nodes and ``IndexNode`` s searches
the ``IndexNode`` s only, as LlamaIndex asks; build it with ``store_nodes_override=True`` to search every node.
An ``IndexNode``'s ``obj`` that is not a node is kept in memory by the store (not on disk) and set on the nodes a
query returns, so recursive retrieval follows it; ``VectorStoreIndex`` also keeps it in its own ``object_map``.

``similarities`` are our relevance (``rrf_relevance``, :mod:`rrf_retriever.relevance`), in [0, 1] and in the fused
order: the normalized fused score (``rrf_score_normalized``: the fused score over the best the query's active weights
allow, rank-based) times how well the hit matches at all (its dense cosine against the corpus's own random-pair
cosines). So ``SimilarityPostprocessor(similarity_cutoff=0.7)`` keeps nothing for an unrelated query and keeps a
strong match. In keyword-only modes (``sparse``, ``text_search``) the dense leg is not searched; a query with a
``query_embedding`` gets the level from the hits' stored vectors, one without (LlamaIndex's own retriever embeds
nothing in these modes) the normalized score: rank-based, the first hit 1.0. The fused ``rrf_score`` and the raw
scores (cosine for dense, BM25 for keyword: ``rrf_scores``) are in ``node.metadata``.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> from llama_index.core.vector_stores.types import VectorStoreQuery
    >>> store = RRFVectorStore()
    >>> store.add([TextNode(id_="a", text="error E42", embedding=[1.0, 0.0]),
    ...            TextNode(id_="b", text="disk full", embedding=[0.0, 1.0])])
    ['a', 'b']
    >>> store.query(VectorStoreQuery(query_embedding=[0.0, 1.0], similarity_top_k=1)).ids
    ['b']
    >>> store.query(VectorStoreQuery(query_str="E42", mode="text_search", similarity_top_k=1)).similarities
    [1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rrf_retriever.embeddings.base import BaseEmbeddingAdapter
from rrf_retriever.engine import StoreLeg
from rrf_retriever.errors import EmbeddingError, InvalidArgumentError, InvalidTypeError, missing_dependency
from rrf_retriever.frameworks.listing import LIST_MAX, listed
from rrf_retriever.index.manifest import MANIFEST_FILE, read_manifest, refresh_manifest
from rrf_retriever.llama_index.filters import from_llama_index
from rrf_retriever.llama_index.nodes import index_objects, node_batch, stored_node, to_node_with_score
from rrf_retriever.llama_index.retriever import LlamaIndexRRFRetriever
from rrf_retriever.metadata import REF_DOC_ID_KEY
from rrf_retriever.progress import check_show_progress, progress_shown
from rrf_retriever.scope.tree import AllOf, FilterNode, Match, matches
from rrf_retriever.stores.base import IdsMatching
from rrf_retriever.types import SearchResult
from rrf_retriever.validate import check_ids, check_int, check_number, check_str, check_top_k, shown
from rrf_retriever.vectors import to_float_vector

try:
    from llama_index.core.schema import BaseNode, IndexNode, TextNode
    from llama_index.core.vector_stores.types import (
        BasePydanticVectorStore,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
        VectorStoreQueryResult,
    )
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("llama-index-core", "llama-index", "rrf_retriever.llama_index") from exc

__all__ = ["NODE_IDS_MAX_OTHERS", "RRFVectorStore"]

#: A query restricted to ``node_ids`` excludes every other stored node: at most this many (else refused).
NODE_IDS_MAX_OTHERS = 10_000

_DENSE_ONLY = {VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.MMR}
_KEYWORD_ONLY = {VectorStoreQueryMode.SPARSE, VectorStoreQueryMode.TEXT_SEARCH}


def _too_many_others(kept: int) -> InvalidArgumentError:
    msg = (f"node_ids restricts the query to {kept} node(s) by excluding the others, and more than "
           f"{NODE_IDS_MAX_OTHERS} others are stored; filter on metadata (filters=, doc_ids=) instead, or "
           "build the VectorStoreIndex with store_nodes_override=True (its retrievers then name every node)")
    return InvalidArgumentError(msg)


class _GivenVectors(BaseEmbeddingAdapter):
    """The dense store's "model": LlamaIndex embeds, this one never does (asked to, it says why)."""

    model_id = "llama_index:embed_model"

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        msg = ("RRFVectorStore embeds nothing: LlamaIndex's embed_model gives the node embeddings (add) and the "
               "query embedding (VectorStoreQuery.query_embedding)")
        raise EmbeddingError(msg)


def _mmr_lambda(on_query: float | None, given: Any) -> Any:
    """Mode ``mmr``'s lambda: ``vector_store_kwargs["mmr_threshold"]`` (how ``VectorIndexRetriever`` passes it, and
    ``SimpleVectorStore`` reads it), else ``VectorStoreQuery.mmr_threshold``, else 0.5 (its default); checked by the
    search options as ``diversity``."""
    if given is not None and on_query is not None and given != on_query:
        msg = f"mmr_threshold given twice and different ({given} in the kwargs, {on_query} on the query)"
        raise InvalidArgumentError(msg)
    return given if given is not None else 0.5 if on_query is None else on_query


class RRFVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store over the hybrid engine (see the module docstring for modes, ``alpha`` and scores).

    Args:
        path: An index directory (reopened with its data), or None: in memory.
        show_progress: Our progress bars while nodes are written (the upsert): True always, False never, None
            (default) for long work on a terminal only; ``add(nodes, show_progress=...)`` per call. LlamaIndex's
            own bars (embedding) follow ``VectorStoreIndex(show_progress=...)``.
        **kwargs: What :meth:`LlamaIndexRRFRetriever.from_texts <rrf_retriever.EnsembleRRFRetriever.from_texts>`
            takes besides the embedding: ``keyword="fts5"``, ``weights``, ``rrf_k``, ``fetch_k``, ...

    Example:
        >>> from llama_index.core import StorageContext  # doctest: +SKIP
        >>> storage = StorageContext.from_defaults(vector_store=RRFVectorStore(path="./idx"))  # doctest: +SKIP
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    flat_metadata: bool = False
    path: str | None = None
    show_progress: bool | None = None

    _retriever: LlamaIndexRRFRetriever = PrivateAttr()
    _objects: dict[str, Any] = PrivateAttr(default_factory=dict)  # IndexNode objects by index_id, in memory

    def __init__(self, path: str | Path | None = None, *, show_progress: bool | None = None, **kwargs: Any) -> None:
        super().__init__(stores_text=True)
        self.path = None if path is None else str(path)
        self.show_progress = check_show_progress(show_progress)
        given = _GivenVectors()
        if path is not None and (Path(path) / MANIFEST_FILE).exists():
            given.dimension = read_manifest(path).get("dimension")  # so the reopen checks no probe embedding
        self._retriever = LlamaIndexRRFRetriever.from_texts([], given, path=path, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "RRFVectorStore"

    @property
    def client(self) -> Any:
        """The :class:`~rrf_retriever.llama_index.LlamaIndexRRFRetriever` underneath (``.engine``: the engine). It
        embeds nothing: searched with a text alone, its dense leg fails (degraded to BM25 with a warning); give it
        the vector too (``search(text, query_vector=...)``)."""
        return self._retriever

    def close(self) -> None:
        """Release the stores (their files and locks); the store cannot be used after."""
        self._retriever.close()

    def _saved(self) -> None:
        if self.path is not None:
            refresh_manifest(self.path, self._retriever.engine)

    # ---- writes ----------------------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Upsert nodes WITH their embeddings (LlamaIndex's ``embed_model`` made them) into both legs.

        Raises:
            InvalidArgumentError: a node without an embedding, or of another dimension than the store's.
        """
        ids, texts, metadatas = node_batch(nodes)
        missing = [node.node_id for node in nodes if node.embedding is None]
        if missing:
            msg = (f"node(s) {missing[:5]} have no embedding: RRFVectorStore stores the vectors LlamaIndex's "
                   "embed_model computes (VectorStoreIndex and IngestionPipeline with an embed_model do)")
            raise InvalidArgumentError(msg)
        vectors = [list(node.embedding or ()) for node in nodes]
        with progress_shown(add_kwargs.get("show_progress", self.show_progress)):
            written = self._retriever.engine.add(ids, texts, metadatas, vectors=vectors)
        self._objects.update(index_objects(nodes))
        self._saved()
        return written

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Async twin of :meth:`add` (the write runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.add, nodes, **add_kwargs)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the source document ``ref_doc_id`` (``index.delete_ref_doc``) from both legs."""
        self._retriever.delete_ref_doc(ref_doc_id)
        self._saved()

    def delete_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None,
                     **delete_kwargs: Any) -> None:
        """Delete nodes by id, by ``filters``, or the ids that match the filters when both are given."""
        if node_ids is None and filters is None:
            return
        if node_ids is not None and filters is not None:
            self._retriever.engine.delete([n.node_id for n in self.get_nodes(node_ids, filters)])
        elif node_ids is not None:
            self._retriever.engine.delete(check_ids(node_ids, "node_ids"))
        else:
            self._retriever.engine.delete_where(from_llama_index(filters))
        self._saved()

    def clear(self) -> None:
        """Delete every node."""
        self._retriever.engine.delete_where({"$or": [{REF_DOC_ID_KEY: {"$exists": True}},
                                                     {REF_DOC_ID_KEY: {"$exists": False}}]})
        self._saved()

    # ---- reads -----------------------------------------------------------------------------------------

    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, *,
                  limit: int | None = None) -> list[BaseNode]:
        """The stored nodes of ``node_ids`` (in that order, missing ones skipped), those matching ``filters`` kept;
        without ``node_ids``, the stored nodes matching ``filters`` (None: every node), sorted by id, as Qdrant's
        store lists them. A listing is bounded (:func:`~rrf_retriever.frameworks.listing.listed`): at most
        :data:`~rrf_retriever.frameworks.listing.LIST_MAX` (10,000) nodes may match, or pass ``limit``.

        Args:
            node_ids: The nodes to get, or None: list by ``filters``.
            filters: LlamaIndex ``MetadataFilters`` (:mod:`~rrf_retriever.llama_index.filters`), or None.
            limit: At most this many nodes (0 to ``LIST_MAX``; without ``node_ids``: the first ones by id).

        Raises:
            InvalidArgumentError: without ``node_ids`` or ``limit``, more than ``LIST_MAX`` nodes match; ``limit``
                out of range. InvalidFilterError: filters we cannot translate.
        """
        flt = None if filters is None else from_llama_index(filters)
        if limit is not None:
            limit = check_int(limit, "limit", 0, LIST_MAX)
        if node_ids is None:  # filtered in the stores
            records, flt = listed(self._retriever.engine, flt, limit), None
        else:
            records = self._retriever.engine.get(check_ids(node_ids, "node_ids"))
        out: list[BaseNode] = []
        for record in records:
            if flt is not None and not matches(record.metadata, flt):
                continue
            node = stored_node(record.id, record.text, record.metadata)
            out.append(node if node is not None else TextNode(id_=record.id, text=record.text,
                                                              metadata=dict(record.metadata)))
        return out if limit is None else out[:limit]

    async def aget_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, *,
                         limit: int | None = None) -> list[BaseNode]:
        """Async twin of :meth:`get_nodes` (the read runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.get_nodes, node_ids, filters, limit=limit)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Answer a LlamaIndex query in its ``mode`` (see the module docstring); ``similarities``: the relevance.

        ``kwargs`` (LlamaIndex's ``vector_store_kwargs``): ``mmr_threshold``, the MMR lambda of mode ``mmr`` as
        ``SimpleVectorStore`` takes it (0: the most diverse, 1: relevance only; default
        ``query.mmr_threshold``, else 0.5), and ``fetch_k``, the candidates each leg fetches (and MMR re-orders)
        for this query. Any other keyword is refused, never silently dropped.

        Raises:
            InvalidArgumentError: a mode we do not run (``svm``, ``semantic_hybrid``, ...), ``node_ids`` with more
                than :data:`NODE_IDS_MAX_OTHERS` other nodes stored, a dense
                mode without ``query_embedding``, ``alpha`` outside [0, 1], a keyword we do not know,
                ``mmr_threshold`` outside mode ``mmr`` or unlike ``query.mmr_threshold``.
            InvalidTypeError: ``query`` is not a ``VectorStoreQuery``, or one of its fields has the wrong type (a
                string for ``node_ids``, ``query_embedding`` or ``similarity_top_k``, ...); the message names it.
        """
        text, options = self._options(query, kwargs)
        return self._result(self._retriever.search(text, **options))

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async twin of :meth:`query` (the legs run as asyncio tasks)."""
        text, options = self._options(query, kwargs)
        return self._result(await self._retriever.asearch(text, **options))

    def _options(self, query: VectorStoreQuery, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if not isinstance(query, VectorStoreQuery):
            msg = f"query must be a LlamaIndex VectorStoreQuery, not {type(query).__name__}"
            raise InvalidTypeError(msg)
        mode = next((m for m in VectorStoreQueryMode if query.mode in (m, m.value)), None)
        if mode not in _DENSE_ONLY | _KEYWORD_ONLY | {VectorStoreQueryMode.HYBRID}:
            given = shown(getattr(query.mode, "value", query.mode))
            msg = f"RRFVectorStore does not run mode {given}; use default, sparse, text_search, hybrid or mmr"
            raise InvalidArgumentError(msg)
        unknown = sorted(set(kwargs) - {"mmr_threshold", "fetch_k"})
        if unknown:
            msg = (f"unknown argument(s) {unknown} for RRFVectorStore.query (vector_store_kwargs); accepted: "
                   "['fetch_k', 'mmr_threshold']")
            raise InvalidArgumentError(msg)
        options: dict[str, Any] = {"top_k": check_top_k(query.similarity_top_k, "similarity_top_k")}
        if kwargs.get("fetch_k") is not None:
            options["fetch_k"] = kwargs["fetch_k"]
        if query.node_ids:
            options["exclude_ids"] = self._others(check_ids(query.node_ids, "node_ids"))
        if mode in _KEYWORD_ONLY:
            options["weights"] = {"dense": 0.0}
            if query.query_embedding is not None:  # not searched: the relevance reads the hits' cosines with it
                options["query_vector"] = list(query.query_embedding)
        else:
            if query.query_embedding is None:
                msg = f"mode {mode.value!r} needs the query_embedding (LlamaIndex's embed_model computes it)"
                raise InvalidArgumentError(msg)
            options["query_vector"] = to_float_vector(query.query_embedding, "query_embedding")
        if mode in _DENSE_ONLY:
            options["weights"] = {"keyword": 0.0}
        if mode is VectorStoreQueryMode.MMR:
            options["diversity"] = _mmr_lambda(query.mmr_threshold, kwargs.get("mmr_threshold"))
        elif kwargs.get("mmr_threshold") is not None:
            msg = f"mmr_threshold is the MMR lambda of vector_store_query_mode='mmr', not of mode {mode.value!r}"
            raise InvalidArgumentError(msg)
        if mode is VectorStoreQueryMode.HYBRID:
            if query.alpha is not None:
                alpha = check_number(query.alpha, "alpha", high=1.0)
                options["weights"] = {"dense": alpha, "keyword": 1.0 - alpha}
            if query.hybrid_top_k is not None:
                options["top_k"] = check_top_k(query.hybrid_top_k, "hybrid_top_k")
        parts: list[FilterNode] = []
        if query.filters is not None:
            parts.append(from_llama_index(query.filters))
        if query.doc_ids:
            parts.append(Match(REF_DOC_ID_KEY, tuple(check_ids(query.doc_ids, "doc_ids"))))
        if parts:
            options["filter"] = parts[0] if len(parts) == 1 else AllOf(tuple(parts))
        return "" if query.query_str is None else check_str(query.query_str, "query_str"), options

    def _others(self, node_ids: list[str]) -> list[str]:
        """The stored ids outside ``node_ids`` (what a query restricted to them excludes), for any number of
        ``node_ids``. A store is listed only when its count leaves room for at most :data:`NODE_IDS_MAX_OTHERS`
        others (else at least that many are not in ``node_ids``: refused before listing), so the listing holds at
        most ``len(node_ids) + NODE_IDS_MAX_OTHERS`` ids: bounded by the caller's own list."""
        keep = set(node_ids)
        others: set[str] = set()
        for leg in self._retriever.engine.legs.values():
            if isinstance(leg, StoreLeg) and isinstance(leg.store, IdsMatching):
                if leg.count() - len(keep) > NODE_IDS_MAX_OTHERS:  # so many stored ids at least are others
                    raise _too_many_others(len(keep))
                others.update(i for i in leg.store.ids_matching(None) if i not in keep)
        if len(others) > NODE_IDS_MAX_OTHERS:
            raise _too_many_others(len(keep))
        return sorted(others)

    def _result(self, result: SearchResult) -> VectorStoreQueryResult:
        nodes = [to_node_with_score(hit).node for hit in result.hits]
        for node in nodes:  # the object an IndexNode pointed to when it was added (not stored: kept in memory)
            if isinstance(node, IndexNode) and node.obj is None and node.index_id in self._objects:
                node.obj = self._objects[node.index_id]
        return VectorStoreQueryResult(nodes=nodes, similarities=[hit.relevance for hit in result.hits],
                                      ids=[hit.id for hit in result.hits])
