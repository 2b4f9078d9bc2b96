""":class:`QdrantEdgeHybridStore`: both legs in one qdrant-edge shard (a named dense vector and the BM25 sparse
vector on every point). The scheme is :mod:`rrf_retriever.stores.qdrant.hybrid`'s; the directory lock, lifecycle
and shard calls are the edge stores' own, reused. :meth:`search_batch` runs the legs one after the other under
the store's lock (one call from the engine, no thread per leg; the shard keeps the GIL while it searches anyway).
qdrant-edge 0.9 also has ``EdgeShard.query_batch``; in-process it would save one call crossing per leg, not used
and not measured. The meta file ``rrf_store.json`` holds the dimension, the BM25 settings and
``"vectors": "dense+bm25"``.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
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
from rrf_retriever.stores.qdrant.hybrid import DENSE_VECTOR_NAME, QdrantHybridBase
from rrf_retriever.stores.qdrant.keyword import SPARSE_VECTOR_NAME
from rrf_retriever.stores.qdrant.keyword_edge import QdrantEdgeKeywordStore

__all__ = ["QdrantEdgeHybridStore"]

_LAYOUT = "dense+bm25"


class QdrantEdgeHybridStore(QdrantHybridBase):
    """Dense and BM25 legs in ONE qdrant-edge shard, in the directory ``path`` (locked against a second opener;
    None: a temporary directory removed by :meth:`close`). Use :attr:`dense` and :attr:`keyword` as the engine's
    two sources.

    Args:
        embedding: The dense leg's embedding.
        path: The store's directory (created if missing), or None for a temporary one.
        exact, hnsw_ef: Dense search, as for :class:`~rrf_retriever.stores.qdrant.QdrantEdgeDenseStore`.
        analyzer, k1, b, avgdl, title_weight, live_idf, auto_reweight: The BM25 leg, as for
            :class:`~rrf_retriever.stores.qdrant.QdrantEdgeKeywordStore`.
        batch_size, index_keys, max_auto_indexes: As for the edge stores.

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed (extra ``qdrant``).
        StoreLockedError: another store holds ``path``.
        StoreError: ``path`` holds another kind of store.

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> with QdrantEdgeHybridStore(HashingEmbedding(dim=8), path="/tmp/edge-hy") as store:  # doctest: +SKIP
        ...     store.add(["a"], ["hello world"])
        ...     [h.id for h in store.keyword.search("hello", 3)]
        ['a']
    """

    holds_gil: bool = True
    engine_name = "Qdrant edge"

    def __init__(
        self,
        embedding: Any,
        path: str | os.PathLike[str] | None = None,
        *,
        exact: bool = False,
        hnsw_ef: int | None = None,
        analyzer: Analyzer | None = None,
        k1: float | None = None,
        b: float | None = None,
        avgdl: float | None = None,
        title_weight: float | None = None,
        live_idf: bool = True,
        auto_reweight: bool = True,
        batch_size: int = UPSERT_BATCH,
        index_keys: Sequence[str] = (),
        max_auto_indexes: int = MAX_AUTO_INDEXES,
    ) -> None:
        super().__init__(
            embedding, analyzer=analyzer, k1=k1, b=b, avgdl=avgdl, live_idf=live_idf, auto_reweight=auto_reweight,
            title_weight=title_weight,
            batch_size=batch_size, index_keys=index_keys, max_auto_indexes=max_auto_indexes,
        )
        self._qe, self._np = self._import_engine("qdrant-edge-py", "qdrant_edge", "numpy")
        self.exact = bool(exact)
        self.hnsw_ef = hnsw_ef
        self._open_directory(path, "rrf-edge-hy-")

    # The edge stores' lock, lifecycle and shard calls, word for word.
    _open_directory = QdrantEdgeDenseStore._open_directory
    _load_shard = QdrantEdgeDenseStore._load_shard
    _acquire_lock = QdrantEdgeDenseStore._acquire_lock
    _release_lock = QdrantEdgeDenseStore._release_lock
    _guard = QdrantEdgeDenseStore._guard
    flush = QdrantEdgeDenseStore.flush
    optimize = QdrantEdgeDenseStore.optimize
    close = QdrantEdgeDenseStore.close
    __del__ = QdrantEdgeDenseStore.__del__
    _delete = QdrantEdgeDenseStore._delete
    _retrieve = QdrantEdgeDenseStore._retrieve
    _count = QdrantEdgeDenseStore._count
    _create_index = QdrantEdgeDenseStore._create_index
    _condition = QdrantEdgeDenseStore._condition
    _filter = QdrantEdgeDenseStore._filter
    _has_ids = QdrantEdgeDenseStore._has_ids
    _bool = QdrantEdgeDenseStore._bool
    _where = QdrantEdgeKeywordStore._where
    _sparse = QdrantEdgeKeywordStore._sparse
    _sparse_search = QdrantEdgeKeywordStore._sparse_search
    _scroll = QdrantEdgeKeywordStore._scroll

    def _check_open(self) -> None:
        if self._closed:
            msg = "this QdrantEdgeHybridStore is closed"
            raise StoreError(msg)

    _check_usable = _check_open

    def _open_existing(self) -> None:
        meta = read_store_meta(self.path)
        if meta is None:
            return
        shard_dir, meta_file = self.path / _SHARD_DIR, self.path / _META_FILE
        if meta.get("vectors") != _LAYOUT or "bm25" not in meta:
            msg = f"{self.path} holds another kind of store (not a joint dense + BM25 shard); use another path"
            raise StoreError(msg)
        params = self._adopt(meta["bm25"], self._where())
        try:
            dim = int(meta["dimension"])
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"{meta_file} is unreadable: {exc}"
            raise StoreError(msg) from exc
        self._load_shard(shard_dir)
        self._params, self._dimension = params, dim

    def _write_meta(self, dim: int, params: dict[str, Any]) -> None:
        write_store_meta(self.path, {"vectors": _LAYOUT, "dimension": dim, "distance": "cosine", "bm25": params})

    # -- primitives: calls on the shard (``api`` is unused: one engine, sync) -----------------------------
    def _exists(self, api: Any) -> bool:
        return False  # asked only while nothing is known: the shard is opened with its meta file or not at all

    def _read_layout(self, api: Any) -> Any:  # pragma: no cover - never asked (see _exists)
        return self._params, self._dimension

    def _create(self, api: Any, dim: int, params: dict[str, Any]) -> None:
        qe = self._qe
        shard_dir = self.path / _SHARD_DIR
        if shard_dir.exists():  # a shard without our meta file: a crash between create and meta write
            shutil.rmtree(shard_dir)
        config = qe.EdgeConfig(
            vectors={DENSE_VECTOR_NAME: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE_VECTOR_NAME: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        shard = qe.EdgeShard.create(str(shard_dir), config)
        try:
            self._write_meta(dim, params)
        except BaseException:
            shard.close()
            raise
        self._shard = shard

    def _save_params(self, api: Any, params: dict[str, Any]) -> None:
        self._write_meta(int(self._dimension or 0), params)

    def _upsert(self, api: Any, points: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
        qe = self._qe
        if all(DENSE_VECTOR_NAME in vectors for _, vectors, _ in points):
            self._shard.update(qe.UpdateOperation.upsert_points(
                [qe.Point(uuid.UUID(p), v, pl) for p, v, pl in points]))
            return
        # reweight rewrites the BM25 values only: update that vector, keep the dense one.
        self._shard.update(qe.UpdateOperation.update_vectors(
            [qe.PointVectors(uuid.UUID(p), v) for p, v, _ in points]))

    def _nearest(self, api: Any, query: list[float], limit: int, query_filter: Any) -> Any:
        qe = self._qe
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(query, using=DENSE_VECTOR_NAME),
            filter=query_filter,
            with_payload=True,
            params=qe.SearchParams(exact=self.exact, hnsw_ef=self.hnsw_ef),
        )
        return self._shard.query(request)

    def _query_batch(self, api: Any, calls: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        return [getattr(self, f"_{name}")(api, *args) for name, args in calls]

    def __repr__(self) -> str:
        return f"QdrantEdgeHybridStore(path={str(self.path)!r}, dimension={self._dimension})"
