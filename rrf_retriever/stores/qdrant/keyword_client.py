""":class:`QdrantKeywordStore`: BM25 as Qdrant sparse vectors on qdrant-client (memory, a local path, a server or a
cluster).

It implements :class:`~rrf_retriever.stores.base.KeywordStore` (the scheme, and where it differs from exact BM25:
:mod:`rrf_retriever.stores.qdrant.keyword`). The collection holds one named sparse vector ``"bm25"`` with
``Modifier.IDF`` and no dense vector; the BM25 settings (k1, b, the frozen avgdl, the analyzer, the term-id scheme)
are saved in the collection's own ``metadata`` (``config.metadata["rrf_retriever_bm25"]``), so any client that
opens the collection ranks alike. The primitive calls are the dense store's (:class:`QdrantDenseStore`), reused.

Example:
    >>> store = QdrantKeywordStore()  # doctest: +SKIP
    >>> store.add(["a", "b"], ["Configure the database", "Cooking pasta"], [{"s": 1}, {"s": 2}])  # doctest: +SKIP
    >>> [h.id for h in store.search("configuring databases", 5, filter={"s": 1})]  # doctest: +SKIP
    ['a']
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import StoreError
from rrf_retriever.stores.qdrant.base import MAX_AUTO_INDEXES, UPSERT_BATCH
from rrf_retriever.stores.qdrant.client import QdrantDenseStore
from rrf_retriever.stores.qdrant.keyword import SPARSE_VECTOR_NAME, QdrantKeywordStoreBase
from rrf_retriever.stores.qdrant.steps import StepRunner, then

__all__ = ["METADATA_PARAMS_KEY", "QdrantKeywordStore"]

#: Where the BM25 settings live in the collection's metadata.
METADATA_PARAMS_KEY = "rrf_retriever_bm25"


class QdrantKeywordStore(QdrantKeywordStoreBase):
    """A BM25 keyword store on any ``QdrantClient``: ``:memory:``, a local ``path``, or a server ``url``.

    Args:
        client: An existing ``QdrantClient`` (then ``location``/``path``/``url`` are ignored).
        location: ``":memory:"`` (default) for an in-process throwaway collection.
        path: A folder for qdrant-client's local mode (one client per folder). Local mode scores sparse vectors
            in Python: ~50 ms a query at 1,000-3,000 documents (MED, CACM), ~300-400 ms at 5,000 (SciFact); use a
            server or :class:`~rrf_retriever.stores.qdrant.QdrantEdgeKeywordStore` (~2 ms) beyond small corpora.
        url: A Qdrant server or cluster (``http://localhost:6333``); ``api_key`` for Qdrant Cloud.
        collection_name: The collection; created on the first ``add``.
        analyzer: The analyzer (default: Lucene stopwords, Porter stems), the one every keyword store uses.
            None when reopening: the saved one.
        k1, b: BM25 term saturation and length normalisation (default 1.2 and 0.75, as the other stores).
        avgdl: The average document length to normalise by; default: the mean of the first batch written (see
            :meth:`reweight`).
        title_weight: The weight of a document's ``metadata["title"]`` (a string) as its own field, as in
            :class:`~rrf_retriever.stores.FTS5KeywordStore`: a term's count is its count in the text plus
            ``title_weight`` times its count in the title, and the length normalised is the text's plus the title's
            terms. 0: the text only. None (default): the saved weight when reopening (a collection written before
            the title field: 0), else 2.0.
        live_idf: Ask Qdrant for the IDF of the live points (a server otherwise counts deleted points until their
            segment is vacuumed). Needs a server that knows ``SearchParams.idf``; local mode always counts live.
        async_client: An ``AsyncQdrantClient`` on the same server, for native async twins.
        batch_size: Points per upsert request.
        index_keys, max_auto_indexes: Payload indexes, as for :class:`QdrantDenseStore`.

    Raises:
        MissingDependencyError: qdrant-client is not installed (extra ``qdrant``).
        StoreLockedError: ``path`` is open in another client.
        StoreUnavailableError: the server cannot be reached.
        StoreError: the collection exists but holds no BM25 settings of ours.
        InvalidArgumentError: settings that differ from the collection's.
    """

    def __init__(
        self,
        *,
        client: Any = None,
        location: str | None = ":memory:",
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection_name: str = "rrf_retriever_keyword",
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
            analyzer=analyzer, k1=k1, b=b, avgdl=avgdl, live_idf=live_idf, auto_reweight=auto_reweight,
            title_weight=title_weight,
            batch_size=batch_size,
            index_keys=index_keys, max_auto_indexes=max_auto_indexes,
        )
        self._connect(client, location, path, url, api_key, collection_name, async_client)
        try:
            self._run(self._ready_steps())  # an existing collection: read and check its settings now
        except BaseException:
            self.close()
            raise

    # The dense store's qdrant-client calls, word for word (same client, collection, payload and filters).
    _connect = QdrantDenseStore._connect
    _engine_error = QdrantDenseStore._engine_error
    _api = QdrantDenseStore._api
    close = QdrantDenseStore.close
    _exists = QdrantDenseStore._exists
    _upsert = QdrantDenseStore._upsert
    _delete = QdrantDenseStore._delete
    _retrieve = QdrantDenseStore._retrieve
    _count = QdrantDenseStore._count
    _create_index = QdrantDenseStore._create_index
    _scroll = QdrantDenseStore._scroll
    _condition = QdrantDenseStore._condition
    _filter = QdrantDenseStore._filter
    _has_ids = QdrantDenseStore._has_ids

    def _call(self, fn: Any, action: str, *args: Any) -> Any:
        # As QdrantDenseStore._call: qdrant-client local mode is not thread-safe, so its sync calls are serialised.
        local = self._is_local and bool(args) and args[0] is self.client
        with self._lock if local else contextlib.nullcontext():
            return StepRunner._call(self, fn, action, *args)

    def _where(self) -> str:
        return f"collection {self.collection_name!r}"

    def _sparse(self, indices: list[int], values: list[float]) -> Any:
        return {SPARSE_VECTOR_NAME: self._models.SparseVector(indices=indices, values=values)}

    # -- primitives: calls on ``api`` (QdrantClient or AsyncQdrantClient) ---------------------------------
    def _params_of(self, info: Any) -> Any:
        self._learn_indexes(getattr(info, "payload_schema", None))
        sparse = info.config.params.sparse_vectors or {}
        params = sparse.get(SPARSE_VECTOR_NAME)
        if params is None or params.modifier != self._models.Modifier.IDF:
            msg = (
                f"{self._where()} has no sparse vector {SPARSE_VECTOR_NAME!r} with the IDF modifier "
                "(not written by a Qdrant keyword store); use another collection_name"
            )
            raise StoreError(msg)
        return (info.config.metadata or {}).get(METADATA_PARAMS_KEY)

    def _read_params(self, api: Any) -> Any:
        return then(api.get_collection(self.collection_name), self._params_of)

    def _create(self, api: Any, params: dict[str, Any]) -> Any:
        models = self._models
        return api.create_collection(
            self.collection_name,
            vectors_config={},
            sparse_vectors_config={SPARSE_VECTOR_NAME: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata={METADATA_PARAMS_KEY: params},
        )

    def _save_params(self, api: Any, params: dict[str, Any]) -> Any:
        return api.update_collection(self.collection_name, metadata={METADATA_PARAMS_KEY: params})

    def _sparse_search(
        self, api: Any, indices: list[int], values: list[float], limit: int, query_filter: Any
    ) -> Any:
        models = self._models
        search_params = None
        # Local mode counts live points already (and a corpus filter makes it rescan every point in Python).
        if self.live_idf and not self._is_local:
            corpus = models.Filter(must=[models.HasVectorCondition(has_vector=SPARSE_VECTOR_NAME)])
            search_params = models.SearchParams(idf=models.IdfCorpusParams(corpus=corpus))
        response = api.query_points(
            self.collection_name,
            query=models.SparseVector(indices=indices, values=values),
            using=SPARSE_VECTOR_NAME,
            query_filter=query_filter,
            search_params=search_params,
            limit=limit,
            with_payload=True,
        )
        return then(response, lambda result: result.points)

    def __repr__(self) -> str:
        return f"QdrantKeywordStore(collection_name={self.collection_name!r}, k1={self.k1:g}, b={self.b:g}, " \
               f"avgdl={self.avgdl})"
