"""Store protocols: everything the engine reads from a store is declared here, and :class:`StoreBase`.

Stores know nothing of fusion: a keyword store ranks by BM25, a dense store by cosine similarity, each
returning its own top ``limit`` :class:`~rrf_retriever.types.Hit` s among the documents the scope allows.

Scope (:mod:`rrf_retriever.scope.tree`) is applied inside every store BEFORE its top-k is taken:

* ``filter``: ``{"session_id": [1, 2], "lang": "en"}``; each key must match, a list means any-of.
* ``exclude_ids``: ids that must not be returned.

Two entries search a store. ``search(query_or_vector, limit, filter, exclude_ids)`` is the door users call: it
validates its arguments once (the filter parsed into a :class:`~rrf_retriever.scope.parse.Scope`) into a
:class:`SearchRequest` and hands it to ``search_request(request)`` (:class:`RequestSearch`), the typed entry the
engine calls with the request it built for the leg: it trusts the request (nothing parsed or checked again).

The engine tells the kinds apart by these protocols (``isinstance`` on a runtime-checkable protocol), never by
probing attributes: a dense store is one with an ``embedding``; a keyword store one with an ``analyzer``. What a
store may do besides is a protocol too: :class:`VectorSource`, :class:`KnowsDimension`, :class:`IdsMatching`,
:class:`RequestSearch`, :class:`BatchSearch`, :class:`WritesThrough`, :class:`DefersMaintenance`.
:class:`StoreBase` gives a new store the defaults (async twins in a worker thread, ``holds_gil = False``,
``close`` and the context manager).

Example:
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> isinstance(FTS5KeywordStore(), KeywordStore), isinstance(FTS5KeywordStore(), DenseStore)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from rrf_retriever.scope.parse import Scope, normalize_scope
from rrf_retriever.scope.tree import FilterNode, FilterSpec
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import check_limit, check_str
from rrf_retriever.vectors import to_float_vector

__all__ = ["NO_SCOPE", "BatchSearch", "DenseStore", "IdsMatching", "KeywordStore", "KnowsDimension", "RequestSearch",
           "SearchRequest", "SomeIds", "StoreBase", "VectorSource", "WritesThrough", "in_thread"]

T = TypeVar("T")

#: The scope of an unscoped search: no filter, no excluded id.
NO_SCOPE = Scope(None, frozenset())


@runtime_checkable
class KeywordStore(Protocol):
    """A keyword (BM25) store. ``search`` takes the user's raw query text and analyzes it itself.

    Attributes:
        analyzer: The analyzer of indexing and querying (:class:`~.analysis.analyzer.Analyzer`); the engine asks
            it whether a query keeps any term (the leg sits out otherwise). None: the store decides alone.
        holds_gil: True if ``search`` keeps Python's GIL for its whole run (the engine then starts it last).
    """

    analyzer: Any
    holds_gil: bool

    def add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]] | None = None
    ) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def get(self, ids: Sequence[str]) -> list[Record]: ...

    def count(self) -> int: ...

    def search(
        self,
        query: str,
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...

    def close(self) -> None: ...

    async def aadd(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]] | None = None
    ) -> None: ...

    async def adelete(self, ids: Sequence[str]) -> None: ...

    async def asearch(
        self,
        query: str,
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...


@runtime_checkable
class DenseStore(Protocol):
    """A vector store. It owns its embedding (``self.embedding``) so the engine can embed a query once.

    Attributes:
        embedding: An :class:`~rrf_retriever.embeddings.EmbeddingAdapter`; stores sharing one model share one
            query embedding.
        holds_gil: As for :class:`KeywordStore`.
    """

    embedding: Any
    holds_gil: bool

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]: ...

    def count(self) -> int: ...

    def search(
        self,
        vector: Sequence[float],
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...

    def close(self) -> None: ...

    async def aadd(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None: ...

    async def adelete(self, ids: Sequence[str]) -> None: ...

    async def asearch(
        self,
        vector: Sequence[float],
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...


@runtime_checkable
class VectorSource(Protocol):
    """Optional: a dense store that gives back its stored vectors (the diversity stage reads them; no document is
    embedded again).

    ``get_vectors(ids)`` returns ``{id: vector}`` for the ids it holds; unknown ids are absent.
    """

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]: ...


@runtime_checkable
class KnowsDimension(Protocol):
    """Optional: a dense store that knows the dimension of its vectors (None until its first write), so the
    engine refuses a ``query_vector`` of another length before any leg runs
    (:class:`~rrf_retriever.errors.DimensionMismatchError`) instead of degrading the dense leg."""

    @property
    def dimension(self) -> int | None: ...


@runtime_checkable
class IdsMatching(Protocol):
    """Optional: a store that lists every stored id whose metadata matches a filter (LlamaIndex's
    ``delete_ref_doc`` finds a document's nodes with it). Implemented by every store of this package.

    ``ids_matching(filter, limit=None)``: the ids, sorted, at most ``limit``; ``filter`` in the language of
    :mod:`rrf_retriever.scope.tree` (None: every id); exclusions do not apply. A malformed filter is an
    :class:`~rrf_retriever.errors.InvalidFilterError`.
    """

    def ids_matching(self, filter: FilterSpec | Any = None, limit: int | None = None) -> list[str]: ...


@runtime_checkable
class SomeIds(Protocol):
    """Optional: a store that gives up to ``limit`` of its stored ids in its own fixed order without listing the
    others (the engine's cosine background draws its sample from them). The Qdrant stores: one page of a scroll in
    point-id order, where :meth:`IdsMatching.ids_matching`'s sorted listing scrolls every id (~1.4 s of the first
    query at 100k documents, ~10x that at 1M).
    """

    def some_ids(self, limit: int) -> list[str]: ...


@runtime_checkable
class BatchSearch(Protocol):
    """Optional: a store that runs several legs' searches in one request, with the other stores of its
    ``batch_group``. Legs whose stores share a (non-None) ``batch_group`` run as one ``search_batch`` call (e.g. the
    dense and keyword views of :class:`~rrf_retriever.stores.qdrant.QdrantHybridStore`, one Qdrant collection).

    ``search_batch(requests)`` returns one entry per :class:`SearchRequest`, in order: that leg's hits, or the
    exception where that leg failed; ``asearch_batch`` is its async twin.
    """

    @property
    def batch_group(self) -> object: ...

    def search_batch(self, requests: Sequence[SearchRequest]) -> Sequence[list[Hit] | BaseException]: ...

    async def asearch_batch(self, requests: Sequence[SearchRequest]) -> Sequence[list[Hit] | BaseException]: ...


@runtime_checkable
class WritesThrough(Protocol):
    """Optional: a store whose writes another store carries (``writes_through``: e.g. the keyword view of a joint
    Qdrant collection, written by its dense view). The engine requires that other store among its sources; None:
    the store writes itself."""

    writes_through: object


@runtime_checkable
class DefersMaintenance(Protocol):
    """Optional: a store whose add runs upkeep once it leaves enough work (qdrant-edge's optimizers). Within
    ``deferred_maintenance()``, adds leave it to the end of the block, where it runs once (not after an error: the
    next add does): the engine wraps an add written in chunks in it, so the chunks cost the upkeep of one add."""

    def deferred_maintenance(self) -> AbstractContextManager[None]: ...


@dataclass(frozen=True)
class SearchRequest:
    """One leg's search: the ONE value the engine builds per leg and hands, unchanged, through the leg to the store
    (``search_request``, or ``search_batch`` for stores that run several legs in one request).

    Its values are validated before it is built (the engine's :class:`~rrf_retriever.engine.options.SearchOptions`,
    or :meth:`checked`, the stores' ``search`` door): a store trusts it and checks nothing again.

    Attributes:
        kind: ``"dense"`` (searches with ``vector``) or ``"keyword"`` (with ``query``).
        query: The user's text.
        vector: The query vector (dense requests), else None.
        limit: Hits wanted (0 to :data:`~rrf_retriever.validate.MAX_LIMIT`).
        scope: The validated filter and excluded ids (:class:`~rrf_retriever.scope.parse.Scope`).

    Example:
        >>> SearchRequest("keyword", "qdrant", None, 5).kind
        'keyword'
        >>> SearchRequest.checked("keyword", "qdrant", None, 5, {"lang": "en"}, ["a"]).scope
        Scope(filter=Match(key='lang', values=('en',)), exclude_ids=frozenset({'a'}))
    """

    kind: str
    query: str
    vector: Sequence[float] | None
    limit: int
    scope: Scope = NO_SCOPE

    @property
    def filter(self) -> FilterNode | None:
        """The scope's filter tree (None: unfiltered)."""
        return self.scope.filter

    @property
    def exclude_ids(self) -> frozenset[str]:
        """The ids never to return."""
        return self.scope.exclude_ids

    @classmethod
    def checked(
        cls,
        kind: str,
        query: str,
        vector: Sequence[float] | None,
        limit: int,
        filter: FilterSpec | FilterNode | Scope | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> SearchRequest:
        """The door of a store's ``search``: its arguments validated once (the query a string, the vector a list of
        finite floats, ``limit`` in range, the filter parsed into a :class:`~rrf_retriever.scope.parse.Scope`; a
        ``Scope`` passes through) as a request.

        Raises:
            InvalidTypeError / InvalidArgumentError: a bad query, limit or ``exclude_ids``.
            DimensionMismatchError: an empty vector, or one holding NaN or infinity.
            InvalidFilterError: a malformed filter.
        """
        checked = None if vector is None else to_float_vector(vector, "the query vector")
        return cls(kind, check_str(query, "query"), checked, check_limit(limit), normalize_scope(filter, exclude_ids))


@runtime_checkable
class RequestSearch(Protocol):
    """The typed entry of a store (every store of this package): ``search_request(request)`` runs one
    :class:`SearchRequest` as it is, trusting it; ``asearch_request`` is its async twin. The engine's legs call it;
    a store without it is called through its ``search`` door (the request's scope in the filter slot)."""

    def search_request(self, request: SearchRequest) -> list[Hit]: ...

    async def asearch_request(self, request: SearchRequest) -> list[Hit]: ...


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread``, with asyncio imported on first use (sync callers never pay its import); every store's
    async twin that runs its sync method in a worker thread goes through it."""
    import asyncio

    return await asyncio.to_thread(fn, *args, **kwargs)


class StoreBase:
    """Defaults every store shares: async twins that run the sync methods in a worker thread (override where a
    native client exists), ``holds_gil = False``, a no-op :meth:`close` and the context manager."""

    #: Overridden by stores whose search keeps the GIL (qdrant-edge-py).
    holds_gil: bool = False

    def close(self) -> None:
        """Release files, locks and clients (nothing to release by default)."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def aadd(self, *args: Any, **kwargs: Any) -> None:
        await in_thread(self.add, *args, **kwargs)  # type: ignore[attr-defined]  # mixin: stores define it

    async def adelete(self, ids: Sequence[str]) -> None:
        await in_thread(self.delete, ids)  # type: ignore[attr-defined]  # mixin: stores define it

    async def aget(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
        return await in_thread(self.get, ids, **kwargs)  # type: ignore[attr-defined]  # mixin: stores define it

    async def acount(self) -> int:
        return await in_thread(self.count)  # type: ignore[attr-defined]  # mixin: stores define it

    async def asearch(self, *args: Any, **kwargs: Any) -> list[Hit]:
        return await in_thread(self.search, *args, **kwargs)  # type: ignore[attr-defined]  # mixin: stores define it

    async def asearch_request(self, request: SearchRequest) -> list[Hit]:
        return await in_thread(self.search_request, request)  # type: ignore[attr-defined]  # mixin: stores define it
