"""The framework-neutral hybrid engine: legs, headroom, scope, concurrency, fusion, trace.

No LangChain, no LlamaIndex, no SQL, no Qdrant models here: the engine talks to stores through the protocols of
:mod:`rrf_retriever.stores.base` and to anything else through :class:`Leg`. It imports in milliseconds.

Flow of one query (DESIGN section 7):

1. Take the settings snapshot (immutable; ``update_settings`` swaps it atomically, no lock on the query path).
2. Plan the legs: a leg whose weight is 0 is not called at all (the zero-weight guard); a keyword leg whose
   query has no surviving term sits out.
3. Start the non-dense legs, embed the query ONCE per distinct embedding model (only if a dense leg is
   active), then start the dense legs: threads in :meth:`HybridEngine.search`, asyncio in
   :meth:`HybridEngine.asearch`. Each leg asks its store for ``fetch_k`` hits (default ``2 * top_k``) with the
   filter and the exclusions applied inside the store, before its top-k.
4. Degrade, don't crash: a failed embedding empties the dense legs; a leg that raises or passes
   ``leg_timeout`` is dropped from this query (``on_error="degrade"``) or re-raised (``"raise"``). Only when every
   active leg failed does the query fail (:class:`~rrf_retriever.errors.AllLegsFailedError`).
5. Fuse with weighted RRF (or another method of :mod:`rrf_retriever.fusion`), keep ``top_k``, optionally add
   1-hop neighbours, and return the hits with a :class:`~rrf_retriever.types.Trace`.

Example:
    >>> from rrf_retriever.stores.fts5 import FTS5KeywordStore  # doctest: +SKIP
    >>> engine = HybridEngine({"keyword": FTS5KeywordStore()})  # doctest: +SKIP
    >>> engine.add(["a"], ["hybrid search with rrf"])  # doctest: +SKIP
    >>> engine.search("rrf").ids  # doctest: +SKIP
    ['a']
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from rrf_retriever.engine.journal import Journal, open_journal
from rrf_retriever.errors import (
    AllLegsFailedError,
    EmbeddingError,
    InvalidArgumentError,
    InvalidTypeError,
    RRFRetrieverError,
    StoreError,
)
from rrf_retriever.fusion import (
    distribution_based_score_fusion,
    relative_score_fusion,
    validate_weights,
    weighted_rrf,
)
from rrf_retriever.stores.base import normalize_scope, validate_batch
from rrf_retriever.types import (
    FilterSpec,
    FusedHit,
    Hit,
    LegTrace,
    NormalizedFilter,
    Record,
    SearchResult,
    Trace,
    check_int,
    check_number,
    check_str,
    matches_filter,
)

__all__ = [
    "DEFAULT_HYBRID_RRF_K",
    "DEFAULT_LEG_WEIGHTS",
    "MAX_TOP_K",
    "DenseLeg",
    "FunctionLeg",
    "HybridEngine",
    "KeywordLeg",
    "Leg",
    "RetrievalSettings",
    "SearchResult",
    "check_query",
    "check_top_k",
]

logger = logging.getLogger("rrf_retriever")

#: The largest ``top_k`` accepted; a bigger one is a caller's mistake (``top_k=10**9``), not a request.
MAX_TOP_K = 10_000
#: The engine's RRF constant unless told otherwise. 2, not the textbook 60: chosen with the keyword weight and the
#: FTS5 title field on SciFact TRAIN (benchmarks/bench_sweep.py, one-standard-error rule), then reported on the
#: test splits of SciFact and ArguAna (benchmarks/RESULTS.md). ``rrf_k=60`` is one argument away.
DEFAULT_HYBRID_RRF_K = 2.0
#: Default weight of a leg by its kind (a kind not listed weighs 1.0); chosen in the same sweep.
DEFAULT_LEG_WEIGHTS: Mapping[str, float] = MappingProxyType({"dense": 1.0, "keyword": 1.25})
# A leg whose store holds the GIL while it searches (qdrant-edge) stalls the other legs' threads, even those that
# release it in C (SQLite), if it starts before they reach their C code: it starts this long after they were
# called (sooner if they finish). Measured in benchmarks/bench_hybrid_speed.py ("head start").
_GIL_HEADSTART_S = 0.001
# Bound on waiting for a pool thread to pick the other legs up: when every worker is busy (many concurrent
# queries) they are queued, the head start cannot help, and the GIL-holding leg should not wait longer.
_LEG_START_WAIT_S = 0.005
FUSIONS: dict[str, Callable[..., list[FusedHit]]] = {
    "rrf": weighted_rrf,
    "relative_score": relative_score_fusion,
    "dbsf": distribution_based_score_fusion,
}
OnError = Literal["degrade", "raise"]


# ---- validation helpers ---------------------------------------------------------------------------------


def check_query(query: object) -> str:
    """A query must be a ``str`` (bytes, None and numbers are refused with our TypeError).

    Example:
        >>> check_query("hello")
        'hello'
    """
    return check_str(query, "query")


def check_top_k(top_k: object, name: str = "top_k") -> int:
    """``top_k`` (or ``fetch_k``) must be an integer from 1 to :data:`MAX_TOP_K`.

    Example:
        >>> check_top_k(4)
        4
    """
    return check_int(top_k, name, 1, MAX_TOP_K)


# ---- settings -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalSettings:
    """An immutable, validated snapshot of everything a query reads.

    Attributes:
        weights: ``{source: weight >= 0}``; every source of the engine has one.
        rrf_k: The RRF constant (default :data:`DEFAULT_HYBRID_RRF_K`, 2).
        top_k: How many fused results to return (default 10).
        fetch_k: How many hits each leg fetches; None means ``2 * top_k`` (headroom for fusion).
        leg_timeout: Seconds a leg (and the query embedding) may take; None waits forever.
        on_error: ``"degrade"`` drops a failing leg from the query; ``"raise"`` re-raises its error.
        fusion: ``"rrf"`` (default), ``"relative_score"`` or ``"dbsf"``.

    Example:
        >>> s = RetrievalSettings(weights={"dense": 1.0, "keyword": 0.5})
        >>> s.effective_fetch_k(10)
        20
    """

    weights: Mapping[str, float]
    rrf_k: float = DEFAULT_HYBRID_RRF_K
    top_k: int = 10
    fetch_k: int | None = None
    leg_timeout: float | None = None
    on_error: OnError = "degrade"
    fusion: str = "rrf"

    def __post_init__(self) -> None:
        if not isinstance(self.weights, Mapping):
            msg = f"weights must be a mapping of source name to weight, not {type(self.weights).__name__}"
            raise InvalidTypeError(msg)
        checked = validate_weights(list(self.weights), self.weights)
        object.__setattr__(self, "weights", MappingProxyType(checked))
        object.__setattr__(self, "rrf_k", check_number(self.rrf_k, "rrf_k"))
        check_top_k(self.top_k)
        if self.fetch_k is not None:
            check_top_k(self.fetch_k, "fetch_k")
        if self.leg_timeout is not None:
            timeout = check_number(self.leg_timeout, "leg_timeout", allow_zero=False)
            object.__setattr__(self, "leg_timeout", timeout)
        if self.on_error not in ("degrade", "raise"):
            msg = f"on_error must be 'degrade' or 'raise', got {self.on_error!r}"
            raise InvalidArgumentError(msg)
        if self.fusion not in FUSIONS:
            msg = f"fusion must be one of {sorted(FUSIONS)}, got {self.fusion!r}"
            raise InvalidArgumentError(msg)

    def effective_fetch_k(self, top_k: int) -> int:
        """Hits per leg for a query that asks ``top_k``: ``fetch_k`` if set (never below ``top_k``), else 2x."""
        if self.fetch_k is None:
            return min(2 * top_k, MAX_TOP_K)
        return max(self.fetch_k, top_k)

    def with_weights(self, weights: Mapping[str, float] | None) -> dict[str, float]:
        """The snapshot's weights overridden by per-call ``weights`` (validated; unknown sources refused)."""
        if weights is None:
            return dict(self.weights)
        if not isinstance(weights, Mapping):
            msg = f"weights must be a mapping of source name to weight, not {type(weights).__name__}"
            raise InvalidTypeError(msg)
        return validate_weights(list(self.weights), {**self.weights, **weights})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (for the settings service and logs)."""
        return {
            "weights": dict(self.weights),
            "rrf_k": self.rrf_k,
            "top_k": self.top_k,
            "fetch_k": self.fetch_k,
            "leg_timeout": self.leg_timeout,
            "on_error": self.on_error,
            "fusion": self.fusion,
        }


class _Entered:
    """When a leg's thread called its store (see ``HybridEngine._head_start``)."""

    __slots__ = ("at", "event")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.at = 0.0

    def mark(self) -> None:
        self.at = time.perf_counter()
        self.event.set()


# ---- legs -----------------------------------------------------------------------------------------------


class Leg:
    """One ranked source of a hybrid query. Subclasses implement :meth:`search` (and may override ``asearch``).

    ``kind`` is ``"dense"`` (needs the query vector), ``"keyword"`` or ``"retriever"``.
    """

    kind: str = "retriever"
    #: Writes (add/delete) reach this leg's store; False for read-only sources such as foreign retrievers.
    writable: bool = False

    def search(
        self, query: str, vector: Sequence[float] | None, limit: int, flt: NormalizedFilter | None,
        exclude_ids: frozenset[str],
    ) -> list[Hit]:
        raise NotImplementedError

    async def asearch(
        self, query: str, vector: Sequence[float] | None, limit: int, flt: NormalizedFilter | None,
        exclude_ids: frozenset[str],
    ) -> list[Hit]:
        import asyncio  # lazily, as everywhere here: only async callers (who have it loaded) pay its import

        return await asyncio.to_thread(self.search, query, vector, limit, flt, exclude_ids)

    def sits_out(self, query: str) -> str | None:
        """A reason not to call this leg for ``query`` (None: call it)."""
        return None

    @property
    def holds_gil(self) -> bool:
        """True if this leg's store keeps Python's GIL while it searches (declared by the store)."""
        return bool(getattr(getattr(self, "store", None), "holds_gil", False))


class KeywordLeg(Leg):
    """A :class:`~rrf_retriever.stores.base.KeywordStore` as a leg."""

    kind = "keyword"
    writable = True

    def __init__(self, store: Any) -> None:
        self.store = store

    def search(self, query, vector, limit, flt, exclude_ids):  # type: ignore[no-untyped-def]
        return self.store.search(query, limit, flt, exclude_ids)

    async def asearch(self, query, vector, limit, flt, exclude_ids):  # type: ignore[no-untyped-def]
        return await self.store.asearch(query, limit, flt, exclude_ids)

    def sits_out(self, query: str) -> str | None:
        analyzer = getattr(self.store, "analyzer", None)
        if analyzer is not None and not analyzer.terms(query):
            return "no keyword term survives analysis"
        return None


class DenseLeg(Leg):
    """A :class:`~rrf_retriever.stores.base.DenseStore` as a leg; its ``embedding`` embeds the query."""

    kind = "dense"
    writable = True

    def __init__(self, store: Any) -> None:
        self.store = store
        self.embedding = store.embedding

    def search(self, query, vector, limit, flt, exclude_ids):  # type: ignore[no-untyped-def]
        return self.store.search(vector, limit, flt, exclude_ids)

    async def asearch(self, query, vector, limit, flt, exclude_ids):  # type: ignore[no-untyped-def]
        return await self.store.asearch(vector, limit, flt, exclude_ids)


class FunctionLeg(Leg):
    """Any function ``(query, limit) -> list[Hit]`` as a read-only leg (used to wrap framework retrievers).

    A function cannot take our scope, so the filter and the exclusions are applied to what it returns (the
    leg may then give fewer than ``limit`` hits); metadata is matched with the same semantics as the stores.
    """

    kind = "retriever"

    def __init__(
        self,
        search: Callable[[str, int], list[Hit]],
        asearch: Callable[[str, int], Awaitable[list[Hit]]] | None = None,
    ) -> None:
        self._search = search
        self._asearch = asearch

    @staticmethod
    def _scoped(hits: Iterable[Hit], limit: int, flt: NormalizedFilter | None, excl: frozenset[str]) -> list[Hit]:
        return [h for h in hits if h.id not in excl and matches_filter(h.metadata, flt)][:limit]

    def search(self, query, vector, limit, flt, exclude_ids):  # type: ignore[no-untyped-def]
        return self._scoped(self._search(query, limit), limit, flt, exclude_ids)

    async def asearch(self, query, vector, limit, flt, exclude_ids):  # type: ignore[no-untyped-def]
        if self._asearch is None:
            return await super().asearch(query, vector, limit, flt, exclude_ids)
        return self._scoped(await self._asearch(query, limit), limit, flt, exclude_ids)


def as_leg(name: str, source: Any) -> Leg:
    """Turn a store (or a ready :class:`Leg`) into a leg: a store with an ``embedding`` is dense.

    Example:
        >>> as_leg("x", object())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidTypeError: source 'x' ...
    """
    if isinstance(source, Leg):
        return source
    if hasattr(source, "search") and hasattr(source, "embedding"):
        return DenseLeg(source)
    if hasattr(source, "search") and hasattr(source, "add"):
        return KeywordLeg(source)
    msg = (
        f"source {name!r} is a {type(source).__name__}: expected a keyword store, a dense store, a Leg, "
        "or (through EnsembleRRFRetriever) a LangChain or LlamaIndex retriever"
    )
    raise InvalidTypeError(msg)


# ---- the engine -----------------------------------------------------------------------------------------


@dataclass
class _Plan:
    """The legs to call for one query and the traces of those that sit out."""

    active: list[tuple[str, Leg]] = field(default_factory=list)
    idle: list[LegTrace] = field(default_factory=list)


@dataclass
class _LegOutcome:
    hits: list[Hit] | None
    latency_ms: float
    error: BaseException | None = None
    timed_out: bool = False


Expand = Callable[[FusedHit], Sequence[str]]


class HybridEngine:
    """Weighted-RRF hybrid search over any number of sources, framework-neutral.

    Args:
        sources: ``{name: store or Leg}``; a store with an ``embedding`` attribute is a dense leg.
        weights: ``{name: weight}``; a source not named weighs :data:`DEFAULT_LEG_WEIGHTS` of its kind (keyword
            stores 1.25, others 1.0).
        rrf_k: The RRF constant (default :data:`DEFAULT_HYBRID_RRF_K`, 2).
        top_k: Results per query (default 10).
        fetch_k: Hits per leg (default ``2 * top_k``).
        leg_timeout: Seconds each leg (and the query embedding) may take; None = no limit.
        on_error: ``"degrade"`` (default) or ``"raise"``.
        fusion: ``"rrf"`` (default), ``"relative_score"`` or ``"dbsf"``.
        expand: Optional 1-hop expansion: a callable ``FusedHit -> [neighbour ids]``.
        links_key: Optional metadata key holding neighbour ids (used when ``expand`` is None).
        expand_limit: At most this many neighbours are appended after the fused results (default ``top_k``).
        journal: Optional write-ahead journal (a file path or a :class:`~rrf_retriever.engine.journal.Journal`): every
            write is recorded before it reaches the stores, and a write interrupted by a crash is redone in
            every store when the engine is built again (:meth:`recover`). None (default): no journal.

    Example:
        >>> from rrf_retriever.stores.fts5 import FTS5KeywordStore  # doctest: +SKIP
        >>> engine = HybridEngine({"keyword": FTS5KeywordStore()}, top_k=3)  # doctest: +SKIP
    """

    def __init__(
        self,
        sources: Mapping[str, Any],
        weights: Mapping[str, float] | None = None,
        *,
        rrf_k: float = DEFAULT_HYBRID_RRF_K,
        top_k: int = 10,
        fetch_k: int | None = None,
        leg_timeout: float | None = None,
        on_error: OnError = "degrade",
        fusion: str = "rrf",
        expand: Expand | None = None,
        links_key: str | None = None,
        expand_limit: int | None = None,
        journal: str | os.PathLike[str] | Journal | None = None,
    ) -> None:
        if not isinstance(sources, Mapping) or not sources:
            msg = "sources must be a non-empty mapping of source name to store or leg"
            raise InvalidArgumentError(msg)
        for name in sources:
            if not isinstance(name, str) or not name:
                msg = f"source names must be non-empty strings, got {name!r}"
                raise InvalidTypeError(msg)
        self._legs: dict[str, Leg] = {name: as_leg(name, src) for name, src in sources.items()}
        if weights is not None and not isinstance(weights, Mapping):
            msg = f"weights must be a mapping of source name to weight, not {type(weights).__name__}"
            raise InvalidTypeError(msg)
        weights = dict(weights or {})
        unknown = sorted(set(weights) - set(self._legs))
        if unknown:
            msg = f"weights given for unknown source(s) {unknown}; the sources are {sorted(self._legs)}"
            raise InvalidArgumentError(msg)
        self._settings = RetrievalSettings(
            weights={n: weights.get(n, DEFAULT_LEG_WEIGHTS.get(leg.kind, 1.0)) for n, leg in self._legs.items()},
            rrf_k=rrf_k,
            top_k=top_k,
            fetch_k=fetch_k,
            leg_timeout=leg_timeout,
            on_error=on_error,
            fusion=fusion,
        )
        if expand is not None and not callable(expand):
            msg = "expand must be a callable FusedHit -> list of neighbour ids"
            raise InvalidTypeError(msg)
        self._expand = expand
        self._links_key = links_key
        self._expand_limit = None if expand_limit is None else check_top_k(expand_limit, "expand_limit")
        self._write_lock = threading.RLock()
        self._settings_lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._journal = open_journal(journal)
        if self._journal is not None:
            self.recover()

    # -- introspection ------------------------------------------------------------------------------------

    @property
    def legs(self) -> Mapping[str, Leg]:
        """The legs by source name (read-only view)."""
        return MappingProxyType(self._legs)

    @property
    def settings(self) -> RetrievalSettings:
        """The current immutable settings snapshot."""
        return self._settings

    def update_settings(self, **changes: Any) -> RetrievalSettings:
        """Validate ``changes`` and swap the settings snapshot atomically; the next query uses it.

        Accepts the :class:`RetrievalSettings` fields; ``weights`` merges into the current weights. An invalid
        change raises and leaves the settings as they were.

        Example:
            >>> engine.update_settings(weights={"keyword": 0.0}, top_k=5)  # doctest: +SKIP
        """
        allowed = {"weights", "rrf_k", "top_k", "fetch_k", "leg_timeout", "on_error", "fusion"}
        unknown = sorted(set(changes) - allowed)
        if unknown:
            msg = f"unknown setting(s) {unknown}; settable: {sorted(allowed)}"
            raise InvalidArgumentError(msg)
        # Writers are serialised so two concurrent updates of different fields both land; readers take no lock:
        # they read one reference, the snapshot, and keep it for the whole query.
        with self._settings_lock:
            current = self._settings
            if "weights" in changes:
                changes["weights"] = current.with_weights(changes["weights"])
            new = replace(current, **changes)  # __post_init__ validates
            self._settings = new  # one reference assignment: atomic for readers
        logger.debug("rrf_retriever settings updated: %s", new.to_dict())
        return new

    # -- read path ----------------------------------------------------------------------------------------

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    workers = max(4, 2 * len(self._legs) + 2)
                    self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="rrf-leg")
        return self._pool

    def close(self) -> None:
        """Release the worker threads (the engine stays usable: a new pool starts on the next query)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _prepare(
        self,
        query: object,
        top_k: int | None,
        filter: FilterSpec | None,
        exclude_ids: Iterable[str] | None,
        weights: Mapping[str, float] | None,
    ) -> tuple[str, RetrievalSettings, int, int, dict[str, float], NormalizedFilter | None, frozenset[str]]:
        settings = self._settings  # the snapshot this whole query uses
        query = check_query(query)
        top_k = settings.top_k if top_k is None else check_top_k(top_k)
        fetch_k = settings.effective_fetch_k(top_k)
        resolved = settings.with_weights(weights)
        flt, excl = normalize_scope(filter, exclude_ids)
        return query, settings, top_k, fetch_k, resolved, flt, excl

    def _plan(self, query: str, weights: Mapping[str, float]) -> _Plan:
        plan = _Plan()
        for name, leg in self._legs.items():
            weight = weights[name]
            if weight == 0.0:
                plan.idle.append(LegTrace(name, leg.kind, weight, called=False, note="weight 0"))
                continue
            reason = leg.sits_out(query)
            if reason is not None:
                plan.idle.append(LegTrace(name, leg.kind, weight, called=False, note=reason))
                continue
            plan.active.append((name, leg))
        return plan

    def _embeddings(self, plan: _Plan) -> list[Any]:
        """Distinct embedding models of the active dense legs (the query is embedded once per model)."""
        seen: dict[int, Any] = {}
        for _, leg in plan.active:
            if isinstance(leg, DenseLeg):
                seen.setdefault(id(leg.embedding), leg.embedding)
        return list(seen.values())

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> SearchResult:
        """Run a hybrid query (legs concurrently in threads) and fuse the results.

        Args:
            query: The user's text. An empty or blank query returns no hits.
            top_k: Results to return (default: the settings' ``top_k``).
            filter: ``{"session_id": [1, 2], "lang": "en"}``, applied inside every store before its top-k.
            exclude_ids: Ids never to return (removed inside every store before its top-k).
            weights: Per-call weights, merged over the settings' weights.

        Returns:
            :class:`~rrf_retriever.types.SearchResult` with the fused hits and the trace.

        Raises:
            InvalidTypeError / InvalidArgumentError: bad arguments (the message names the field).
            AllLegsFailedError: every active leg failed (with ``on_error="degrade"``).
        """
        started = time.perf_counter()
        query, settings, top_k, fetch_k, weights, flt, excl = self._prepare(query, top_k, filter, exclude_ids, weights)
        if not query.strip():
            return self._empty(settings, weights, top_k, fetch_k, started, "empty query")
        plan = self._plan(query, weights)
        pool = self._executor()
        timeout = settings.leg_timeout
        futures: dict[str, tuple[concurrent.futures.Future[list[Hit]], float]] = {}
        entered: list[_Entered] = []

        def submit(name: str, leg: Leg, vector: Sequence[float] | None) -> None:
            called = _Entered()
            entered.append(called)

            def call() -> list[Hit]:
                called.mark()
                return leg.search(query, vector, fetch_k, flt, excl)

            futures[name] = (pool.submit(call), time.perf_counter())

        for name, leg in plan.active:
            if not isinstance(leg, DenseLeg):
                submit(name, leg, None)
        vectors, embed_ms, embed_errors = self._embed_sync(plan, query, pool, timeout)
        ready = self._dense_ready(plan, vectors)
        if futures and any(leg.holds_gil for _, leg in ready):
            self._head_start([f for f, _ in futures.values()], entered)
        for name, leg in ready:
            submit(name, leg, vectors[id(leg.embedding)])
        outcomes: dict[str, _LegOutcome] = {}
        for name, (future, submitted) in futures.items():
            remaining = None if timeout is None else max(0.0, submitted + timeout - time.perf_counter())
            try:
                hits = future.result(timeout=remaining)
                outcomes[name] = _LegOutcome(hits, (time.perf_counter() - submitted) * 1000)
            except concurrent.futures.TimeoutError as exc:
                future.cancel()
                outcomes[name] = _LegOutcome(None, (time.perf_counter() - submitted) * 1000, exc, timed_out=True)
            except Exception as exc:
                outcomes[name] = _LegOutcome(None, (time.perf_counter() - submitted) * 1000, exc)
        return self._finish(plan, outcomes, embed_errors, embed_ms, settings, weights, top_k, fetch_k, flt, excl,
                            started)

    @staticmethod
    def _dense_ready(plan: _Plan, vectors: Mapping[int, Sequence[float]]) -> list[tuple[str, Leg]]:
        """The active dense legs whose query vector is there (a failed embedding leaves its legs out)."""
        return [(n, leg) for n, leg in plan.active if isinstance(leg, DenseLeg) and id(leg.embedding) in vectors]

    @staticmethod
    def _head_start(running: list[concurrent.futures.Future[list[Hit]]], entered: list[_Entered]) -> None:
        """Let the legs already submitted get into their stores before a GIL-holding leg starts.

        A store that keeps the GIL while it searches (qdrant-edge) stalls every other thread, even one that
        would release the GIL inside C (SQLite), until it is done: the legs would run one after the other.
        So it starts once the other legs have been called and have had ``_GIL_HEADSTART_S`` to reach their C
        code (less if they finish first); the wait for a leg to be called is bounded, never the request.
        """
        deadline = time.perf_counter() + _LEG_START_WAIT_S
        for leg in entered:
            leg.event.wait(max(0.0, deadline - time.perf_counter()))
        last_called = max((leg.at for leg in entered if leg.event.is_set()), default=time.perf_counter())
        remaining = _GIL_HEADSTART_S - (time.perf_counter() - last_called)
        if remaining > 0:
            concurrent.futures.wait(running, timeout=remaining)

    def _embed_sync(
        self, plan: _Plan, query: str, pool: concurrent.futures.ThreadPoolExecutor, timeout: float | None
    ) -> tuple[dict[int, Sequence[float]], float, dict[int, BaseException]]:
        vectors: dict[int, Sequence[float]] = {}
        errors: dict[int, BaseException] = {}
        embeddings = self._embeddings(plan)
        if not embeddings:
            return vectors, 0.0, errors
        t0 = time.perf_counter()
        pending = {id(e): pool.submit(e.embed_query, query) for e in embeddings}
        for key, future in pending.items():
            remaining = None if timeout is None else max(0.0, t0 + timeout - time.perf_counter())
            try:
                vectors[key] = future.result(timeout=remaining)
            except concurrent.futures.TimeoutError:
                future.cancel()
                errors[key] = EmbeddingError(f"query embedding timed out after {timeout} s")
            except Exception as exc:
                errors[key] = exc
        return vectors, (time.perf_counter() - t0) * 1000, errors

    async def asearch(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> SearchResult:
        """Async twin of :meth:`search`: the legs run concurrently as asyncio tasks."""
        import asyncio

        started = time.perf_counter()
        query, settings, top_k, fetch_k, weights, flt, excl = self._prepare(query, top_k, filter, exclude_ids, weights)
        if not query.strip():
            return self._empty(settings, weights, top_k, fetch_k, started, "empty query")
        plan = self._plan(query, weights)
        timeout = settings.leg_timeout

        async def run(leg: Leg, vector: Sequence[float] | None) -> _LegOutcome:
            t0 = time.perf_counter()
            try:
                hits = await asyncio.wait_for(leg.asearch(query, vector, fetch_k, flt, excl), timeout)
                return _LegOutcome(hits, (time.perf_counter() - t0) * 1000)
            except asyncio.TimeoutError as exc:
                return _LegOutcome(None, (time.perf_counter() - t0) * 1000, exc, timed_out=True)
            except Exception as exc:
                return _LegOutcome(None, (time.perf_counter() - t0) * 1000, exc)

        tasks: dict[str, asyncio.Task[_LegOutcome]] = {
            name: asyncio.ensure_future(run(leg, None)) for name, leg in plan.active if not isinstance(leg, DenseLeg)
        }
        vectors: dict[int, Sequence[float]] = {}
        embed_errors: dict[int, BaseException] = {}
        embeddings = self._embeddings(plan)
        t0 = time.perf_counter()
        if embeddings:

            async def embed(e: Any) -> Sequence[float]:
                aembed = getattr(e, "aembed_query", None)
                coro = aembed(query) if aembed is not None else asyncio.to_thread(e.embed_query, query)
                return await asyncio.wait_for(coro, timeout)

            results = await asyncio.gather(*(embed(e) for e in embeddings), return_exceptions=True)
            for e, result in zip(embeddings, results):
                if isinstance(result, BaseException):
                    if isinstance(result, asyncio.TimeoutError):
                        result = EmbeddingError(f"query embedding timed out after {timeout} s")
                    embed_errors[id(e)] = result
                else:
                    vectors[id(e)] = result
        embed_ms = (time.perf_counter() - t0) * 1000 if embeddings else 0.0
        ready = self._dense_ready(plan, vectors)
        if tasks and any(leg.holds_gil for _, leg in ready):
            headstart = _GIL_HEADSTART_S - (time.perf_counter() - t0)
            if headstart > 0:
                await asyncio.wait(list(tasks.values()), timeout=headstart)
        for name, leg in ready:
            tasks[name] = asyncio.ensure_future(run(leg, vectors[id(leg.embedding)]))
        outcomes = dict(zip(tasks, await asyncio.gather(*tasks.values())))
        return self._finish(plan, outcomes, embed_errors, embed_ms, settings, weights, top_k, fetch_k, flt, excl,
                            started)

    def _empty(
        self, settings: RetrievalSettings, weights: Mapping[str, float], top_k: int, fetch_k: int, started: float,
        note: str,
    ) -> SearchResult:
        legs = tuple(LegTrace(n, leg.kind, weights[n], called=False, note=note) for n, leg in self._legs.items())
        trace = Trace(legs, dict(weights), settings.rrf_k, top_k, fetch_k, settings.fusion,
                      total_ms=(time.perf_counter() - started) * 1000)
        return SearchResult([], trace)

    def _finish(
        self,
        plan: _Plan,
        outcomes: Mapping[str, _LegOutcome],
        embed_errors: Mapping[int, BaseException],
        embed_ms: float,
        settings: RetrievalSettings,
        weights: Mapping[str, float],
        top_k: int,
        fetch_k: int,
        flt: NormalizedFilter | None,
        excl: frozenset[str],
        started: float,
    ) -> SearchResult:
        """Collect leg outcomes (degrade or raise), fuse, expand, and build the trace."""
        traces: list[LegTrace] = list(plan.idle)
        ranked: dict[str, list[Hit]] = {}
        warning_texts: list[str] = []
        first_error: BaseException | None = None
        for name, leg in plan.active:
            weight = weights[name]
            error: BaseException | None
            if isinstance(leg, DenseLeg) and id(leg.embedding) in embed_errors:
                error = embed_errors[id(leg.embedding)]
                if not isinstance(error, RRFRetrieverError):
                    error = EmbeddingError(f"query embedding failed: {type(error).__name__}: {error}")
                text = f"{name}: query embedding failed ({error}); leg dropped"
                traces.append(LegTrace(name, leg.kind, weight, called=False, error=str(error), note="no embedding"))
            else:
                outcome = outcomes[name]
                error = outcome.error
                if error is None and outcome.hits is not None:
                    ranked[name] = outcome.hits
                    traces.append(LegTrace(name, leg.kind, weight, True, outcome.latency_ms, len(outcome.hits)))
                    continue
                detail = f"timed out after {settings.leg_timeout} s" if outcome.timed_out else (
                    f"{type(error).__name__}: {error}"
                )
                text = f"{name}: leg failed ({detail}); leg dropped"
                traces.append(LegTrace(name, leg.kind, weight, True, outcome.latency_ms, 0, detail))
            if settings.on_error == "raise":
                raise error if error is not None else StoreError(text)
            first_error = first_error or error
            warning_texts.append(text)
        if plan.active and not ranked:
            msg = "every leg of the query failed: " + "; ".join(warning_texts)
            raise AllLegsFailedError(msg) from first_error
        for text in warning_texts:
            logger.warning("rrf_retriever degraded query: %s", text)
            warnings.warn(text, RuntimeWarning, stacklevel=3)
        t0 = time.perf_counter()
        fuse = FUSIONS[settings.fusion]
        used = {name: weights[name] for name in ranked}
        if settings.fusion == "rrf":
            hits = fuse(ranked, used, k=settings.rrf_k, limit=top_k)
        else:
            hits = fuse(ranked, used, limit=top_k)
        fusion_ms = (time.perf_counter() - t0) * 1000
        if self._expand is not None or self._links_key is not None:
            hits = hits + self._neighbours(hits, top_k, flt, excl)
        order = {name: i for i, name in enumerate(self._legs)}
        trace = Trace(
            legs=tuple(sorted(traces, key=lambda t: order[t.name])),
            weights=dict(weights),
            rrf_k=settings.rrf_k,
            top_k=top_k,
            fetch_k=fetch_k,
            fusion=settings.fusion,
            embed_ms=embed_ms,
            fusion_ms=fusion_ms,
            total_ms=(time.perf_counter() - started) * 1000,
            warnings=tuple(warning_texts),
        )
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("rrf_retriever query trace: %s", trace)
        return SearchResult(hits, trace)

    # -- 1-hop expansion ----------------------------------------------------------------------------------

    def _lookup_store(self) -> Any | None:
        for leg in self._legs.values():
            store = getattr(leg, "store", None)
            if store is not None and hasattr(store, "get"):
                return store
        return None

    def _neighbours(
        self, hits: list[FusedHit], top_k: int, flt: NormalizedFilter | None, excl: frozenset[str]
    ) -> list[FusedHit]:
        """Neighbours of the fused results, in seed order, within the same scope, marked in metadata."""
        limit = self._expand_limit or top_k
        present = {h.id for h in hits}
        wanted: list[tuple[str, str]] = []  # (neighbour id, seed id)
        for hit in hits:
            if self._expand is not None:
                ids = self._expand(hit)
            else:
                ids = hit.metadata.get(self._links_key or "links") or []
            if isinstance(ids, str):
                ids = [ids]
            for nid in ids:
                if isinstance(nid, str) and nid not in present and nid not in excl:
                    present.add(nid)
                    wanted.append((nid, hit.id))
        store = self._lookup_store()
        if not wanted or store is None:
            return []
        records = {r.id: r for r in store.get([nid for nid, _ in wanted])}
        out: list[FusedHit] = []
        for nid, seed in wanted:
            record: Record | None = records.get(nid)
            if record is None or not matches_filter(record.metadata, flt):
                continue  # the scope holds for neighbours too: nothing outside the filter leaks
            metadata = {**record.metadata, "rrf_expanded_from": seed}
            out.append(FusedHit(nid, record.text, metadata, 0.0, {}, {}))
            if len(out) >= limit:
                break
        return out

    # -- write path ---------------------------------------------------------------------------------------

    def _writable(self) -> list[tuple[str, Leg]]:
        return [(name, leg) for name, leg in self._legs.items() if leg.writable]

    def count(self) -> dict[str, int]:
        """Documents per writable store, by source name."""
        return {name: leg.store.count() for name, leg in self._writable()}  # type: ignore[attr-defined]

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[str]:
        """Upsert documents into every store with the same ids; all or nothing across stores.

        Texts are embedded once per distinct embedding model BEFORE anything is written, so a failing
        embedding writes nothing. If one store fails, the stores already written are rolled back to their
        previous content (new ids deleted, replaced documents restored), so no document is ever in one leg only.

        Returns:
            The ids written.

        Raises:
            InvalidArgumentError / InvalidTypeError: a bad batch (nothing written).
            EmbeddingError: the embedding model failed (nothing written).
            StoreError: a store failed; the others were rolled back.
        """
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        if not id_list:
            return []
        with self._write_lock:
            writable = self._writable()
            vectors = self._embed_documents(writable, text_list)
            before = self._snapshot(writable, id_list)
            seq = self._journal_begin("add", id_list, text_list, meta_list, {
                name: vectors[id(leg.embedding)] for name, leg in writable if isinstance(leg, DenseLeg)
            })
            done: list[tuple[str, Leg]] = []
            for name, leg in writable:
                try:
                    if isinstance(leg, DenseLeg):
                        leg.store.add(id_list, text_list, meta_list, vectors=vectors[id(leg.embedding)])
                    else:
                        leg.store.add(id_list, text_list, meta_list)  # type: ignore[attr-defined]
                except Exception as exc:
                    # A failed rollback raises and keeps the journal entry: recover() then completes the batch.
                    self._restore(done, id_list, before)
                    self._undo_partial(name, leg, id_list, before)
                    self._journal_clear(seq)
                    msg = (f"adding {len(id_list)} document(s) failed in store {name!r}; the other stores were rolled "
                           f"back: {exc}")
                    # Keep the store's own class (StoreLockedError: retry later), else the generic StoreError.
                    raise (type(exc) if isinstance(exc, StoreError) else StoreError)(msg) from exc
                done.append((name, leg))
            self._journal_clear(seq)
        return id_list

    def delete(self, ids: Sequence[str]) -> None:
        """Delete ids from every store; if one store fails the others get the documents back."""
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            msg = f"ids must be a list of ids, not {type(ids).__name__}"
            raise InvalidTypeError(msg)
        id_list = list(normalize_scope(None, ids)[1])
        if not id_list:
            return
        with self._write_lock:
            writable = self._writable()
            before = self._snapshot(writable, id_list)
            seq = self._journal_begin("delete", id_list)
            done: list[tuple[str, Leg]] = []
            for name, leg in writable:
                try:
                    leg.store.delete(id_list)  # type: ignore[attr-defined]
                except Exception as exc:
                    self._restore(done, id_list, before)
                    self._undo_partial(name, leg, id_list, before)
                    self._journal_clear(seq)
                    msg = f"deleting failed in store {name!r}; the other stores were restored: {exc}"
                    raise (type(exc) if isinstance(exc, StoreError) else StoreError)(msg) from exc
                done.append((name, leg))
            self._journal_clear(seq)

    async def aadd(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[str]:
        """Async twin of :meth:`add` (runs in a worker thread: writes are serialised anyway)."""
        import asyncio

        return await asyncio.to_thread(self.add, ids, texts, metadatas)

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`delete`."""
        import asyncio

        await asyncio.to_thread(self.delete, ids)

    # -- write-ahead journal --------------------------------------------------------------------------

    @property
    def journal(self) -> Journal | None:
        """The write-ahead journal, or None."""
        return self._journal

    def _journal_begin(
        self, op: str, ids: list[str], texts: Sequence[str] = (), metadatas: Sequence[Mapping[str, Any]] = (),
        vectors: Mapping[str, Any] | None = None,
    ) -> int | None:
        if self._journal is None:
            return None
        return self._journal.begin(op, ids, texts, metadatas, vectors)  # type: ignore[arg-type]

    def _journal_clear(self, seq: int | None) -> None:
        if self._journal is not None and seq is not None:
            self._journal.clear(seq)

    def recover(self) -> int:
        """Redo every write the journal holds as pending (interrupted by a crash) in every writable store.

        Store writes are idempotent (upsert or delete by id), so a batch that had partly reached the stores is
        simply completed. Called by the constructor when a journal is given; safe to call again.

        Returns:
            The number of batches redone (0 without a journal).

        Raises:
            StoreError: a store refused the redo; the entry stays pending for the next attempt.
        """
        if self._journal is None:
            return 0
        with self._write_lock:
            entries = self._journal.pending()
            writable = self._writable()
            for entry in entries:
                for name, leg in writable:
                    store: Any = leg.store  # type: ignore[attr-defined]
                    try:
                        if entry.op == "delete":
                            store.delete(entry.ids)
                        elif isinstance(leg, DenseLeg):
                            vectors = entry.vectors.get(name)
                            if vectors is None:  # a dense source added after the entry was written
                                vectors = self._embed_documents([(name, leg)], entry.texts)[id(leg.embedding)]
                            store.add(entry.ids, entry.texts, entry.metadatas, vectors=vectors)
                        else:
                            store.add(entry.ids, entry.texts, entry.metadatas)
                    except RRFRetrieverError as exc:
                        msg = f"redoing journal entry {entry.seq} ({entry.op}) in store {name!r} failed: {exc}"
                        raise StoreError(msg) from exc
                    except Exception as exc:
                        msg = (
                            f"redoing journal entry {entry.seq} ({entry.op}) in store {name!r} failed: "
                            f"{type(exc).__name__}: {exc}"
                        )
                        raise StoreError(msg) from exc
                self._journal.clear(entry.seq)
            if entries:
                logger.warning("rrf_retriever journal: redid %d interrupted write(s) in every store", len(entries))
        return len(entries)

    def get(self, ids: Sequence[str]) -> list[Record]:
        """Stored documents by id (from the first writable store), in the order asked; missing ids skipped."""
        store = self._lookup_store()
        if store is None:
            return []
        records = {r.id: r for r in store.get(list(ids))}
        return [records[i] for i in ids if i in records]

    def _embed_documents(self, writable: list[tuple[str, Leg]], texts: list[str]) -> dict[int, Any]:
        vectors: dict[int, Any] = {}
        for _, leg in writable:
            if isinstance(leg, DenseLeg) and id(leg.embedding) not in vectors:
                try:
                    vectors[id(leg.embedding)] = leg.embedding.embed_documents(texts)
                except RRFRetrieverError as exc:
                    raise type(exc)(f"{exc}; nothing was written") from exc
                except Exception as exc:
                    msg = f"embedding {len(texts)} document(s) failed: {type(exc).__name__}: {exc}; nothing was written"
                    raise EmbeddingError(msg) from exc
        return vectors

    @staticmethod
    def _snapshot(writable: list[tuple[str, Leg]], ids: list[str]) -> dict[str, list[Record]]:
        before: dict[str, list[Record]] = {}
        for name, leg in writable:
            store: Any = leg.store  # type: ignore[attr-defined]
            before[name] = store.get(ids, with_vectors=True) if isinstance(leg, DenseLeg) else store.get(ids)
        return before

    def _undo_partial(self, name: str, leg: Leg, ids: list[str], before: Mapping[str, list[Record]]) -> None:
        """The store that failed may have written part of the batch (Qdrant upserts in chunks): undo that."""
        try:
            now = self._snapshot([(name, leg)], ids)[name]
        except Exception:
            return
        def view(records: list[Record]) -> list[tuple[str, str, dict[str, Any]]]:
            return [(r.id, r.text, dict(r.metadata)) for r in records]
        if view(now) != view(before[name]):
            self._restore([(name, leg)], ids, before)

    @staticmethod
    def _restore(done: list[tuple[str, Leg]], ids: list[str], before: Mapping[str, list[Record]]) -> None:
        """Put the stores already written back as they were (best effort, reported if it fails)."""
        for name, leg in done:
            store: Any = leg.store  # type: ignore[attr-defined]
            previous = before[name]
            try:
                store.delete(ids)
                if previous:
                    p_ids = [r.id for r in previous]
                    p_texts = [r.text for r in previous]
                    p_meta = [dict(r.metadata) for r in previous]
                    if isinstance(leg, DenseLeg):
                        store.add(p_ids, p_texts, p_meta, vectors=[r.vector for r in previous])
                    else:
                        store.add(p_ids, p_texts, p_meta)
            except Exception as exc:  # pragma: no cover - a failure during rollback
                msg = f"rollback of store {name!r} failed; its content may differ from the other stores"
                raise StoreError(msg) from exc
