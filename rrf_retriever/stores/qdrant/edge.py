""":class:`QdrantEdgeDenseStore`: the dense store on qdrant-edge-py, Qdrant's in-process engine.

It implements :class:`~rrf_retriever.stores.base.DenseStore` like
:class:`~rrf_retriever.stores.qdrant.QdrantDenseStore` (layout, point ids and filters of
:mod:`rrf_retriever.stores.qdrant.base`); this module supplies the shard's primitive calls, the directory lock and
the store's own small meta file.

qdrant-edge 0.9 reads a Python ``bool`` in ``MatchValue`` as an integer (``True`` would match ``1``); we pass
``numpy.bool_`` there, which it reads as a JSON boolean (guarded by a test). It also stores about one payload float
in nine that needs 16-17 significant digits one float64 step off (``415266.62493766355`` comes back, and is
filtered, as ``415266.6249376635``; a payload index holds the exact value only until its segment is optimized), so
a range bound within that step of such a value may read it on the wrong side. Integers and shorter floats are
exact (a strict xfail test in tests/unit/stores/test_qdrant_filter_property.py guards the note).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError, StoreUnavailableError
from rrf_retriever.stores.lockfile import lock_directory, release
from rrf_retriever.stores.qdrant.base import DOC_ID_KEY, MAX_AUTO_INDEXES, UPSERT_BATCH, QdrantStoreBase
from rrf_retriever.stores.qdrant.filters import IS_EMPTY, Bounds

__all__ = ["AUTO_OPTIMIZE_POINTS", "DEFAULT_INDEX", "INDEX_KINDS", "INT8_OVERSAMPLING", "QdrantEdgeDenseStore"]

_LOCK_FILE = ".rrf_retriever.lock"
_META_FILE = "rrf_store.json"
_SHARD_DIR = "shard"
_META_FORMAT = 1


def read_store_meta(path: Path) -> dict[str, Any] | None:
    """The store's meta file in ``path`` as a dict, or None when no shard was created there yet.

    Raises:
        StoreError: the file is unreadable or not a JSON object (never a raw OSError / ValueError).
    """
    meta_file = path / _META_FILE
    if not meta_file.is_file() or not (path / _SHARD_DIR).is_dir():
        return None
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        msg = f"{meta_file} is unreadable: {exc}"
        raise StoreError(msg) from exc
    if not isinstance(meta, dict):
        msg = f"{meta_file} is unreadable: not a JSON object"
        raise StoreError(msg)
    return meta


def write_store_meta(path: Path, meta: Mapping[str, Any]) -> None:
    """Write the store's meta file atomically (a temporary file, then ``os.replace``)."""
    meta_file = path / _META_FILE
    tmp = meta_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"format": _META_FORMAT, **meta}), encoding="utf-8")
    os.replace(tmp, meta_file)
#: How a new shard indexes its optimized segments; saved in the meta file (a shard keeps the kind it was created
#: with; a shard from before the setting is ``"hnsw"``, Qdrant's default). Measured at 100k x 384 on 2 cores
#: (benchmarks/bench_public_path.py, RESULTS.md "The path users take"): ``"int8"`` optimizes in ~1 s and searches
#: in ~1/5 of the exact time with recall@10 1.0 after rescoring; an HNSW build takes minutes and holds the GIL.
INDEX_KINDS = ("int8", "hnsw", "plain")
DEFAULT_INDEX = "int8"
#: ``auto_optimize=True``: an add leaving at least this many points outside the optimized segments optimizes the
#: shard (int8 and plain shards; an HNSW shard builds its graph only when :meth:`optimize` is called).
AUTO_OPTIMIZE_POINTS = 10_000
#: int8 search: ``limit`` x this many candidates scored on the int8 vectors, rescored with the float vectors.
INT8_OVERSAMPLING = 2.0


class QdrantEdgeDenseStore(QdrantStoreBase):
    """A dense store on qdrant-edge, Qdrant's in-process engine: persistent, fast past 100k points.

    The store lives in the directory ``path`` (``shard/`` holds Qdrant's segments and write-ahead log,
    ``rrf_store.json`` the dimension). Only one store may open a directory at a time: we hold an
    ``fcntl.flock`` on ``path/.rrf_retriever.lock`` (a second raw open would break the first handle's
    write-ahead log), so a second opener, in this process or another, gets
    :class:`~rrf_retriever.errors.StoreLockedError`. ``path=None`` uses a temporary directory removed by
    :meth:`close`.

    New points are searched exactly (float vectors) until :meth:`optimize` moves them into an optimized segment,
    indexed as ``index`` says. By default (``index="int8"``, ``auto_optimize=True``) the store optimizes by itself
    once an add leaves :data:`AUTO_OPTIMIZE_POINTS` points outside the optimized segments: their vectors get an int8
    copy that a search scans first (``limit`` x :data:`INT8_OVERSAMPLING` candidates), rescoring the candidates with
    the float vectors. At 100k points that is ~1 s of optimizing for a search several times faster than the exact
    scan, with the exact top 10 (RESULTS.md, "The path users take").

    Args:
        embedding: As for :class:`~rrf_retriever.stores.qdrant.QdrantDenseStore`.
        path: The store's directory (created if missing), or None for a temporary one.
        exact: Force exact search (float vectors, every point) even after :meth:`optimize`.
        hnsw_ef: HNSW search breadth (``ef``) once an index exists; None is Qdrant's default.
        index: How a NEW shard indexes optimized segments: ``"int8"`` (scalar-quantized copy + rescoring, the
            default), ``"hnsw"`` (Qdrant's HNSW graph, m=16: the fastest search past ~1M points, but its build takes
            minutes per 100k points on 2 cores and holds the GIL) or ``"plain"`` (exact float scan). None: the
            shard's own kind, else ``"int8"``; another kind than an existing shard's is an error.
        auto_optimize: True: optimize after an add that leaves :data:`AUTO_OPTIMIZE_POINTS` points unoptimized
            (int8 and plain shards; never for ``"hnsw"``); an int: that many points, for any kind; False: only
            when :meth:`optimize` is called.
        batch_size: Points per update operation.
        index_keys: Metadata keys to index as documents are written (e.g. ``["session_id"]``), so filtered
            queries on them never build an index themselves.
        max_auto_indexes: How many payload indexes a filtered query may build on first use (default 8); past it,
            other keys are filtered without an index (correct, slower).

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed (extra ``qdrant``).
        StoreLockedError: another store holds ``path``.
        InvalidArgumentError: an unknown ``index`` or one that differs from the shard's; a bad ``auto_optimize``.

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
        index: str | None = None,
        auto_optimize: bool | int = True,
    ) -> None:
        super().__init__(embedding, batch_size, index_keys=index_keys, max_auto_indexes=max_auto_indexes)
        if index is not None and index not in INDEX_KINDS:
            msg = f"index must be one of {list(INDEX_KINDS)} or None, got {index!r}"
            raise InvalidArgumentError(msg)
        if not isinstance(auto_optimize, (bool, int)):
            msg = f"auto_optimize must be a bool or a number of points, not {type(auto_optimize).__name__}"
            raise InvalidTypeError(msg)
        if not isinstance(auto_optimize, bool) and auto_optimize < 1:
            msg = f"auto_optimize must be True, False or a number of points >= 1, got {auto_optimize!r}"
            raise InvalidArgumentError(msg)
        self._qe, self._np = self._import_engine("qdrant-edge-py", "qdrant_edge", "numpy")
        self.exact = bool(exact)
        self.hnsw_ef = hnsw_ef
        self._asked_index = index
        #: The shard's index kind (:data:`INDEX_KINDS`); read from the shard's meta file when it exists.
        self.index = index or DEFAULT_INDEX
        self._auto_optimize = auto_optimize
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
        meta = read_store_meta(self.path)
        if meta is None:
            return
        shard_dir = self.path / _SHARD_DIR
        try:
            dim = int(meta["dimension"])
        except (ValueError, KeyError, TypeError) as exc:
            msg = f"{self.path / _META_FILE} is unreadable: {exc}"
            raise StoreError(msg) from exc
        kind = meta.get("index", "hnsw")  # written before the setting: Qdrant's default config (HNSW on optimize)
        if self._asked_index is not None and self._asked_index != kind:
            msg = f"the shard at {shard_dir} was created with index={kind!r}, not {self._asked_index!r}"
            raise InvalidArgumentError(msg)
        self._load_shard(shard_dir)
        self._dimension = dim
        self.index = kind

    def _load_shard(self, shard_dir: Path) -> None:
        """Open the shard and learn which payload indexes it already has; shared with the keyword store."""
        try:
            self._shard = self._qe.EdgeShard.load(str(shard_dir))
        except Exception as exc:
            msg = f"cannot open the Qdrant edge shard at {shard_dir}: {exc}"
            raise StoreError(msg) from exc
        with contextlib.suppress(Exception):  # indexes already built persist with the shard
            self._learn_indexes(self._shard.info().payload_schema)

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
        """Run Qdrant's optimizers (merge segments, build the index of the shard's ``index`` kind); blocks until
        done. Past :data:`AUTO_OPTIMIZE_POINTS` new points an add does this by itself (``auto_optimize``).

        Returns:
            True if anything was optimized.
        """
        with self._guard():
            return self._shard is not None and bool(self._call(self._shard.optimize, "optimize"))

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
        with self._guard():
            if self._shard is None:
                return 0
            info = self._call(self._shard.info, "read the shard's info")
            return max(0, int(info.points_count) - int(info.indexed_vectors_count))

    def add(self, ids: Sequence[str], texts: Sequence[str], metadatas: Any = None, vectors: Any = None) -> None:
        """Upsert documents as :meth:`QdrantDenseStore.add <rrf_retriever.stores.qdrant.QdrantDenseStore.add>`
        does; then optimize if the add left :attr:`auto_optimize_points` points unoptimized."""
        super().add(ids, texts, metadatas, vectors)
        threshold = self.auto_optimize_points
        if threshold is not None and self.unoptimized_points() >= threshold:
            self.optimize()

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
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine),
                               **self._index_config())
        shard = qe.EdgeShard.create(str(shard_dir), config)
        try:
            write_store_meta(self.path, {"dimension": dim, "distance": "cosine", "index": self.index})
        except BaseException:
            shard.close()
            raise
        self._shard = shard

    def _index_config(self) -> dict[str, Any]:
        """The shard settings of the index kind: no HNSW graph (m=0) for int8 and plain; an int8 copy of the
        vectors for int8; every segment optimizable whatever its size (optimizing is asked for, never automatic)."""
        qe = self._qe
        if self.index == "hnsw":
            return {}
        config: dict[str, Any] = {
            "hnsw_config": qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
            "optimizers": qe.EdgeOptimizersConfig(indexing_threshold=1),
        }
        if self.index == "int8":
            config["quantization_config"] = qe.ScalarQuantizationConfig(
                type=qe.ScalarType.Int8, quantile=0.99, always_ram=True
            )
        return config

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
            params=qe.SearchParams(exact=self.exact, hnsw_ef=self.hnsw_ef, quantization=self._quantization()),
        )
        return self._shard.query(request)

    def _scroll(self, api: Any, offset: Any, limit: int, query_filter: Any = None, ids_only: bool = False) -> Any:
        request = self._qe.ScrollRequest(offset=offset, limit=limit, filter=query_filter,
                                         with_payload=[DOC_ID_KEY] if ids_only else True, with_vector=False)
        return self._shard.scroll(request)

    def _quantization(self) -> Any:
        # Rescoring makes the int8 scan's top ``limit`` the float vectors' ranking of its candidates.
        if self.index != "int8" or self.exact:
            return None
        return self._qe.QuantizationSearchParams(rescore=True, oversampling=INT8_OVERSAMPLING)

    def _create_index(self, api: Any, field_key: str, kind: str) -> None:
        # Persisted in the shard (read back by _open_existing).
        schema = getattr(self._qe.PayloadSchemaType, kind.capitalize())
        self._shard.update(self._qe.UpdateOperation.create_field_index(field_key, schema))

    # -- filter models -------------------------------------------------------------------------------
    def _condition(self, field_key: str, test: Any) -> Any:
        qe = self._qe
        if isinstance(test, Bounds):
            return qe.FieldCondition(key=field_key, range=qe.RangeFloat(gt=test.gt, gte=test.gte, lt=test.lt,
                                                                        lte=test.lte))
        if test is IS_EMPTY:
            return qe.IsEmptyCondition(field_key)
        match = qe.MatchAny(test) if isinstance(test, list) else qe.MatchValue(test)
        return qe.FieldCondition(key=field_key, match=match)

    def _filter(self, **parts: Any) -> Any:
        return self._qe.Filter(**parts)

    def _has_ids(self, pids: Iterable[str]) -> Any:
        return self._qe.HasIdCondition({uuid.UUID(p) for p in pids})

    def _bool(self, value: bool) -> Any:
        # numpy.bool_: qdrant-edge 0.9 reads a Python bool as an integer, numpy's bool as a JSON bool.
        return self._np.bool_(value)

    def __repr__(self) -> str:
        return f"QdrantEdgeDenseStore(path={str(self.path)!r}, dimension={self._dimension})"
