""":class:`EdgeBackend`: one collection as a qdrant-edge shard, Qdrant's in-process engine, in a directory of its own.

The directory holds ``shard/`` (Qdrant's segments and write-ahead log), ``rrf_store.json`` (what the shard is:
the dense dimension and index kind, the BM25 settings under ``"bm25"``, a joint shard's ``"vectors":
"dense+bm25"``) and ``.rrf_retriever.lock``: only one store may open a directory at a time (an ``fcntl.flock``; a
second raw open would break the first handle's write-ahead log), so a second opener, in this process or another,
gets :class:`~rrf_retriever.errors.StoreLockedError`. ``path=None`` is a temporary directory removed on close.

qdrant-edge 0.9 reads a Python ``bool`` in ``MatchValue`` as an integer (``True`` would match ``1``); we pass
``numpy.bool_`` there, which it reads as a JSON boolean (guarded by a test). It also stores about one payload float
in nine that needs 16-17 significant digits one float64 step off (``415266.62493766355`` comes back, and is
filtered, as ``415266.6249376635``; a payload index holds the exact value only until its segment is optimized), so
a range bound within that step of such a value may read it on the wrong side. Integers and shorter floats are
exact (a strict xfail test in tests/unit/stores/qdrant/test_filters_property.py guards the note).

Its IDF statistics count deleted points until a segment is vacuumed, so a keyword shard asks for the IDF of the
live points (``SearchParams(idf=IdfParams(corpus=...))``) only while it holds such points: every point holds the
one sparse vector, so the shard's indexed vectors outnumber its points exactly then. A joint shard always asks.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rrf_retriever.embeddings.windows import WindowSettings
from rrf_retriever.errors import InvalidArgumentError, RRFRetrieverError, StoreError, StoreUnavailableError
from rrf_retriever.stores.lockfile import lock_directory, release
from rrf_retriever.stores.qdrant.backend import (
    DENSE_LAYOUT,
    JOINT_LAYOUT,
    KEYWORD_LAYOUT,
    Backend,
    DenseQuery,
    Layout,
    Query,
    Saved,
    import_engine,
)
from rrf_retriever.stores.qdrant.edge_index import (
    DEFAULT_INDEX,
    GRAPH_KIND,
    dense_params,
    full_scan_kb,
    index_config,
    recorded_scan_kb,
    same_kind,
    scan_points,
)
from rrf_retriever.stores.qdrant.edge_meta import META_FILE, SHARD_DIR, read_meta, write_meta
from rrf_retriever.stores.qdrant.filters import IS_EMPTY, Bounds
from rrf_retriever.stores.qdrant.points import DOC_ID_KEY, SPARSE_VECTOR_NAME, Point

__all__ = ["FLUSH_POINTS", "EdgeBackend"]

_LOCK_FILE = ".rrf_retriever.lock"
#: The meta file's ``"vectors"`` of a joint shard.
_JOINT_VECTORS = "dense+bm25"
#: Points written between two flushes. qdrant-edge truncates its write-ahead log (to one closed 32 MB segment) only
#: when flushed, which nothing did before close: a bulk add grew it ~1.5 KB a 384-d point (~1.5 GB at 1M; "Disk
#: parts" in benchmarks/RESULTS.md). A flush every this many points keeps it to a few segments.
FLUSH_POINTS = 20_000


class EdgeBackend(Backend):
    """A collection of ``layout`` as a qdrant-edge shard in the locked directory ``path``.

    Args:
        layout: What the points carry.
        owner: The store's class name, for errors.
        path: The directory (created if missing), or None for a temporary one (``prefix`` names it).
        exact: Dense search scans every float vector even once an index exists.
        hnsw_ef: HNSW search breadth once an index exists; None is Qdrant's default.
        index: The dense layout's index kind (:mod:`~rrf_retriever.stores.qdrant.edge_index`) for a NEW shard;
            None: the shard's own, else ``"int8"``. Other layouts take Qdrant's default config.

    Raises:
        MissingDependencyError: qdrant-edge-py is not installed.
        StoreLockedError: another store holds ``path``.
        StoreError: ``path`` holds another kind of store, or an unreadable one.
        InvalidArgumentError: ``index`` differs from the existing shard's.
    """

    engine_name = "Qdrant edge"
    #: Its filters copy their parts when built: a binary tree of ranges copied each one log2(n) times.
    tree_fanout = 16

    def __init__(
        self,
        layout: Layout,
        owner: str,
        path: str | os.PathLike[str] | None,
        *,
        prefix: str,
        exact: bool = False,
        hnsw_ef: int | None = None,
        index: str | None = None,
    ) -> None:
        super().__init__(layout)
        self.owner = owner
        self.qe, self.np = import_engine("qdrant-edge-py", owner, "qdrant_edge", "numpy")
        self.exact = bool(exact)
        self.hnsw_ef = hnsw_ef
        #: How a filtered dense search runs on a shard with a graph (``edge_index.FILTERED_SEARCH``).
        self.filtered_search = "auto"
        self._asked_index = index
        #: A graph shard's ``full_scan_threshold`` as its meta file records it (None: not recorded).
        self._full_scan_kb: int | None = None
        #: The shard's index kind (None outside the dense layout: Qdrant's default config).
        self.index = (index or DEFAULT_INDEX) if layout is DENSE_LAYOUT else None
        # Bumped before and after every write: a staleness answer read across a write is not cached.
        self._generation = 0
        self._unflushed = 0  # points written since the shard was last flushed
        self._idf_cache: tuple[int, bool] | None = None
        self._saved: Saved | None = None
        self._dimension: int | None = None
        self._shard: Any = None
        self._lock_fh: Any = None
        self._closed = False
        self._temporary = path is None
        self.path = Path(tempfile.mkdtemp(prefix=prefix)) if path is None else Path(path)
        self.where = f"the store at {self.path}"
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create the store directory {self.path}: {exc}"
            raise StoreUnavailableError(msg) from exc
        self._lock_fh = lock_directory(self.path / _LOCK_FILE, self.where)
        try:
            self._open_existing()
        except BaseException:
            self._release_lock()
            raise

    # -- lifecycle ---------------------------------------------------------------------------------------
    def _open_existing(self) -> None:
        """Read what the directory holds (checked against the layout) and open its shard."""
        meta = read_meta(self.path)
        if meta is None:
            return
        if self.layout is KEYWORD_LAYOUT and "bm25" not in meta:
            msg = f"{self.path} holds another kind of store (no BM25 settings in {META_FILE}); use another path"
            raise StoreError(msg)
        if self.layout is JOINT_LAYOUT and (meta.get("vectors") != _JOINT_VECTORS or "bm25" not in meta):
            msg = f"{self.path} holds another kind of store (not a joint dense + BM25 shard); use another path"
            raise StoreError(msg)
        dimension = None
        if self.layout.dense is not None:
            try:
                dimension = int(meta["dimension"])
            except (KeyError, TypeError, ValueError) as exc:
                msg = f"{self.path / META_FILE} is unreadable: {exc}"
                raise StoreError(msg) from exc
        if self.layout is DENSE_LAYOUT:
            kind = meta.get("index", "hnsw")  # written before the setting: Qdrant's default config (HNSW)
            if self._asked_index is not None and not same_kind(self._asked_index, kind):
                shard_dir = self.path / SHARD_DIR
                msg = f"the shard at {shard_dir} was created with index={kind!r}, not {self._asked_index!r}"
                raise InvalidArgumentError(msg)
            self.index = kind
            self.windows = WindowSettings.from_saved(meta["windows"]) if "windows" in meta else None
            self._full_scan_kb = recorded_scan_kb(meta.get("full_scan_kb"), dimension)
        shard_dir = self.path / SHARD_DIR
        try:
            self._shard = self.qe.EdgeShard.load(str(shard_dir))
        except Exception as exc:
            msg = f"cannot open the Qdrant edge shard at {shard_dir}: {exc}"
            raise StoreError(msg) from exc
        schema = None
        with contextlib.suppress(Exception):  # indexes already built persist with the shard
            schema = self._shard.info().payload_schema
        self._dimension = dimension
        self._saved = Saved(dimension, meta.get("bm25") if self.layout.sparse else None, schema, self.windows)

    def _release_lock(self) -> None:
        fh, self._lock_fh = self._lock_fh, None
        release(fh)

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        with self.lock:
            self.check_open()
            yield

    def guard(self) -> contextlib.AbstractContextManager[Any]:
        """The lock, and the open check, around a whole operation (one shard handle, one writer at a time)."""
        return self._guarded()

    def check_open(self) -> None:
        if self._closed:
            msg = f"this {self.owner} is closed"
            raise StoreError(msg)

    def error(self, exc: Exception, action: str) -> RRFRetrieverError:
        return StoreError(f"{self.engine_name} {action} failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Flush, close the shard and release the directory lock (a temporary directory is removed)."""
        with self.lock:
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

    def describe(self) -> str:
        return f"path={str(self.path)!r}"

    # -- maintenance (edge stores only; through the store's ``_call`` like every primitive) --------------------
    def flush(self, api: Any) -> None:
        """Write pending changes to the segments (the write-ahead log made them durable) and truncate the log."""
        if self._shard is not None:
            self._shard.flush()
            self._unflushed = 0

    def optimize(self, api: Any) -> bool:
        """Run Qdrant's optimizers (merge segments, vacuum, build the index); True if anything was optimized. Then
        flush: the segments an optimization replaced stayed on disk until the next flush (a second copy of it all)."""
        if self._shard is None:
            return False
        self._generation += 1
        try:
            done = bool(self._shard.optimize())
            self.flush(api)
            return done
        finally:
            self._generation += 1

    def grow_graph(self, api: Any) -> bool:
        """An int8 shard becomes ``"int8-hnsw"``: reopened with the graph's settings (qdrant-edge rewrites the
        shard's config), recorded in the meta file, then optimized (the graph is built over every segment). A
        crash in between leaves an int8 shard whose next ``grow_graph`` completes the change. False (nothing done)
        for a shard of another kind."""
        if self._shard is None or self.index != DEFAULT_INDEX:
            return False
        shard_dir = str(self.path / SHARD_DIR)
        self._generation += 1
        self._shard.flush()
        scan_kb = full_scan_kb(GRAPH_KIND, self._dimension, self.count(api))  # fixed in the graph's segments
        self._shard.close()
        self._shard = None
        try:
            self._shard = self.qe.EdgeShard.load(shard_dir, self._config(self._dimension, GRAPH_KIND, scan_kb))
        except Exception:
            self._shard = self.qe.EdgeShard.load(shard_dir)  # as it was
            raise
        self.index = GRAPH_KIND
        self._full_scan_kb = scan_kb
        write_meta(self.path, self._meta(self._dimension, None))
        return self.optimize(api)

    def unoptimized_points(self, api: Any) -> int:
        """Points outside the optimized segments (searched by an exact scan of their float vectors)."""
        if self._shard is None:
            return 0
        info = self._shard.info()
        return max(0, int(info.points_count) - int(info.indexed_vectors_count))

    # -- primitives (``api`` is unused: one engine, sync) ------------------------------------------------
    def exists(self, api: Any) -> bool:
        return self._saved is not None  # read when the directory was opened

    def read(self, api: Any) -> Saved:
        assert self._saved is not None
        return self._saved

    def _meta(self, dimension: int | None, params: dict[str, Any] | None) -> dict[str, Any]:
        """What the meta file says of a shard of this layout."""
        if self.layout is DENSE_LAYOUT:
            meta: dict[str, Any] = {"dimension": dimension, "distance": "cosine", "index": self.index}
            if self._full_scan_kb is not None:  # a graph shard's scan reach (edge_index.scan_points)
                meta["full_scan_kb"] = self._full_scan_kb
            if self.windows is not None:
                meta["windows"] = self.windows.as_saved()
            return meta
        if self.layout is KEYWORD_LAYOUT:
            return {"bm25": params}
        return {"vectors": _JOINT_VECTORS, "dimension": dimension, "distance": "cosine", "bm25": params}

    def _config(self, dimension: int | None, kind: str | None, scan_kb: int | None = None) -> Any:
        """The shard's ``EdgeConfig``: the layout's vectors, and the settings of the index ``kind``."""
        qe = self.qe
        config: dict[str, Any] = {}
        name = self.layout.dense
        if name is not None:
            multi = None
            if self.windows is not None and name == "":  # each document's windows, scored by the best one
                multi = qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim)
            dense = qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine, multivector_config=multi)
            config["vectors"] = dense if name == "" else {name: dense}
        if self.layout.sparse:
            config["sparse_vectors"] = {SPARSE_VECTOR_NAME: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
        return qe.EdgeConfig(**config, **index_config(qe, kind, scan_kb))

    def create(self, api: Any, dimension: int | None, params: dict[str, Any] | None) -> None:
        shard_dir = self.path / SHARD_DIR
        if shard_dir.exists():  # a shard without our meta file: a crash between create and meta write
            shutil.rmtree(shard_dir)
        scan_kb = self._full_scan_kb = full_scan_kb(GRAPH_KIND, dimension) if self.index == GRAPH_KIND else None
        shard = self.qe.EdgeShard.create(str(shard_dir), self._config(dimension, self.index, scan_kb))
        try:
            write_meta(self.path, self._meta(dimension, params))
        except BaseException:
            shard.close()
            raise
        self._shard, self._dimension = shard, dimension

    def save_params(self, api: Any, params: dict[str, Any]) -> None:
        write_meta(self.path, self._meta(int(self._dimension or 0), params))

    def sparse_vector(self, indices: Sequence[int], values: Sequence[float]) -> Any:
        return self.qe.SparseVector(indices, values)

    def _write(self, operation: Any, points: int) -> None:
        self._generation += 1
        try:
            self._shard.update(operation)
        finally:
            self._generation += 1
        self._unflushed += points
        if self._unflushed >= FLUSH_POINTS:  # bounds the write-ahead log (see FLUSH_POINTS)
            self.flush(None)

    def upsert(self, api: Any, points: list[Point]) -> None:
        qe = self.qe
        self._write(qe.UpdateOperation.upsert_points(
            [qe.Point(uuid.UUID(p.pid), self.point_vectors(p), p.payload) for p in points]), len(points))

    def update_vectors(self, api: Any, points: list[Point]) -> None:
        qe = self.qe
        self._write(qe.UpdateOperation.update_vectors(
            [qe.PointVectors(uuid.UUID(p.pid), self.point_vectors(p)) for p in points]), len(points))

    def delete(self, api: Any, pids: list[str]) -> None:
        self._write(self.qe.UpdateOperation.delete_points([uuid.UUID(p) for p in pids]), len(pids))

    def retrieve(self, api: Any, pids: list[str], with_vectors: bool) -> Any:
        return self._shard.retrieve([uuid.UUID(p) for p in pids], True, with_vectors)

    def count(self, api: Any) -> int:
        return int(self._shard.count(self.qe.CountRequest(exact=True)))

    def _stats_are_live(self) -> bool:
        """Whether Qdrant's own IDF statistics count live points only (no deleted or replaced point awaits a
        vacuum). One point, one sparse vector: indexed vectors == points exactly then."""
        generation, cached = self._generation, self._idf_cache
        if cached is not None and cached[0] == generation:
            return cached[1]
        info = self._shard.info()
        live = int(info.indexed_vectors_count) == int(info.points_count)
        self._idf_cache = (generation, live)
        return live

    def search(self, api: Any, query: Query) -> Any:
        qe = self.qe
        if isinstance(query, DenseQuery):
            name = self.layout.dense
            vector: Any = [query.vector] if self.windows is not None else query.vector  # one row: MAX_SIM is max
            nearest = qe.Query.Nearest(vector, using=name) if name else qe.Query.Nearest(vector)
            params = dense_params(qe, self._shard, self.index, self.exact, self.hnsw_ef, self.filtered_search,
                                  query.filter, scan_points(self.index, self._dimension, self._full_scan_kb,
                                                            self.windows is not None))
        else:
            nearest = qe.Query.Nearest(qe.SparseVector(query.indices, query.values), using=SPARSE_VECTOR_NAME)
            params = None
            # A shard of sparse vectors only can tell when its statistics are live; a joint shard always asks.
            if query.live_idf and not (self.layout is KEYWORD_LAYOUT and self._stats_are_live()):
                corpus = qe.Filter(must=[qe.HasVectorCondition(SPARSE_VECTOR_NAME)])
                params = qe.SearchParams(idf=qe.IdfParams(corpus=corpus))
        request = qe.QueryRequest(limit=query.limit, query=nearest, filter=query.filter, with_payload=True,
                                  params=params)
        return self._shard.query(request)

    def search_batch(self, api: Any, queries: list[Query]) -> list[Any]:
        # One after the other, in one engine call from the store (qdrant-edge 0.9 also has EdgeShard.query_batch,
        # not used: in-process it would save one call crossing per query).
        return [self.search(api, query) for query in queries]

    def scroll(self, api: Any, offset: Any, limit: int, query_filter: Any = None, ids_only: bool = False,
               fields: Sequence[str] = ()) -> Any:
        payload: Any = list(fields) if fields else [DOC_ID_KEY] if ids_only else True
        request = self.qe.ScrollRequest(offset=offset, limit=limit, filter=query_filter, with_payload=payload,
                                         with_vector=False)
        return self._shard.scroll(request)

    def create_index(self, api: Any, field_key: str, kind: str) -> None:
        # Persisted in the shard (read back when the directory is opened again).
        schema = getattr(self.qe.PayloadSchemaType, kind.capitalize())
        self._shard.update(self.qe.UpdateOperation.create_field_index(field_key, schema))

    def delete_index(self, api: Any, field_key: str) -> None:
        self._shard.update(self.qe.UpdateOperation.delete_field_index(field_key))

    # -- filter models -----------------------------------------------------------------------------------
    def condition(self, field_key: str, test: Any) -> Any:
        qe = self.qe
        if isinstance(test, Bounds):
            return qe.FieldCondition(key=field_key, range=qe.RangeFloat(gt=test.gt, gte=test.gte, lt=test.lt,
                                                                        lte=test.lte))
        if test is IS_EMPTY:
            return qe.IsEmptyCondition(field_key)
        match = qe.MatchAny(test) if isinstance(test, list) else qe.MatchValue(test)
        return qe.FieldCondition(key=field_key, match=match)

    def filter(self, **parts: Any) -> Any:
        return self.qe.Filter(**parts)

    def has_ids(self, pids: Iterable[str]) -> Any:
        return self.qe.HasIdCondition({uuid.UUID(p) for p in pids})

    def boolean(self, value: bool) -> Any:
        # numpy.bool_: qdrant-edge 0.9 reads a Python bool as an integer, numpy's bool as a JSON bool.
        return self.np.bool_(value)
