""":class:`QdrantDenseStore`: the dense store on qdrant-client (memory, a local path, a server or a cluster).

It implements :class:`~rrf_retriever.stores.base.DenseStore`: cosine similarity (higher is better), the scope
(filter + ``exclude_ids``) applied inside Qdrant's search, before its top-k. Layout, point ids and filter semantics
are those of :mod:`rrf_retriever.stores.qdrant.base`; this module supplies qdrant-client's primitive calls, sync on
``client`` and, given an ``AsyncQdrantClient``, natively async.

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
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rrf_retriever.errors import (
    InvalidArgumentError,
    RRFRetrieverError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)
from rrf_retriever.stores.qdrant.base import DOC_ID_KEY, MAX_AUTO_INDEXES, UPSERT_BATCH, QdrantStoreBase
from rrf_retriever.stores.qdrant.filters import IS_EMPTY, Bounds
from rrf_retriever.stores.qdrant.steps import then

__all__ = ["QdrantDenseStore"]


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


class QdrantDenseStore(QdrantStoreBase):
    """A dense store on any ``QdrantClient``: ``:memory:``, a local ``path``, or a server ``url``.

    Args:
        embedding: A LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter
            (kept as ``self.embedding``, an :class:`~rrf_retriever.embeddings.EmbeddingAdapter`).
        client: An existing ``QdrantClient`` (then ``location``/``path``/``url`` are ignored).
        location: ``":memory:"`` (default) for an in-process throwaway collection.
        path: A folder for qdrant-client's local mode (one client per folder: a second gets
            :class:`~rrf_retriever.errors.StoreLockedError`). Local mode suits up to ~20,000 points; beyond,
            use a server or :class:`~rrf_retriever.stores.qdrant.QdrantEdgeDenseStore`.
        url: A Qdrant server (``http://localhost:6333``); ``api_key`` for Qdrant Cloud.
        collection_name: The collection; created on the first ``add`` (cosine, the vectors' dimension).
        async_client: An ``AsyncQdrantClient`` on the same server, for native async twins (else the async
            twins run the sync ones in a worker thread).
        batch_size: Points per upsert request.
        index_keys: Metadata keys to index as documents are written (e.g. ``["session_id"]``), so filtered
            queries on them never build an index themselves.
        max_auto_indexes: How many payload indexes a filtered query may build on first use (default 8); past it,
            other keys are filtered without an index (correct, slower).

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
        batch_size: int = UPSERT_BATCH,
        index_keys: Sequence[str] = (),
        max_auto_indexes: int = MAX_AUTO_INDEXES,
    ) -> None:
        super().__init__(embedding, batch_size, index_keys=index_keys, max_auto_indexes=max_auto_indexes)
        self._connect(client, location, path, url, api_key, collection_name, async_client)
        self._run(self._ready_steps())  # an existing collection: learn its dimension now

    def _connect(self, client: Any, location: str | None, path: Any, url: str | None, api_key: str | None,
                 collection_name: str, async_client: Any) -> None:
        """Open (or adopt) the qdrant-client connection and name the collection; shared with the keyword store."""
        qdrant_client, models = self._import_engine("qdrant-client", "qdrant_client", "qdrant_client.models")
        if not isinstance(collection_name, str) or not collection_name or len(collection_name) > 255:
            msg = f"collection_name must be a non-empty string, got {collection_name!r}"
            raise InvalidArgumentError(msg)
        self._models = models
        self.collection_name = collection_name
        self._owns_client = client is None
        if client is None:
            try:
                if url is not None:
                    client = qdrant_client.QdrantClient(url=url, api_key=api_key)
                elif path is not None:
                    client = qdrant_client.QdrantClient(path=str(path))
                else:
                    client = qdrant_client.QdrantClient(location=location or ":memory:")
            except RRFRetrieverError:
                raise
            except Exception as exc:
                raise _client_error(exc, f"opening Qdrant ({url or path or location})") from exc
        self.client = client
        self.async_client = async_client
        self._is_local = type(getattr(client, "_client", None)).__name__ == "QdrantLocal"
        # Local mode ignores payload indexes.
        self.indexes_payload = not self._is_local

    def close(self) -> None:
        """Close the client if this store created it (releases a local ``path``)."""
        if self._owns_client:
            with contextlib.suppress(Exception):
                self.client.close()

    def _engine_error(self, exc: Exception, action: str) -> RRFRetrieverError:
        return _client_error(exc, f"{action} (collection {self.collection_name!r})")

    def _api(self, *, asynchronous: bool) -> Any:
        return self.async_client if asynchronous else self.client

    def _call(self, fn: Any, action: str, *args: Any) -> Any:
        # qdrant-client local mode is not thread-safe: a search during an upsert reads half-grown numpy arrays
        # (IndexError / broadcast errors). A server client needs no lock, nor does the async client.
        local = self._is_local and bool(args) and args[0] is self.client
        with self._lock if local else contextlib.nullcontext():
            return super()._call(fn, action, *args)

    def _dimension_of(self, info: Any) -> int:
        self._learn_indexes(getattr(info, "payload_schema", None))
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

    # -- primitives: each a call on ``api`` (QdrantClient or AsyncQdrantClient, same methods) ----------------
    def _exists(self, api: Any) -> Any:
        return api.collection_exists(self.collection_name)

    def _vector_size(self, api: Any) -> Any:
        return then(api.get_collection(self.collection_name), self._dimension_of)

    def _create(self, api: Any, dim: int) -> Any:
        models = self._models
        params = models.VectorParams(size=dim, distance=models.Distance.COSINE)
        return api.create_collection(self.collection_name, vectors_config=params)

    def _upsert(self, api: Any, points: list[tuple[str, list[float], dict[str, Any]]]) -> Any:
        structs = [self._models.PointStruct(id=p, vector=v, payload=pl) for p, v, pl in points]
        return api.upsert(self.collection_name, points=structs, wait=True)

    def _delete(self, api: Any, pids: list[str]) -> Any:
        selector = self._models.PointIdsList(points=pids)
        return api.delete(self.collection_name, points_selector=selector, wait=True)

    def _retrieve(self, api: Any, pids: list[str], with_vectors: bool) -> Any:
        return api.retrieve(self.collection_name, ids=pids, with_payload=True, with_vectors=with_vectors)

    def _count(self, api: Any) -> Any:
        return then(api.count(self.collection_name, exact=True), lambda result: result.count)

    def _nearest(self, api: Any, query: list[float], limit: int, query_filter: Any) -> Any:
        response = api.query_points(
            self.collection_name, query=query, query_filter=query_filter, limit=limit, with_payload=True
        )
        return then(response, lambda result: result.points)

    def _scroll(self, api: Any, offset: Any, limit: int, query_filter: Any = None, ids_only: bool = False) -> Any:
        return api.scroll(self.collection_name, scroll_filter=query_filter, limit=limit, offset=offset,
                          with_payload=[DOC_ID_KEY] if ids_only else True, with_vectors=False)

    def _create_index(self, api: Any, field_key: str, kind: str) -> Any:
        return api.create_payload_index(self.collection_name, field_key, self._models.PayloadSchemaType(kind))

    # -- filter models -------------------------------------------------------------------------------
    def _condition(self, field_key: str, test: Any) -> Any:
        models = self._models
        if isinstance(test, Bounds):
            bounds = models.Range(gt=test.gt, gte=test.gte, lt=test.lt, lte=test.lte)
            return models.FieldCondition(key=field_key, range=bounds)
        if test is IS_EMPTY:
            return models.IsEmptyCondition(is_empty=models.PayloadField(key=field_key))
        match = models.MatchAny(any=test) if isinstance(test, list) else models.MatchValue(value=test)
        return models.FieldCondition(key=field_key, match=match)

    def _filter(self, **parts: Any) -> Any:
        return self._models.Filter(**parts)

    def _has_ids(self, pids: Iterable[str]) -> Any:
        return self._models.HasIdCondition(has_id=sorted(pids))

    def __repr__(self) -> str:
        return f"QdrantDenseStore(collection_name={self.collection_name!r}, dimension={self._dimension})"
