""":class:`JointKind`: both legs in ONE Qdrant collection, a named dense vector and the BM25 sparse vector on every
point, on any backend.

What the joint collection buys over two collections (one per leg):

* **One upsert writes both legs.** A point carries ``{"dense": [...], "bm25": SparseVector}`` and its payload, so
  there is no moment where a document is in one leg only (a reader between two collections' upserts could see
  it in one leg), and a failed upsert leaves neither.
* **One request runs both legs** (``query_batch_points`` with two ``QueryRequest`` s): the engine groups the two
  views' legs (they share a ``batch_group``) and calls :meth:`JointKind.search_batch` once; a leg whose weight is
  0 is never planned, so never sent. Fusion stays ours, on the client (Qdrant's RRF is not the textbook formula).

Layout: the dense vector ``"dense"`` (cosine, the dimension of the first vectors) and the sparse vector ``"bm25"``
(``Modifier.IDF``; the scheme of :mod:`rrf_retriever.stores.qdrant.keyword`: our analyzer client-side, BM25
saturation in the values); the payload and point ids of every store (:mod:`rrf_retriever.stores.qdrant.points`);
the BM25 settings saved with the collection.

The store gives the engine two leg views, :attr:`JointKind.dense` and :attr:`JointKind.keyword`
(:mod:`~rrf_retriever.stores.qdrant.joint_views`). Writes go through the dense view (it has the vectors); the
keyword view's ``add`` / ``delete`` are no-ops that declare ``writes_through = store.dense``, and the engine
refuses a keyword view without its dense view (its writes would go nowhere). So the write unit's snapshot and
rollback run through the dense view, and restore both vectors. Public classes:
:class:`~rrf_retriever.stores.qdrant.QdrantHybridStore` (qdrant-client) and
:class:`~rrf_retriever.stores.qdrant.QdrantEdgeHybridStore` (qdrant-edge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rrf_retriever.embeddings import BaseEmbeddingAdapter, as_embedding
from rrf_retriever.errors import InvalidArgumentError, RRFRetrieverError
from rrf_retriever.scope.tree import FilterSpec
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.stores.qdrant.backend import Saved
from rrf_retriever.stores.qdrant.bm25_params import Bm25Settings
from rrf_retriever.stores.qdrant.bm25_store import Bm25Store
from rrf_retriever.stores.qdrant.common import B
from rrf_retriever.stores.qdrant.dense import DenseBatch, embed_if_needed, prepare_dense_batch
from rrf_retriever.stores.qdrant.joint_views import HybridDenseView, HybridKeywordView
from rrf_retriever.stores.qdrant.ops import Op, Steps, drive, failed, finish
from rrf_retriever.stores.qdrant.points import CONTENT_KEY, METADATA_KEY, ExcludeIds, Metadatas, Point, Vectors
from rrf_retriever.stores.qdrant.settings import StoreSettings
from rrf_retriever.stores.qdrant.sparse_values import analyze_document
from rrf_retriever.types import Hit

__all__ = ["BatchResult", "JointKind"]

#: ``search_batch``'s answer: per request, its hits or the exception that leg raised.
BatchResult = list["list[Hit] | Exception"]


class JointKind(Bm25Store[B]):
    """The joint kind: dense and BM25 legs in one collection, written by one upsert, searched by one request.

    Args:
        embedding: The dense leg's embedding (LangChain, LlamaIndex, a callable or an adapter).
        bm25: The BM25 leg's settings, as for :class:`~rrf_retriever.stores.qdrant.bm25_store.Bm25Store`.
        settings: What every Qdrant store has (:class:`~rrf_retriever.stores.qdrant.settings.StoreSettings`).
    """

    embedding: BaseEmbeddingAdapter

    def __init__(self, embedding: Any, bm25: Bm25Settings, settings: StoreSettings) -> None:
        super().__init__(bm25, settings)
        self.embedding = as_embedding(embedding)
        #: The dense leg's view (writes both vectors).
        self.dense = HybridDenseView(self)
        #: The keyword leg's view (its writes go through :attr:`dense`).
        self.keyword = HybridKeywordView(self)

    # -- public operations -------------------------------------------------------------------------------
    def add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Upsert documents into both legs in one upsert per batch (texts embedded when ``vectors`` is None).

        Everything is validated first (ids, metadata, vectors, their dimension): a bad batch writes nothing.

        Raises:
            DimensionMismatchError: a vector of the wrong dimension, or holding NaN or infinity.
            EmbeddingError: the embedding model failed.
            StoreError: Qdrant failed.
        """
        self.backend.check_open()
        batch = prepare_dense_batch(self.embedding, self._dimension, ids, texts, metadatas, vectors)
        self._run(self._joint_write_steps(batch))

    async def aadd(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Async :meth:`add` (native with an async client)."""
        if self.backend.async_api is None:
            return await super().aadd(ids, texts, metadatas, vectors)
        vectors = await embed_if_needed(self.embedding, ids, texts, metadatas, vectors)
        batch = prepare_dense_batch(self.embedding, self._dimension, ids, texts, metadatas, vectors)
        return await self._arun(self._joint_write_steps(batch))

    def search(
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """The dense leg: the ``limit`` nearest documents (cosine) the scope allows (as ``QdrantDenseStore``)."""
        return self.search_request(SearchRequest.checked("dense", "", vector, limit, filter, exclude_ids))

    async def asearch(
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`search`."""
        return await self._arun_or_thread(
            lambda: self._alone_steps(self._nearest_steps(
                SearchRequest.checked("dense", "", vector, limit, filter, exclude_ids))),
            self.search, vector, limit, filter, exclude_ids)

    def keyword_search(
        self, query: str, limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """The keyword leg: the top ``limit`` documents by BM25 (as ``QdrantKeywordStore.search``)."""
        return self.search_request(SearchRequest.checked("keyword", query, None, limit, filter, exclude_ids))

    async def akeyword_search(
        self, query: str, limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`keyword_search`."""
        return await self._arun_or_thread(
            lambda: self._alone_steps(self._bm25_search_steps(
                SearchRequest.checked("keyword", query, None, limit, filter, exclude_ids))),
            self.keyword_search, query, limit, filter, exclude_ids)

    def search_request(self, request: SearchRequest) -> list[Hit]:
        """One leg's validated request (its ``kind`` says which leg), as a batch of one; nothing checked again."""
        return self._run(self._alone_steps(self._request_steps(request)))

    async def asearch_request(self, request: SearchRequest) -> list[Hit]:
        """Async :meth:`search_request`."""
        return await self._arun_or_thread(lambda: self._alone_steps(self._request_steps(request)),
                                          self.search_request, request)

    def search_batch(self, requests: Sequence[SearchRequest]) -> BatchResult:
        """Run several legs' searches in ONE request to Qdrant (``query_batch_points``; qdrant-edge runs them one
        after the other, under one lock).

        Returns:
            One entry per request, in order: its hits, or the exception that leg raised (a bad query vector fails
            its own request only; a failed round trip fails every request that was sent).

        Example:
            >>> store.search_batch([SearchRequest("keyword", "qdrant", None, 5)])  # doctest: +SKIP
            [[Hit(id='a', ...)]]
        """
        self.backend.check_open()
        return self._run(self._batch_steps([self._request_steps(r) for r in requests]))

    async def asearch_batch(self, requests: Sequence[SearchRequest]) -> BatchResult:
        """Async :meth:`search_batch` (native with an async client)."""
        return await self._arun_or_thread(lambda: self._batch_steps([self._request_steps(r) for r in requests]),
                                          self.search_batch, requests)

    # -- the kind's hooks and steps ----------------------------------------------------------------------
    def _take(self, saved: Saved) -> None:
        super()._take(saved)
        self._dimension = saved.dimension

    def _created(self, dimension: int | None, params: dict[str, Any] | None) -> None:
        super()._created(dimension, params)
        self._dimension = dimension

    def _describe(self) -> str:
        return f"dimension={self._dimension}"

    def _rewrite_op(self, points: list[Point]) -> Op:
        # reweight rewrites the BM25 values only: a vector update keeps the dense vector (an upsert would drop it).
        return Op(self.backend.update_vectors, (points,), "upsert")

    def _joint_write_steps(self, batch: DenseBatch) -> Steps[None]:
        terms = [analyze_document(self.analyzer, p[CONTENT_KEY], p[METADATA_KEY]) for p in batch.payloads]
        vectors = batch.vectors
        return self._write_steps(batch.ids, batch.payloads, terms,
                                 vectors, batch.dimension)  # type: ignore[arg-type]  # joint: no windows, one row each

    def _request_steps(self, request: SearchRequest) -> Steps[list[Hit]]:
        if not isinstance(request, SearchRequest):
            msg = f"search_batch takes SearchRequest objects, not {type(request).__name__}"
            raise InvalidArgumentError(msg)
        if request.kind not in ("dense", "keyword"):
            msg = f"a SearchRequest's kind is 'dense' or 'keyword', not {request.kind!r}"
            raise InvalidArgumentError(msg)
        try:  # the scope is compiled here, before the batch takes the lock; a bad one fails its own request
            if request.kind == "dense":
                return self._nearest_steps(request)
            return self._bm25_search_steps(request)
        except RRFRetrieverError as exc:
            return failed(exc)

    def _is_query(self, op: Op) -> bool:
        """Whether ``op`` is a leg's engine query (what one joint request carries)."""
        return op.call == self.backend.search  # bound methods compare by object and function

    def _batch_steps(self, operations: list[Steps[list[Hit]]]) -> Steps[BatchResult]:
        """Run each search's steps up to its engine query, send those queries as ONE ``search_batch`` op, and
        finish each search with its share of the reply. Other ops (existence, payload indexes, the fallback points
        of ``exclude_ids``) pass through as they come. A search that fails keeps its error as its result."""
        results: list[Any] = [None] * len(operations)
        waiting: dict[int, Op] = {}
        for i, steps in enumerate(operations):
            outcome = yield from drive(steps, None, None, self._is_query)
            if isinstance(outcome, Op):
                waiting[i] = outcome
            else:
                results[i] = outcome.value
        if not waiting:
            return results
        order = list(waiting)
        try:
            replies = yield Op(self.backend.search_batch, ([waiting[i].args[0] for i in order],), "search")
        except Exception as exc:
            for i in order:
                results[i] = yield from finish(operations[i], None, exc)
        else:
            for i, reply in zip(order, replies):
                results[i] = yield from finish(operations[i], reply, None)
        return results

    def _alone_steps(self, steps: Steps[list[Hit]]) -> Steps[list[Hit]]:
        """One leg's search as a batch of one: a joint collection's queries always go as ``search_batch``."""
        (result,) = yield from self._batch_steps([steps])
        if isinstance(result, Exception):
            raise result
        return result
