"""Dense stores on Qdrant: :class:`QdrantDenseStore` (qdrant-client), :class:`QdrantEdgeDenseStore` (qdrant-edge).

Both implement :class:`~rrf_retriever.stores.base.DenseStore`: cosine similarity (higher is better), the scope
(filter + ``exclude_ids``) applied inside Qdrant's search, before its top-k.

Layout (langchain-qdrant's ``QdrantVectorStore`` defaults, so either can read what the other wrote):

* one unnamed dense vector, cosine distance, created on the first ``add`` with the vectors' dimension;
* payload ``{"page_content": text, "metadata": {...}, "doc_id": id}``;
* point id: the document id itself when it is a UUID string (canonical, or the 32-digit hex form
  langchain-qdrant's ``add_texts`` returns), else ``uuid5(ID_NAMESPACE, id)``. A point without ``doc_id``
  (written by langchain-qdrant) is returned with id ``str(point.id)`` (the canonical UUID), which maps back
  to the same point, so get/delete/exclude work on it (with either UUID spelling).

Filter semantics match :func:`rrf_retriever.types.matches_filter`: ``{"k": v}`` becomes
``FieldCondition(key="metadata.k", match=MatchValue(v))``, a list ``MatchAny`` (split by type: Qdrant's
``MatchAny`` holds strings or integers, never booleans, so booleans become ``MatchValue`` alternatives in a
nested ``should``). Qdrant keeps JSON types apart: ``True`` never matches ``1``, ``1`` never matches ``True``,
as in ``matches_filter``; a metadata list matches when any element does. One difference: a float metadata
value such as ``1.0`` does not match the integer filter value ``1`` in Qdrant (it does in ``matches_filter``);
store integral values as ints.

qdrant-edge 0.9 reads a Python ``bool`` in ``MatchValue`` as an integer (``True`` would match ``1``); we pass
``numpy.bool_`` there, which it reads as a JSON boolean (guarded by a test).

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> store = QdrantDenseStore(HashingEmbedding(dim=16))  # doctest: +SKIP
    >>> store.add(["a", "b"], ["red apples", "blue sky"], [{"lang": "en"}, {"lang": "fr"}])  # doctest: +SKIP
    >>> query = store.embedding.embed_query("apples")  # doctest: +SKIP
    >>> [h.id for h in store.search(query, 5, filter={"lang": "en"})]  # doctest: +SKIP
    ['a']
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rrf_retriever.embeddings import BaseEmbeddingAdapter, as_embedding
from rrf_retriever.errors import (
    DimensionMismatchError,
    InvalidArgumentError,
    RRFRetrieverError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
    missing_dependency,
)
from rrf_retriever.scope import FilterSpec, FilterValue, NormalizedFilter, normalize_scope
from rrf_retriever.stores.base import StoreBase
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import (
    check_ids,
    check_limit,
    to_float_vector,
    validate_batch,
    validate_vectors,
)

__all__ = ["DOC_ID_KEY", "ID_NAMESPACE", "QdrantDenseStore", "QdrantEdgeDenseStore", "point_id"]

logger = logging.getLogger(__name__)

#: Namespace of the UUIDv5 point ids (fixed forever: changing it would orphan every stored point).
ID_NAMESPACE = uuid.UUID("6f1c3c5e-2a4b-5d8e-9f10-7a2b3c4d5e6f")
CONTENT_KEY = "page_content"  # langchain-qdrant's defaults
METADATA_KEY = "metadata"
#: Payload key holding our document id.
DOC_ID_KEY = "doc_id"
_UPSERT_BATCH = 256
_PROGRESS_THRESHOLD = 1000


def point_id(doc_id: str) -> str:
    """The Qdrant point id of a document id: the id itself if it is a canonical UUID, else its UUIDv5.

    Example:
        >>> point_id("550e8400-e29b-41d4-a716-446655440000")
        '550e8400-e29b-41d4-a716-446655440000'
        >>> point_id("550e8400e29b41d4a716446655440000")
        '550e8400-e29b-41d4-a716-446655440000'
        >>> point_id("doc-1") == point_id("doc-1") != point_id("doc-2")
        True
    """
    if len(doc_id) in (32, 36):
        try:
            parsed = uuid.UUID(doc_id)
        except ValueError:
            pass
        else:
            # The canonical form, or the 32-digit hex form langchain-qdrant returns from add_texts.
            if doc_id in (str(parsed), parsed.hex):
                return str(parsed)
    return str(uuid.uuid5(ID_NAMESPACE, doc_id))


def _split_values(values: tuple[FilterValue, ...]) -> tuple[list[str], list[int], list[bool]]:
    strs = [v for v in values if isinstance(v, str)]
    bools = [v for v in values if isinstance(v, bool)]
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    return strs, ints, bools


def _check_query_vector(vector: object, dimension: int | None) -> list[float]:
    out = to_float_vector(vector, "the query vector")
    if dimension is not None and len(out) != dimension:
        msg = f"the query vector has dimension {len(out)}, the collection {dimension}"
        raise DimensionMismatchError(msg)
    return out


def _progress(total: int, desc: str) -> Any:
    if total <= _PROGRESS_THRESHOLD or importlib.util.find_spec("tqdm") is None:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="doc")


class _QdrantBase(StoreBase):
    """Shared checks and conversions of both Qdrant stores."""

    embedding: BaseEmbeddingAdapter

    def __init__(self, embedding: Any) -> None:
        self.embedding = as_embedding(embedding)
        self._dimension: int | None = None
        self._lock = threading.RLock()

    @property
    def dimension(self) -> int | None:
        """The collection's vector dimension, None while the store has never been written."""
        return self._dimension

    def _prepare_add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None,
        vectors: Sequence[Sequence[float]] | None,
    ) -> tuple[list[str], list[dict[str, Any]], list[list[float]], int]:
        """Validate a batch and its vectors (embedding the texts if needed) before anything is written."""
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        if vectors is None:
            vectors = self.embedding.embed_documents(text_list) if text_list else []
        vector_list: list[list[float]] = []
        dim = self._dimension or 0
        if id_list:
            vector_list, dim = validate_vectors(vectors, len(id_list), self._dimension)
        payloads = [
            {CONTENT_KEY: text, METADATA_KEY: meta, DOC_ID_KEY: doc_id}
            for doc_id, text, meta in zip(id_list, text_list, meta_list)
        ]
        return [point_id(i) for i in id_list], payloads, vector_list, dim

    @staticmethod
    def _doc_id(pid: Any, payload: Mapping[str, Any] | None) -> str:
        stored = (payload or {}).get(DOC_ID_KEY)
        return stored if isinstance(stored, str) else str(pid)

    @classmethod
    def _hit(cls, pid: Any, payload: Mapping[str, Any] | None, score: float) -> Hit:
        payload = payload or {}
        meta = payload.get(METADATA_KEY)
        text = payload.get(CONTENT_KEY)
        return Hit(
            id=cls._doc_id(pid, payload),
            text=text if isinstance(text, str) else "",
            metadata=dict(meta) if isinstance(meta, Mapping) else {},
            score=float(score),
        )

    @classmethod
    def _record(cls, pid: Any, payload: Mapping[str, Any] | None, vector: Any) -> Record:
        hit = cls._hit(pid, payload, 0.0)
        if isinstance(vector, Mapping):  # named vectors: take the default (unnamed) one
            vector = vector.get("", None)
        vec = [float(x) for x in vector] if vector is not None else None
        return Record(id=hit.id, text=hit.text, metadata=hit.metadata, vector=vec)

    def _build_filter(self, flt: NormalizedFilter | None, excluded: frozenset[str]) -> Any:
        """Our scope as a Qdrant filter, for both engines: every filtered key must hold one of its values (bools
        apart from ints, each type its own condition) and no excluded id may match. None when nothing is scoped.
        The engine-specific model classes come from :meth:`_condition`, :meth:`_filter` and :meth:`_has_ids`."""
        must: list[Any] = []
        for key, values in (flt or {}).items():
            field_key = f"{METADATA_KEY}.{key}"
            strs, ints, bools = _split_values(values)
            alternatives = [self._condition(field_key, g if len(g) > 1 else g[0]) for g in (strs, ints) if g]
            alternatives += [self._condition(field_key, self._bool(b)) for b in bools]
            must.append(alternatives[0] if len(alternatives) == 1 else self._filter(should=alternatives))
        must_not = [self._has_ids(excluded)] if excluded else None
        if not must and not must_not:
            return None
        return self._filter(must=must or None, must_not=must_not)

    def _condition(self, field_key: str, value: Any) -> Any:
        """A field condition: ``MatchAny`` for a list of values, ``MatchValue`` for one."""
        raise NotImplementedError

    def _filter(self, **parts: Any) -> Any:
        raise NotImplementedError

    def _has_ids(self, excluded: frozenset[str]) -> Any:
        raise NotImplementedError

    def _bool(self, value: bool) -> Any:
        return value

    def _check_usable(self) -> None:
        """Raise if the store cannot serve a call (the edge store once closed)."""

    def search(
        self,
        vector: Sequence[float],
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]:
        """The ``limit`` nearest documents (cosine similarity) among those the scope allows.

        Raises:
            DimensionMismatchError: the vector's dimension differs from the collection's, or it holds NaN.
            FilterError: a malformed filter or ``exclude_ids``.
            StoreError: Qdrant failed, or the store is closed.
        """
        prepared = self._prepare_search(vector, limit, filter, exclude_ids)
        if prepared is None:
            return []
        query, limit, flt, excluded = prepared
        self._ensure_payload_indexes(flt)
        points = self._nearest(query, limit, self._build_filter(flt, excluded))
        return [self._hit(p.id, p.payload, p.score) for p in points]

    def _ensure_payload_indexes(self, flt: NormalizedFilter | None) -> None:
        raise NotImplementedError

    def _nearest(self, query: list[float], limit: int, query_filter: Any) -> Sequence[Any]:
        """The engine's nearest points (each with ``id``, ``payload``, ``score``) under a built filter."""
        raise NotImplementedError

    def _prepare_search(
        self,
        vector: Sequence[float],
        limit: int,
        filter: FilterSpec | None,
        exclude_ids: Iterable[str] | None,
    ) -> tuple[list[float], int, NormalizedFilter | None, frozenset[str]] | None:
        """Validate a search; None when the answer is known to be empty."""
        self._check_usable()
        limit = check_limit(limit)
        flt, excluded = normalize_scope(filter, exclude_ids)
        query = _check_query_vector(vector, self._dimension)
        if limit == 0 or self._dimension is None:
            return None
        if flt and any(len(values) == 0 for values in flt.values()):
            return None  # an empty any-of matches nothing
        return query, limit, flt, excluded


# ------------------------------------------------------------------------------------------------------
# qdrant-client
# ------------------------------------------------------------------------------------------------------
def _client_error(exc: Exception, action: str) -> RRFRetrieverError:
    name = type(exc).__name__
    text = str(exc)
    if "already accessed by another instance" in text:
        return StoreLockedError(f"{action}: {text}")
    if name in {"ResponseHandlingException", "ConnectError", "ConnectTimeout", "ReadTimeout", "RpcError"} or (
        isinstance(exc, OSError)
    ):
        return StoreUnavailableError(f"{action}: Qdrant is unreachable ({name}: {text})")
    return StoreError(f"{action} failed: {name}: {text}")


class QdrantDenseStore(_QdrantBase):
    """A dense store on any ``QdrantClient``: ``:memory:``, a local ``path``, or a server ``url``.

    Args:
        embedding: A LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter
            (kept as ``self.embedding``, an :class:`~rrf_retriever.embeddings.EmbeddingAdapter`).
        client: An existing ``QdrantClient`` (then ``location``/``path``/``url`` are ignored).
        location: ``":memory:"`` (default) for an in-process throwaway collection.
        path: A folder for qdrant-client's local mode (one client per folder: a second gets
            :class:`~rrf_retriever.errors.StoreLockedError`). Local mode suits up to ~20,000 points; beyond,
            use a server or :class:`QdrantEdgeDenseStore`.
        url: A Qdrant server (``http://localhost:6333``); ``api_key`` for Qdrant Cloud.
        collection_name: The collection; created on the first ``add`` (cosine, the vectors' dimension).
        async_client: An ``AsyncQdrantClient`` on the same server, for native async twins (else the async
            twins run the sync ones in a worker thread).
        batch_size: Points per upsert request.

    Raises:
        MissingDependencyError: qdrant-client is not installed (extra ``qdrant``).
        StoreLockedError: ``path`` is open in another client.
        StoreUnavailableError: the server cannot be reached.

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> store = QdrantDenseStore(HashingEmbedding(dim=8))  # doctest: +SKIP
        >>> store.add(["a"], ["hello"]); store.count()  # doctest: +SKIP
        1
    """

    def __init__(
        self,
        embedding: Any,
        *,
        client: Any = None,
        location: str | None = ":memory:",
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection_name: str = "rrf_retriever",
        async_client: Any = None,
        batch_size: int = _UPSERT_BATCH,
    ) -> None:
        super().__init__(embedding)
        try:
            from qdrant_client import QdrantClient, models
        except ImportError as exc:
            raise missing_dependency("qdrant-client", "qdrant", "QdrantDenseStore") from exc
        if not isinstance(collection_name, str) or not collection_name or len(collection_name) > 255:
            msg = f"collection_name must be a non-empty string, got {collection_name!r}"
            raise InvalidArgumentError(msg)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            msg = f"batch_size must be a positive integer, got {batch_size!r}"
            raise InvalidArgumentError(msg)
        self._models = models
        self.collection_name = collection_name
        self.batch_size = batch_size
        self._owns_client = client is None
        if client is None:
            try:
                if url is not None:
                    client = QdrantClient(url=url, api_key=api_key)
                elif path is not None:
                    client = QdrantClient(path=str(path))
                else:
                    client = QdrantClient(location=location or ":memory:")
            except RRFRetrieverError:
                raise
            except Exception as exc:
                raise _client_error(exc, f"opening Qdrant ({url or path or location})") from exc
        self.client = client
        self.async_client = async_client
        self._indexed: set[tuple[str, str]] = set()
        self._is_local = type(getattr(client, "_client", None)).__name__ == "QdrantLocal"
        self._load_dimension()

    # -- lifecycle ---------------------------------------------------------------------------------
    def _local_guard(self) -> contextlib.AbstractContextManager[Any]:
        # qdrant-client local mode is not thread-safe: a search during an upsert reads half-grown numpy
        # arrays (IndexError / broadcast errors). A server client needs no lock.
        return self._lock if self._is_local else contextlib.nullcontext()

    def _load_dimension(self) -> None:
        try:
            if not self.client.collection_exists(self.collection_name):
                return
            info = self.client.get_collection(self.collection_name)
        except Exception as exc:
            raise _client_error(exc, f"reading collection {self.collection_name!r}") from exc
        self._dimension = self._dimension_of(info)

    def _dimension_of(self, info: Any) -> int:
        vectors = info.config.params.vectors
        if isinstance(vectors, Mapping):
            if "" not in vectors:
                msg = (
                    f"collection {self.collection_name!r} has only named vectors ({sorted(vectors)}); "
                    "QdrantDenseStore uses the unnamed default vector"
                )
                raise StoreError(msg)
            vectors = vectors[""]
        return int(vectors.size)

    def close(self) -> None:
        """Close the client if this store created it (releases a local ``path``)."""
        if self._owns_client:
            with contextlib.suppress(Exception):
                self.client.close()

    def __enter__(self) -> QdrantDenseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_collection(self, dim: int) -> None:
        if self._dimension is not None:
            return
        with self._lock:
            if self._dimension is not None:
                return
            models = self._models
            try:
                if not self.client.collection_exists(self.collection_name):
                    self.client.create_collection(
                        self.collection_name,
                        vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                    )
                    self._dimension = dim
                else:
                    self._dimension = self._dimension_of(self.client.get_collection(self.collection_name))
            except RRFRetrieverError:
                raise
            except Exception as exc:
                raise _client_error(exc, f"creating collection {self.collection_name!r}") from exc
        if self._dimension != dim:
            msg = f"vectors have dimension {dim}, the collection {self._dimension}"
            raise DimensionMismatchError(msg)

    # -- filters -----------------------------------------------------------------------------------
    def _condition(self, field_key: str, value: Any) -> Any:
        models = self._models
        match = models.MatchAny(any=value) if isinstance(value, list) else models.MatchValue(value=value)
        return models.FieldCondition(key=field_key, match=match)

    def _filter(self, **parts: Any) -> Any:
        return self._models.Filter(**parts)

    def _has_ids(self, excluded: frozenset[str]) -> Any:
        return self._models.HasIdCondition(has_id=sorted(point_id(i) for i in excluded))

    def _ensure_payload_indexes(self, flt: NormalizedFilter | None) -> None:
        """On a server, index each filtered key once (local mode ignores payload indexes)."""
        if not flt or self._is_local:
            return
        schemas = self._models.PayloadSchemaType
        for key, values in flt.items():
            strs, ints, bools = _split_values(values)
            for present, schema in ((strs, schemas.KEYWORD), (ints, schemas.INTEGER), (bools, schemas.BOOL)):
                tag = (key, str(schema))
                if not present or tag in self._indexed:
                    continue
                try:
                    self.client.create_payload_index(self.collection_name, f"{METADATA_KEY}.{key}", schema)
                except Exception as exc:  # an index of another type on the key: searches still work, slower
                    logger.debug("payload index on %s (%s) not created: %s", key, schema, exc)
                self._indexed.add(tag)

    # -- writes ------------------------------------------------------------------------------------
    def _points(
        self, pids: list[str], payloads: list[dict[str, Any]], vectors: list[list[float]]
    ) -> list[Any]:
        models = self._models
        return [models.PointStruct(id=p, vector=v, payload=pl) for p, v, pl in zip(pids, vectors, payloads)]

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        """Upsert documents (an existing id is replaced); texts are embedded when ``vectors`` is None.

        Everything is validated first: a bad id, metadata or vector raises and nothing is written.

        Raises:
            DimensionMismatchError: a vector of the wrong dimension, or holding NaN or infinity.
            EmbeddingError: the embedding model failed.
            StoreError: Qdrant failed.
        """
        pids, payloads, vectors_list, dim = self._prepare_add(ids, texts, metadatas, vectors)
        if not pids:
            return
        self._ensure_collection(dim)
        bar = _progress(len(pids), "upserting into Qdrant")
        try:
            for start in range(0, len(pids), self.batch_size):
                end = start + self.batch_size
                points = self._points(pids[start:end], payloads[start:end], vectors_list[start:end])
                try:
                    with self._local_guard():
                        self.client.upsert(self.collection_name, points=points, wait=True)
                except Exception as exc:
                    raise _client_error(exc, "upsert") from exc
                if bar is not None:
                    bar.update(len(points))
        finally:
            if bar is not None:
                bar.close()

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are ignored."""
        id_list = check_ids(ids)
        if not id_list or self._dimension is None:
            return
        models = self._models
        try:
            with self._local_guard():
                self.client.delete(
                    self.collection_name,
                    points_selector=models.PointIdsList(points=[point_id(i) for i in id_list]),
                    wait=True,
                )
        except Exception as exc:
            raise _client_error(exc, "delete") from exc

    # -- reads -------------------------------------------------------------------------------------
    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """The stored documents among ``ids``, in the order asked; unknown ids are skipped."""
        id_list = check_ids(ids)
        if not id_list or self._dimension is None:
            return []
        try:
            with self._local_guard():
                points = self.client.retrieve(
                    self.collection_name,
                    ids=list(dict.fromkeys(point_id(i) for i in id_list)),
                    with_payload=True,
                    with_vectors=bool(with_vectors),
                )
        except Exception as exc:
            raise _client_error(exc, "get") from exc
        by_pid = {str(p.id): p for p in points}
        out = []
        for doc_id in id_list:
            p = by_pid.get(point_id(doc_id))
            if p is not None:
                out.append(self._record(p.id, p.payload, p.vector if with_vectors else None))
        return out

    def count(self) -> int:
        """Number of documents."""
        if self._dimension is None:
            return 0
        try:
            with self._local_guard():
                return int(self.client.count(self.collection_name, exact=True).count)
        except Exception as exc:
            raise _client_error(exc, "count") from exc

    def _nearest(self, query: list[float], limit: int, query_filter: Any) -> Sequence[Any]:
        try:
            with self._local_guard():
                response = self.client.query_points(
                    self.collection_name, query=query, query_filter=query_filter, limit=limit, with_payload=True
                )
        except Exception as exc:
            raise _client_error(exc, "search") from exc
        return response.points

    # -- native async (only with an AsyncQdrantClient) ---------------------------------------------
    async def _async_ready(self) -> bool:
        if self._dimension is None:
            try:
                if await self.async_client.collection_exists(self.collection_name):
                    info = await self.async_client.get_collection(self.collection_name)
                    self._dimension = self._dimension_of(info)
            except RRFRetrieverError:
                raise
            except Exception as exc:
                raise _client_error(exc, "reading collection") from exc
        return self._dimension is not None

    async def aadd(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        """Async :meth:`add` (native with ``async_client``; texts embedded by ``aembed_documents``)."""
        if self.async_client is None:
            return await super().aadd(ids, texts, metadatas, vectors)
        if vectors is None:
            _, text_list, _ = validate_batch(ids, texts, metadatas)
            vectors = await self.embedding.aembed_documents(text_list) if text_list else []
        pids, payloads, vectors_list, dim = self._prepare_add(ids, texts, metadatas, vectors)
        if not pids:
            return None
        models = self._models
        try:
            if not await self._async_ready():
                await self.async_client.create_collection(
                    self.collection_name,
                    vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                )
                self._dimension = dim
            if self._dimension != dim:
                msg = f"vectors have dimension {dim}, the collection {self._dimension}"
                raise DimensionMismatchError(msg)
            for start in range(0, len(pids), self.batch_size):
                end = start + self.batch_size
                points = self._points(pids[start:end], payloads[start:end], vectors_list[start:end])
                await self.async_client.upsert(self.collection_name, points=points, wait=True)
        except RRFRetrieverError:
            raise
        except Exception as exc:
            raise _client_error(exc, "upsert") from exc
        return None

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async :meth:`delete`."""
        if self.async_client is None:
            return await super().adelete(ids)
        id_list = check_ids(ids)
        if not id_list or not await self._async_ready():
            return None
        try:
            await self.async_client.delete(
                self.collection_name,
                points_selector=self._models.PointIdsList(points=[point_id(i) for i in id_list]),
                wait=True,
            )
        except Exception as exc:
            raise _client_error(exc, "delete") from exc
        return None

    async def acount(self) -> int:
        """Async :meth:`count`."""
        if self.async_client is None:
            return await super().acount()
        if not await self._async_ready():
            return 0
        try:
            return int((await self.async_client.count(self.collection_name, exact=True)).count)
        except Exception as exc:
            raise _client_error(exc, "count") from exc

    async def asearch(
        self,
        vector: Sequence[float],
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]:
        """Async :meth:`search`."""
        if self.async_client is None:
            return await super().asearch(vector, limit, filter, exclude_ids)
        await self._async_ready()
        prepared = self._prepare_search(vector, limit, filter, exclude_ids)
        if prepared is None:
            return []
        query, limit, flt, excluded = prepared
        try:
            response = await self.async_client.query_points(
                self.collection_name,
                query=query,
                query_filter=self._build_filter(flt, excluded),
                limit=limit,
                with_payload=True,
            )
        except Exception as exc:
            raise _client_error(exc, "search") from exc
        return [self._hit(p.id, p.payload, p.score) for p in response.points]

    def __repr__(self) -> str:
        return f"QdrantDenseStore(collection_name={self.collection_name!r}, dimension={self._dimension})"


# ------------------------------------------------------------------------------------------------------
# qdrant-edge
# ------------------------------------------------------------------------------------------------------
_LOCK_FILE = ".rrf_retriever.lock"
_META_FILE = "rrf_store.json"
_SHARD_DIR = "shard"
_META_FORMAT = 1


class QdrantEdgeDenseStore(_QdrantBase):
    """A dense store on qdrant-edge, Qdrant's in-process engine: persistent, fast past 100k points.

    The store lives in the directory ``path`` (``shard/`` holds Qdrant's segments and write-ahead log,
    ``rrf_store.json`` the dimension). Only one store may open a directory at a time: we hold an
    ``fcntl.flock`` on ``path/.rrf_retriever.lock`` (a second raw open would break the first handle's
    write-ahead log), so a second opener, in this process or another, gets
    :class:`~rrf_retriever.errors.StoreLockedError`. ``path=None`` uses a temporary directory removed by
    :meth:`close`.

    Search is exact until :meth:`optimize` builds an HNSW index (worth it past ~20k points; check its recall).

    Args:
        embedding: As for :class:`QdrantDenseStore`.
        path: The store's directory (created if missing), or None for a temporary one.
        exact: Force exact search even after :meth:`optimize`.
        hnsw_ef: HNSW search breadth (``ef``) once an index exists; None is Qdrant's default.
        batch_size: Points per update operation.

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

    def __init__(
        self,
        embedding: Any,
        path: str | os.PathLike[str] | None = None,
        *,
        exact: bool = False,
        hnsw_ef: int | None = None,
        batch_size: int = _UPSERT_BATCH,
    ) -> None:
        super().__init__(embedding)
        try:
            import numpy as np
            import qdrant_edge
        except ImportError as exc:
            raise missing_dependency("qdrant-edge-py", "qdrant", "QdrantEdgeDenseStore") from exc
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            msg = f"batch_size must be a positive integer, got {batch_size!r}"
            raise InvalidArgumentError(msg)
        self._qe = qdrant_edge
        self._np = np
        self.exact = bool(exact)
        self.hnsw_ef = hnsw_ef
        self.batch_size = batch_size
        self._temporary = path is None
        self.path = Path(tempfile.mkdtemp(prefix="rrf-edge-")) if path is None else Path(path)
        self._shard: Any = None
        self._lock_fh: Any = None
        self._closed = False
        self._indexed: set[tuple[str, str]] = set()
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

    # -- lifecycle ---------------------------------------------------------------------------------
    def _acquire_lock(self) -> None:
        fh = open(self.path / _LOCK_FILE, "a+")  # noqa: SIM115 - held open for the store's life
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            fh.close()
            msg = f"the store at {self.path} is open elsewhere (in this or another process); close it first"
            raise StoreLockedError(msg) from exc
        self._lock_fh = fh

    def _release_lock(self) -> None:
        if self._lock_fh is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

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
        try:
            self._shard = self._qe.EdgeShard.load(str(shard_dir))
        except Exception as exc:
            msg = f"cannot open the Qdrant edge shard at {shard_dir}: {exc}"
            raise StoreError(msg) from exc
        self._dimension = dim
        with contextlib.suppress(Exception):  # indexes already built persist with the shard
            for field, info in self._shard.info().payload_schema.items():
                if field.startswith(f"{METADATA_KEY}."):
                    key = field[len(METADATA_KEY) + 1 :]
                    self._indexed.add((key, str(info.data_type).rsplit(".", 1)[-1]))

    def _create(self, dim: int) -> None:
        qe = self._qe
        shard_dir = self.path / _SHARD_DIR
        if shard_dir.exists():  # a shard without our meta file: a crash between create and meta write
            shutil.rmtree(shard_dir)
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine))
        try:
            self._shard = qe.EdgeShard.create(str(shard_dir), config)
        except Exception as exc:
            msg = f"cannot create the Qdrant edge shard at {shard_dir}: {exc}"
            raise StoreError(msg) from exc
        meta_file = self.path / _META_FILE
        tmp = meta_file.with_suffix(".tmp")
        meta = {"format": _META_FORMAT, "dimension": dim, "distance": "cosine"}
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, meta_file)
        self._dimension = dim

    def _check_open(self) -> None:
        if self._closed:
            msg = "this QdrantEdgeDenseStore is closed"
            raise StoreError(msg)

    def flush(self) -> None:
        """Write pending changes to the segments (the write-ahead log already makes them durable)."""
        with self._lock:
            self._check_open()
            if self._shard is not None:
                self._call(self._shard.flush, "flush")

    def optimize(self) -> bool:
        """Run Qdrant's optimizers (merges segments, builds the HNSW index); blocks until done.

        Returns:
            True if anything was optimized.
        """
        with self._lock:
            self._check_open()
            if self._shard is None:
                return False
            return bool(self._call(self._shard.optimize, "optimize"))

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

    def __enter__(self) -> QdrantEdgeDenseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    @staticmethod
    def _call(fn: Any, action: str, *args: Any) -> Any:
        try:
            return fn(*args)
        except RRFRetrieverError:
            raise
        except Exception as exc:
            msg = f"Qdrant edge {action} failed: {type(exc).__name__}: {exc}"
            raise StoreError(msg) from exc

    # -- filters -----------------------------------------------------------------------------------
    def _condition(self, field_key: str, value: Any) -> Any:
        qe = self._qe
        match = qe.MatchAny(value) if isinstance(value, list) else qe.MatchValue(value)
        return qe.FieldCondition(key=field_key, match=match)

    def _filter(self, **parts: Any) -> Any:
        return self._qe.Filter(**parts)

    def _has_ids(self, excluded: frozenset[str]) -> Any:
        return self._qe.HasIdCondition({uuid.UUID(point_id(i)) for i in excluded})

    def _bool(self, value: bool) -> Any:
        # numpy.bool_: qdrant-edge 0.9 reads a Python bool as an integer, numpy's bool as a JSON bool.
        return self._np.bool_(value)

    def _ensure_payload_indexes(self, flt: NormalizedFilter | None) -> None:
        """Index each filtered metadata key once (persisted in the shard).

        Without an index Qdrant checks the filter on every point's payload: measured here at 20k points,
        a 10 % filter took ~36 ms without an index and ~0.3 ms with one.
        """
        if not flt:
            return
        schema_type = self._qe.PayloadSchemaType
        for key, values in flt.items():
            strs, ints, bools = _split_values(values)
            groups = ((strs, schema_type.Keyword), (ints, schema_type.Integer), (bools, schema_type.Bool))
            for present, schema in groups:
                tag = (key, str(schema).rsplit(".", 1)[-1])
                if not present or tag in self._indexed:
                    continue
                with self._lock:
                    self._check_open()
                    op = self._qe.UpdateOperation.create_field_index(f"{METADATA_KEY}.{key}", schema)
                    try:
                        self._shard.update(op)
                    except Exception as exc:  # searches stay correct without it, only slower
                        logger.debug("payload index on %s (%s) not created: %s", key, schema, exc)
                    self._indexed.add(tag)

    # -- writes ------------------------------------------------------------------------------------
    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        """Upsert documents; see :meth:`QdrantDenseStore.add`."""
        self._check_open()
        pids, payloads, vectors_list, dim = self._prepare_add(ids, texts, metadatas, vectors)
        if not pids:
            return
        qe = self._qe
        bar = _progress(len(pids), "upserting into Qdrant edge")
        try:
            with self._lock:
                self._check_open()
                if self._shard is None:
                    self._create(dim)
                elif dim != self._dimension:
                    msg = f"vectors have dimension {dim}, the collection {self._dimension}"
                    raise DimensionMismatchError(msg)
                for start in range(0, len(pids), self.batch_size):
                    end = start + self.batch_size
                    points = [
                        qe.Point(uuid.UUID(p), v, pl)
                        for p, v, pl in zip(pids[start:end], vectors_list[start:end], payloads[start:end])
                    ]
                    self._call(self._shard.update, "upsert", qe.UpdateOperation.upsert_points(points))
                    if bar is not None:
                        bar.update(len(points))
        finally:
            if bar is not None:
                bar.close()

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are ignored."""
        id_list = check_ids(ids)
        with self._lock:
            self._check_open()
            if not id_list or self._shard is None:
                return
            op = self._qe.UpdateOperation.delete_points([uuid.UUID(point_id(i)) for i in id_list])
            self._call(self._shard.update, "delete", op)

    # -- reads -------------------------------------------------------------------------------------
    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """The stored documents among ``ids``, in the order asked; unknown ids are skipped."""
        id_list = check_ids(ids)
        with self._lock:
            self._check_open()
            if not id_list or self._shard is None:
                return []
            unique = list(dict.fromkeys(point_id(i) for i in id_list))
            points = self._call(
                self._shard.retrieve, "get", [uuid.UUID(p) for p in unique], True, bool(with_vectors)
            )
        by_pid = {str(p.id): p for p in points}
        out = []
        for doc_id in id_list:
            p = by_pid.get(point_id(doc_id))
            if p is not None:
                out.append(self._record(p.id, p.payload, p.vector if with_vectors else None))
        return out

    def count(self) -> int:
        """Number of documents."""
        with self._lock:
            self._check_open()
            if self._shard is None:
                return 0
            return int(self._call(self._shard.count, "count", self._qe.CountRequest(exact=True)))

    def _check_usable(self) -> None:
        self._check_open()

    def _nearest(self, query: list[float], limit: int, query_filter: Any) -> Sequence[Any]:
        qe = self._qe
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(query),
            filter=query_filter,
            with_payload=True,
            params=qe.SearchParams(exact=self.exact, hnsw_ef=self.hnsw_ef),
        )
        with self._lock:
            self._check_open()
            return self._call(self._shard.query, "search", request)

    def __repr__(self) -> str:
        return f"QdrantEdgeDenseStore(path={str(self.path)!r}, dimension={self._dimension})"
