""":class:`QdrantEdgeKeywordStore`: BM25 as sparse vectors on qdrant-edge-py, Qdrant's in-process engine.

It implements :class:`~rrf_retriever.stores.base.KeywordStore` like
:class:`~rrf_retriever.stores.qdrant.QdrantKeywordStore` (scheme: :mod:`rrf_retriever.stores.qdrant.keyword`).
The shard holds one named sparse vector ``"bm25"`` with ``Modifier.Idf`` and no dense vector; the BM25 settings
live in the store's meta file ``rrf_store.json`` under ``"bm25"`` (the dense edge store keeps ``"dimension"`` in
the same file, so one directory can describe both legs). The directory lock, the lifecycle and the shard calls are
:class:`~rrf_retriever.stores.qdrant.QdrantEdgeDenseStore`'s, reused.

qdrant-edge 0.9 supports sparse vectors with the IDF modifier natively (``EdgeSparseVectorParams(modifier=
Modifier.Idf)``); its IDF statistics count deleted points until a segment is vacuumed, so searches ask for the IDF
of the live points (``SearchParams(idf=IdfParams(corpus=...))``: measured +0.07 ms a query on SciFact, but
+2.4 ms of a 3 ms query at 100k documents, where the filter is checked along each term's posting list). So they
ask for it only while the shard holds such points: every point holds the one sparse vector, so the shard's indexed
vectors outnumber its points exactly when some are deleted or replaced and not vacuumed yet; otherwise Qdrant's
own statistics ARE those of the live points (same scores, measured at 100k: 0.6 ms instead of 3 ms).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import StoreError
from rrf_retriever.stores.qdrant.base import MAX_AUTO_INDEXES, UPSERT_BATCH
from rrf_retriever.stores.qdrant.edge import (
    _META_FILE,
    _SHARD_DIR,
    QdrantEdgeDenseStore,
    read_store_meta,
    write_store_meta,
)
from rrf_retriever.stores.qdrant.keyword import SPARSE_VECTOR_NAME, QdrantKeywordStoreBase

__all__ = ["QdrantEdgeKeywordStore"]

#: The key of the BM25 settings in the meta file.
_META_KEY = "bm25"


class QdrantEdgeKeywordStore(QdrantKeywordStoreBase):
    """A BM25 keyword store on qdrant-edge: persistent, in-process, ~2 ms a query at 5,000 to 11,000 documents.

    The store lives in the directory ``path`` (``shard/`` holds Qdrant's segments and write-ahead log,
    ``rrf_store.json`` the BM25 settings). One store may open a directory at a time (an ``fcntl.flock`` on
    ``path/.rrf_retriever.lock``, as the dense edge store): a second opener gets
    :class:`~rrf_retriever.errors.StoreLockedError`. ``path=None`` uses a temporary directory removed by
    :meth:`close`.

    Args:
        path: The store's directory (created if missing), or None for a temporary one.
        analyzer, k1, b, avgdl, title_weight, live_idf: As for :class:`~rrf_retriever.stores.qdrant.QdrantKeywordStore`.
        batch_size: Points per update operation.
        index_keys, max_auto_indexes: Payload indexes, as for the dense edge store.

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed (extra ``qdrant``).
        StoreLockedError: another store holds ``path``.
        StoreError: ``path`` holds another kind of store (e.g. a dense one).
        InvalidArgumentError: settings that differ from the saved ones.

    Example:
        >>> with QdrantEdgeKeywordStore(path="/tmp/edge-kw") as store:  # doctest: +SKIP
        ...     store.add(["a"], ["hello world"])
        ...     [h.id for h in store.search("hello", 3)]
        ['a']
    """

    #: Measured as for the dense edge store (benchmarks/bench_sparse_parity.py: a sparse query beside a GIL-free
    #: thread overlaps 0.01): qdrant-edge-py 0.9 keeps the GIL for the whole of a query, so the engine starts this
    #: leg after the others are under way.
    holds_gil: bool = True
    engine_name = "Qdrant edge"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        analyzer: Analyzer | None = None,
        k1: float | None = None,
        b: float | None = None,
        avgdl: float | None = None,
        title_weight: float | None = None,
        live_idf: bool = True,
        auto_reweight: bool = True,
        batch_size: int = UPSERT_BATCH,
        index_keys: Any = (),
        max_auto_indexes: int = MAX_AUTO_INDEXES,
    ) -> None:
        super().__init__(
            analyzer=analyzer, k1=k1, b=b, avgdl=avgdl, live_idf=live_idf, auto_reweight=auto_reweight,
            title_weight=title_weight,
            batch_size=batch_size,
            index_keys=index_keys, max_auto_indexes=max_auto_indexes,
        )
        self._qe, self._np = self._import_engine("qdrant-edge-py", "qdrant_edge", "numpy")
        # Bumped before and after every write: a staleness answer read across a write is not cached.
        self._generation = 0
        self._idf_cache: tuple[int, bool] | None = None
        self._open_directory(path, "rrf-edge-kw-")

    # The dense edge store's lock, lifecycle and shard calls, word for word.
    _open_directory = QdrantEdgeDenseStore._open_directory
    _load_shard = QdrantEdgeDenseStore._load_shard
    _acquire_lock = QdrantEdgeDenseStore._acquire_lock
    _release_lock = QdrantEdgeDenseStore._release_lock
    _guard = QdrantEdgeDenseStore._guard
    flush = QdrantEdgeDenseStore.flush
    close = QdrantEdgeDenseStore.close
    __del__ = QdrantEdgeDenseStore.__del__
    _retrieve = QdrantEdgeDenseStore._retrieve
    _count = QdrantEdgeDenseStore._count
    _create_index = QdrantEdgeDenseStore._create_index
    _scroll = QdrantEdgeDenseStore._scroll
    _condition = QdrantEdgeDenseStore._condition
    _filter = QdrantEdgeDenseStore._filter
    _has_ids = QdrantEdgeDenseStore._has_ids
    _bool = QdrantEdgeDenseStore._bool

    # Writes: the dense edge store's, plus the generation bump that drops a cached staleness answer.
    def optimize(self) -> bool:
        """Run Qdrant's optimizers (merge segments; vacuum deleted points past Qdrant's threshold); blocks."""
        self._generation += 1
        try:
            return QdrantEdgeDenseStore.optimize(self)  # type: ignore[arg-type]
        finally:
            self._generation += 1

    def _upsert(self, api: Any, points: list[tuple[str, Any, dict[str, Any]]]) -> None:
        self._generation += 1
        try:
            QdrantEdgeDenseStore._upsert(self, api, points)  # type: ignore[arg-type]
        finally:
            self._generation += 1

    def _delete(self, api: Any, pids: list[str]) -> None:
        self._generation += 1
        try:
            QdrantEdgeDenseStore._delete(self, api, pids)  # type: ignore[arg-type]
        finally:
            self._generation += 1

    def _stats_are_live(self) -> bool:
        """Whether Qdrant's own IDF statistics count live points only (no deleted or replaced point awaits a
        vacuum). One point, one sparse vector: indexed vectors == points exactly then."""
        generation = self._generation
        cached = self._idf_cache
        if cached is not None and cached[0] == generation:
            return cached[1]
        info = self._shard.info()
        live = int(info.indexed_vectors_count) == int(info.points_count)
        self._idf_cache = (generation, live)
        return live

    def _check_open(self) -> None:
        if self._closed:
            msg = "this QdrantEdgeKeywordStore is closed"
            raise StoreError(msg)

    _check_usable = _check_open

    def _where(self) -> str:
        return f"the store at {self.path}"

    def _open_existing(self) -> None:
        meta = read_store_meta(self.path)
        if meta is None:
            return
        shard_dir = self.path / _SHARD_DIR
        if _META_KEY not in meta:
            msg = f"{self.path} holds another kind of store (no BM25 settings in {_META_FILE}); use another path"
            raise StoreError(msg)
        params = self._adopt(meta[_META_KEY], self._where())
        self._load_shard(shard_dir)
        self._params = params

    def _write_meta(self, params: dict[str, Any]) -> None:
        write_store_meta(self.path, {_META_KEY: params})

    def _sparse(self, indices: list[int], values: list[float]) -> Any:
        return {SPARSE_VECTOR_NAME: self._qe.SparseVector(indices, values)}

    # -- primitives: calls on the shard (``api`` is unused: one engine, sync) -----------------------------
    def _exists(self, api: Any) -> bool:
        return False  # asked only while no settings are known: the shard is opened with them or not at all

    def _read_params(self, api: Any) -> Any:  # pragma: no cover - never asked (see _exists)
        return self._params

    def _create(self, api: Any, params: dict[str, Any]) -> None:
        qe = self._qe
        shard_dir = self.path / _SHARD_DIR
        if shard_dir.exists():  # a shard without our meta file: a crash between create and meta write
            shutil.rmtree(shard_dir)
        config = qe.EdgeConfig(
            sparse_vectors={SPARSE_VECTOR_NAME: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
        )
        shard = qe.EdgeShard.create(str(shard_dir), config)
        try:
            self._write_meta(params)
        except BaseException:
            shard.close()
            raise
        self._shard = shard

    def _save_params(self, api: Any, params: dict[str, Any]) -> None:
        self._write_meta(params)

    def _sparse_search(
        self, api: Any, indices: list[int], values: list[float], limit: int, query_filter: Any
    ) -> Any:
        qe = self._qe
        params = None
        # The IDF of the live points, asked for only while the index also counts deleted ones (not vacuumed yet).
        # A store sharing its shard with dense vectors (the hybrid store reuses this method) always asks.
        if self.live_idf and not (isinstance(self, QdrantEdgeKeywordStore) and self._stats_are_live()):
            corpus = qe.Filter(must=[qe.HasVectorCondition(SPARSE_VECTOR_NAME)])
            params = qe.SearchParams(idf=qe.IdfParams(corpus=corpus))
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(qe.SparseVector(indices, values), using=SPARSE_VECTOR_NAME),
            filter=query_filter,
            with_payload=True,
            params=params,
        )
        return self._shard.query(request)

    def __repr__(self) -> str:
        return f"QdrantEdgeKeywordStore(path={str(self.path)!r}, k1={self.k1:g}, b={self.b:g}, avgdl={self.avgdl})"
