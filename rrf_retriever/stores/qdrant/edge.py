""":class:`QdrantEdgeDenseStore`: the dense store on qdrant-edge-py, Qdrant's in-process engine.

It implements :class:`~rrf_retriever.stores.base.DenseStore` like
:class:`~rrf_retriever.stores.qdrant.QdrantDenseStore` (layout, point ids and filters of
:mod:`rrf_retriever.stores.qdrant.base`); this module supplies the shard's primitive calls, the directory lock and
the store's own small meta file.

qdrant-edge 0.9 reads a Python ``bool`` in ``MatchValue`` as an integer (``True`` would match ``1``); we pass
``numpy.bool_`` there, which it reads as a JSON boolean (guarded by a test).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rrf_retriever.errors import StoreError, StoreUnavailableError
from rrf_retriever.stores.lockfile import lock_directory, release
from rrf_retriever.stores.qdrant.base import MAX_AUTO_INDEXES, METADATA_KEY, UPSERT_BATCH, QdrantStoreBase

__all__ = ["QdrantEdgeDenseStore"]

_LOCK_FILE = ".rrf_retriever.lock"
_META_FILE = "rrf_store.json"
_SHARD_DIR = "shard"
_META_FORMAT = 1


class QdrantEdgeDenseStore(QdrantStoreBase):
    """A dense store on qdrant-edge, Qdrant's in-process engine: persistent, fast past 100k points.

    The store lives in the directory ``path`` (``shard/`` holds Qdrant's segments and write-ahead log,
    ``rrf_store.json`` the dimension). Only one store may open a directory at a time: we hold an
    ``fcntl.flock`` on ``path/.rrf_retriever.lock`` (a second raw open would break the first handle's
    write-ahead log), so a second opener, in this process or another, gets
    :class:`~rrf_retriever.errors.StoreLockedError`. ``path=None`` uses a temporary directory removed by
    :meth:`close`.

    Search is exact until :meth:`optimize` builds an HNSW index (worth it past ~20k points; check its recall).

    Args:
        embedding: As for :class:`~rrf_retriever.stores.qdrant.QdrantDenseStore`.
        path: The store's directory (created if missing), or None for a temporary one.
        exact: Force exact search even after :meth:`optimize`.
        hnsw_ef: HNSW search breadth (``ef``) once an index exists; None is Qdrant's default.
        batch_size: Points per update operation.
        index_keys: Metadata keys to index as documents are written (e.g. ``["session_id"]``), so filtered
            queries on them never build an index themselves.
        max_auto_indexes: How many payload indexes a filtered query may build on first use (default 8); past it,
            other keys are filtered without an index (correct, slower).

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed (extra ``qdrant``).
        StoreLockedError: another store holds ``path``.

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> with QdrantEdgeDenseStore(HashingEmbedding(dim=8), path="/tmp/edge") as store:  # doctest: +SKIP
        ...     store.add(["a"], ["hello"])
    """

    #: qdrant-edge-py 0.9 keeps the GIL for the whole of a search (benchmarks/bench_leg_overlap.py), so no other
    #: Python thread runs meanwhile; the engine starts this leg after the others are under way.
    holds_gil: bool = True
    engine_name = "Qdrant edge"

    def __init__(
        self,
        embedding: Any,
        path: str | os.PathLike[str] | None = None,
        *,
        exact: bool = False,
        hnsw_ef: int | None = None,
        batch_size: int = UPSERT_BATCH,
        index_keys: Sequence[str] = (),
        max_auto_indexes: int = MAX_AUTO_INDEXES,
    ) -> None:
        super().__init__(embedding, batch_size, index_keys=index_keys, max_auto_indexes=max_auto_indexes)
        self._qe, self._np = self._import_engine("qdrant-edge-py", "qdrant_edge", "numpy")
        self.exact = bool(exact)
        self.hnsw_ef = hnsw_ef
        self._open_directory(path, "rrf-edge-")

    # -- lifecycle ---------------------------------------------------------------------------------
    def _open_directory(self, path: str | os.PathLike[str] | None, prefix: str) -> None:
        """Take the directory (a temporary one for None), lock it, open what it holds; shared with the keyword
        store."""
        self._temporary = path is None
        self.path = Path(tempfile.mkdtemp(prefix=prefix)) if path is None else Path(path)
        self._shard: Any = None
        self._lock_fh: Any = None
        self._closed = False
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create the store directory {self.path}: {exc}"
            raise StoreUnavailableError(msg) from exc
        self._acquire_lock()
        try:
            self._open_existing()
        except BaseException:
            self._release_lock()
            raise

    def _acquire_lock(self) -> None:
        self._lock_fh = lock_directory(self.path / _LOCK_FILE, f"the store at {self.path}")

    def _release_lock(self) -> None:
        fh, self._lock_fh = self._lock_fh, None
        release(fh)

    def _open_existing(self) -> None:
        meta_file = self.path / _META_FILE
        shard_dir = self.path / _SHARD_DIR
        if not meta_file.is_file() or not shard_dir.is_dir():
            return
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            dim = int(meta["dimension"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            msg = f"{meta_file} is unreadable: {exc}"
            raise StoreError(msg) from exc
        self._load_shard(shard_dir)
        self._dimension = dim

    def _load_shard(self, shard_dir: Path) -> None:
        """Open the shard and learn which payload indexes it already has; shared with the keyword store."""
        try:
            self._shard = self._qe.EdgeShard.load(str(shard_dir))
        except Exception as exc:
            msg = f"cannot open the Qdrant edge shard at {shard_dir}: {exc}"
            raise StoreError(msg) from exc
        with contextlib.suppress(Exception):  # indexes already built persist with the shard
            for field, info in self._shard.info().payload_schema.items():
                if field.startswith(f"{METADATA_KEY}."):
                    key = field[len(METADATA_KEY) + 1 :]
                    self._indexed.add((key, str(info.data_type).rsplit(".", 1)[-1].lower()))

    def _check_open(self) -> None:
        if self._closed:
            msg = "this QdrantEdgeDenseStore is closed"
            raise StoreError(msg)

    _check_usable = _check_open

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        with self._lock:
            self._check_open()
            yield

    def flush(self) -> None:
        """Write pending changes to the segments (the write-ahead log already makes them durable)."""
        with self._guard():
            if self._shard is not None:
                self._call(self._shard.flush, "flush")

    def optimize(self) -> bool:
        """Run Qdrant's optimizers (merges segments, builds the HNSW index); blocks until done.

        Returns:
            True if anything was optimized.
        """
        with self._guard():
            return self._shard is not None and bool(self._call(self._shard.optimize, "optimize"))

    def close(self) -> None:
        """Flush, close the shard and release the directory lock (a temporary directory is removed)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._shard is not None:
                with contextlib.suppress(Exception):
                    self._shard.flush()
                with contextlib.suppress(Exception):
                    self._shard.close()
                self._shard = None
            self._release_lock()
            if self._temporary:
                shutil.rmtree(self.path, ignore_errors=True)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- primitives: calls on the shard (``api`` is unused: one engine, sync) -----------------------------
    def _exists(self, api: Any) -> bool:
        return False  # asked only while the dimension is unknown: the shard is opened with its dimension or not at all

    def _create(self, api: Any, dim: int) -> None:
        qe = self._qe
        shard_dir = self.path / _SHARD_DIR
        if shard_dir.exists():  # a shard without our meta file: a crash between create and meta write
            shutil.rmtree(shard_dir)
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine))
        shard = qe.EdgeShard.create(str(shard_dir), config)
        try:
            meta_file = self.path / _META_FILE
            tmp = meta_file.with_suffix(".tmp")
            meta = {"format": _META_FORMAT, "dimension": dim, "distance": "cosine"}
            tmp.write_text(json.dumps(meta), encoding="utf-8")
            os.replace(tmp, meta_file)
        except BaseException:
            shard.close()
            raise
        self._shard = shard

    def _upsert(self, api: Any, points: list[tuple[str, list[float], dict[str, Any]]]) -> None:
        qe = self._qe
        self._shard.update(qe.UpdateOperation.upsert_points([qe.Point(uuid.UUID(p), v, pl) for p, v, pl in points]))

    def _delete(self, api: Any, pids: list[str]) -> None:
        self._shard.update(self._qe.UpdateOperation.delete_points([uuid.UUID(p) for p in pids]))

    def _retrieve(self, api: Any, pids: list[str], with_vectors: bool) -> Any:
        return self._shard.retrieve([uuid.UUID(p) for p in pids], True, with_vectors)

    def _count(self, api: Any) -> int:
        return int(self._shard.count(self._qe.CountRequest(exact=True)))

    def _nearest(self, api: Any, query: list[float], limit: int, query_filter: Any) -> Any:
        qe = self._qe
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(query),
            filter=query_filter,
            with_payload=True,
            params=qe.SearchParams(exact=self.exact, hnsw_ef=self.hnsw_ef),
        )
        return self._shard.query(request)

    def _create_index(self, api: Any, field_key: str, kind: str) -> None:
        # Persisted in the shard (read back by _open_existing).
        schema = getattr(self._qe.PayloadSchemaType, kind.capitalize())
        self._shard.update(self._qe.UpdateOperation.create_field_index(field_key, schema))

    # -- filter models -------------------------------------------------------------------------------
    def _condition(self, field_key: str, value: Any) -> Any:
        qe = self._qe
        match = qe.MatchAny(value) if isinstance(value, list) else qe.MatchValue(value)
        return qe.FieldCondition(key=field_key, match=match)

    def _filter(self, **parts: Any) -> Any:
        return self._qe.Filter(**parts)

    def _has_ids(self, pids: frozenset[str]) -> Any:
        return self._qe.HasIdCondition({uuid.UUID(p) for p in pids})

    def _bool(self, value: bool) -> Any:
        # numpy.bool_: qdrant-edge 0.9 reads a Python bool as an integer, numpy's bool as a JSON bool.
        return self._np.bool_(value)

    def __repr__(self) -> str:
        return f"QdrantEdgeDenseStore(path={str(self.path)!r}, dimension={self._dimension})"
