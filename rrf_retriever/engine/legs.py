"""Legs: the ranked sources of a hybrid query. Each leg owns its search AND its writes.

The engine never asks what kind of store is behind a leg: a :class:`DenseLeg` searches with the query vector
and writes with document vectors, a :class:`KeywordLeg` searches with the text, a :class:`FunctionLeg` (a
framework retriever) is read-only. The write unit calls the same four methods on every writable leg
(``add``, ``delete``, ``snapshot``, ``restore``).

Example:
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> leg = as_leg("keyword", FTS5KeywordStore())
    >>> from rrf_retriever.stores.base import SearchRequest
    >>> leg.add(["a"], ["hybrid search"], [{}], None)
    >>> [h.id for h in leg.search(SearchRequest("keyword", "search", None, 5))]
    ['a']
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeAlias

from rrf_retriever.errors import DimensionMismatchError, InvalidTypeError
from rrf_retriever.scope.parse import Scope
from rrf_retriever.scope.tree import NormalizedFilter, matches
from rrf_retriever.stores.base import (
    BatchSearch,
    DenseStore,
    KeywordStore,
    KnowsDimension,
    RequestSearch,
    SearchRequest,
)
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import MAX_TOP_K

if TYPE_CHECKING:
    import numpy as np

__all__ = ["POST_FILTER_MAX_FACTOR", "DenseLeg", "FunctionLeg", "KeywordLeg", "Leg", "NotedHits", "StoreLeg", "as_leg"]

#: One vector per document: lists of floats, or a 2-D float array (``embed_array``'s, passed on as it is).
Vectors: TypeAlias = "Sequence[Sequence[float]] | np.ndarray"


class Leg:
    """One ranked source of a hybrid query. Subclasses implement :meth:`search` (and may override ``asearch``).

    ``kind`` is ``"dense"`` (needs the query vector), ``"keyword"`` or ``"retriever"``. A read-only leg
    (``writable = False``) is skipped by every write. A leg searches with the
    :class:`~rrf_retriever.stores.base.SearchRequest` the engine built for it (validated: a leg checks nothing
    again) and hands it to its store unchanged.
    """

    kind: str = "retriever"
    #: Writes (add/delete) reach this leg's store; False for read-only sources such as foreign retrievers.
    writable: bool = False
    #: The model that embeds this leg's query and documents (dense legs); None for the others.
    embedding: Any = None
    #: True if this leg's search keeps Python's GIL for its whole run (the engine then starts it last).
    holds_gil: bool = False

    def search(self, request: SearchRequest) -> list[Hit]:
        raise NotImplementedError

    async def asearch(self, request: SearchRequest) -> list[Hit]:
        import asyncio  # lazily, as everywhere here: only async callers (who have it loaded) pay its import

        return await asyncio.to_thread(self.search, request)

    def scope_for(self, scope: Scope) -> Scope:
        """The scope this leg searches within for a query scoped by ``scope`` (the query's, by default; a dense
        path narrows it)."""
        return scope

    def sits_out(self, query: str) -> str | None:
        """A reason not to call this leg for ``query`` (None: call it)."""
        return None

    def check_query_vector(self, vector: Sequence[float]) -> None:
        """Refuse a caller's query vector this leg could not search with (nothing to check by default)."""

    def close(self) -> None:
        """Release what the leg holds (nothing by default)."""


class StoreLeg(Leg):
    """A leg over one of our stores: it reads and writes through the store's protocol."""

    writable = True

    def __init__(self, store: Any) -> None:
        self.store = store

    @cached_property
    def batch_store(self) -> BatchSearch | None:
        """The store, if it runs in one request with the stores sharing its ``batch_group``
        (:class:`~rrf_retriever.stores.base.BatchSearch`), else None. Asked once: a protocol check is not free."""
        store = self.store
        return store if isinstance(store, BatchSearch) and store.batch_group is not None else None

    @cached_property
    def typed_store(self) -> RequestSearch | None:
        """The store, if it has the typed entry ``search_request`` (:class:`~rrf_retriever.stores.base.
        RequestSearch`: every store of this package), else None (its ``search`` door is called). Asked once."""
        return self.store if isinstance(self.store, RequestSearch) else None

    @property
    def holds_gil(self) -> bool:  # type: ignore[override]  # a class attribute on Leg, a property here
        return bool(self.store.holds_gil)

    def searched(self, request: SearchRequest) -> Any:
        """What a store's ``search`` door takes first: the text (keyword legs) or the vector (dense legs)."""
        raise NotImplementedError

    def search(self, request: SearchRequest) -> list[Hit]:
        """The store's hits for ``request``, handed to its typed entry as it is (ties ordered by id)."""
        typed = self.typed_store
        if typed is not None:
            return ties_by_id(typed.search_request(request))
        return ties_by_id(self.store.search(self.searched(request), request.limit, request.scope))

    async def asearch(self, request: SearchRequest) -> list[Hit]:
        typed = self.typed_store
        if typed is not None:
            return ties_by_id(await typed.asearch_request(request))
        return ties_by_id(await self.store.asearch(self.searched(request), request.limit, request.scope))

    def add(self, ids: list[str], texts: list[str], metadatas: list[dict[str, Any]], vectors: Vectors | None) -> None:
        """Upsert a validated batch (``vectors``: this leg's embedding of ``texts``, None for keyword legs)."""
        raise NotImplementedError

    def delete(self, ids: list[str]) -> None:
        self.store.delete(ids)

    def get(self, ids: Sequence[str]) -> list[Record]:
        return self.store.get(ids)

    def count(self) -> int:
        return int(self.store.count())

    def snapshot(self, ids: list[str]) -> list[Record]:
        """What :meth:`restore` needs to put ``ids`` back as they are now."""
        return self.store.get(ids)

    def restore(self, ids: list[str], previous: list[Record]) -> None:
        """Put ``ids`` back to ``previous`` (a :meth:`snapshot`): delete them, re-add what existed."""
        self.store.delete(ids)
        if previous:
            vectors = [r.vector for r in previous] if self.embedding is not None else None
            self.add([r.id for r in previous], [r.text for r in previous], [dict(r.metadata) for r in previous],
                     vectors)  # type: ignore[arg-type]  # a dense leg's records carry their vectors

    def close(self) -> None:
        self.store.close()


def ties_by_id(hits: list[Hit]) -> list[Hit]:
    """A store's hits with equal scores ordered by id: stores return ties in any order (qdrant-client local mode
    and qdrant-edge differ between calls), which made the fused list, and so paging, change from call to call.
    Only for our stores, whose scores are real and higher-is-better (a foreign retriever's may all be 0).

    Example:
        >>> [h.id for h in ties_by_id([Hit("b", score=1.0), Hit("a", score=1.0), Hit("c", score=2.0)])]
        ['c', 'a', 'b']
    """
    return sorted(hits, key=lambda h: (-h.score, h.id))


class KeywordLeg(StoreLeg):
    """A :class:`~rrf_retriever.stores.base.KeywordStore` as a leg."""

    kind = "keyword"

    def searched(self, request: SearchRequest) -> str:
        return request.query

    def sits_out(self, query: str) -> str | None:
        analyzer = self.store.analyzer
        if analyzer is not None and not analyzer.query_terms(query):
            return "no keyword term survives analysis"
        return None

    def add(self, ids: list[str], texts: list[str], metadatas: list[dict[str, Any]], vectors: Vectors | None) -> None:
        self.store.add(ids, texts, metadatas)


class DenseLeg(StoreLeg):
    """A :class:`~rrf_retriever.stores.base.DenseStore` as a leg; its ``embedding`` embeds the query."""

    kind = "dense"

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.embedding = store.embedding

    def searched(self, request: SearchRequest) -> Sequence[float] | None:
        return request.vector

    def add(self, ids: list[str], texts: list[str], metadatas: list[dict[str, Any]], vectors: Vectors | None) -> None:
        self.store.add(ids, texts, metadatas, vectors=vectors)

    def snapshot(self, ids: list[str]) -> list[Record]:
        return self.store.get(ids, with_vectors=True)

    @cached_property
    def _sized(self) -> KnowsDimension | None:
        """The store, if it knows its dimension (asked once: a protocol check is not free)."""
        return self.store if isinstance(self.store, KnowsDimension) else None

    def check_query_vector(self, vector: Sequence[float]) -> None:
        """Refuse a query vector whose length is not the store's dimension. A store never written has no dimension
        yet: any vector is taken, and the leg finds nothing.

        Raises:
            DimensionMismatchError: the lengths differ.
        """
        dimension = None if self._sized is None else self._sized.dimension  # read each time: set by the first add
        if dimension is not None and len(vector) != dimension:
            msg = f"the query vector has dimension {len(vector)}, the dense store's vectors {dimension}"
            raise DimensionMismatchError(msg)


#: A scoped foreign retriever is asked for this many times ``limit`` (plus the excluded ids), then post-filtered.
POST_FILTER_HEADROOM = 3


class NotedHits(list):  # type: ignore[type-arg]  # of Hit; list[Hit] cannot be subclassed on Python 3.10
    """A leg's hits with what the trace should say of this call (a post-filtered leg: asked for, returned)."""

    def __init__(self, hits: Iterable[Hit], note: str) -> None:
        super().__init__(hits)
        self.note = note


#: At most this many times ``limit`` (plus the excluded ids) is asked of a post-filtered leg, however few pass.
POST_FILTER_MAX_FACTOR = 30


class FunctionLeg(Leg):
    """Any function ``(query, limit) -> list[Hit]`` as a read-only leg (used to wrap framework retrievers).

    A function cannot take our scope, so the filter and the exclusions are applied to what it returns: with a
    scope, it is asked for :data:`POST_FILTER_HEADROOM` times ``limit`` plus the number of excluded ids, then, while
    fewer than ``limit`` pass and it gave all it was asked (it may hold more), for four times as many, up to
    :data:`POST_FILTER_MAX_FACTOR` times ``limit``; the first ``limit`` hits that pass are kept (fewer when too few
    pass). Metadata is matched by the reference semantics (:func:`rrf_retriever.scope.tree.matches`), the same the
    stores compile; the trace says what the function was asked for and what it returned. ``sized=False``: the
    function cannot be asked for a number of hits (a retriever with a fixed size): it is asked once, and the trace
    says so.

    Example:
        >>> from rrf_retriever.scope.tree import Range
        >>> leg = FunctionLeg(lambda q, k: [Hit(str(i), metadata={"n": i}) for i in range(k)])
        >>> scope = Scope(Range("n", gte=3), frozenset({"4"}))
        >>> [h.id for h in leg.search(SearchRequest("retriever", "q", None, 2, scope))]
        ['3', '5']
    """

    kind = "retriever"

    def __init__(
        self,
        search: Callable[[str, int], list[Hit]],
        asearch: Callable[[str, int], Awaitable[list[Hit]]] | None = None,
        *,
        sized: bool = True,
    ) -> None:
        self._search = search
        self._asearch = asearch
        self._sized = sized

    def _asked(self, limit: int, flt: NormalizedFilter | None, excl: frozenset[str]) -> int:
        """How many hits to ask the function for first: ``limit``, with headroom when the post-filter may drop
        some (and the function can be asked for more)."""
        if (flt is None and not excl) or not self._sized:
            return limit
        return limit * POST_FILTER_HEADROOM + len(excl)

    def _next(self, asked: int, got: int, kept: int, limit: int, excl: frozenset[str]) -> int | None:
        """How many to ask next, or None: enough passed, the function has no more, or the bound is reached."""
        bound = min(limit * POST_FILTER_MAX_FACTOR + len(excl), MAX_TOP_K)
        if not self._sized or kept >= limit or got < asked or asked >= bound:
            return None
        return min(asked * 4, bound)

    @staticmethod
    def _scoped(hits: Iterable[Hit], limit: int, flt: NormalizedFilter | None, excl: frozenset[str]) -> list[Hit]:
        return [h for h in hits if h.id not in excl and matches(h.metadata, flt)][:limit]

    def _noted(self, kept: list[Hit], asked: int, got: int) -> NotedHits:
        if not self._sized:
            return NotedHits(kept, f"post-filtered: the retriever cannot take the filter and cannot be asked for a "
                                   f"number of hits; it returned {got}, of which {len(kept)} are in the scope")
        return NotedHits(kept, f"post-filtered: the retriever cannot take the filter, so it was asked for up to "
                               f"{asked} hits; it returned {got}, of which {len(kept)} are in the scope")

    def search(self, request: SearchRequest) -> list[Hit]:
        query, limit, (flt, exclude_ids) = request.query, request.limit, request.scope
        asked = self._asked(limit, flt, exclude_ids)
        if flt is None and not exclude_ids:
            return self._search(query, limit)[:limit]
        while True:
            hits = self._search(query, asked)
            kept = self._scoped(hits, limit, flt, exclude_ids)
            more = self._next(asked, len(hits), len(kept), limit, exclude_ids)
            if more is None:
                return self._noted(kept, asked, len(hits))
            asked = more

    async def asearch(self, request: SearchRequest) -> list[Hit]:
        if self._asearch is None:
            return await super().asearch(request)
        query, limit, (flt, exclude_ids) = request.query, request.limit, request.scope
        if flt is None and not exclude_ids:
            return (await self._asearch(query, limit))[:limit]
        asked = self._asked(limit, flt, exclude_ids)
        while True:
            hits = await self._asearch(query, asked)
            kept = self._scoped(hits, limit, flt, exclude_ids)
            more = self._next(asked, len(hits), len(kept), limit, exclude_ids)
            if more is None:
                return self._noted(kept, asked, len(hits))
            asked = more


def as_leg(name: str, source: Any) -> Leg:
    """Turn a store (or a ready :class:`Leg`) into a leg, by the protocol it implements.

    Example:
        >>> as_leg("x", object())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidTypeError: source 'x' ...
    """
    if isinstance(source, Leg):
        return source
    if isinstance(source, DenseStore):
        return DenseLeg(source)
    if isinstance(source, KeywordStore):
        return KeywordLeg(source)
    msg = (
        f"source {name!r} is a {type(source).__name__}: expected a keyword store, a dense store (the protocols "
        "of rrf_retriever.stores.base), a Leg, or (through EnsembleRRFRetriever) a LangChain or LlamaIndex retriever"
    )
    raise InvalidTypeError(msg)


def writable_legs(legs: Mapping[str, Leg]) -> list[tuple[str, StoreLeg]]:
    """The legs that writes reach, in source order."""
    return [(name, leg) for name, leg in legs.items() if leg.writable and isinstance(leg, StoreLeg)]
