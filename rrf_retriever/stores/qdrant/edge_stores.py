"""The three store kinds on qdrant-edge-py, Qdrant's in-process engine: each class is a thin constructor. It builds
its kind's settings (frozen values, :mod:`~rrf_retriever.stores.qdrant.settings`) from its keywords, then its
:class:`~rrf_retriever.stores.qdrant.backend_edge.EdgeBackend` (a shard in a locked directory), hands them to the
kind, and shows the shard's maintenance (flush, optimize).

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> with QdrantEdgeDenseStore(HashingEmbedding(dim=8)) as store:  # a temporary directory
    ...     store.add(["a"], ["hello"])
    ...     store.count()
    1
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.qdrant.backend import DENSE_LAYOUT, JOINT_LAYOUT, KEYWORD_LAYOUT
from rrf_retriever.stores.qdrant.backend_edge import EdgeBackend
from rrf_retriever.stores.qdrant.bm25_params import Bm25Options, Bm25Settings
from rrf_retriever.stores.qdrant.dense import DenseKind, window_settings
from rrf_retriever.stores.qdrant.edge_index import DEFAULT_INDEX, FILTERED_SEARCH, GRAPH_POINTS, INDEX_KINDS
from rrf_retriever.stores.qdrant.joint import JointKind
from rrf_retriever.stores.qdrant.keyword import KeywordKind
from rrf_retriever.stores.qdrant.ops import Op
from rrf_retriever.stores.qdrant.points import Metadatas, Vectors
from rrf_retriever.stores.qdrant.settings import StoreOptions, StoreSettings, signature_with, split_options, take
from rrf_retriever.validate import check_int

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "AUTO_OPTIMIZE_POINTS",
    "EdgeSearch",
    "EdgeSearchOptions",
    "QdrantEdgeDenseStore",
    "QdrantEdgeHybridStore",
    "QdrantEdgeKeywordStore",
    "check_hnsw_ef",
]

#: ``auto_optimize=True``: an add leaving at least this many points outside the optimized segments optimizes the
#: shard (int8 and plain shards; an HNSW shard builds its graph only when ``optimize`` is called).
AUTO_OPTIMIZE_POINTS = 10_000


@dataclass(frozen=True)
class EdgeSearch:
    """The dense search settings a qdrant-edge store opens with (:attr:`QdrantEdgeDenseStore.exact` and
    :attr:`~QdrantEdgeDenseStore.hnsw_ef` change them afterwards).

    Attributes:
        exact: Force exact search (float vectors, every point) even after ``optimize``.
        hnsw_ef: HNSW search breadth (``ef``) once an index exists; None is Qdrant's default.

    Raises:
        InvalidTypeError / InvalidArgumentError: an ``hnsw_ef`` that is not None or an integer >= 0.
    """

    exact: bool = False
    hnsw_ef: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "exact", bool(self.exact))
        object.__setattr__(self, "hnsw_ef", check_hnsw_ef(self.hnsw_ef))


def check_hnsw_ef(value: object) -> int | None:
    """None or an integer >= 0 (checked when set: qdrant-edge would refuse another only in each search, as a
    StoreError)."""
    return None if value is None else check_int(value, "hnsw_ef", 0)


class EdgeSearchOptions(TypedDict, total=False):
    """:class:`EdgeSearch` as keywords (``**options`` of a dense or hybrid edge store class)."""

    exact: bool
    hnsw_ef: int | None


class _EdgeDenseOptions(EdgeSearchOptions, StoreOptions, total=False):
    """The keywords of a dense edge store besides its path, index, maintenance and windows."""


class _EdgeBm25Options(Bm25Options, StoreOptions, total=False):
    """The keywords of a keyword edge store besides its path."""


class _EdgeJointOptions(_EdgeDenseOptions, _EdgeBm25Options, total=False):
    """The keywords of a hybrid edge store besides its path."""


class _EdgeSurface:
    """What a store on qdrant-edge shows of its shard (the backend it holds, maintained through the store's one
    engine-call choke point)."""

    backend: EdgeBackend
    if TYPE_CHECKING:  # the store's own (QdrantStore._maintain), declared for the type checker only

        def _maintain(self, op: Op) -> Any: ...

    #: qdrant-edge-py 0.9 keeps the GIL for the whole of a search (benchmarks/speed/bench_leg_overlap.py), so no other
    #: Python thread runs meanwhile: the engine starts this leg after the others are under way.
    holds_gil: bool = True

    @property
    def path(self) -> Path:
        """The store's directory."""
        return self.backend.path

    def flush(self) -> None:
        """Write pending changes to the segments (the write-ahead log already makes them durable)."""
        self._maintain(Op(self.backend.flush, (), "flush"))

    def optimize(self) -> bool:
        """Run Qdrant's optimizers (merge segments, vacuum deleted points, build the shard's index); blocks until
        done.

        Returns:
            True if anything was optimized.
        """
        return bool(self._maintain(Op(self.backend.optimize, (), "optimize")))


class _DenseEdgeSurface(_EdgeSurface):
    """The dense search settings of a store with a dense vector on qdrant-edge (read by every search)."""

    @property
    def exact(self) -> bool:
        """Force exact search (float vectors, every point) even after :meth:`optimize`."""
        return self.backend.exact

    @exact.setter
    def exact(self, value: bool) -> None:
        self.backend.exact = bool(value)

    @property
    def hnsw_ef(self) -> int | None:
        """HNSW search breadth once an index exists; None is Qdrant's default."""
        return self.backend.hnsw_ef

    @hnsw_ef.setter
    def hnsw_ef(self, value: int | None) -> None:
        self.backend.hnsw_ef = check_hnsw_ef(value)

    @property
    def filtered_search(self) -> str:
        """How a filtered search runs once the shard walks an HNSW graph: ``"auto"`` (the default: a scope under
        the shard's scan reach, 97k points, is scanned on the int8 copy and rescored; a larger one below
        ``GRAPH_TRUST`` (97%) of the points is exact, where a graph walk misses in-scope hits; else the graph with
        ACORN), ``"acorn"`` (Qdrant's plan with ACORN: faster, recall@10 ~0.9 for a scope that is a region of the
        space) or ``"graph"`` (Qdrant's plan alone). See :mod:`~rrf_retriever.stores.qdrant.edge_index`."""
        return self.backend.filtered_search

    @filtered_search.setter
    def filtered_search(self, value: str) -> None:
        if value not in FILTERED_SEARCH:
            msg = f"filtered_search must be one of {list(FILTERED_SEARCH)}, got {value!r}"
            raise InvalidArgumentError(msg)
        self.backend.filtered_search = value


class QdrantEdgeDenseStore(_DenseEdgeSurface, DenseKind[EdgeBackend]):
    """A dense store on qdrant-edge, Qdrant's in-process engine: persistent, for large collections.

    The store lives in the directory ``path`` (``shard/`` holds Qdrant's segments and write-ahead log,
    ``rrf_store.json`` the dimension). Only one store may open a directory at a time: a second opener, in this
    process or another, gets :class:`~rrf_retriever.errors.StoreLockedError`. ``path=None`` uses a temporary
    directory removed by :meth:`close`.

    New points are searched exactly (float vectors) until :meth:`optimize` moves them into an optimized segment,
    indexed as ``index`` says. By default (``index="int8"``, ``auto_optimize=True``) the store optimizes by itself
    once an add leaves :data:`AUTO_OPTIMIZE_POINTS` points outside the optimized segments: their vectors get an int8
    copy that a search scans first (``limit`` x ``INT8_OVERSAMPLING`` candidates), rescoring the candidates with
    the float vectors (see ``benchmarks/RESULTS.md``, "The path users take"). Once an add leaves the shard holding
    ``graph_points`` points (default :data:`~rrf_retriever.stores.qdrant.edge_index.GRAPH_POINTS`, 100k) the shard
    grows an HNSW graph over its int8 copy (:meth:`grow_graph`; kind ``"int8-hnsw"``): that add blocks while the
    graph is built (12-19 s at 100k-120k on 2 cores; "Scale: 10k to 1M" in benchmarks/RESULTS.md).

    Args:
        embedding: As for :class:`~rrf_retriever.stores.qdrant.QdrantDenseStore`.
        path: The store's directory (created if missing), or None for a temporary one.
        exact: Force exact search (float vectors, every point) even after :meth:`optimize`.
        hnsw_ef: HNSW search breadth (``ef``) once an index exists; None is Qdrant's default.
        index: How a NEW shard indexes optimized segments: ``"int8"`` (scalar-quantized copy + rescoring, the
            default), ``"hnsw"`` (Qdrant's HNSW graph, m=16: the fastest search on the largest shards, but its
            build is slow on few cores and holds the GIL) or ``"plain"`` (exact float scan). None: the shard's
            own kind, else ``"int8"``; another kind than an existing shard's is an error.
        auto_optimize: True: optimize after an add that leaves :data:`AUTO_OPTIMIZE_POINTS` points unoptimized
            (int8 and plain shards; never for ``"hnsw"``); an int: that many points, for any kind; False: only
            when :meth:`optimize` is called.
        graph_points: An int8 shard with ``auto_optimize`` on grows its HNSW graph once an add leaves it holding
            this many points; None: never by itself (:meth:`grow_graph` does it on request).
        batch_size: Points per update operation.
        index_keys: Metadata keys to index as documents are written (e.g. ``["session_id"]``), so filtered
            queries on them never build an index themselves.
        max_auto_indexes: How many payload indexes a filtered query may build on first use (default 8); past it,
            other keys are filtered without an index (correct, slower).
        max_windows, window_overlap: As for :class:`~rrf_retriever.stores.qdrant.QdrantDenseStore` (saved in
            the meta file; another value than the shard's is an error).

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed (extra ``qdrant``).
        StoreLockedError: another store holds ``path``.
        InvalidArgumentError: an unknown ``index`` or one that differs from the shard's; a bad ``auto_optimize``.
    """

    def __init__(
        self,
        embedding: Any,
        path: str | os.PathLike[str] | None = None,
        *,
        index: str | None = None,
        auto_optimize: bool | int = True,
        max_windows: int | None = None,
        window_overlap: int | None = None,
        graph_points: int | None = GRAPH_POINTS,
        **options: Unpack[_EdgeDenseOptions],
    ) -> None:
        given = split_options(type(self).__name__, options, EdgeSearch, StoreSettings)
        super().__init__(embedding, window_settings(max_windows, window_overlap), take(StoreSettings, given))
        if graph_points is not None and (isinstance(graph_points, bool) or not isinstance(graph_points, int)):
            msg = f"graph_points must be a number of points or None, not {type(graph_points).__name__}"
            raise InvalidTypeError(msg)
        if graph_points is not None and graph_points < 1:
            msg = f"graph_points must be None or a number of points >= 1, got {graph_points!r}"
            raise InvalidArgumentError(msg)
        self._graph_points = graph_points
        if index is not None and index not in INDEX_KINDS:
            msg = f"index must be one of {list(INDEX_KINDS)} or None, got {index!r}"
            raise InvalidArgumentError(msg)
        if not isinstance(auto_optimize, (bool, int)):
            msg = f"auto_optimize must be a bool or a number of points, not {type(auto_optimize).__name__}"
            raise InvalidTypeError(msg)
        if not isinstance(auto_optimize, bool) and auto_optimize < 1:
            msg = f"auto_optimize must be True, False or a number of points >= 1, got {auto_optimize!r}"
            raise InvalidArgumentError(msg)
        self._auto_optimize = auto_optimize
        self._deferring = 0  # open deferred_maintenance blocks
        search = take(EdgeSearch, given)
        self._open(EdgeBackend(DENSE_LAYOUT, type(self).__name__, path, prefix="rrf-edge-", exact=search.exact,
                               hnsw_ef=search.hnsw_ef, index=index))

    @property
    def index(self) -> str:
        """The shard's index kind (``INDEX_KINDS``); read from the shard's meta file when it exists."""
        return str(self.backend.index)

    @property
    def auto_optimize_points(self) -> int | None:
        """After an add leaving this many points unoptimized, the store optimizes (None: never by itself)."""
        if self._auto_optimize is False:
            return None
        if self._auto_optimize is True:
            return None if self.index == "hnsw" else AUTO_OPTIMIZE_POINTS
        return int(self._auto_optimize)

    def unoptimized_points(self) -> int:
        """Points outside the optimized segments (searched by an exact scan of their float vectors)."""
        return int(self._maintain(Op(self.backend.unoptimized_points, (), "read the shard's info")))

    def add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Upsert documents as :meth:`QdrantDenseStore.add <rrf_retriever.stores.qdrant.QdrantDenseStore.add>`
        does; then optimize if the add left :attr:`auto_optimize_points` points unoptimized (within
        :meth:`deferred_maintenance`: at the end of the block)."""
        super().add(ids, texts, metadatas, vectors)
        if not self._deferring:
            self._maintain_after_add()

    @contextmanager
    def deferred_maintenance(self) -> Iterator[None]:
        """Within the block, adds leave optimizing (and growing the graph) to its end, where it runs once as after
        one add of everything written (not after an error: the next add does). An add in chunks runs in it: one
        optimization per chunk merged the segments again and again (2.5 GB RSS kept for 100k documents).

        Example:
            >>> from rrf_retriever.embeddings import HashingEmbedding
            >>> with QdrantEdgeDenseStore(HashingEmbedding(dim=8), auto_optimize=2) as store:
            ...     with store.deferred_maintenance():
            ...         store.add(["a", "b"], ["one", "two"])
            ...         store.unoptimized_points()  # past the threshold, left to the end of the block
            2
        """
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if not self._deferring:
            self._maintain_after_add()

    def _maintain_after_add(self) -> None:
        threshold = self.auto_optimize_points
        if threshold is None:
            return
        graph = self._graph_points
        if graph is not None and self.index == DEFAULT_INDEX and self.count() >= graph:
            self.grow_graph()
        elif self.unoptimized_points() >= threshold:
            self.optimize()

    def grow_graph(self) -> bool:
        """Give an int8 shard an HNSW graph over its int8 copy (its kind becomes ``"int8-hnsw"``, kept when
        reopened), and optimize it: blocks until the graph is built (qdrant-edge keeps the GIL meanwhile).

        Returns:
            True if the shard changed; False for a shard of another kind than ``"int8"`` (nothing done).
        """
        return bool(self._maintain(Op(self.backend.grow_graph, (), "grow the HNSW graph")))


signature_with(QdrantEdgeDenseStore.__init__, EdgeSearch, StoreSettings)


class QdrantEdgeKeywordStore(_EdgeSurface, KeywordKind[EdgeBackend]):
    """A BM25 keyword store on qdrant-edge: persistent, in-process.

    It implements :class:`~rrf_retriever.stores.base.KeywordStore` like
    :class:`~rrf_retriever.stores.qdrant.QdrantKeywordStore` (scheme: :mod:`rrf_retriever.stores.qdrant.keyword`).
    The store lives in the directory ``path`` (``shard/`` holds the sparse vector ``"bm25"`` with ``Modifier.Idf``
    and no dense vector, ``rrf_store.json`` the BM25 settings under ``"bm25"``). One store may open a directory at
    a time: a second opener gets :class:`~rrf_retriever.errors.StoreLockedError`. ``path=None`` uses a temporary
    directory removed by :meth:`close`.

    Args:
        path: The store's directory (created if missing), or None for a temporary one.
        analyzer, k1, b, avgdl, title_weight, live_idf, auto_reweight, k3, short_query_terms: As for
            :class:`~rrf_retriever.stores.qdrant.QdrantKeywordStore`.
        batch_size: Points per update operation.
        index_keys, max_auto_indexes: Payload indexes, as for the dense edge store.

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed (extra ``qdrant``).
        StoreLockedError: another store holds ``path``.
        StoreError: ``path`` holds another kind of store (e.g. a dense one).
        InvalidArgumentError: settings that differ from the saved ones.

    Example:
        >>> with QdrantEdgeKeywordStore() as store:  # a temporary directory
        ...     store.add(["a"], ["hello world"])
        ...     [h.id for h in store.search("hello", 3)]
        ['a']
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, **options: Unpack[_EdgeBm25Options]) -> None:
        given = split_options(type(self).__name__, options, Bm25Settings, StoreSettings)
        super().__init__(take(Bm25Settings, given), take(StoreSettings, given))
        self._open(EdgeBackend(KEYWORD_LAYOUT, type(self).__name__, path, prefix="rrf-edge-kw-"))


signature_with(QdrantEdgeKeywordStore.__init__, Bm25Settings, StoreSettings)


class QdrantEdgeHybridStore(_DenseEdgeSurface, JointKind[EdgeBackend]):
    """Dense and BM25 legs in ONE qdrant-edge shard, in the directory ``path`` (locked against a second opener;
    None: a temporary directory removed by :meth:`close`). Use :attr:`dense` and :attr:`keyword` as the engine's
    two sources. :meth:`search_batch` runs the legs one after the other under the store's lock (one call from the
    engine, no thread per leg; the shard keeps the GIL while it searches anyway). The meta file ``rrf_store.json``
    holds the dimension, the BM25 settings and ``"vectors": "dense+bm25"``.

    Args:
        embedding: The dense leg's embedding.
        path: The store's directory (created if missing), or None for a temporary one.
        exact, hnsw_ef: Dense search, as for :class:`QdrantEdgeDenseStore`.
        analyzer, k1, b, avgdl, title_weight, live_idf, auto_reweight, k3, short_query_terms: The BM25 leg, as for
            :class:`QdrantEdgeKeywordStore`.
        batch_size, index_keys, max_auto_indexes: As for the edge stores.

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed (extra ``qdrant``).
        StoreLockedError: another store holds ``path``.
        StoreError: ``path`` holds another kind of store.

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> with QdrantEdgeHybridStore(HashingEmbedding(dim=8)) as store:  # a temporary directory
        ...     store.add(["a"], ["hello world"])
        ...     [h.id for h in store.keyword.search("hello", 3)]
        ['a']
    """

    def __init__(
        self, embedding: Any, path: str | os.PathLike[str] | None = None, **options: Unpack[_EdgeJointOptions]
    ) -> None:
        given = split_options(type(self).__name__, options, EdgeSearch, Bm25Settings, StoreSettings)
        super().__init__(embedding, take(Bm25Settings, given), take(StoreSettings, given))
        search = take(EdgeSearch, given)
        self._open(EdgeBackend(JOINT_LAYOUT, type(self).__name__, path, prefix="rrf-edge-hy-", exact=search.exact,
                               hnsw_ef=search.hnsw_ef))


signature_with(QdrantEdgeHybridStore.__init__, EdgeSearch, Bm25Settings, StoreSettings)
