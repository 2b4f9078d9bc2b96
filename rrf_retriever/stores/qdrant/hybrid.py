"""Both legs in ONE Qdrant collection: a named dense vector and the BM25 sparse vector on every point.

What the joint collection buys over two collections (one per leg):

* **One upsert writes both legs.** A point carries ``{"dense": [...], "bm25": SparseVector}`` and its payload, so
  there is no moment where a document is in one leg only (a reader between two collections' upserts could see
  it in one leg), and a failed upsert leaves neither.
* **One request runs both legs** (``query_batch_points`` with two ``QueryRequest`` s): the engine groups the two
  views' legs (they share a ``batch_group``) and calls :meth:`QdrantHybridBase.search_batch` once; a leg whose
  weight is 0 is never planned, so never sent. Fusion stays ours, on the client (Qdrant's RRF is not the
  textbook formula: DESIGN section 6).

Layout: the dense vector ``"dense"`` (cosine, the dimension of the first vectors) and the sparse vector ``"bm25"``
(``Modifier.IDF``; the scheme of :mod:`rrf_retriever.stores.qdrant.keyword`: our analyzer client-side, BM25
saturation in the values); the payload and point ids of the dense store (``page_content``, ``metadata``,
``doc_id``; :func:`~rrf_retriever.stores.qdrant.base.point_id`); the BM25 settings in the collection's metadata.
Filters and ``exclude_ids`` use the one shared translation (:meth:`QdrantStoreBase._build_filter`), inside Qdrant.

The store gives the engine two leg views, :attr:`QdrantHybridBase.dense` and :attr:`QdrantHybridBase.keyword`.
Writes go through the dense view (it has the vectors); the keyword view's ``add`` / ``delete`` are no-ops that
declare ``writes_through = store.dense``, and the engine refuses a keyword view without its dense view (its
writes would go nowhere). So the write unit's snapshot and rollback run through the dense view, and restore
both vectors. Engines: :class:`~rrf_retriever.stores.qdrant.QdrantHybridStore` (qdrant-client: memory, a local
path, a server or a cluster) and :class:`~rrf_retriever.stores.qdrant.QdrantEdgeHybridStore` (qdrant-edge).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.embeddings import as_embedding
from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError, StoreError
from rrf_retriever.progress import progress_bar
from rrf_retriever.scope.tree import FilterSpec
from rrf_retriever.stores.base import SearchRequest, StoreBase
from rrf_retriever.stores.qdrant.base import (
    CONTENT_KEY,
    METADATA_KEY,
    ExcludeIds,
    Metadatas,
    QdrantStoreBase,
    Vectors,
    point_id,
)
from rrf_retriever.stores.qdrant.keyword import QdrantKeywordStoreBase
from rrf_retriever.stores.qdrant.sparse_values import DocumentTerms, analyze_document
from rrf_retriever.stores.qdrant.steps import Steps
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import validate_batch

__all__ = ["DENSE_VECTOR_NAME", "QdrantHybridBase"]

#: The named dense vector of a joint collection (the sparse one is ``"bm25"``).
DENSE_VECTOR_NAME = "dense"
#: The primitives one joint request (``query_batch``) can carry.
_BATCHABLE = frozenset({"nearest", "sparse_search"})
BatchResult = list["list[Hit] | Exception"]


class QdrantHybridBase(QdrantKeywordStoreBase):
    """Every operation of a joint (dense + BM25) collection, as steps over engine primitives.

    Besides the keyword stores' primitives an engine supplies ``_read_layout`` (the saved BM25 settings and the
    dense dimension), ``_create(dim, params)``, ``_nearest`` on the named dense vector, ``_query_batch(calls)``
    (several ``("nearest" | "sparse_search", args)`` in one request) and an ``_upsert`` that writes a point's
    vectors without its dense one (``reweight``) as a vector update, never a replacement.
    """

    def __init__(
        self,
        embedding: Any,
        *,
        analyzer: Analyzer | None,
        k1: float | None,
        b: float | None,
        avgdl: float | None,
        live_idf: bool,
        auto_reweight: bool,
        batch_size: int,
        index_keys: Sequence[str],
        max_auto_indexes: int,
        title_weight: float | None = None,
    ) -> None:
        super().__init__(
            analyzer=analyzer, k1=k1, b=b, avgdl=avgdl, live_idf=live_idf, auto_reweight=auto_reweight,
            batch_size=batch_size, index_keys=index_keys, max_auto_indexes=max_auto_indexes,
            title_weight=title_weight,
        )
        self.embedding = as_embedding(embedding)
        from rrf_retriever.stores.qdrant.hybrid_views import HybridDenseView, HybridKeywordView

        #: The dense leg's view (writes both vectors).
        self.dense = HybridDenseView(self)
        #: The keyword leg's view (its writes go through :attr:`dense`).
        self.keyword = HybridKeywordView(self)

    # -- public operations ---------------------------------------------------------------------------
    def add(  # type: ignore[override]
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Upsert documents into both legs in one upsert per batch (texts embedded when ``vectors`` is None).

        Everything is validated first (ids, metadata, vectors, their dimension): a bad batch writes nothing.

        Raises:
            DimensionMismatchError: a vector of the wrong dimension, or holding NaN or infinity.
            EmbeddingError: the embedding model failed.
            StoreError: Qdrant failed.
        """
        self._check_usable()
        self._run(self._joint_add_steps(*self._prepare_joint_add(ids, texts, metadatas, vectors)))

    async def aadd(  # type: ignore[override]
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Async :meth:`add` (native with an async client)."""
        if self._api(asynchronous=True) is None:
            return await StoreBase.aadd(self, ids, texts, metadatas, vectors)
        if vectors is None:
            _, text_list, _ = validate_batch(ids, texts, metadatas)
            vectors = await self.embedding.aembed_documents(text_list) if text_list else []
        return await self._arun(self._joint_add_steps(*self._prepare_joint_add(ids, texts, metadatas, vectors)))

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:  # type: ignore[override]
        """The stored documents among ``ids``, in the order asked (``with_vectors``: the dense vector)."""
        return self._run(self._get_steps(ids, with_vectors))

    async def aget(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:  # type: ignore[override]
        """Async :meth:`get`."""
        return await self._arun_or_thread(
            self._get_steps(ids, with_vectors), StoreBase.aget, self, ids, with_vectors=with_vectors
        )

    def search(  # type: ignore[override]
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """The dense leg: the ``limit`` nearest documents (cosine) the scope allows (as ``QdrantDenseStore``)."""
        return self._run(self._search_steps(vector, limit, filter, exclude_ids))

    async def asearch(  # type: ignore[override]
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`search`."""
        steps = self._search_steps(vector, limit, filter, exclude_ids)
        return await self._arun_or_thread(steps, StoreBase.asearch, self, vector, limit, filter, exclude_ids)

    def keyword_search(
        self, query: str, limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """The keyword leg: the top ``limit`` documents by BM25 (as ``QdrantKeywordStore.search``)."""
        return self._run(self._kw_search_steps(query, limit, filter, exclude_ids))

    async def akeyword_search(
        self, query: str, limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`keyword_search`."""
        steps = self._kw_search_steps(query, limit, filter, exclude_ids)
        return await self._arun_or_thread(steps, _in_thread, self.keyword_search, query, limit, filter, exclude_ids)

    def search_batch(self, requests: Sequence[SearchRequest]) -> BatchResult:
        """Run several legs' searches in ONE request to Qdrant (``query_batch_points``; qdrant-edge has no batch
        call and runs them one after the other, under one lock).

        Returns:
            One entry per request, in order: its hits, or the exception that leg raised (a bad query vector fails
            its own request only; a failed round trip fails every request that was sent).

        Example:
            >>> store.search_batch([SearchRequest("keyword", "qdrant", None, 5)])  # doctest: +SKIP
            [[Hit(id='a', ...)]]
        """
        self._check_usable()
        return self._run(self._batch_steps([self._request_steps(r) for r in requests]))

    async def asearch_batch(self, requests: Sequence[SearchRequest]) -> BatchResult:
        """Async :meth:`search_batch` (native with an async client)."""
        steps = self._batch_steps([self._request_steps(r) for r in requests])
        return await self._arun_or_thread(steps, _in_thread, self.search_batch, requests)

    # -- the operations, as steps ----------------------------------------------------------------------
    def _ready_steps(self) -> Steps[bool]:
        """Whether the collection exists (its BM25 settings and dense dimension read the first time)."""
        if self._params is None and (yield ("exists", ())):
            saved, dim = yield ("read_layout", ())
            params = self._adopt(saved, self._where())
            self._params, self._dimension = params, dim
        return self._params is not None

    def _prepare_joint_add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas, vectors: Vectors
    ) -> tuple[list[str], list[dict[str, Any]], list[list[float]], int, list[DocumentTerms]]:
        """Validate a batch and its vectors (embedding the texts if needed) and analyze it, before any write."""
        id_list, payloads, vector_list, dim = self._prepare_add(ids, texts, metadatas, vectors)
        terms = [analyze_document(self.analyzer, p[CONTENT_KEY], p[METADATA_KEY]) for p in payloads]
        return id_list, payloads, vector_list, dim, terms

    def _joint_add_steps(
        self, ids: list[str], payloads: list[dict[str, Any]], vectors: list[list[float]], dim: int,
        terms: list[DocumentTerms],
    ) -> Steps[None]:
        # The keyword store's add (keyword.py, _kw_add_steps) with the dense vector on the same point.
        if not ids:
            return
        created = False
        if not (yield from self._ready_steps()):
            params = self._new_params(self._first_avgdl(terms, self.title_weight)[0])
            try:
                yield ("create", (dim, params))
                self._params, self._dimension, created = params, dim, True
            except StoreError:
                if not (yield from self._ready_steps()):  # else another writer created it meanwhile
                    raise
        if dim != self._dimension:  # checked before anything is written
            msg = f"vectors have dimension {dim}, the collection {self._dimension}"
            raise DimensionMismatchError(msg)
        assert self._params is not None
        first_avgdl, total = self._first_avgdl(terms, self._params["title_weight"])
        if self._params["avgdl"] is None and first_avgdl is not None:  # the first terms ever: freeze avgdl now
            params = {**self._params, "avgdl": first_avgdl}
            yield ("save_params", (params,))
            self._params = params
        if self._written is None:  # first write of this store object: start from what the collection holds
            count = 0 if created else int((yield ("count", ())))
            self._written, self._checked_at = [count, round(count * (self._params["avgdl"] or 0.0))], count
        settings = self._params  # one set of settings for the whole batch
        pids = [point_id(i) for i in ids]
        with progress_bar(len(pids), f"upserting into {self.engine_name}", unit="doc") as bar:
            for start in range(0, len(pids), self.batch_size):
                chunk = slice(start, start + self.batch_size)
                points = [
                    (pid, {DENSE_VECTOR_NAME: vec, **self._sparse(*self._values(t, settings))}, payload)
                    for pid, vec, t, payload in zip(pids[chunk], vectors[chunk], terms[chunk], payloads[chunk])
                ]
                yield ("upsert", (points,))
                bar.update(len(points))
        superseded = yield from self._fallback_points_steps(ids)  # now at their own point ids
        if superseded:
            yield ("delete", (superseded,))
        if self.index_keys and self.indexes_payload:
            yield from self._declared_index_steps(payloads)
        with self._lock:
            self._written[0] += len(ids)
            self._written[1] += total
        yield from self._drift_steps()

    def _request_steps(self, request: SearchRequest) -> Steps[list[Hit]]:
        if not isinstance(request, SearchRequest):
            msg = f"search_batch takes SearchRequest objects, not {type(request).__name__}"
            raise InvalidArgumentError(msg)
        if request.kind == "dense":
            return self._search_steps(request.vector, request.limit, request.filter, request.exclude_ids)
        if request.kind == "keyword":
            return self._kw_search_steps(request.query, request.limit, request.filter, request.exclude_ids)
        msg = f"a SearchRequest's kind is 'dense' or 'keyword', not {request.kind!r}"
        raise InvalidArgumentError(msg)

    def _batch_steps(self, operations: list[Steps[list[Hit]]]) -> Steps[BatchResult]:
        """Run each search's steps up to its engine query, send those queries as ONE ``query_batch`` step, and
        finish each search with its share of the reply. Other steps (existence, payload indexes, the fallback
        points of ``exclude_ids``) pass through as they come. A search that fails keeps its error as its result."""
        results: list[Any] = [None] * len(operations)
        waiting: dict[int, tuple[str, tuple[Any, ...]]] = {}
        for i, steps in enumerate(operations):
            outcome = yield from _drive(steps, None, None, stop_at=_BATCHABLE)
            if isinstance(outcome, tuple):
                waiting[i] = outcome
            else:
                results[i] = outcome.value
        if not waiting:
            return results
        order = list(waiting)
        try:
            replies = yield ("query_batch", ([waiting[i] for i in order],))
        except Exception as exc:
            for i in order:
                results[i] = (yield from _drive(operations[i], None, exc)).value
        else:
            for i, reply in zip(order, replies):
                results[i] = (yield from _drive(operations[i], reply, None)).value
        return results

    # -- conversions ---------------------------------------------------------------------------------
    @classmethod
    def _record(cls, pid: Any, payload: Mapping[str, Any] | None, vector: Any) -> Record:
        if isinstance(vector, Mapping):  # both vectors came back: the dense one is the record's
            vector = vector.get(DENSE_VECTOR_NAME)
        return QdrantStoreBase._record.__func__(cls, pid, payload, vector)  # type: ignore[attr-defined]


class _Done:
    """A finished operation's result (or its error, kept as the result)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _drive(
    steps: Steps[Any], reply: Any, error: BaseException | None, stop_at: frozenset[str] = frozenset()
) -> Steps[Any]:
    """Advance ``steps`` (first sending ``reply`` or throwing ``error``), passing its steps through, until it
    finishes (:class:`_Done`, its result or its exception) or yields a step named in ``stop_at`` (returned)."""
    while True:
        try:
            step = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            return _Done(done.value)
        except Exception as exc:
            return _Done(exc)
        if step[0] in stop_at:
            return step
        try:
            reply, error = (yield step), None
        except Exception as exc:
            reply, error = None, exc


async def _in_thread(fn: Any, *args: Any) -> Any:
    import asyncio

    return await asyncio.to_thread(fn, *args)
