"""The hybrid retriever as a LangChain ``VectorStore``: what ``ParentDocumentRetriever``, ``SelfQueryRetriever``,
``MultiVectorRetriever`` and any code written against LangChain's vector store API can hold.

Every text search is hybrid: the dense leg and the keyword leg fused by weighted RRF, as
:class:`~rrf_retriever.langchain.LangChainRRFRetriever` answers (the store wraps one; ``store.retriever``).

Decisions (the contract, each guarded by a test):

* Returned ``Document`` s carry the user's metadata only (no ``rrf_*`` key): LangChain's wrappers deduplicate and
  compare documents by equality, so a per-query value in the metadata would make one document two. The scoring
  lives in the score of :meth:`RRFVectorStore.similarity_search_with_score` (the normalized fused score in
  [0, 1], higher is better: 1.0 = first in every active leg) and, with ranks, per-leg scores and the trace, in
  ``store.retriever.search(query)`` or :meth:`RRFVectorStore.as_hybrid_retriever` (whose documents carry the
  ``rrf_*`` keys as every retriever result does).
* :meth:`RRFVectorStore.similarity_search_by_vector` has no text, so no keyword leg: it ranks by the dense leg
  alone (the dense store's own scores). Pass ``query_vector=`` to :meth:`similarity_search` for a hybrid search
  with a vector you embedded yourself.
* ``as_retriever()`` is LangChain's own ``VectorStoreRetriever`` (its type, search types and tags, as LangChain
  code expects), answering with this store's hybrid results; ``"similarity_score_threshold"`` (and
  ``similarity_search_with_relevance_scores``) thresholds the relevance (:mod:`rrf_retriever.relevance`: the
  normalized fused score times how strongly the corpus matches the query, low for an unrelated query).
  :meth:`RRFVectorStore.as_hybrid_retriever` is our retriever over the same engine.
* ``max_marginal_relevance_search`` (and ``as_retriever(search_type="mmr")``) is our ``diversity`` stage: MMR
  over the hybrid candidates' stored dense vectors, ``lambda_mult`` its lambda, ``fetch_k`` the candidates (each
  leg's depth for the call: ``search_kwargs={"k": 5, "fetch_k": 50}`` as LangChain's docstring has it). The
  ``_by_vector`` twins run the same stage over the dense legs, with the vector given and no text.
* ``batch_size`` (``add_texts``, ``add_documents``; LangChain's ``index()`` passes it) bounds each all-or-nothing
  write, so ``langchain_core.indexing.index`` and ``aindex`` write through this store.
* ``filter`` is our Mongo-style filter; PGVector's operators are translated and other stores' dialects refused by
  name (:mod:`rrf_retriever.scope.dialects`).
* :meth:`RRFVectorStore.get_by_filter` lists the documents a filter matches (``get_by_ids`` by metadata), sorted
  by id and bounded (:mod:`rrf_retriever.frameworks.listing`).
* ``datetime`` / ``date`` metadata is stored as its ISO 8601 string and comes back as that string (as from Qdrant);
  it filters by range (``{"created_at": {"$gte": datetime(2024, 1, 1)}}``, :mod:`rrf_retriever.scope.dates`). So
  ``TimeWeightedVectorStoreRetriever`` works over this store: its ``current_time`` argument, which it passes on to
  ``add_documents``, is taken and dropped (it is already in the metadata it wrote).

Example:
    >>> from rrf_retriever import HashingEmbedding
    >>> from rrf_retriever.langchain import RRFVectorStore
    >>> store = RRFVectorStore.from_texts(["error E42 in the index", "vector search"], HashingEmbedding(),
    ...                                   metadatas=[{"kind": "log"}, {"kind": "doc"}], ids=["e42", "vec"])
    >>> [(d.id, d.metadata) for d in store.similarity_search("E42", k=1)]
    [('e42', {'kind': 'log'})]
    >>> store.similarity_search("E42", k=1, filter={"kind": "doc"})[0].id
    'vec'
    >>> store.close()
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.engine.paths import main_dense_leg
from rrf_retriever.errors import InvalidArgumentError, missing_dependency
from rrf_retriever.frameworks.building import detected_analyzer, record_detection
from rrf_retriever.frameworks.core import RetrieverCore
from rrf_retriever.frameworks.listing import listed
from rrf_retriever.frameworks.results import content_ids, document_list
from rrf_retriever.langchain.embeddings import RRFLangChainEmbeddings
from rrf_retriever.langchain.retriever import LangChainRRFRetriever
from rrf_retriever.langchain.vectorstore_doors import CheckedVectorStore
from rrf_retriever.metadata import public_metadata
from rrf_retriever.progress import check_show_progress
from rrf_retriever.scope.dialects import from_dialect
from rrf_retriever.scope.parse import Scope, normalize_filter
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.types import FusedHit, Hit, Record
from rrf_retriever.validate import check_ids, check_int, check_list, check_number, check_top_k
from rrf_retriever.vectors import to_float_vector

try:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("langchain-core", "langchain", "rrf_retriever.langchain") from exc

__all__ = ["RRFVectorStore"]


def _document(hit: FusedHit | Hit | Record) -> Document:
    return Document(id=hit.id, page_content=hit.text, metadata=public_metadata(hit.metadata, hit.id))


def _time_weighted(kwargs: dict[str, Any]) -> None:
    """Drop the ``current_time`` LangChain's ``TimeWeightedVectorStoreRetriever.add_documents`` passes on to its
    store: it has already written it into each document's ``last_accessed_at`` / ``created_at``."""
    kwargs.pop("current_time", None)


def _no_extra(kwargs: dict[str, Any], method: str) -> None:
    if kwargs:
        msg = f"unknown argument(s) {sorted(kwargs)} for RRFVectorStore.{method}"
        raise InvalidArgumentError(msg)


def _batch_size(kwargs: dict[str, Any]) -> int | None:
    """LangChain's ``batch_size`` (popped from ``kwargs``): None, or a positive integer (our error otherwise)."""
    batch = kwargs.pop("batch_size", None)
    return None if batch is None else check_int(batch, "batch_size", 1)


class RRFVectorStore(CheckedVectorStore):
    """A LangChain ``VectorStore`` whose searches are hybrid (dense + keyword, fused by weighted RRF).

    Args:
        embedding: A LangChain ``Embeddings`` (or any model :func:`~rrf_retriever.as_embedding` adapts); the
            embedded default stack is built around it (Qdrant edge dense + BM25 keyword, in memory unless ``path``).
        retriever: Wrap an existing retriever (:class:`~rrf_retriever.EnsembleRRFRetriever`,
            :class:`~rrf_retriever.langchain.LangChainRRFRetriever`) instead; its engine is shared.
        show_progress: Progress bars while writing: True always, False never, None (default) for long work on
            a terminal only; ``add_texts(..., show_progress=...)`` / ``add_documents`` per call.
        **kwargs: With ``embedding``: what :meth:`LangChainRRFRetriever.from_texts` takes (``path``, ``keyword``,
            ``dense``, ``weights``, ``rrf_k``, ...).

    Example:
        >>> from rrf_retriever import HashingEmbedding
        >>> store = RRFVectorStore(HashingEmbedding())
        >>> store.add_texts(["hello world"], ids=["h"])
        ['h']
        >>> [(d.id, round(s, 2)) for d, s in store.similarity_search_with_score("hello")]
        [('h', 1.0)]
    """

    def __init__(self, embedding: Any = None, *, retriever: RetrieverCore | None = None,
                 show_progress: bool | None = None, **kwargs: Any) -> None:
        if retriever is None:
            if embedding is None:
                msg = "RRFVectorStore needs an embedding (a LangChain Embeddings) or retriever="
                raise InvalidArgumentError(msg)
            retriever = LangChainRRFRetriever.from_texts([], embedding, **kwargs)
        elif kwargs:
            msg = f"argument(s) {sorted(kwargs)} build a new stack; with retriever= pass none"
            raise InvalidArgumentError(msg)
        #: The hybrid retriever underneath (``retriever.search(query)`` gives ranks, leg scores and the trace).
        self.retriever: RetrieverCore = retriever
        self._embedding = embedding
        self._show_progress = check_show_progress(show_progress)

    @property
    def embeddings(self) -> Embeddings | None:
        """The LangChain ``Embeddings`` given, else a LangChain view of the dense leg's model (None without one)."""
        if isinstance(self._embedding, Embeddings):
            return self._embedding
        legs = self.retriever.engine.legs
        try:
            model = legs[main_dense_leg(legs)].embedding
        except InvalidArgumentError:
            return None
        return RRFLangChainEmbeddings(model) if model is not None else None

    # ---- constructors -------------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> RRFVectorStore:
        """Build the embedded default stack around ``embedding`` and index ``texts`` (ids: given, else derived
        from the text and metadata, so a re-run upserts). ``kwargs``: see the class."""
        found, texts = None, check_list(texts, "texts", "strings")  # before anything is built
        if texts and kwargs.get("analyzer") is None:  # the keyword analyzer of the corpus's language
            kwargs["analyzer"], found = detected_analyzer(texts, analyzer=None, keyword=kwargs.get("keyword"),
                                                          path=kwargs.get("path"), url=kwargs.get("url"))
        store = cls(embedding, **kwargs)
        if texts:
            try:
                store.add_texts(texts, metadatas, ids=ids)
                record_detection(kwargs.get("path"), store.retriever.engine, found)
            except BaseException:
                store.close()
                raise
        return store

    # ---- writes -------------------------------------------------------------------------------------

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict[Any, Any]] | None = None, *, ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Upsert texts into every store (all or none); returns the ids. ``batch_size`` (what LangChain's
        ``index()`` passes; langchain-qdrant's 64): at most this many documents per all-or-nothing write, the batch
        written in consecutive writes (validated whole first; a failing write leaves the earlier ones written, as
        the store's 10,000-document chunks do). None (default): the store's chunks of 10,000."""
        show, batch = kwargs.pop("show_progress", self._show_progress), _batch_size(kwargs)
        _no_extra(kwargs, "add_texts")
        text_list = check_list(texts, "texts", "strings")
        return self.retriever.add_texts(text_list, metadatas=metadatas, ids=self._ids(ids, len(text_list)),
                                        show_progress=show, chunk_size=batch)

    async def aadd_texts(
        self, texts: Iterable[str], metadatas: list[dict[Any, Any]] | None = None, *, ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Async twin of :meth:`add_texts`."""
        show, batch = kwargs.pop("show_progress", self._show_progress), _batch_size(kwargs)
        _no_extra(kwargs, "aadd_texts")
        text_list = check_list(texts, "texts", "strings")
        return await self.retriever.aadd_texts(text_list, metadatas=metadatas, ids=self._ids(ids, len(text_list)),
                                               show_progress=show, chunk_size=batch)

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Upsert ``Document`` s; ids from ``ids=``, else each ``Document.id``, else derived from the content.
        ``batch_size``: as :meth:`add_texts` (so ``langchain_core.indexing.index`` writes through this store)."""
        ids, show = kwargs.pop("ids", None), kwargs.pop("show_progress", self._show_progress)
        _time_weighted(kwargs)
        batch = _batch_size(kwargs)
        _no_extra(kwargs, "add_documents")
        return self.retriever.add_documents(documents, ids=self._document_ids(documents, ids), show_progress=show,
                                            chunk_size=batch)

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        ids, show = kwargs.pop("ids", None), kwargs.pop("show_progress", self._show_progress)
        _time_weighted(kwargs)
        batch = _batch_size(kwargs)
        _no_extra(kwargs, "aadd_documents")
        return await self.retriever.aadd_documents(documents, ids=self._document_ids(documents, ids),
                                                   show_progress=show, chunk_size=batch)

    @staticmethod
    def _ids(ids: Sequence[str | None] | None, size: int) -> list[str] | None:
        given = None if ids is None else check_list(ids, "ids", "ids")
        if given is None or all(i is None for i in given):
            return None
        if len(given) != size or any(i is None for i in given):
            msg = f"ids must give one id per text ({size}), got {len(given)} with None among them or a length mismatch"
            raise InvalidArgumentError(msg)
        return given  # each id is checked by the engine (a string: an int is refused, not made one)

    @staticmethod
    def _document_ids(documents: Sequence[Document], ids: Sequence[str | None] | None) -> list[str] | None:
        if ids is None:
            return None  # each Document.id, else derived (the core does it)
        given, documents = check_list(ids, "ids", "ids"), document_list(documents)
        if len(given) != len(documents):
            msg = f"ids must give one id per document ({len(documents)}), got {len(given)}"
            raise InvalidArgumentError(msg)
        if not all(isinstance(d, Document) for d in documents):
            return given  # the core refuses what is not a Document, naming it
        derived = content_ids([d.page_content for d in documents], [d.metadata for d in documents])
        return [i if i is not None else d.id or c for i, d, c in zip(given, documents, derived)]  # a gap: its own

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete ids from every store (all or none; a missing id is not an error). ``ids=None`` deletes nothing
        and returns False (deleting everything is ``retriever.engine.delete_where``'s, with a filter)."""
        _no_extra(kwargs, "delete")
        if ids is None:
            return False
        self.retriever.delete(check_ids(ids))
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Async twin of :meth:`delete`."""
        _no_extra(kwargs, "adelete")
        if ids is None:
            return False
        await self.retriever.adelete(check_ids(ids))
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Stored documents by id (missing ids skipped; order as asked)."""
        return [Document(id=r.id, page_content=r.text, metadata=dict(r.metadata))
                for r in self.retriever.get_by_ids(check_ids(ids))]

    def get_by_filter(self, filter: Any = None, *, limit: int | None = None) -> list[Document]:
        """Stored documents whose metadata matches ``filter`` (as in :meth:`similarity_search`; None: every
        document), sorted by id, metadata as :meth:`get_by_ids` gives it: no query, no ranking. Bounded
        (:func:`~rrf_retriever.frameworks.listing.listed`): at most ``LIST_MAX`` (10,000) documents may match,
        more is an ``InvalidArgumentError``; ``limit`` (0 to ``LIST_MAX``) asks for the first ones by id.

        Example:
            >>> from rrf_retriever import HashingEmbedding
            >>> store = RRFVectorStore.from_texts(["a", "b", "c"], HashingEmbedding(), ids=["1", "2", "3"],
            ...                                   metadatas=[{"team": "x"}, {"team": "y"}, {"team": "x"}])
            >>> [d.id for d in store.get_by_filter({"team": "x"})], [d.id for d in store.get_by_filter(limit=1)]
            (['1', '3'], ['1'])
        """
        flt = normalize_filter(from_dialect(filter)) if filter is not None else None  # type: ignore[arg-type]  # checked
        return [_document(r) for r in listed(self.retriever.engine, flt, limit)]

    async def aget_by_filter(self, filter: Any = None, *, limit: int | None = None) -> list[Document]:
        """Async twin of :meth:`get_by_filter` (the read runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.get_by_filter, filter, limit=limit)

    # ---- reads --------------------------------------------------------------------------------------

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        """The ``k`` best documents for ``query``, hybrid (RRF of both legs); ``filter``: our filter language.
        ``kwargs``: the retriever's search options (``weights``, ``exclude_ids``, ``query_vector``, ...)."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        """Async twin of :meth:`similarity_search` (native, no thread)."""
        return [doc for doc, _ in await self.asimilarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Like :meth:`similarity_search`, with each document's normalized fused score: in [0, 1], higher is
        better (the fused score over the best one the query's weights and ``rrf_k`` allow; 1.0 = first in every
        active leg). Comparable across queries of one setting, not a cosine similarity."""
        result = self.retriever.search(query, **self._options(k, filter, kwargs))
        return [(_document(h), h.normalized_score) for h in result.hits]

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Async twin of :meth:`similarity_search_with_score`."""
        result = await self.retriever.asearch(query, **self._options(k, filter, kwargs))
        return [(_document(h), h.normalized_score) for h in result.hits]

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        # The relevance (rrf_relevance): in [0, 1], in the fused order, low for a query the corpus does not match.
        result = self.retriever.search(query, **self._options(k, kwargs.pop("filter", None), kwargs))
        return [(_document(h), h.relevance) for h in result.hits]

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        result = await self.retriever.asearch(query, **self._options(k, kwargs.pop("filter", None), kwargs))
        return [(_document(h), h.relevance) for h in result.hits]

    def max_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int | None = None, lambda_mult: float = 0.5, filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Hybrid search, then MMR over the fused candidates' stored dense vectors (our ``diversity`` stage, with
        ``lambda_mult`` as its lambda: 1.0 = the fused order, 0.0 = the most diverse). ``fetch_k``: how many
        candidates MMR chooses from, as LangChain means it: the legs fetch that many each and MMR re-orders the
        first ``fetch_k`` of the fused list (from ``k`` to 10,000; None, the default here: the engine's depth,
        ``max(2 * k, 40)`` unless the settings' ``fetch_k`` is set)."""
        self._check_mmr(k, lambda_mult)
        return self.similarity_search(query, k, filter, diversity=lambda_mult, **self._depth(fetch_k, kwargs))

    async def amax_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int | None = None, lambda_mult: float = 0.5, filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Async twin of :meth:`max_marginal_relevance_search`."""
        self._check_mmr(k, lambda_mult)
        return await self.asimilarity_search(query, k, filter, diversity=lambda_mult, **self._depth(fetch_k, kwargs))

    def max_marginal_relevance_search_by_vector(
        self, embedding: Sequence[float], k: int = 4, fetch_k: int | None = None, lambda_mult: float = 0.5,
        filter: Any = None, **kwargs: Any,
    ) -> list[Document]:
        """:meth:`max_marginal_relevance_search` with a query vector you embedded and no text: the same diversity
        stage over the dense legs' candidates (no keyword to match), the query embedding skipped. The same as
        ``max_marginal_relevance_search("", query_vector=embedding, ...)``; ``kwargs``: the search options.

        Relevance is the stage's: the fused score over the best candidate's (rank-based), where LangChain's
        ``maximal_marginal_relevance`` (``InMemoryVectorStore``'s) takes the cosine to the query; the two choose
        alike at ``lambda_mult`` 1.0 (the dense order) and 0.0 (the top one, then novelty alone). ``lambda_mult`` is
        LangChain's (1.0 = relevance); langchain-qdrant 1.1 hands it to Qdrant's MMR as ``diversity``, the other
        way round."""
        options = self._vector_query(embedding, kwargs, "max_marginal_relevance_search_by_vector")
        return self.max_marginal_relevance_search("", k, fetch_k, lambda_mult, filter, **options)

    async def amax_marginal_relevance_search_by_vector(
        self, embedding: Sequence[float], k: int = 4, fetch_k: int | None = None, lambda_mult: float = 0.5,
        filter: Any = None, **kwargs: Any,
    ) -> list[Document]:
        """Async twin of :meth:`max_marginal_relevance_search_by_vector` (native, no thread)."""
        options = self._vector_query(embedding, kwargs, "amax_marginal_relevance_search_by_vector")
        return await self.amax_marginal_relevance_search("", k, fetch_k, lambda_mult, filter, **options)

    @staticmethod
    def _check_mmr(k: int, lambda_mult: float) -> None:
        """``k`` and ``lambda_mult`` at the door (``fetch_k`` is a search option: the engine's door checks it)."""
        check_top_k(k, "k")
        check_number(lambda_mult, "lambda_mult", high=1.0)

    @staticmethod
    def _depth(fetch_k: int | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The search options with LangChain's ``fetch_k`` as the call's candidate depth (None: not given)."""
        return kwargs if fetch_k is None else {**kwargs, "fetch_k": fetch_k}

    @staticmethod
    def _vector_query(embedding: Sequence[float], kwargs: dict[str, Any], method: str) -> dict[str, Any]:
        if "query_vector" in kwargs:
            msg = f"RRFVectorStore.{method} takes the query vector as its embedding, not also as query_vector"
            raise InvalidArgumentError(msg)
        return {**kwargs, "query_vector": to_float_vector(embedding, "embedding")}  # named as the caller wrote it

    @staticmethod
    def _options(k: int, flt: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        options = {**kwargs, "top_k": check_top_k(k, "k")}
        if flt is not None:
            options["filter"] = flt
        return options

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` nearest documents to ``embedding`` by the dense leg alone (a vector has no keywords to match);
        ordered by the dense store's scores. ``filter``: as :meth:`similarity_search`."""
        _no_extra(kwargs, "similarity_search_by_vector")
        engine = self.retriever.engine
        engine.get([])  # the engine's own door: closed, or used across a fork, is its error, not a store's
        leg = engine.legs[main_dense_leg(engine.legs)]
        vector, k = to_float_vector(embedding, "embedding"), check_top_k(k, "k")
        leg.check_query_vector(vector)
        flt = normalize_filter(from_dialect(filter)) if filter is not None else None  # type: ignore[arg-type]  # checked
        return [_document(h) for h in leg.search(SearchRequest("dense", "", vector, k, Scope(flt, frozenset())))]

    # ---- retrievers and lifecycle ---------------------------------------------------------------------

    def as_hybrid_retriever(self, **search_kwargs: Any) -> Any:
        """Our retriever over the same engine (documents with ``rrf_*`` metadata, the trace as a callback event),
        with per-instance ``search_kwargs`` (``k``, ``filter``, ``weights``, ...).

        Example:
            >>> from rrf_retriever import HashingEmbedding
            >>> store = RRFVectorStore.from_texts(["E42 in logs"], HashingEmbedding(), ids=["e"])
            >>> store.as_hybrid_retriever(k=1).invoke("E42")[0].metadata["rrf_ranks"]
            {'dense': 1, 'keyword': 1}
        """
        retriever = self.retriever.scoped(**search_kwargs)  # checks the names; the values here, not at the 1st query:
        SearchOptions.from_kwargs(**{k: v for k, v in retriever.search_kwargs.items() if k != "reranker"})
        return retriever

    def close(self) -> None:
        """Release the engine's stores, files and locks (shared with ``retriever`` and its copies)."""
        self.retriever.close()

    def __enter__(self) -> RRFVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
