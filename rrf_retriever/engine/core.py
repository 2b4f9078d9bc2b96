"""The framework-neutral hybrid engine: legs, settings, concurrency, fusion, result stages, writes.

No LangChain, no LlamaIndex, no SQL, no Qdrant models here: the engine talks to stores through the protocols of
:mod:`rrf_retriever.stores.base` (wrapped as :mod:`~rrf_retriever.engine.legs`).

Flow of one query:

1. Take the call's options (:class:`~rrf_retriever.engine.options.SearchOptions`, validated once when built) and the
   settings snapshot (immutable; ``update_settings`` swaps it atomically, no lock on the query path).
2. Plan the legs (:func:`~rrf_retriever.engine.query.prepare`): a leg whose weight is 0 is not called at all (the
   zero-weight guard); a keyword leg whose query has no surviving term sits out.
3. Run them (:mod:`~rrf_retriever.engine.run`): the non-dense legs start, the query is embedded ONCE per model (only
   if a dense leg is active), the dense legs start; threads in :meth:`HybridEngine.search`, asyncio in
   :meth:`HybridEngine.asearch`. Each leg asks its store for ``fetch_k`` hits (default ``max(2 * top_k, 40)``) with
   the filter and the exclusions applied inside the store, before its top-k.
4. Finish (:func:`~rrf_retriever.engine.query.finish`, shared by both): a failed embedding empties the dense legs; a
   leg that raises or passes ``leg_timeout`` is dropped (``on_error="degrade"``) or re-raised (``"raise"``); only
   when every active leg failed does the query fail. Fuse, then run the result stages in their declared order
   (:data:`~rrf_retriever.engine.stages.STAGES`).

Writes go through the :class:`~rrf_retriever.engine.writes.WriteUnit`: all writable legs or none. A write that
builds or doubles the corpus measures the legs on it (:mod:`~rrf_retriever.engine.leg_probe`).

Example:
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> engine = HybridEngine({"keyword": FTS5KeywordStore()})
    >>> engine.add(["a"], ["hybrid search with rrf"])
    ['a']
    >>> engine.search("rrf").ids, engine.search("rrf", top_k=1, exclude_ids=["a"]).ids
    (['a'], [])
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from rrf_retriever.engine.background import BackgroundCache
from rrf_retriever.engine.handle import SharedHandle
from rrf_retriever.engine.journal import Journal, open_journal
from rrf_retriever.engine.leg_probe import LegProbe
from rrf_retriever.engine.legs import Leg, StoreLeg, Vectors, as_leg
from rrf_retriever.engine.options import SearchOptions, as_options
from rrf_retriever.engine.paths import main_dense_leg
from rrf_retriever.engine.query import Query, empty_result, finish, prepare
from rrf_retriever.engine.run import HeadStart, run_in_tasks, run_in_threads
from rrf_retriever.engine.settings import DEFAULT_LEG_WEIGHTS, OnError, RetrievalSettings, check_known_sources
from rrf_retriever.engine.stages import Expand, NeighbourExpansion
from rrf_retriever.engine.writes import WriteUnit
from rrf_retriever.errors import (
    EngineClosedError,
    InvalidArgumentError,
    InvalidFilterError,
    InvalidTypeError,
)
from rrf_retriever.fusion import DEFAULT_RRF_K
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import FilterSpec, NormalizedFilter
from rrf_retriever.stores.base import VectorSource
from rrf_retriever.types import Record, SearchResult
from rrf_retriever.validate import WEIGHTS_ARE, check_ids, check_mapping

__all__ = ["HybridEngine"]

logger = logging.getLogger("rrf_retriever")


class HybridEngine(SharedHandle):
    """Weighted-RRF hybrid search over any number of sources, framework-neutral. A copy shares it (:mod:`.handle`).

    Args:
        sources: ``{name: store or Leg}``; a store with an ``embedding`` attribute is a dense leg.
        weights: ``{name: weight}``; a source not named weighs :data:`DEFAULT_LEG_WEIGHTS` of its kind (keyword
            stores 1.25, others 1.0).
        rrf_k: The RRF constant (default :data:`~rrf_retriever.fusion.DEFAULT_RRF_K`, 60).
        top_k: Results per query (default 10).
        fetch_k: Hits per leg (default ``max(2 * top_k, 40)``).
        leg_timeout: Seconds each leg (and the query embedding) may take; None = no limit.
        on_error: ``"degrade"`` (default) or ``"raise"``.
        fusion: ``"rrf"`` (default), ``"relative_score"``, ``"dbsf"`` or ``"calibrated"``.
        expand: Optional 1-hop expansion: a callable ``FusedHit -> [neighbour ids]``.
        links_key: Optional metadata key holding neighbour ids (used when ``expand`` is None).
        expand_limit: At most this many neighbours (default ``top_k``); they take the last slots of the page, so a
            result never exceeds ``top_k`` (:func:`~rrf_retriever.engine.stages.fit_expansion`); a setting
            (``update_settings(expand_limit=...)``) and a search argument too.
        journal: Optional write-ahead journal (a file path or a :class:`~rrf_retriever.engine.journal.Journal`):
            every write is recorded before it reaches the stores, and a write interrupted by a crash is redone in
            every store when the engine is built again (:meth:`recover`). None (default): no journal.
        head_start: The head start the other legs get before a leg whose store holds the GIL starts
            (:class:`~rrf_retriever.engine.run.HeadStart`; ``HeadStart.OFF`` switches it off).

    Example:
        >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
        >>> HybridEngine({"keyword": FTS5KeywordStore()}, top_k=3).settings.top_k
        3
    """

    def __init__(
        self,
        sources: Mapping[str, Any],
        weights: Mapping[str, float] | None = None,
        *,
        rrf_k: float = DEFAULT_RRF_K,
        top_k: int = 10,
        fetch_k: int | None = None,
        leg_timeout: float | None = None,
        on_error: OnError = "degrade",
        fusion: str = "rrf",
        expand: Expand | None = None,
        links_key: str | None = None,
        expand_limit: int | None = None,
        journal: str | os.PathLike[str] | Journal | None = None,
        head_start: HeadStart = HeadStart(),
    ) -> None:
        if not isinstance(sources, Mapping) or not sources:
            msg = "sources must be a non-empty mapping of source name to store or leg"
            raise InvalidArgumentError(msg)
        for name in sources:
            if not isinstance(name, str) or not name:
                msg = f"source names must be non-empty strings, got {name!r}"
                raise InvalidTypeError(msg)
        self._legs: dict[str, Leg] = {name: as_leg(name, src) for name, src in sources.items()}
        weights = dict(check_mapping(weights or {}, "weights", WEIGHTS_ARE))
        check_known_sources(self._legs, weights)
        self._settings = RetrievalSettings(
            weights={n: weights.get(n, DEFAULT_LEG_WEIGHTS.get(leg.kind, 1.0)) for n, leg in self._legs.items()},
            rrf_k=rrf_k,
            top_k=top_k,
            fetch_k=fetch_k,
            leg_timeout=leg_timeout,
            on_error=on_error,
            fusion=fusion,
            expand_limit=expand_limit,
        )
        self._expansion = None if expand is None and links_key is None else NeighbourExpansion(expand, links_key)
        if not isinstance(head_start, HeadStart):
            msg = f"head_start must be a HeadStart, not {type(head_start).__name__}"
            raise InvalidTypeError(msg)
        self._head_start = head_start
        self._settings_lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._pool_lock, self._closed = threading.Lock(), False
        # the opener: a forked child shares its SQLite connections, Qdrant handles, locks (using them there hangs)
        self._pid = os.getpid()
        self._writes = WriteUnit(self._legs, open_journal(journal), links_key=links_key or "links")
        self._background = BackgroundCache(self._legs, lambda: self._writes.changes)
        self._probe = LegProbe(self._legs, self._lookup)
        if self._writes.journal is not None:
            self.recover()

    # -- introspection and settings -----------------------------------------------------------------------

    @property
    def legs(self) -> Mapping[str, Leg]:
        """The legs by source name (read-only view)."""
        return MappingProxyType(self._legs)

    @property
    def settings(self) -> RetrievalSettings:
        """The current immutable settings snapshot."""
        return self._settings

    def _check_open(self) -> None:
        if os.getpid() != self._pid:
            msg = (f"this engine was opened in process {self._pid} and cannot be used in process {os.getpid()}, "
                   "forked from it: its SQLite connections, Qdrant handles and locks belong to the parent. Open the "
                   "index in the child instead (gunicorn: no --preload, or open it in a post_fork hook)")
            raise EngineClosedError(msg)
        if self._closed:
            msg = "this engine is closed; open the index again to use it"
            raise EngineClosedError(msg)

    @property
    def leg_probe(self) -> LegProbe:
        """The legs measured on this corpus (:mod:`~.leg_probe`): ``measured``, ``explain``."""
        return self._probe

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def update_settings(self, **changes: Any) -> RetrievalSettings:
        """Validate ``changes`` and swap the settings snapshot atomically; the next query uses it.

        Accepts the :class:`RetrievalSettings` fields; ``weights`` merges into the current weights. An invalid
        change raises and leaves the settings as they were.

        Example:
            >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
            >>> HybridEngine({"keyword": FTS5KeywordStore()}).update_settings(top_k=5).top_k
            5
        """
        self._check_open()
        allowed = RetrievalSettings.field_names()
        unknown = sorted(set(changes) - allowed)
        if unknown:
            msg = f"unknown setting(s) {unknown}; settable: {sorted(allowed)}"
            raise InvalidArgumentError(msg)
        # Writers are serialised so two concurrent updates of different fields both land; readers take no lock:
        # they read one reference, the snapshot, and keep it for the whole query.
        with self._settings_lock:
            current = self._settings
            if "weights" in changes:  # a new dense path's weight may come with the path, in the same update
                base = replace(current, dense_paths=changes["dense_paths"]) if "dense_paths" in changes else current
                changes["weights"] = base.with_weights(changes["weights"])
            new = replace(current, **changes)  # __post_init__ validates
            self._settings = new  # one reference assignment: atomic for readers
        logger.debug("rrf_retriever settings updated: %s", new.to_dict())
        return new

    # -- read path ----------------------------------------------------------------------------------------

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            with self._pool_lock:
                self._check_open()
                if self._pool is None:
                    workers = max(4, 2 * len(self._legs) + 2)
                    self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="rrf-leg")
        return self._pool

    def close(self) -> None:
        """Release everything: the worker threads, every store (files, locks, clients) and the journal.

        A write in progress finishes first; a query in progress finishes or raises
        :class:`~rrf_retriever.errors.EngineClosedError`, as does every later call. Idempotent. In a process forked
        after the engine was opened it only marks the engine closed: the stores belong to the parent.
        """
        with self._pool_lock:
            if self._closed:
                return
            self._closed = True
            pool, self._pool = self._pool, None
        if os.getpid() != self._pid:
            return
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        with self._writes.lock:  # a write in progress completes (or rolls back) before its stores close
            for leg in self._legs.values():
                leg.close()
            if self._writes.journal is not None:
                self._writes.journal.close()

    def _finish(self, q: Query, outcomes: Any, embedded: Any) -> SearchResult:
        expansion, lookup = self._expansion, self._lookup
        expand = None if expansion is None else (
            lambda hits, q: expansion.neighbours(hits, q.top_k, q.flt, q.excl, lookup, q.options.expand_limit))
        return finish(q, outcomes, embedded, expand, lookup, self._vectors, self._background, self._probe.reasons())

    def _vectors(self, ids: list[str]) -> Mapping[str, Sequence[float]]:
        """Stored dense vectors by id (diversity): the :func:`main_dense_leg` store's, if a ``VectorSource``."""
        try:
            leg = self._legs[main_dense_leg(self._legs)]
        except InvalidArgumentError:
            return {}
        if isinstance(leg, StoreLeg) and isinstance(leg.store, VectorSource):
            return leg.store.get_vectors(ids)
        return {}

    def search(self, query: str, options: SearchOptions | None = None, **kwargs: Any) -> SearchResult:
        """Run a hybrid query (legs concurrently in threads) and fuse the results.

        Args:
            query: The user's text. An empty or blank query returns no hits.
            options: The search options (:class:`~rrf_retriever.engine.options.SearchOptions`); None: the defaults.
            **kwargs: Options by name (the fields of ``SearchOptions``; ``k`` is ``top_k``), over ``options``.

        Returns:
            :class:`~rrf_retriever.types.SearchResult` with the fused hits and the trace.

        Raises:
            InvalidTypeError / InvalidArgumentError: bad arguments (the message names the field).
            AllLegsFailedError: every active leg failed (with ``on_error="degrade"``).
        """
        self._check_open()
        q = prepare(self._legs, self._settings, query, as_options(options, **kwargs))
        if not q.active:
            return empty_result(q)
        try:
            outcomes, embedded = run_in_threads(q, self._executor(), self._head_start)
        except RuntimeError as exc:  # the pool was shut down by a close() racing this query
            if self._closed:
                raise EngineClosedError(str(exc)) from exc
            raise
        if self._closed:  # its legs may have been cut short by close(): not a degraded answer, a closed engine
            msg = "the engine was closed during this query"
            raise EngineClosedError(msg)
        return self._finish(q, outcomes, embedded)

    async def asearch(self, query: str, options: SearchOptions | None = None, **kwargs: Any) -> SearchResult:
        """Async twin of :meth:`search`: the legs run concurrently as asyncio tasks."""
        self._check_open()
        q = prepare(self._legs, self._settings, query, as_options(options, **kwargs))
        if not q.active:
            return empty_result(q)
        outcomes, embedded = await run_in_tasks(q, self._head_start)
        if self._closed:
            msg = "the engine was closed during this query"
            raise EngineClosedError(msg)
        if q.options.reranker is not None or q.options.diversity is not None:
            import asyncio  # a reranker (a model) or the vector reads must not block the event loop

            return await asyncio.to_thread(self._finish, q, outcomes, embedded)
        return self._finish(q, outcomes, embedded)

    def _lookup(self, ids: list[str]) -> list[Record]:
        legs = self._writes.legs
        return legs[0][1].get(ids) if legs else []

    def get(self, ids: Sequence[str]) -> list[Record]:
        """Stored documents by id (from the first writable store), in the order asked; missing ids skipped."""
        self._check_open()
        id_list = check_ids(ids)
        records = {r.id: r for r in self._lookup(id_list)}
        return [records[i] for i in id_list if i in records]

    def get_where(self, filter: FilterSpec | NormalizedFilter | None, *, limit: int) -> list[Record]:
        """Stored documents matching ``filter`` (None: all), sorted by id, the first ``limit`` (``WriteUnit``'s)."""
        self._check_open()
        return self._writes.records_matching(normalize_filter(filter), limit)

    # -- write path ---------------------------------------------------------------------------------------

    @property
    def journal(self) -> Journal | None:
        """The write-ahead journal, or None."""
        return self._writes.journal

    def count(self) -> dict[str, int]:
        """Documents per writable store, by source name."""
        self._check_open()
        return self._writes.count()

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        *, vectors: Vectors | None = None, chunk_size: int | None = None,
    ) -> list[str]:
        """Upsert documents into every store with the same ids; all or nothing across stores, per chunk of 10,000
        (or of ``chunk_size``, when smaller: LangChain's ``batch_size``).

        Texts are embedded once per distinct embedding model BEFORE anything of their chunk is written;
        ``vectors``, one per text embedded by the caller (a LlamaIndex ``embed_model``; lists or a 2-D array), go to
        every dense store instead. If one store fails, the stores already written are rolled back to their previous
        content (new ids deleted, replaced documents restored), so no document is ever in one leg only. A larger
        batch is validated whole, then written chunk by chunk (:class:`~rrf_retriever.engine.writes.WriteUnit`).

        Returns:
            The ids written.

        Raises:
            InvalidArgumentError / InvalidTypeError: a bad batch (nothing written).
            EmbeddingError: the embedding model failed (nothing of that chunk written).
            StoreError: a store failed; the others were rolled back (that chunk: earlier chunks stay written).
        """
        with self._writes.lock:
            self._check_open()
            written = self._writes.add(ids, texts, metadatas, vectors, chunk_size)
        if self._settings.weak_legs:  # built, or doubled since the legs were measured: measured (again)
            self._probe.after_write(len(written), lambda: min(self.count().values(), default=0))
        return written

    def delete(self, ids: Sequence[str]) -> None:
        """Delete ids from every store; if one store fails the others get the documents back."""
        with self._writes.lock:
            self._check_open()
            self._writes.delete(ids)

    async def aadd(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        *, vectors: Vectors | None = None, chunk_size: int | None = None,
    ) -> list[str]:
        """Async twin of :meth:`add` (runs in a worker thread: writes are serialised anyway)."""
        import asyncio

        return await asyncio.to_thread(self.add, ids, texts, metadatas, vectors=vectors, chunk_size=chunk_size)

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`delete`."""
        import asyncio

        await asyncio.to_thread(self.delete, ids)

    def delete_where(self, filter: FilterSpec | NormalizedFilter) -> int:
        """Delete every document whose metadata matches ``filter`` from every store; all or none, like :meth:`delete`.

        The matching ids are collected from EVERY writable store and united, so a document present in only some
        stores is removed too; they are then deleted through :meth:`delete` (same rollback, same journal). Other
        writes wait meanwhile, so a document added concurrently is either matched and deleted or left whole.

        Args:
            filter: A metadata filter in the search's language, e.g. ``{"ref_doc_id": "doc-7"}``. An empty filter
                is refused: it would delete every document.

        Returns:
            The number of documents deleted (0 when none matches).

        Raises:
            InvalidFilterError: a malformed or empty filter (nothing deleted).
            StoreError: a store cannot list its documents by filter, or a delete failed (the others rolled back).

        Example:
            >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
            >>> engine = HybridEngine({"keyword": FTS5KeywordStore()})
            >>> engine.add(["c1", "c2", "x"], ["a", "b", "c"], [{"ref_doc_id": "d"}, {"ref_doc_id": "d"}, {}])
            ['c1', 'c2', 'x']
            >>> engine.delete_where({"ref_doc_id": "d"}), engine.count()
            (2, {'keyword': 1})
        """
        flt = normalize_filter(filter)
        if flt is None:
            msg = "delete_where needs a non-empty filter: an empty one would delete every document"
            raise InvalidFilterError(msg)
        with self._writes.lock:
            self._check_open()
            found = self._writes.ids_matching(flt)
            if found:
                self._writes.delete(found)
            return len(found)

    async def adelete_where(self, filter: FilterSpec | NormalizedFilter) -> int:
        """Async twin of :meth:`delete_where`."""
        import asyncio

        return await asyncio.to_thread(self.delete_where, filter)

    def recover(self) -> int:
        """Redo every write the journal holds as pending (interrupted by a crash) in every writable store.

        Store writes are idempotent (upsert or delete by id), so a batch that had partly reached the stores is
        simply completed. Called by the constructor when a journal is given; safe to call again.

        Returns:
            The number of batches redone (0 without a journal).
        """
        with self._writes.lock:
            self._check_open()
            return self._writes.recover()
