"""What every framework's retriever shares: building the engine, writes, settings, scoping and search.

:class:`RetrieverCore` is a plain mixin (no framework type, no pydantic field): the LangChain side, the LlamaIndex
side and the dual class of :mod:`rrf_retriever.retriever` put it first in their bases. It reads ``self.engine`` and
``self.search_kwargs``, which each framework declares its own way (pydantic fields for LangChain, attributes for
LlamaIndex). What is the framework's own (its documents, retrievers, rerankers, filters) it asks the class's
framework sides (:class:`~rrf_retriever.frameworks.sides.FrameworkSide`) to convert.

Example:
    >>> from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding  # doctest: +SKIP
    >>> r = EnsembleRRFRetriever.from_texts(["FTS5 error E42", "vector search"], HashingEmbedding())  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rrf_retriever.analysis.analyzer import Analyzer, as_analyzer
from rrf_retriever.engine import HybridEngine, RetrievalSettings
from rrf_retriever.engine.options import OPTION_ALIASES, OPTION_NAMES, SearchOptions, check_option_names, resolve_top_k
from rrf_retriever.engine.rerank import check_reranker
from rrf_retriever.errors import InvalidTypeError
from rrf_retriever.frameworks.building import (
    detected_analyzer,
    documents_analyzer,
    engine_from_sources,
    record_detection,
    stores_from_arguments,
)
from rrf_retriever.frameworks.hints import resolve_embedding, unknown_arguments_error
from rrf_retriever.frameworks.introspection import Introspection
from rrf_retriever.frameworks.reopen import check_index_exists, open_once, remember_open
from rrf_retriever.frameworks.results import check_id_key, content_ids, document_list, texts_and_ids
from rrf_retriever.frameworks.sides import FrameworkSide
from rrf_retriever.fusion import DEFAULT_RRF_K
from rrf_retriever.index.manifest import refresh_manifest
from rrf_retriever.metadata import public_metadata
from rrf_retriever.progress import progress_shown
from rrf_retriever.types import Record, SearchResult
from rrf_retriever.validate import WEIGHTS_ARE, check_list, check_mapping

__all__ = ["SEARCH_KWARGS", "RetrieverCore", "check_search_kwargs"]

#: What a search accepts per call (``invoke(query, **kwargs)``) and per instance (``search_kwargs``, ``scoped``):
#: the options of :class:`~rrf_retriever.engine.options.SearchOptions` and their aliases (``k``).
SEARCH_KWARGS = OPTION_NAMES | frozenset(OPTION_ALIASES)


def check_search_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse an unknown search argument (a typo never silently does nothing).

    Example:
        >>> check_search_kwargs({"k": 3})
        {'k': 3}
    """
    check_option_names(kwargs)
    return dict(kwargs)


class RetrieverCore(Introspection):
    """The framework-neutral half of :class:`~rrf_retriever.retriever.EnsembleRRFRetriever` (see its docstring)."""

    #: The framework sides this class was composed of (set by each concrete class).
    _sides: ClassVar[tuple[type[FrameworkSide], ...]] = ()
    if TYPE_CHECKING:  # declared by each framework its own way (pydantic fields, plain attributes)
        engine: HybridEngine
        search_kwargs: dict[str, Any]

    def __init__(
        self,
        dense: Any = None,
        keyword: Any = None,
        *,
        sources: Mapping[str, Any] | None = None,
        weights: Mapping[str, float] | None = None,
        semantic_weight: float | None = None,
        keyword_weight: float | None = None,
        rrf_k: float = DEFAULT_RRF_K,
        top_k: int | None = None,
        k: int | None = None,
        fetch_k: int | None = None,
        leg_timeout: float | None = None,
        on_error: str = "degrade",
        fusion: str = "rrf",
        expand: Any = None,
        links_key: str | None = None,
        expand_limit: int | None = None,
        search_kwargs: Mapping[str, Any] | None = None,
        id_key: str | None = None,
        engine: HybridEngine | None = None,
        journal: Any = None,
        **kwargs: Any,
    ) -> None:
        allowed = frozenset().union(*(side.framework_kwargs for side in self._sides))
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise unknown_arguments_error(type(self).__name__, unknown)
        top_k = resolve_top_k(top_k, k)
        id_key = check_id_key(id_key)
        if engine is None:
            engine = engine_from_sources(
                dense, keyword, sources, weights, semantic_weight, keyword_weight,
                lambda source: self._leg_for(source, id_key),
                rrf_k=rrf_k, top_k=10 if top_k is None else top_k, fetch_k=fetch_k, leg_timeout=leg_timeout,
                on_error=on_error, fusion=fusion, expand=expand, links_key=links_key, expand_limit=expand_limit,
                journal=journal,
            )
        elif not isinstance(engine, HybridEngine):
            msg = f"engine must be a HybridEngine, not {type(engine).__name__}"
            raise InvalidTypeError(msg)
        elif top_k is not None:
            engine.update_settings(top_k=top_k)
        self._init_sides(engine, self._checked_search_kwargs(search_kwargs or {}), {**kwargs, "id_key": id_key})

    def _init_sides(self, engine: HybridEngine, search_kwargs: dict[str, Any], kwargs: dict[str, Any]) -> None:
        for side in self._sides:
            wanted = {k: v for k, v in kwargs.items() if k in side.framework_kwargs}
            side._init_side(self, engine, search_kwargs, wanted)  # type: ignore[arg-type]  # self is every side

    # ---- what the framework sides convert -------------------------------------------------------------

    @classmethod
    def _leg_for(cls, source: Any, id_key: str | None) -> Any:
        for side in cls._sides:
            leg = side.leg_for(source, id_key)
            if leg is not None:
                return leg
        return source  # a store or a Leg: the engine checks it

    @classmethod
    def _reranker_for(cls, reranker: Any) -> Any:
        """A framework reranker as the engine's shape; None and ``False`` (no reranker this call) pass through."""
        if reranker is None or reranker is False:
            return reranker
        for side in cls._sides:
            converted = side.reranker_for(reranker)
            if converted is not None:
                return converted
        return check_reranker(reranker)

    @classmethod
    def _checked_search_kwargs(cls, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`check_search_kwargs`, and a framework's filter object given as ``filter`` made our filter tree."""
        out = check_search_kwargs(kwargs)
        if out.get("filter") is not None:
            for side in cls._sides:
                converted = side.filter_for(out["filter"])
                if converted is not None:
                    out["filter"] = converted
                    break
        return out

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        embedding: Any = None,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        ids: Sequence[str] | None = None,
        *,
        keyword: str | Any = None,
        dense: str | Any = None,
        path: str | Path | None = None,
        collection_name: str | None = None,
        url: str | None = None,
        location: str | None = None,
        api_key: str | None = None,
        analyzer: Analyzer | str | None = None,
        show_progress: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """Build the embedded default stack and index ``texts``.

        Args:
            texts: The documents.
            embedding: A LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter
                (``embed_model=``, LlamaIndex's name, too); none: LlamaIndex's ``Settings.embed_model`` if set.
            metadatas: One mapping per text (optional).
            ids: One id per text. Default: derived from the text and its metadata (:func:`~.results.content_ids`), so
                running the same script twice updates the same documents instead of adding copies.
            keyword: ``"qdrant-edge"`` (BM25 as Qdrant sparse vectors in Qdrant's in-process engine, the default
                and the fastest at scale), ``"fts5"`` (SQLite FTS5), ``"bm25"`` (in memory; saved in ``path``
                after every write), ``"qdrant"`` (with ``dense="qdrant"``: both legs in one Qdrant collection) or a
                keyword store. Default: the index's own kind at ``path``, else ``"qdrant-edge"`` (the choice is
                argued in benchmarks/RESULTS.md, "The path users take").
            dense: ``"qdrant-edge"`` (Qdrant's in-process engine, in ``path`` or a temporary folder; an int8 scan
                with exact rescoring once optimized, which an add of 10k+ points does by itself; an HNSW graph over
                the int8 copy from 100k points), ``"qdrant"`` (qdrant-client local mode, ``:memory:`` or ``path``;
                comfortable below ~20k points) or any dense store (e.g. a server by URL). Default: the index's own
                kind at ``path``, else ``"qdrant-edge"``.
            path: An index directory, the same layout the ``rrf-retriever`` CLI uses (manifest ``rrf-index.json``,
                the stores, the write-ahead journal; see :mod:`~.index.directory`): created if missing, reopened
                if it exists. Its manifest decides: another store kind, collection, embedder or embedding dimension
                than the index's is an :class:`~.index.directory.IndexDirectoryError`. None keeps all in memory.
            collection_name: The Qdrant collection name (default ``"rrf_retriever"``, or the index's).
            url, location, api_key: With ``keyword="qdrant", dense="qdrant"`` both legs live in ONE Qdrant collection
                (:class:`~rrf_retriever.stores.qdrant.QdrantHybridStore`: one upsert writes both, one request
                searches both): on the server or cluster ``url`` (``api_key`` for a secured one), else in
                ``location`` (default ``":memory:"``), else in ``path``.
            analyzer: The keyword analyzer of the store built here: an :class:`~.analysis.analyzer.Analyzer` or a
                language name (``analyzer="german"`` is ``Analyzer(language="german")``: Snowball stemming and
                stopwords; ``analyzer="english"``: English without detection). Default (None): the language
                detected on ``texts`` (:func:`~rrf_retriever.analysis.detect.detect_language`; English when unsure
                or without texts; recorded in the manifest as ``language_detection``). CJK text is cut into
                bigrams either way. An index at ``path`` remembers it (its manifest and store); reopening with
                another is an error, None uses the index's. :attr:`corpus_language` tells which it is.
            show_progress: Progress bars while indexing ``texts``: True every bar, False none, None (default) only
                for long work on a terminal (see :mod:`rrf_retriever.progress`); ``add_texts`` takes it per call.
            **kwargs: Passed on to the constructor (``top_k``, ``k``, ``weights``, ``rrf_k``, ...), but ``index_keys``
                (keys filtered on, ``["session_id"]``: Qdrant indexes them before any point; kept in the manifest).
        """
        embedding, texts = resolve_embedding(embedding, kwargs, cls._sides), check_list(texts, "texts", "strings")
        chosen, found = detected_analyzer(texts, analyzer=as_analyzer(analyzer), keyword=keyword, path=path, url=url)

        def opening() -> Any:  # a fresh copy of kwargs each time: open_once may retry
            return stores_from_arguments(embedding, keyword=keyword, dense=dense, path=path,
                                         collection_name=collection_name, url=url, location=location,
                                         api_key=api_key, analyzer=chosen, kwargs=dict(kwargs))

        built = opening() if path is None else open_once(path, opening)
        try:
            retriever = cls(dense=built.dense, keyword=built.keyword, **built.kwargs)
        except BaseException:
            if built.index is not None:
                built.index.close()
            raise
        try:
            if built.index is not None:  # the legs measured when it was built: not measured again until it doubles
                retriever.engine.leg_probe.restore(built.index.manifest.get("leg_strength"))
            if texts:  # no ids: content_ids (re-runs upsert)
                retriever.add_texts(texts, metadatas=metadatas, ids=ids, show_progress=show_progress)
            if built.index is not None:
                refresh_manifest(built.index.root, retriever.engine)
                record_detection(built.index.root, retriever.engine, found)
                remember_open(built.index.root, retriever.engine)
        except BaseException:
            if built.index is not None:  # release the index (its locks) rather than leave it to the garbage collector
                retriever.close()
            raise
        return retriever

    @classmethod
    def open(cls, path: str | Path, embedding: Any = None, **kwargs: Any) -> Any:
        """Reopen the index directory ``path`` (built by :meth:`from_texts` or the CLI); :meth:`close` releases it.

        ``kwargs`` are :meth:`from_texts`'s. A path without an index is an
        :class:`~.index.directory.IndexDirectoryError` (nothing is created); a path this process holds open already
        is a :class:`~rrf_retriever.errors.StoreLockedError` that says to close the first retriever.
        """
        check_index_exists(path)
        return cls.from_texts([], embedding, path=path, **kwargs)

    @classmethod
    def from_documents(cls, documents: Sequence[Any], embedding: Any = None, *, show_progress: bool | None = None,
                       **kwargs: Any) -> Any:
        """Like :meth:`from_texts`, from LangChain ``Document`` s or LlamaIndex nodes / ``Document`` s."""
        found = documents_analyzer(documents := document_list(documents), lambda d: cls._document_parts(d)[1], kwargs)
        retriever = cls.from_texts([], embedding, **kwargs)
        if documents:
            retriever.add_documents(documents, show_progress=show_progress)
            record_detection(kwargs.get("path"), retriever.engine, found)
        return retriever

    # ---- writes -----------------------------------------------------------------------------------------

    def _document_batch(
        self, documents: Sequence[Any], ids: Sequence[str] | None
    ) -> tuple[list[str], list[str], list[dict[str, Any]]]:
        parts = [self._document_parts(d) for d in document_list(documents)]
        derived = content_ids([p[1] for p in parts], [p[2] for p in parts])
        given = check_list(ids, "ids", "ids") if ids is not None else [p[0] or d for p, d in zip(parts, derived)]
        return given, [p[1] for p in parts], [p[2] for p in parts]

    @classmethod
    def _document_parts(cls, doc: Any) -> tuple[str | None, str, dict[str, Any]]:
        for side in cls._sides:
            parts = side.document_parts(doc)
            if parts is not None:
                return parts
        msg = f"expected a LangChain Document or a LlamaIndex node, got {type(doc).__name__}"
        raise InvalidTypeError(msg)

    def add_texts(
        self,
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        show_progress: bool | None = None, chunk_size: int | None = None,
    ) -> list[str]:
        """Add (upsert) texts to every store with the same ids; all stores or none (per chunk of ``chunk_size``
        when given). Returns the ids. ``show_progress``: True draws every progress bar of this write, False none
        (default: see :mod:`rrf_retriever.progress`)."""
        text_list, id_list = texts_and_ids(texts, ids, metadatas)
        with progress_shown(show_progress):
            return self.engine.add(id_list, text_list, metadatas, chunk_size=chunk_size)

    async def aadd_texts(
        self,
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        show_progress: bool | None = None, chunk_size: int | None = None,
    ) -> list[str]:
        """Async twin of :meth:`add_texts`."""
        text_list, id_list = texts_and_ids(texts, ids, metadatas)
        with progress_shown(show_progress):
            return await self.engine.aadd(id_list, text_list, metadatas, chunk_size=chunk_size)

    def add_documents(self, documents: Sequence[Any], ids: Sequence[str] | None = None, *,
                      show_progress: bool | None = None, chunk_size: int | None = None) -> list[str]:
        """Add LangChain ``Document`` s or LlamaIndex nodes; their own ids are kept (new UUIDs where missing).
        ``show_progress``, ``chunk_size``: as for :meth:`add_texts`."""
        with progress_shown(show_progress):
            written = self.engine.add(*self._document_batch(documents, ids), chunk_size=chunk_size)
        self._keep_objects(documents)
        return written

    async def aadd_documents(self, documents: Sequence[Any], ids: Sequence[str] | None = None, *,
                             show_progress: bool | None = None, chunk_size: int | None = None) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        with progress_shown(show_progress):
            written = await self.engine.aadd(*self._document_batch(documents, ids), chunk_size=chunk_size)
        self._keep_objects(documents)
        return written

    def _keep_objects(self, documents: Sequence[Any]) -> None:
        for side in self._sides:
            side._keep_objects(self, documents)  # type: ignore[arg-type]  # self is every side

    def delete(self, ids: Sequence[str]) -> None:
        """Delete ids from every store (all or none)."""
        self.engine.delete(ids)

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`delete`."""
        await self.engine.adelete(ids)

    def get_by_ids(self, ids: Sequence[str]) -> list[Record]:
        """Stored documents by id, in the order asked (missing ids are skipped); metadata as results show it
        (LlamaIndex's ``_node_content`` and copies of ``ref_doc_id`` hidden; ``engine.get`` gives it raw)."""
        return [replace(r, metadata=public_metadata(r.metadata, r.id)) for r in self.engine.get(ids)]

    # ---- settings -----------------------------------------------------------------------------------

    @property
    def settings(self) -> RetrievalSettings:
        """The engine's current immutable settings snapshot."""
        return self.engine.settings

    def update_settings(
        self, *, semantic_weight: float | None = None, keyword_weight: float | None = None, **changes: Any
    ) -> RetrievalSettings:
        """Change settings at runtime (validated, swapped atomically; the next query uses them).

        Accepts ``weights``, ``semantic_weight``, ``keyword_weight``, ``rrf_k``, ``top_k`` (or ``k``), ``fetch_k``,
        ``leg_timeout``, ``on_error``, ``fusion``, and the result stages ``diversity``, ``reranker`` (a callable, a
        LangChain ``BaseDocumentCompressor`` or a LlamaIndex ``BaseNodePostprocessor``), ``rerank_k``,
        ``dense_paths``, ``expand_limit``. Shared by every copy of this retriever (``scoped``,
        ``configurable_fields``): they wrap the same engine.

        Example:
            >>> retriever.update_settings(keyword_weight=0.0, top_k=5)  # doctest: +SKIP
        """
        if "k" in changes:
            changes["top_k"] = resolve_top_k(changes.pop("top_k", None), changes.pop("k"))
        weights = dict(check_mapping(changes.pop("weights", None) or {}, "weights", WEIGHTS_ARE))
        for name, value in (("dense", semantic_weight), ("keyword", keyword_weight)):
            if value is not None:
                weights[name] = value
        if weights:
            changes["weights"] = weights
        if changes.get("reranker") is not None:  # a LangChain compressor / LlamaIndex postprocessor: converted here
            changes["reranker"] = self._reranker_for(changes["reranker"])
        return self.engine.update_settings(**changes)

    def scoped(self, **search_kwargs: Any) -> Any:
        """A copy with per-instance search defaults (``filter``, ``exclude_ids``, ``top_k``/``k``, ``weights``).

        LlamaIndex's ``retrieve(query)`` takes no keywords; use this to scope it. The copy shares the engine.

        Example:
            >>> retriever.scoped(filter={"session_id": [7]}, exclude_ids=["m1"]).retrieve("deploy")  # doctest: +SKIP
        """
        merged = self._checked_search_kwargs({**self.search_kwargs, **search_kwargs})
        side_kwargs: dict[str, Any] = {}
        for side in self._sides:
            side_kwargs.update(side._side_kwargs(self))  # type: ignore[arg-type]  # self is every side
        return type(self)(engine=self.engine, search_kwargs=merged, **side_kwargs)

    # ---- tuning -----------------------------------------------------------------------------------------

    def tune(self, queries: Mapping[str, Any], qrels: Mapping[str, Mapping[str, int]], metric: str = "ndcg@10",
             folds: int = 5, **kwargs: Any) -> Any:
        """Fit ``rrf_k``, weights, fusion and fetch depth to judged queries by k-fold cross-validation; apply (and,
        for an index directory, save in its manifest) the best setting only if its gain is significant (paired
        bootstrap 95% CI above 0). Returns a :class:`~rrf_retriever.tuning.TuneReport`; see
        :func:`rrf_retriever.tuning.tune` for the keywords (``grid``, ``apply``, ``index_dir``, ``seed``, ...).

        Example:
            >>> from rrf_retriever.tuning import load_judged_queries  # doctest: +SKIP
            >>> print(retriever.tune(*load_judged_queries(), metric="ndcg@10", folds=5))  # doctest: +SKIP
        """
        from rrf_retriever.tuning.tuner import tune

        return tune(self.engine, queries, qrels, metric, folds, **kwargs)

    # ---- lifecycle --------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release every store, file, lock and thread of the engine (shared by every ``scoped`` copy and every
        ``copy`` / ``deepcopy`` / ``model_copy``); later calls raise :class:`~rrf_retriever.errors.EngineClosedError`.
        An index directory can be reopened (:meth:`open`) once closed. Also ``with EnsembleRRFRetriever(...) as r:``."""
        self.engine.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reads ------------------------------------------------------------------------------------------

    def _search_options(self, kwargs: Mapping[str, Any]) -> SearchOptions:
        merged = self._checked_search_kwargs({**self.search_kwargs, **kwargs})
        if merged.get("reranker") is not None:  # a framework reranker becomes the engine's shape at the edge
            merged["reranker"] = self._reranker_for(merged["reranker"])
        return SearchOptions.from_kwargs(**merged)

    def search(self, query: str, **kwargs: Any) -> SearchResult:
        """Framework-neutral search: fused hits and the trace (see :meth:`HybridEngine.search`)."""
        return self.engine.search(query, self._search_options(kwargs))

    async def asearch(self, query: str, **kwargs: Any) -> SearchResult:
        """Async twin of :meth:`search`."""
        return await self.engine.asearch(query, self._search_options(kwargs))

