""":class:`ClientBackend`: one collection on qdrant-client (``:memory:``, a local path, a server or a cluster), sync
on ``QdrantClient`` and natively async on an ``AsyncQdrantClient`` (same methods, as coroutines: each primitive
calls its ``api`` and post-processes with :func:`~rrf_retriever.stores.qdrant.ops.then`).

A collection's settings live in the collection itself: the dense vector's size in its config, the BM25 settings in
its ``metadata`` (``config.metadata["rrf_retriever_bm25"]``), so any client that opens it ranks alike.

Example:
    >>> from rrf_retriever.stores.qdrant.backend import DENSE_LAYOUT
    >>> backend = ClientBackend(DENSE_LAYOUT, "QdrantDenseStore", ClientConnection(collection_name="docs"))
    >>> backend.describe()
    "collection_name='docs'"
    >>> backend.close()
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from rrf_retriever.embeddings.windows import WindowSettings
from rrf_retriever.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    RRFRetrieverError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)
from rrf_retriever.stores.qdrant.backend import Backend, DenseQuery, Layout, Query, Saved, import_engine
from rrf_retriever.stores.qdrant.filters import IS_EMPTY, Bounds
from rrf_retriever.stores.qdrant.ops import then
from rrf_retriever.stores.qdrant.points import DOC_ID_KEY, SPARSE_VECTOR_NAME, Point

__all__ = ["METADATA_PARAMS_KEY", "METADATA_WINDOWS_KEY", "ClientBackend", "ClientConnection", "ClientOptions"]

#: Where the BM25 settings live in the collection's metadata.
METADATA_PARAMS_KEY = "rrf_retriever_bm25"
#: Where a collection of document windows keeps its window settings in its metadata.
METADATA_WINDOWS_KEY = "rrf_retriever_windows"
#: Errors of qdrant-client and its transports that mean the server cannot be reached.
_UNREACHABLE = frozenset({"ResponseHandlingException", "ConnectError", "ConnectTimeout", "ReadTimeout", "RpcError"})


def _client_error(exc: Exception, action: str) -> RRFRetrieverError:
    """Our error for a qdrant-client failure: a path held by another client, an unreachable server, or else."""
    name = type(exc).__name__
    text = str(exc)
    if "already accessed by another instance" in text:
        return StoreLockedError(f"{action}: {text}")
    if name in _UNREACHABLE or isinstance(exc, OSError):
        return StoreUnavailableError(f"{action}: Qdrant is unreachable ({name}: {text})")
    return StoreError(f"{action} failed: {name}: {text}")


def _check_collection_name(name: object) -> str:
    if not isinstance(name, str) or not name or len(name) > 255:
        msg = f"collection_name must be a non-empty string, got {name!r}"
        raise InvalidArgumentError(msg)
    return name


@dataclass(frozen=True)
class ClientConnection:
    """Where a store on qdrant-client keeps its collection (the keywords of the public client store classes).

    Attributes:
        client: An existing ``QdrantClient`` (then ``location``/``path``/``url`` are ignored; not closed by us).
        location, path, url, api_key: Where to open one: a server ``url``, else a local ``path``, else ``location``.
        collection_name: The collection.
        async_client: An ``AsyncQdrantClient`` on the same collection (native async calls), or None.

    Raises:
        InvalidTypeError: ``location``, ``url`` or ``api_key`` not a str or None, ``path`` not a path or None.
        InvalidArgumentError: ``collection_name`` not a string of 1 to 255 characters.
    """

    client: Any = None
    location: str | None = ":memory:"
    path: str | os.PathLike[str] | None = None
    url: str | None = None
    api_key: str | None = None
    collection_name: str = "rrf_retriever"
    async_client: Any = None

    def __post_init__(self) -> None:
        _check_collection_name(self.collection_name)
        for name in ("location", "url", "api_key"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                msg = f"{name} must be a str or None, not {type(value).__name__}"
                raise InvalidTypeError(msg)
        if self.path is not None and not isinstance(self.path, (str, os.PathLike)):
            msg = f"path must be a str, a path or None, not {type(self.path).__name__}"
            raise InvalidTypeError(msg)


class ClientOptions(TypedDict, total=False):
    """:class:`ClientConnection` as keywords (``**options`` of a public client store class)."""

    client: Any
    location: str | None
    path: str | os.PathLike[str] | None
    url: str | None
    api_key: str | None
    collection_name: str
    async_client: Any


class ClientBackend(Backend):
    """A collection of ``layout`` on a ``QdrantClient`` (given, or opened on ``url`` / ``path`` / ``location``).

    Args:
        layout: What the points carry.
        owner: The store's class name, for errors.
        connection: The client, or where to open one, and the collection.
        cluster: ``create_collection`` settings of a new collection (``shard_number``, ...; None values dropped).

    Raises:
        MissingDependencyError: qdrant-client is not installed.
        StoreLockedError: ``path`` is open in another client.
        StoreUnavailableError: the server cannot be reached.
    """

    def __init__(
        self, layout: Layout, owner: str, connection: ClientConnection,
        cluster: Mapping[str, int | None] | None = None,
    ) -> None:
        super().__init__(layout)
        qdrant_client, models = import_engine("qdrant-client", owner, "qdrant_client", "qdrant_client.models")
        self.collection_name = connection.collection_name  # checked when the connection was built
        self.owner = owner
        self.models = models
        self._cluster = {k: v for k, v in (cluster or {}).items() if v is not None}
        client, url, path, location = connection.client, connection.url, connection.path, connection.location
        self._owns_client = client is None
        if client is None:
            try:
                if url is not None:
                    client = qdrant_client.QdrantClient(url=url, api_key=connection.api_key)
                elif path is not None:
                    client = qdrant_client.QdrantClient(path=str(path))
                else:
                    client = qdrant_client.QdrantClient(location=location or ":memory:")
            except RRFRetrieverError:
                raise
            except Exception as exc:
                raise _client_error(exc, f"opening Qdrant ({url or path or location})") from exc
        self.sync_api = client
        self.async_api = connection.async_client
        self.is_local = type(getattr(client, "_client", None)).__name__ == "QdrantLocal"
        self.indexes_payload = not self.is_local  # local mode ignores payload indexes
        self.where = f"collection {self.collection_name!r}"

    # -- lifecycle and errors ----------------------------------------------------------------------------
    def serialize(self, api: Any) -> contextlib.AbstractContextManager[Any]:
        # qdrant-client local mode is not thread-safe: a search during an upsert reads half-grown numpy arrays
        # (IndexError / broadcast errors). A server client needs no lock, nor does the async client.
        return self.lock if self.is_local and api is self.sync_api else contextlib.nullcontext()

    def error(self, exc: Exception, action: str) -> RRFRetrieverError:
        return _client_error(exc, f"{action} (collection {self.collection_name!r})")

    def close(self) -> None:
        """Close the client if this backend opened it (releases a local ``path``)."""
        if self._owns_client:
            with contextlib.suppress(Exception):
                self.sync_api.close()

    def describe(self) -> str:
        return f"collection_name={self.collection_name!r}"

    # -- primitives --------------------------------------------------------------------------------------
    def exists(self, api: Any) -> Any:
        return api.collection_exists(self.collection_name)

    def read(self, api: Any) -> Any:
        return then(api.get_collection(self.collection_name), self._saved_of)

    def _saved_of(self, info: Any) -> Saved:
        params = self._bm25_params_of(info) if self.layout.sparse else None
        dimension = self._dense_size_of(info) if self.layout.dense is not None else None
        return Saved(dimension, params, getattr(info, "payload_schema", None), self._windows_of(info))

    def _windows_of(self, info: Any) -> WindowSettings | None:
        """The window settings of a dense collection whose vector is a multivector (None: one vector a point)."""
        vectors = info.config.params.vectors
        if self.layout.dense != "" or vectors is None:
            return None
        if isinstance(vectors, Mapping):
            vectors = vectors.get("")
        if getattr(vectors, "multivector_config", None) is None:
            return None
        return WindowSettings.from_saved((info.config.metadata or {}).get(METADATA_WINDOWS_KEY))

    def _bm25_params_of(self, info: Any) -> Any:
        sparse = info.config.params.sparse_vectors or {}
        params = sparse.get(SPARSE_VECTOR_NAME)
        if params is None or params.modifier != self.models.Modifier.IDF:
            msg = (
                f"{self.where} has no sparse vector {SPARSE_VECTOR_NAME!r} with the IDF modifier "
                "(not written by a Qdrant keyword store); use another collection_name"
            )
            raise StoreError(msg)
        return (info.config.metadata or {}).get(METADATA_PARAMS_KEY)

    def _dense_size_of(self, info: Any) -> int:
        vectors = info.config.params.vectors
        name = self.layout.dense
        if name == "":  # the unnamed default vector (a single vector config, or one named "")
            if isinstance(vectors, Mapping):
                if "" not in vectors:
                    msg = (
                        f"collection {self.collection_name!r} has only named vectors ({sorted(vectors)}); "
                        f"{self.owner} uses the unnamed default vector"
                    )
                    raise StoreError(msg)
                vectors = vectors[""]
            return int(vectors.size)
        dense = vectors.get(name) if isinstance(vectors, Mapping) else None
        if dense is None:
            msg = (f"{self.where} has no dense vector named {name!r} (not a joint collection of "
                   f"{self.owner}); use another collection_name")
            raise StoreError(msg)
        return int(dense.size)

    def create(self, api: Any, dimension: int | None, params: dict[str, Any] | None) -> Any:
        models = self.models
        name = self.layout.dense
        vectors: Any = {}
        extra: dict[str, Any] = dict(self._cluster)
        if name is not None:
            multi = None
            if self.windows is not None and name == "":  # each document's windows, scored by the best one
                multi = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
                extra["metadata"] = {METADATA_WINDOWS_KEY: self.windows.as_saved()}
            dense = models.VectorParams(size=dimension, distance=models.Distance.COSINE, multivector_config=multi)
            vectors = dense if name == "" else {name: dense}
        if self.layout.sparse:
            extra["sparse_vectors_config"] = {
                SPARSE_VECTOR_NAME: models.SparseVectorParams(modifier=models.Modifier.IDF)
            }
            extra["metadata"] = {METADATA_PARAMS_KEY: params}
        return api.create_collection(self.collection_name, vectors_config=vectors, **extra)

    def save_params(self, api: Any, params: dict[str, Any]) -> Any:
        return api.update_collection(self.collection_name, metadata={METADATA_PARAMS_KEY: params})

    def sparse_vector(self, indices: Sequence[int], values: Sequence[float]) -> Any:
        return self.models.SparseVector(indices=indices, values=values)

    def upsert(self, api: Any, points: list[Point]) -> Any:
        structs = [self.models.PointStruct(id=p.pid, vector=self.point_vectors(p), payload=p.payload) for p in points]
        return api.upsert(self.collection_name, points=structs, wait=True)

    def update_vectors(self, api: Any, points: list[Point]) -> Any:
        updates = [self.models.PointVectors(id=p.pid, vector=self.point_vectors(p)) for p in points]
        return api.update_vectors(self.collection_name, points=updates, wait=True)

    def delete(self, api: Any, pids: list[str]) -> Any:
        selector = self.models.PointIdsList(points=pids)
        return api.delete(self.collection_name, points_selector=selector, wait=True)

    def retrieve(self, api: Any, pids: list[str], with_vectors: bool) -> Any:
        return api.retrieve(self.collection_name, ids=pids, with_payload=True, with_vectors=with_vectors)

    def count(self, api: Any) -> Any:
        return then(api.count(self.collection_name, exact=True), lambda result: result.count)

    def _idf_params(self, query: Query) -> Any:
        # Local mode counts live points already (and a corpus filter makes it rescan every point in Python).
        if isinstance(query, DenseQuery) or not query.live_idf or self.is_local:
            return None
        models = self.models
        corpus = models.Filter(must=[models.HasVectorCondition(has_vector=SPARSE_VECTOR_NAME)])
        return models.SearchParams(idf=models.IdfCorpusParams(corpus=corpus))

    def _dense_query(self, query: DenseQuery) -> Any:
        """The query vector as the collection compares it: a one-row multivector against document windows."""
        return [query.vector] if self.windows is not None else query.vector

    def search(self, api: Any, query: Query) -> Any:
        if isinstance(query, DenseQuery):
            response = api.query_points(self.collection_name, query=self._dense_query(query),
                                        using=self.layout.dense or None,
                                        query_filter=query.filter, limit=query.limit, with_payload=True)
        else:
            response = api.query_points(
                self.collection_name,
                query=self.models.SparseVector(indices=query.indices, values=query.values),
                using=SPARSE_VECTOR_NAME,
                query_filter=query.filter,
                search_params=self._idf_params(query),
                limit=query.limit,
                with_payload=True,
            )
        return then(response, lambda result: result.points)

    def _request(self, query: Query) -> Any:
        """One query as a ``QueryRequest`` of ``query_batch_points``."""
        models = self.models
        if isinstance(query, DenseQuery):
            return models.QueryRequest(query=self._dense_query(query), using=self.layout.dense or None,
                                       filter=query.filter,
                                       limit=query.limit, with_payload=True)
        return models.QueryRequest(query=models.SparseVector(indices=query.indices, values=query.values),
                                   using=SPARSE_VECTOR_NAME, filter=query.filter, params=self._idf_params(query),
                                   limit=query.limit, with_payload=True)

    def search_batch(self, api: Any, queries: list[Query]) -> Any:
        response = api.query_batch_points(self.collection_name, requests=[self._request(q) for q in queries])
        return then(response, lambda results: [r.points for r in results])

    def scroll(self, api: Any, offset: Any, limit: int, query_filter: Any = None, ids_only: bool = False,
               fields: Sequence[str] = ()) -> Any:
        payload: Any = list(fields) if fields else [DOC_ID_KEY] if ids_only else True
        return api.scroll(self.collection_name, scroll_filter=query_filter, limit=limit, offset=offset,
                          with_payload=payload, with_vectors=False)

    def create_index(self, api: Any, field_key: str, kind: str) -> Any:
        return api.create_payload_index(self.collection_name, field_key, self.models.PayloadSchemaType(kind))

    def delete_index(self, api: Any, field_key: str) -> Any:
        return api.delete_payload_index(self.collection_name, field_key, wait=True)

    # -- filter models -----------------------------------------------------------------------------------
    def condition(self, field_key: str, test: Any) -> Any:
        models = self.models
        if isinstance(test, Bounds):
            bounds = models.Range(gt=test.gt, gte=test.gte, lt=test.lt, lte=test.lte)
            return models.FieldCondition(key=field_key, range=bounds)
        if test is IS_EMPTY:
            return models.IsEmptyCondition(is_empty=models.PayloadField(key=field_key))
        match = models.MatchAny(any=test) if isinstance(test, list) else models.MatchValue(value=test)
        return models.FieldCondition(key=field_key, match=match)

    def filter(self, **parts: Any) -> Any:
        return self.models.Filter(**parts)

    def has_ids(self, pids: Iterable[str]) -> Any:
        return self.models.HasIdCondition(has_id=sorted(pids))
