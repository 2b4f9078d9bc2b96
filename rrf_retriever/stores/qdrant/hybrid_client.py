""":class:`QdrantHybridStore`: both legs in one collection on qdrant-client (memory, a local path, a server, a
cluster). The scheme is :mod:`rrf_retriever.stores.qdrant.hybrid`'s; this module supplies qdrant-client's calls
(most of them the keyword and dense stores' own, reused) and the cluster settings of a new collection.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> store = QdrantHybridStore(HashingEmbedding(dim=16))  # doctest: +SKIP
    >>> store.add(["a", "b"], ["Configure the database", "Cooking pasta"])  # doctest: +SKIP
    >>> [h.id for h in store.keyword.search("configuring", 5)]  # doctest: +SKIP
    ['a']
    >>> engine = HybridEngine({"dense": store.dense, "keyword": store.keyword})  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import InvalidArgumentError, StoreError
from rrf_retriever.stores.qdrant.base import MAX_AUTO_INDEXES, UPSERT_BATCH
from rrf_retriever.stores.qdrant.client import QdrantDenseStore
from rrf_retriever.stores.qdrant.hybrid import DENSE_VECTOR_NAME, QdrantHybridBase
from rrf_retriever.stores.qdrant.keyword import SPARSE_VECTOR_NAME
from rrf_retriever.stores.qdrant.keyword_client import METADATA_PARAMS_KEY, QdrantKeywordStore
from rrf_retriever.stores.qdrant.steps import then

__all__ = ["QdrantHybridStore"]


def _check_cluster_setting(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        msg = f"{name} must be a positive integer or None, got {value!r}"
        raise InvalidArgumentError(msg)
    return value


class QdrantHybridStore(QdrantHybridBase):
    """Dense and BM25 legs in ONE collection on any ``QdrantClient``: one upsert writes both, one request
    (``query_batch_points``) searches both. Use :attr:`dense` and :attr:`keyword` as the engine's two sources.

    Args:
        embedding: The dense leg's embedding (LangChain, LlamaIndex, a callable or an adapter).
        client: An existing ``QdrantClient`` (then ``location``/``path``/``url`` are ignored).
        location: ``":memory:"`` (default) for an in-process throwaway collection.
        path: A folder for qdrant-client's local mode (one client per folder).
        url: A Qdrant server or cluster (``http://localhost:6333``); ``api_key`` for a secured one.
        collection_name: The collection; created on the first ``add``.
        shard_number, replication_factor, write_consistency_factor: Passed to ``create_collection`` when this
            store creates the collection (a cluster: see ``deploy/README.md``); None keeps the server's default.
            An existing collection keeps its own.
        analyzer, k1, b, avgdl, title_weight, live_idf, auto_reweight: The BM25 leg, as for
            :class:`~rrf_retriever.stores.qdrant.QdrantKeywordStore`.
        async_client: An ``AsyncQdrantClient`` on the same server, for native async twins.
        batch_size: Points per upsert request.
        index_keys, max_auto_indexes: Payload indexes, as for :class:`QdrantDenseStore`.

    Raises:
        MissingDependencyError: qdrant-client is not installed (extra ``qdrant``).
        StoreLockedError: ``path`` is open in another client.
        StoreUnavailableError: the server cannot be reached.
        StoreError: the collection exists but is not a joint one of ours.
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
        shard_number: int | None = None,
        replication_factor: int | None = None,
        write_consistency_factor: int | None = None,
        analyzer: Analyzer | None = None,
        k1: float | None = None,
        b: float | None = None,
        avgdl: float | None = None,
        title_weight: float | None = None,
        live_idf: bool = True,
        auto_reweight: bool = True,
        async_client: Any = None,
        batch_size: int = UPSERT_BATCH,
        index_keys: Sequence[str] = (),
        max_auto_indexes: int = MAX_AUTO_INDEXES,
    ) -> None:
        super().__init__(
            embedding, analyzer=analyzer, k1=k1, b=b, avgdl=avgdl, live_idf=live_idf, auto_reweight=auto_reweight,
            title_weight=title_weight,
            batch_size=batch_size, index_keys=index_keys, max_auto_indexes=max_auto_indexes,
        )
        self.cluster = {
            "shard_number": _check_cluster_setting("shard_number", shard_number),
            "replication_factor": _check_cluster_setting("replication_factor", replication_factor),
            "write_consistency_factor": _check_cluster_setting("write_consistency_factor", write_consistency_factor),
        }
        self._connect(client, location, path, url, api_key, collection_name, async_client)
        try:
            self._run(self._ready_steps())  # an existing collection: read and check its layout now
        except BaseException:
            self.close()
            raise

    # The keyword and dense stores' qdrant-client calls, word for word (same client, payload and filters).
    _connect = QdrantDenseStore._connect
    _engine_error = QdrantDenseStore._engine_error
    _api = QdrantDenseStore._api
    close = QdrantDenseStore.close
    _call = QdrantKeywordStore._call
    _where = QdrantKeywordStore._where
    _sparse = QdrantKeywordStore._sparse
    _params_of = QdrantKeywordStore._params_of
    _save_params = QdrantKeywordStore._save_params
    _scroll = QdrantKeywordStore._scroll
    _exists = QdrantDenseStore._exists
    _delete = QdrantDenseStore._delete
    _retrieve = QdrantDenseStore._retrieve
    _count = QdrantDenseStore._count
    _create_index = QdrantDenseStore._create_index
    _condition = QdrantDenseStore._condition
    _filter = QdrantDenseStore._filter
    _has_ids = QdrantDenseStore._has_ids

    def _layout_of(self, info: Any) -> tuple[Any, int]:
        params = self._params_of(info)  # refuses a collection without our BM25 sparse vector
        vectors = info.config.params.vectors
        dense = vectors.get(DENSE_VECTOR_NAME) if isinstance(vectors, Mapping) else None
        if dense is None:
            msg = (f"{self._where()} has no dense vector named {DENSE_VECTOR_NAME!r} (not a joint collection of "
                   "QdrantHybridStore); use another collection_name")
            raise StoreError(msg)
        return params, int(dense.size)

    # -- primitives: calls on ``api`` (QdrantClient or AsyncQdrantClient) ---------------------------------
    def _read_layout(self, api: Any) -> Any:
        return then(api.get_collection(self.collection_name), self._layout_of)

    def _create(self, api: Any, dim: int, params: dict[str, Any]) -> Any:
        models = self._models
        cluster = {k: v for k, v in self.cluster.items() if v is not None}
        return api.create_collection(
            self.collection_name,
            vectors_config={DENSE_VECTOR_NAME: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE_VECTOR_NAME: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata={METADATA_PARAMS_KEY: params},
            **cluster,
        )

    def _upsert(self, api: Any, points: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> Any:
        models = self._models
        if all(DENSE_VECTOR_NAME in vectors for _, vectors, _ in points):
            structs = [models.PointStruct(id=p, vector=v, payload=pl) for p, v, pl in points]
            return api.upsert(self.collection_name, points=structs, wait=True)
        # reweight rewrites the BM25 values only: update that vector, keep the dense one (an upsert would drop it).
        updates = [models.PointVectors(id=p, vector=v) for p, v, _ in points]
        return api.update_vectors(self.collection_name, points=updates, wait=True)

    def _request(self, name: str, args: tuple[Any, ...]) -> Any:
        """The ``QueryRequest`` of one leg's engine query (``nearest`` or ``sparse_search`` and its arguments)."""
        models = self._models
        if name == "nearest":
            query, limit, query_filter = args
            return models.QueryRequest(query=query, using=DENSE_VECTOR_NAME, filter=query_filter, limit=limit,
                                       with_payload=True)
        indices, values, limit, query_filter = args
        search_params = None
        if self.live_idf and not self._is_local:  # as QdrantKeywordStore: the IDF of the live points
            corpus = models.Filter(must=[models.HasVectorCondition(has_vector=SPARSE_VECTOR_NAME)])
            search_params = models.SearchParams(idf=models.IdfCorpusParams(corpus=corpus))
        return models.QueryRequest(query=models.SparseVector(indices=indices, values=values), using=SPARSE_VECTOR_NAME,
                                   filter=query_filter, params=search_params, limit=limit, with_payload=True)

    def _query_batch(self, api: Any, calls: list[tuple[str, tuple[Any, ...]]]) -> Any:
        requests = [self._request(name, args) for name, args in calls]
        response = api.query_batch_points(self.collection_name, requests=requests)
        return then(response, lambda results: [r.points for r in results])

    def _nearest(self, api: Any, query: list[float], limit: int, query_filter: Any) -> Any:
        return then(self._query_batch(api, [("nearest", (query, limit, query_filter))]), lambda r: r[0])

    def _sparse_search(self, api: Any, indices: list[int], values: list[float], limit: int, query_filter: Any) -> Any:
        return then(self._query_batch(api, [("sparse_search", (indices, values, limit, query_filter))]),
                    lambda r: r[0])

    def __repr__(self) -> str:
        return f"QdrantHybridStore(collection_name={self.collection_name!r}, dimension={self._dimension})"
