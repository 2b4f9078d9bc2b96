"""The one interface between a Qdrant store and the engine it runs on.

A store is one class per KIND (dense, keyword, joint: :mod:`~rrf_retriever.stores.qdrant.dense`,
:mod:`~rrf_retriever.stores.qdrant.keyword`, :mod:`~rrf_retriever.stores.qdrant.joint`) holding one
:class:`Backend`: :class:`~rrf_retriever.stores.qdrant.backend_client.ClientBackend` (qdrant-client: memory, a
local path, a server; sync and ``AsyncQdrantClient``) or :class:`~rrf_retriever.stores.qdrant.backend_edge.
EdgeBackend` (qdrant-edge: an in-process shard in a locked directory). The kind decides what is written and read
(payloads, BM25 values, scopes); the backend how one collection of a :class:`Layout` is created, written,
searched and described on its engine, in that engine's models.

Every primitive takes the ``api`` to call first: the sync client, the async client (then it returns an
awaitable), or None (qdrant-edge has one in-process engine). Stores call primitives only through
:mod:`~rrf_retriever.stores.qdrant.ops` (an :class:`~rrf_retriever.stores.qdrant.ops.Op` naming the bound
method), and so through the store's one choke point ``_call``.

Example:
    >>> JOINT_LAYOUT.dense, JOINT_LAYOUT.sparse, DENSE_LAYOUT.dense
    ('dense', True, '')
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rrf_retriever.embeddings.windows import WindowSettings
from rrf_retriever.errors import RRFRetrieverError, missing_dependency
from rrf_retriever.stores.qdrant.points import DENSE_VECTOR_NAME, SPARSE_VECTOR_NAME, Point

__all__ = [
    "DENSE_LAYOUT",
    "JOINT_LAYOUT",
    "KEYWORD_LAYOUT",
    "Backend",
    "DenseQuery",
    "Layout",
    "Query",
    "Saved",
    "SparseQuery",
    "import_engine",
]


@dataclass(frozen=True)
class Layout:
    """Which vectors a collection's points carry.

    Attributes:
        name: ``"dense"``, ``"keyword"`` or ``"joint"`` (backends tell stored kinds apart by it).
        dense: The dense vector's name: ``""`` the unnamed default vector, None no dense vector.
        sparse: Whether points carry the BM25 sparse vector ``"bm25"`` (declared with the IDF modifier).
    """

    name: str
    dense: str | None
    sparse: bool


DENSE_LAYOUT = Layout("dense", dense="", sparse=False)
KEYWORD_LAYOUT = Layout("keyword", dense=None, sparse=True)
JOINT_LAYOUT = Layout("joint", dense=DENSE_VECTOR_NAME, sparse=True)


@dataclass(frozen=True)
class Saved:
    """What an existing collection says of itself (:meth:`Backend.read`).

    Attributes:
        dimension: The dense vector's dimension (None: the layout has none).
        params: The BM25 settings saved with it, unchecked (None: the layout has none).
        payload_schema: Its payload indexes, ``{field: info with .data_type}`` (None: unknown).
        windows: The dense vector holds each document's windows (a multivector) cut so; None: one vector.
    """

    dimension: int | None = None
    params: Any = None
    payload_schema: Mapping[str, Any] | None = None
    windows: WindowSettings | None = None


@dataclass(frozen=True)
class DenseQuery:
    """Nearest neighbours of ``vector`` on the dense vector."""

    vector: list[float]
    limit: int
    filter: Any = None


@dataclass(frozen=True)
class SparseQuery:
    """BM25 on the sparse vector: query term counts, weighted by the engine's IDF. ``live_idf``: ask for the IDF
    of live points where the engine's own statistics may still count deleted ones."""

    indices: list[int]
    values: list[float]
    limit: int
    filter: Any = None
    live_idf: bool = True


Query = DenseQuery | SparseQuery


def import_engine(package: str, owner: str, *modules: str) -> list[Any]:
    """Import an engine's modules; a missing one is our error naming the extra that brings ``package``."""
    try:
        return [importlib.import_module(name) for name in modules]
    except ImportError as exc:
        raise missing_dependency(package, "qdrant", owner) from exc


class Backend(ABC):
    """One collection of one :class:`Layout` on one engine.

    Attributes:
        layout: What the collection's points carry.
        engine_name: Names the engine in errors and progress bars.
        indexes_payload: False where the engine ignores payload indexes (qdrant-client local mode).
        lock: Guards the store's state (and, per backend, engine calls that must not overlap).
        sync_api: What sync calls get as ``api``.
        async_api: What async calls get as ``api``; None: no native async (the store uses a worker thread).
        where: Names the collection in errors (``"collection 'docs'"``).
        tree_fanout: Children of a node of the tree of ranges a long integer list compiles to without a numeric
            index (:func:`~rrf_retriever.stores.qdrant.filters.compile_filter`).
        windows: The dense layout's points hold a multivector of document windows, scored by their best window
            (Qdrant's ``MAX_SIM`` with a one-row query: the largest cosine); None: one vector per point. Set by
            the store before the collection is created, or read from the existing collection.
    """

    layout: Layout
    engine_name: str = "Qdrant"
    indexes_payload: bool = True
    tree_fanout: int = 2
    sync_api: Any = None
    async_api: Any = None
    where: str = ""
    windows: WindowSettings | None = None

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.lock = threading.RLock()

    # -- points in the engine's models ---------------------------------------------------------------------
    def point_vectors(self, point: Point) -> Any:
        """A point's vectors as the engine takes them: the unnamed dense list, else ``{name: vector}`` (the sparse
        vector in the engine's own model, :meth:`sparse_vector`)."""
        if self.layout.dense == "":
            return point.dense
        vectors: dict[str, Any] = {}
        if point.dense is not None and self.layout.dense is not None:
            vectors[self.layout.dense] = point.dense
        if point.sparse is not None:
            vectors[SPARSE_VECTOR_NAME] = self.sparse_vector(*point.sparse)
        return vectors

    def sparse_vector(self, indices: Sequence[int], values: Sequence[float]) -> Any:
        """A sparse vector in the engine's model (a layout with a sparse vector needs it)."""
        msg = f"{type(self).__name__} has no sparse vector model"
        raise NotImplementedError(msg)

    # -- lifecycle and errors ----------------------------------------------------------------------------
    def guard(self) -> contextlib.AbstractContextManager[Any]:
        """Held around a whole sync operation."""
        return contextlib.nullcontext()

    def serialize(self, api: Any) -> contextlib.AbstractContextManager[Any]:
        """Held around one call on ``api`` (for an engine that must not run two at once)."""
        return contextlib.nullcontext()

    def check_open(self) -> None:
        """Raise if the collection can no longer be used (closed); a backend that never closes: nothing."""
        return None

    @abstractmethod
    def error(self, exc: Exception, action: str) -> RRFRetrieverError:
        """Our error for an engine failure during ``action``."""

    @abstractmethod
    def close(self) -> None:
        """Release what the backend holds (idempotent)."""

    @abstractmethod
    def describe(self) -> str:
        """Where the collection is, for a store's repr (``"collection_name='docs'"``)."""

    # -- primitives: ``api`` first; a value, or an awaitable of it on an async client -------------------------
    @abstractmethod
    def exists(self, api: Any) -> Any:
        """Whether the collection exists."""

    @abstractmethod
    def read(self, api: Any) -> Any:
        """The existing collection's :class:`Saved` (raises if it is not one of this layout)."""

    @abstractmethod
    def create(self, api: Any, dimension: int | None, params: dict[str, Any] | None) -> Any:
        """Create the collection: the dense vector of ``dimension`` (cosine), the sparse vector, ``params``."""

    @abstractmethod
    def save_params(self, api: Any, params: dict[str, Any]) -> Any:
        """Save new BM25 settings with the collection."""

    @abstractmethod
    def upsert(self, api: Any, points: list[Point]) -> Any:
        """Write whole points (vectors and payload), replacing any at the same ids."""

    @abstractmethod
    def update_vectors(self, api: Any, points: list[Point]) -> Any:
        """Rewrite the given vectors of existing points, keeping their other vectors and payload."""

    @abstractmethod
    def delete(self, api: Any, pids: list[str]) -> Any:
        """Delete points by id (unknown ids ignored)."""

    @abstractmethod
    def retrieve(self, api: Any, pids: list[str], with_vectors: bool) -> Any:
        """The stored points among ``pids`` (``.id``, ``.payload``, ``.vector``)."""

    @abstractmethod
    def count(self, api: Any) -> Any:
        """The exact number of points."""

    @abstractmethod
    def search(self, api: Any, query: Query) -> Any:
        """The top points of one query (``.id``, ``.payload``, ``.score``)."""

    @abstractmethod
    def search_batch(self, api: Any, queries: list[Query]) -> Any:
        """The top points of each query, in order, in as few engine requests as the engine allows."""

    @abstractmethod
    def scroll(self, api: Any, offset: Any, limit: int, query_filter: Any = None, ids_only: bool = False,
               fields: Sequence[str] = ()) -> Any:
        """A page of points and the next page's offset (None: last page); ``ids_only``: no payload but the id;
        ``fields``: only these payload paths (``metadata.<key>``)."""

    @abstractmethod
    def create_index(self, api: Any, field_key: str, kind: str) -> Any:
        """Create (or replace) the payload index of ``kind`` (``"float"``, ``"keyword"``, ``"bool"``) on a field."""

    @abstractmethod
    def delete_index(self, api: Any, field_key: str) -> Any:
        """Delete the payload index on a field."""

    # -- the engine's filter models (no engine call) ----------------------------------------------------------
    @abstractmethod
    def condition(self, field_key: str, test: Any) -> Any:
        """A field condition: ``MatchValue`` for a str / int / bool, ``MatchAny`` for a list, ``Range`` for
        :class:`~rrf_retriever.stores.qdrant.filters.Bounds`, ``IsEmpty`` for ``IS_EMPTY``."""

    @abstractmethod
    def filter(self, **parts: Any) -> Any:
        """A filter of ``must`` / ``should`` / ``must_not`` conditions."""

    @abstractmethod
    def has_ids(self, pids: Iterable[str]) -> Any:
        """A condition matching these point ids (none: matches nothing)."""

    def boolean(self, value: bool) -> Any:
        """A boolean as the engine's ``MatchValue`` reads it as a JSON boolean."""
        return value
