"""The three store kinds on qdrant-client (``:memory:``, a local path, a server or a cluster): each class is a thin
constructor. It builds its kind's settings (frozen values, :mod:`~rrf_retriever.stores.qdrant.settings`) from its
keywords, then its :class:`~rrf_retriever.stores.qdrant.backend_client.ClientBackend`, and hands them to the kind.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> store = QdrantDenseStore(HashingEmbedding(dim=16))
    >>> store.add(["a", "b"], ["red apples", "blue sky"], [{"lang": "en"}, {"lang": "fr"}])
    >>> query = store.embedding.embed_query("apples")
    >>> [h.id for h in store.search(query, 5, filter={"lang": "en"})]
    ['a']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.qdrant.backend import DENSE_LAYOUT, JOINT_LAYOUT, KEYWORD_LAYOUT
from rrf_retriever.stores.qdrant.backend_client import ClientBackend, ClientConnection, ClientOptions
from rrf_retriever.stores.qdrant.bm25_params import Bm25Options, Bm25Settings
from rrf_retriever.stores.qdrant.dense import DenseKind, window_settings
from rrf_retriever.stores.qdrant.joint import JointKind
from rrf_retriever.stores.qdrant.keyword import KeywordKind
from rrf_retriever.stores.qdrant.settings import StoreOptions, StoreSettings, signature_with, split_options, take

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["KEYWORD_COLLECTION", "QdrantDenseStore", "QdrantHybridStore", "QdrantKeywordStore"]

#: The collection a :class:`QdrantKeywordStore` uses by default (the dense and hybrid stores: ``"rrf_retriever"``).
KEYWORD_COLLECTION = "rrf_retriever_keyword"


def _check_cluster_setting(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        msg = f"{name} must be a positive integer or None, got {value!r}"
        raise InvalidArgumentError(msg)
    return value


class _ClientOptions(ClientOptions, StoreOptions, total=False):
    """The keywords of a dense client store besides its windows."""


class _ClientBm25Options(ClientOptions, Bm25Options, StoreOptions, total=False):
    """The keywords of a keyword or hybrid client store besides its cluster settings."""


class _ClientSurface:
    """What a store on qdrant-client shows of its connection (read from the backend it holds)."""

    backend: ClientBackend

    @property
    def client(self) -> Any:
        """The ``QdrantClient`` (given, or opened by the store and closed with it)."""
        return self.backend.sync_api

    @property
    def async_client(self) -> Any:
        """The ``AsyncQdrantClient`` of the native async twins, or None (they run in a worker thread)."""
        return self.backend.async_api

    @property
    def collection_name(self) -> str:
        """The collection."""
        return self.backend.collection_name


class QdrantDenseStore(_ClientSurface, DenseKind[ClientBackend]):
    """A dense store on any ``QdrantClient``: ``:memory:``, a local ``path``, or a server ``url``.

    It implements :class:`~rrf_retriever.stores.base.DenseStore` (:mod:`~rrf_retriever.stores.qdrant.dense`).

    Args:
        embedding: A LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter
            (kept as ``self.embedding``, an :class:`~rrf_retriever.embeddings.EmbeddingAdapter`).
        client: An existing ``QdrantClient`` (then ``location``/``path``/``url`` are ignored).
        location: ``":memory:"`` (default) for an in-process throwaway collection.
        path: A folder for qdrant-client's local mode (one client per folder: a second gets
            :class:`~rrf_retriever.errors.StoreLockedError`). Local mode suits small collections; beyond,
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
        max_windows: Embed a long document in up to this many windows of the model's length and score it by its
            best window (MaxP; :mod:`~rrf_retriever.stores.qdrant.dense`); 1: one vector a document; None (the
            default): the collection's own, else 1. Measured in benchmarks/RESULTS.md ("Long documents").
        window_overlap: Tokens neighbouring windows share (None: the collection's, else 32).

    Raises:
        MissingDependencyError: qdrant-client is not installed (extra ``qdrant``).
        InvalidArgumentError: ``max_windows`` / ``window_overlap`` out of range or unlike the collection's.
        StoreLockedError: ``path`` is open in another client.
        StoreUnavailableError: the server cannot be reached.
        StoreError: the collection exists with only named vectors.

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> store = QdrantDenseStore(HashingEmbedding(dim=8))
        >>> store.add(["a"], ["hello"]); store.count()
        1
    """

    def __init__(
        self, embedding: Any, *, max_windows: int | None = None, window_overlap: int | None = None,
        **options: Unpack[_ClientOptions],
    ) -> None:
        given = split_options(type(self).__name__, options, ClientConnection, StoreSettings)
        super().__init__(embedding, window_settings(max_windows, window_overlap), take(StoreSettings, given))
        self._open(ClientBackend(DENSE_LAYOUT, type(self).__name__, take(ClientConnection, given)))


signature_with(QdrantDenseStore.__init__, ClientConnection, StoreSettings)


class QdrantKeywordStore(_ClientSurface, KeywordKind[ClientBackend]):
    """A BM25 keyword store on any ``QdrantClient``: ``:memory:``, a local ``path``, or a server ``url``.

    It implements :class:`~rrf_retriever.stores.base.KeywordStore` (the scheme, and where it differs from exact
    BM25: :mod:`rrf_retriever.stores.qdrant.keyword`). The collection holds one named sparse vector ``"bm25"``
    with ``Modifier.IDF`` and no dense vector; the BM25 settings (k1, b, the frozen avgdl, the analyzer, the
    term-id scheme) are saved in the collection's own ``metadata``, so any client that opens it ranks alike.

    Args:
        client: An existing ``QdrantClient`` (then ``location``/``path``/``url`` are ignored).
        location: ``":memory:"`` (default) for an in-process throwaway collection.
        path: A folder for qdrant-client's local mode (one client per folder). Local mode scores sparse vectors
            in Python: use a server or :class:`~rrf_retriever.stores.qdrant.QdrantEdgeKeywordStore` beyond small
            corpora.
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
        auto_reweight: Re-freeze avgdl as the collection grows (:meth:`reweight`; never with ``avgdl=``).
        async_client: An ``AsyncQdrantClient`` on the same server, for native async twins.
        batch_size: Points per upsert request.
        index_keys, max_auto_indexes: Payload indexes, as for :class:`QdrantDenseStore`.

    Raises:
        MissingDependencyError: qdrant-client is not installed (extra ``qdrant``).
        StoreLockedError: ``path`` is open in another client.
        StoreUnavailableError: the server cannot be reached.
        StoreError: the collection exists but holds no BM25 settings of ours.
        InvalidArgumentError: settings that differ from the collection's.

    Example:
        >>> store = QdrantKeywordStore()
        >>> store.add(["a", "b"], ["Configure the database", "Cooking pasta"], [{"s": 1}, {"s": 2}])
        >>> [h.id for h in store.search("configuring databases", 5, filter={"s": 1})]
        ['a']
    """

    def __init__(self, **options: Unpack[_ClientBm25Options]) -> None:
        given = split_options(type(self).__name__, options, ClientConnection, Bm25Settings, StoreSettings)
        super().__init__(take(Bm25Settings, given), take(StoreSettings, given))
        connection = take(ClientConnection, {"collection_name": KEYWORD_COLLECTION, **given})
        self._open(ClientBackend(KEYWORD_LAYOUT, type(self).__name__, connection))


signature_with(QdrantKeywordStore.__init__, ClientConnection, Bm25Settings, StoreSettings,
               defaults={"collection_name": KEYWORD_COLLECTION})


class QdrantHybridStore(_ClientSurface, JointKind[ClientBackend]):
    """Dense and BM25 legs in ONE collection on any ``QdrantClient``: one upsert writes both, one request
    (``query_batch_points``) searches both (:mod:`~rrf_retriever.stores.qdrant.joint`). Use :attr:`dense` and
    :attr:`keyword` as the engine's two sources.

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
        analyzer, k1, b, avgdl, title_weight, live_idf, auto_reweight, k3, short_query_terms: The BM25 leg, as for
            :class:`QdrantKeywordStore`.
        async_client, batch_size, index_keys, max_auto_indexes: As for :class:`QdrantKeywordStore`.

    Raises:
        MissingDependencyError, StoreLockedError, StoreUnavailableError: As for :class:`QdrantKeywordStore`.
        StoreError: the collection exists but is not a joint one of ours.

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> store = QdrantHybridStore(HashingEmbedding(dim=16))
        >>> store.add(["a", "b"], ["Configure the database", "Cooking pasta"])
        >>> [h.id for h in store.keyword.search("configuring", 5)]
        ['a']
    """

    def __init__(
        self,
        embedding: Any,
        *,
        shard_number: int | None = None,
        replication_factor: int | None = None,
        write_consistency_factor: int | None = None,
        **options: Unpack[_ClientBm25Options],
    ) -> None:
        given = split_options(type(self).__name__, options, ClientConnection, Bm25Settings, StoreSettings)
        super().__init__(embedding, take(Bm25Settings, given), take(StoreSettings, given))
        #: The ``create_collection`` settings of a collection this store creates (None: the server's default).
        self.cluster = {
            "shard_number": _check_cluster_setting("shard_number", shard_number),
            "replication_factor": _check_cluster_setting("replication_factor", replication_factor),
            "write_consistency_factor": _check_cluster_setting("write_consistency_factor", write_consistency_factor),
        }
        self._open(ClientBackend(JOINT_LAYOUT, type(self).__name__, take(ClientConnection, given), self.cluster))


signature_with(QdrantHybridStore.__init__, ClientConnection, Bm25Settings, StoreSettings)
