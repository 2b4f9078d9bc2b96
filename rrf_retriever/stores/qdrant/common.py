""":class:`QdrantStore`: what every Qdrant store kind shares, on whichever backend it holds.

It runs operations (:mod:`~rrf_retriever.stores.qdrant.ops`) on its :class:`~rrf_retriever.stores.qdrant.backend.
Backend`, sync or on the async client, every engine call through ONE method, :meth:`QdrantStore._call` (the
fault-injection tests override it); and it holds what does not depend on the kind: reading an existing collection
the first time, get / delete / count, the fallback points of langchain-qdrant's ids
(:func:`~rrf_retriever.stores.qdrant.points.fallback_point_id`), the scope of a search (payload indexes, the
compiled filter, ``exclude_ids``) and ``ids_matching``. The kinds (:mod:`~rrf_retriever.stores.qdrant.dense`,
:mod:`~rrf_retriever.stores.qdrant.keyword`, :mod:`~rrf_retriever.stores.qdrant.joint`) add their writes and
searches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Generic, NamedTuple, TypeVar

from rrf_retriever.errors import DimensionMismatchError, RRFRetrieverError, StoreError
from rrf_retriever.progress import progress_bar
from rrf_retriever.scope.parse import Scope, normalize_filter, normalize_scope
from rrf_retriever.scope.tree import FilterNode, FilterSpec, NormalizedFilter
from rrf_retriever.stores.base import SearchRequest, StoreBase, in_thread
from rrf_retriever.stores.qdrant.backend import Backend, DenseQuery, Query, Saved
from rrf_retriever.stores.qdrant.filters import NOTHING, RESOLVE, compile_filter
from rrf_retriever.stores.qdrant.ops import Op, Steps, run_async, run_sync
from rrf_retriever.stores.qdrant.points import (
    SCROLL_PAGE,
    ExcludeIds,
    Point,
    doc_id_of,
    fallback_point_id,
    hit_of,
    point_id,
    record_of,
)
from rrf_retriever.stores.qdrant.resolve import resolve_steps
from rrf_retriever.stores.qdrant.scoping import PayloadIndexes
from rrf_retriever.stores.qdrant.settings import StoreSettings
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import MAX_LIMIT, check_ids, check_limit

__all__ = ["READING", "B", "PreparedScope", "QdrantStore"]

T = TypeVar("T")
#: The backend a store holds (a public class names its own: ``ClientBackend`` or ``EdgeBackend``).
B = TypeVar("B", bound=Backend)
#: How errors name the calls that read an existing collection.
READING = "reading the collection"


class PreparedScope(NamedTuple):
    """A call's scope, validated and its filter compiled before the call takes the store's lock
    (:meth:`QdrantStore._prepare_scope`): a large filter never holds up another caller."""

    filter: NormalizedFilter | None
    excluded: frozenset[str]
    compiled: Any  # compile_filter's answer: True, False or the engine's condition


class QdrantStore(StoreBase, Generic[B]):
    """The base of the three store kinds: the backend, the one engine-call choke point, and every operation that
    does not depend on the kind.

    A kind supplies :meth:`_known` / :meth:`_take` (what it learns from an existing collection) and
    :meth:`_created`; a public store class builds the kind from its settings, then builds the backend and hands it
    to :meth:`_open` (so a bad setting raises before anything is opened or created on disk).
    """

    backend: B

    def __init__(self, settings: StoreSettings) -> None:
        #: What the store was built with (batch size, declared payload indexes, their budget).
        self.settings = settings
        self.batch_size = settings.batch_size
        self.indexes = PayloadIndexes(settings.index_keys, settings.max_auto_indexes)
        self._dimension: int | None = None

    def _open(self, backend: B) -> None:
        """Take ``backend`` and read what an existing collection holds (closing the backend if that fails)."""
        self.backend = backend
        try:
            self._run(self._ready_steps())
        except BaseException:
            backend.close()
            raise

    # -- settings ----------------------------------------------------------------------------------------
    @property
    def index_keys(self) -> frozenset[str]:
        """Metadata keys indexed as documents are written."""
        return self.indexes.index_keys

    @property
    def max_auto_indexes(self) -> int:
        """How many payload indexes filtered queries may build on first use."""
        return self.indexes.max_auto_indexes

    @property
    def indexed_keys(self) -> frozenset[tuple[str, str]]:
        """The payload indexes this store knows of, ``(metadata key, kind)``: one per key (Qdrant keeps one)."""
        return self.indexes.known

    @property
    def dimension(self) -> int | None:
        """The dense vector's dimension; None while the store has never been written, or has no dense vector."""
        return self._dimension

    # -- running operations ------------------------------------------------------------------------------
    def _call(self, op: Op, api: Any) -> Any:
        """Call one backend primitive on ``api``: EVERY engine call of every Qdrant store passes here (the
        fault-injection tests override it), turned into our errors."""
        try:
            with self.backend.serialize(api):
                return op.call(api, *op.args)
        except RRFRetrieverError:
            raise
        except Exception as exc:
            raise self.backend.error(exc, op.action) from exc

    def _our_error(self, exc: Exception, action: str) -> Exception:
        if isinstance(exc, RRFRetrieverError):
            return exc
        error = self.backend.error(exc, action)
        error.__cause__ = exc
        return error

    def _run(self, steps: Steps[T]) -> T:
        """Run an operation on the sync api, under the backend's guard."""
        api = self.backend.sync_api
        with self.backend.guard():
            return run_sync(steps, lambda op: self._call(op, api))

    async def _arun(self, steps: Steps[T]) -> T:
        """Run an operation on the async client."""
        api = self.backend.async_api
        return await run_async(steps, lambda op: self._call(op, api), self._our_error)

    async def _arun_or_thread(
        self, make_steps: Callable[[], Steps[T]], sync: Callable[..., T], *args: Any, **kwargs: Any
    ) -> T:
        """:meth:`_arun` of ``make_steps()`` with an async client; else ``sync(*args, **kwargs)`` in a worker
        thread (the steps are made there: a filter compiles in that thread, not on the event loop)."""
        if self.backend.async_api is None:
            return await in_thread(sync, *args, **kwargs)
        return await self._arun(make_steps())

    def _maintain(self, op: Op) -> Any:
        """Run one backend call outside any operation (flush, optimize), under the guard."""
        with self.backend.guard():
            return self._call(op, self.backend.sync_api)

    # -- public operations every kind has ----------------------------------------------------------------
    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """The stored documents among ``ids``, in the order asked; unknown ids are skipped.

        Args:
            ids: Document ids.
            with_vectors: Return each document's dense vector too (stores with a dense vector).
        """
        return self._run(self._get_steps(ids, with_vectors))

    async def aget(  # type: ignore[override]  # StoreBase.aget takes **kwargs; this one takes its one keyword
        self, ids: Sequence[str], *, with_vectors: bool = False
    ) -> list[Record]:
        """Async :meth:`get`."""
        return await self._arun_or_thread(lambda: self._get_steps(ids, with_vectors), self.get, ids,
                                          with_vectors=with_vectors)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are ignored."""
        self._run(self._delete_steps(ids))

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async :meth:`delete`."""
        await self._arun_or_thread(lambda: self._delete_steps(ids), self.delete, ids)

    def count(self) -> int:
        """Number of documents."""
        return self._run(self._count_steps())

    async def acount(self) -> int:
        """Async :meth:`count`."""
        return await self._arun_or_thread(self._count_steps, self.count)

    def ids_matching(self, filter: FilterSpec | FilterNode | None = None, limit: int | None = None) -> list[str]:
        """Every stored id whose metadata matches ``filter`` (all ids for None), sorted; the first ``limit``.

        Example:
            >>> store.add(["a", "b"], ["x", "y"], [{"ref": 1}, {"ref": 2}])  # doctest: +SKIP
            >>> store.ids_matching({"ref": {"$ne": 2}})  # doctest: +SKIP
            ['a']

        Raises:
            InvalidFilterError: a malformed filter.
            StoreError: Qdrant failed, or the store is closed.
        """
        return self._run(self._ids_matching_steps(filter, limit))

    def some_ids(self, limit: int) -> list[str]:
        """Up to ``limit`` stored ids in Qdrant's point-id order (a fixed order that is not the ids' own), read
        without scrolling the rest: the engine's cosine background samples them (:class:`~rrf_retriever.stores.base.
        SomeIds`).

        Raises:
            InvalidArgumentError: ``limit`` is out of a search's bounds (0 gives none).
            InvalidTypeError: ``limit`` is not an integer.
            StoreError: Qdrant failed, or the store is closed.
        """
        return self._run(self._some_ids_steps(check_limit(limit)))

    async def aids_matching(self, filter: FilterSpec | FilterNode | None = None, limit: int | None = None) -> list[str]:
        """Async :meth:`ids_matching`."""
        return await self._arun_or_thread(lambda: self._ids_matching_steps(filter, limit), self.ids_matching, filter,
                                          limit)

    def close(self) -> None:
        """Release the backend (a client this store opened, a shard and its directory lock)."""
        self.backend.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.backend.describe()}, {self._describe()})"

    def _describe(self) -> str:
        return f"dimension={self._dimension}"

    # -- what a kind supplies ----------------------------------------------------------------------------
    def _known(self) -> bool:
        """Whether the store knows the collection exists (and what it holds)."""
        raise NotImplementedError

    def _take(self, saved: Saved) -> None:
        """Learn what an existing collection holds (and check it against the store's settings)."""
        raise NotImplementedError

    def _created(self, dimension: int | None, params: dict[str, Any] | None) -> None:
        """Learn what the collection this store just created holds."""
        raise NotImplementedError

    # -- the shared operations, as steps -----------------------------------------------------------------
    def _ready_steps(self) -> Steps[bool]:
        """Whether the collection exists (what it holds read from the engine the first time)."""
        if not self._known() and (yield Op(self.backend.exists, (), READING)):
            saved = yield Op(self.backend.read, (), READING)
            self.indexes.learn(saved.payload_schema)
            self._take(saved)
            if self.backend.indexes_payload:
                yield from self.indexes.reclaim_steps(self.backend)
        return self._known()

    def _create_steps(self, dimension: int | None, params: dict[str, Any] | None) -> Steps[bool]:
        """Create the collection; False when another writer created it meanwhile (then it is read instead)."""
        try:
            yield Op(self.backend.create, (dimension, params), "creating the collection")
        except StoreError:
            if not (yield from self._ready_steps()):
                raise
            return False
        self._created(dimension, params)
        return True

    def _check_dimension(self, dimension: int) -> None:
        if dimension != self._dimension:
            msg = f"vectors have dimension {dimension}, the collection {self._dimension}"
            raise DimensionMismatchError(msg)

    def _upsert_steps(self, pids: list[str], chunk: Callable[[slice], list[Point]]) -> Steps[None]:
        """Upsert ``batch_size`` points per request, ``chunk(slice of pids)`` building each request's points."""
        with progress_bar(len(pids), f"upserting into {self.backend.engine_name}", unit="doc") as bar:
            for start in range(0, len(pids), self.batch_size):
                points = chunk(slice(start, start + self.batch_size))
                self.indexes.written([p.payload for p in points if p.payload is not None])
                yield Op(self.backend.upsert, (points,), "upsert")
                bar.update(len(points))

    def _replace_fallback_steps(self, ids: list[str]) -> Steps[None]:
        """After an upsert: drop the fallback points these documents owned (they are at their own ids now)."""
        superseded = yield from self._fallback_points_steps(ids)
        if superseded:
            yield Op(self.backend.delete, (superseded,), "delete")

    def _delete_steps(self, ids: Sequence[str]) -> Steps[None]:
        id_list = check_ids(ids)
        if id_list and (yield from self._ready_steps()):
            fallback = yield from self._fallback_points_steps(id_list)
            yield Op(self.backend.delete, ([point_id(i) for i in id_list] + fallback,), "delete")

    def _get_steps(self, ids: Sequence[str], with_vectors: bool) -> Steps[list[Record]]:
        id_list = check_ids(ids)
        if not id_list or not (yield from self._ready_steps()):
            return []
        candidates = {i: [p for p in (point_id(i), fallback_point_id(i)) if p] for i in id_list}
        unique = list(dict.fromkeys(p for pids in candidates.values() for p in pids))
        stored = yield Op(self.backend.retrieve, (unique, bool(with_vectors)), "get")
        by_pid = {str(p.id): p for p in stored}
        dense_name = self.backend.layout.dense
        out = []
        for doc_id in id_list:
            points = [by_pid[p] for p in candidates[doc_id] if p in by_pid]
            owned = [p for p in points if doc_id_of(p.id, p.payload) == doc_id]  # never another's point
            if owned:
                vector = owned[0].vector if with_vectors else None
                out.append(record_of(owned[0].id, owned[0].payload, vector, dense_name))
        return out

    def _fallback_points_steps(self, ids: Iterable[str]) -> Steps[list[str]]:
        """The fallback points (:func:`~rrf_retriever.stores.qdrant.points.fallback_point_id`) of ``ids`` that
        these documents own."""
        fallback = [p for p in map(fallback_point_id, ids) if p]
        if not fallback:
            return []
        points = yield Op(self.backend.retrieve, (fallback, False), "get")
        return [str(p.id) for p in points if doc_id_of(p.id, p.payload) == str(p.id)]

    def _count_steps(self) -> Steps[int]:
        if not (yield from self._ready_steps()):
            return 0
        return int((yield Op(self.backend.count, (), "count")))

    def _nearest_steps(self, request: SearchRequest) -> Steps[list[Hit]]:
        """The dense search (dense and joint stores) of a validated request: the ``limit`` nearest documents the
        scope allows. The scope is compiled now, by the caller, before the steps run under the store's lock."""
        return self._nearest_query_steps(request.vector, request.limit, self._compile_scope(request.scope))

    def _nearest_query_steps(
        self, vector: Sequence[float] | None, limit: int, scope: PreparedScope
    ) -> Steps[list[Hit]]:
        ready = yield from self._ready_steps()
        query = [] if vector is None else list(vector)  # finite floats: its door or the engine's embedding checked
        if self._dimension is not None and len(query) != self._dimension:
            msg = f"the query vector has dimension {len(query)}, the collection {self._dimension}"
            raise DimensionMismatchError(msg)
        if limit == 0 or not ready:
            return []
        query_filter = yield from self._scope_steps(scope)
        if query_filter is NOTHING:
            return []  # e.g. an empty any-of: nothing can match
        return (yield from self._top_steps(DenseQuery(query, limit, query_filter), limit))

    def _top_steps(self, query: Query, limit: int, *, positive: bool = False) -> Steps[list[Hit]]:
        """The engine's best ``limit`` hits for ``query``, equal scores ordered by id, the cut at ``limit`` too.

        The engine orders a tie by its internal ids (which differ between builds of the same corpus), so ask for
        half as many again as kept, and twice as many while the last one fetched still ties the ``limit``-th: then
        the kept ones are the smallest ids of a tie at the cut. The work is bounded: past ``8 * limit + 64`` points
        (a tie wider than that at the cut: short texts and short queries) the rest of the tie is cut in the
        engine's order. ``positive``: drop hits of score 0 (a keyword leg's non-matches).
        """
        fetch = limit + limit // 2 + 1  # a margin: a tie at the cut usually fits in it, so one engine call
        while True:
            points = yield Op(self.backend.search, (replace(query, limit=fetch),), "search")
            scored = [p for p in points if not positive or p.score > 0]  # the engine's order: best score first
            tie_at_cut = len(scored) > limit and scored[-1].score == scored[limit - 1].score
            bound = min(8 * limit + 64, MAX_LIMIT)
            if len(points) < fetch or not tie_at_cut or fetch >= bound:
                break
            fetch = min(fetch * 2, bound)
        if len(scored) > limit:  # only the points down to the cut's score are read (a tie at the cut included)
            cut = scored[limit - 1].score
            scored = [p for p in scored if p.score >= cut]
        hits = [hit_of(p.id, p.payload, p.score) for p in scored]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:limit]

    def _ids_matching_steps(self, filter: FilterSpec | FilterNode | None, limit: int | None) -> Steps[list[str]]:
        """:meth:`ids_matching`'s steps, the filter compiled now (before the steps run under the store's lock)."""
        scope = self._prepare_scope(normalize_filter(filter), None)
        if limit is not None:
            limit = check_limit(limit)  # as the other stores
        return self._ids_matching_query_steps(scope, limit)

    def _ids_matching_query_steps(self, scope: PreparedScope, limit: int | None) -> Steps[list[str]]:
        if limit == 0 or not (yield from self._ready_steps()):
            return []
        query_filter = yield from self._scope_steps(scope)
        if query_filter is NOTHING:
            return []
        ids: set[str] = set()
        offset = None
        while True:
            points, offset = yield Op(self.backend.scroll, (offset, SCROLL_PAGE, query_filter, True), "scroll")
            ids.update(doc_id_of(p.id, p.payload) for p in points)
            if offset is None:
                break
        return sorted(ids)[:limit]

    def _some_ids_steps(self, limit: int) -> Steps[list[str]]:
        if not (yield from self._ready_steps()):
            return []
        ids: dict[str, None] = {}  # in scroll order, each document once (a document of several points)
        offset = None
        while len(ids) < limit:
            points, offset = yield Op(self.backend.scroll, (offset, min(SCROLL_PAGE, limit), None, True), "scroll")
            ids.update(dict.fromkeys(doc_id_of(p.id, p.payload) for p in points))
            if offset is None:
                break
        return list(ids)[:limit]

    # -- the scope of a call -----------------------------------------------------------------------------
    def _prepare_scope(self, filter: FilterSpec | FilterNode | None, exclude_ids: ExcludeIds) -> PreparedScope:
        """Validate a call's scope and compile its filter, with no lock held (the compile makes no engine call;
        its work is bounded by the filter's size, :func:`~rrf_retriever.stores.qdrant.filters.compile_filter`).
        The filter's shape follows the payload indexes the call will have built (an index another call builds
        meanwhile changes its speed only: every shape is exact).

        Raises:
            InvalidFilterError: a malformed filter, or one too costly to compile exactly.
        """
        return self._compile_scope(normalize_scope(filter, exclude_ids))

    def _compile_scope(self, scope: Scope) -> PreparedScope:
        """:meth:`_prepare_scope` of a validated scope (a search request's): compiled, not parsed again."""
        flt, excluded = scope
        backend = self.backend
        compiled = compile_filter(flt, backend, self.indexes.flat_limits(flt, backend.indexes_payload))
        return PreparedScope(flt, excluded, compiled)

    def _scope_steps(self, scope: PreparedScope) -> Steps[Any]:
        """The filter a call sends for its prepared scope: None when unscoped, :data:`~rrf_retriever.stores.
        qdrant.filters.NOTHING` when no document can match (the call is not sent). Indexes what the filter needs
        first (engines that use payload indexes)."""
        backend = self.backend
        compiled = scope.compiled
        if compiled is RESOLVE and scope.filter is not None:  # date ranges, substrings: their points first
            resolved = yield from resolve_steps(backend, scope.filter)
            flat = self.indexes.flat_limits(scope.filter, backend.indexes_payload)
            compiled = compile_filter(scope.filter, backend, flat, resolved=resolved)
        if compiled is False:
            return NOTHING
        if scope.filter is not None and backend.indexes_payload:
            yield from self.indexes.query_steps(backend, scope.filter)
        excluded_pids = yield from self._excluded_pids_steps(scope.excluded)
        must_not = [backend.has_ids(excluded_pids)] if excluded_pids else None
        if compiled is True:
            return backend.filter(must_not=must_not) if must_not else None
        return backend.filter(must=[compiled], must_not=must_not)

    def _excluded_pids_steps(self, excluded: frozenset[str]) -> Steps[frozenset[str]]:
        """The point ids of excluded documents (their fallback points included)."""
        if not excluded:
            return frozenset()
        fallback = yield from self._fallback_points_steps(sorted(excluded))
        return frozenset(point_id(i) for i in excluded) | frozenset(fallback)
