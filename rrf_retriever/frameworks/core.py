"""What every framework's retriever shares: building the engine, writes, settings, scoping and search.

:class:`RetrieverCore` is a plain mixin (no framework type, no pydantic field): the LangChain side, the LlamaIndex
side and the dual class of :mod:`rrf_retriever.retriever` put it first in their bases. It reads ``self.engine`` and
``self.search_kwargs``, which each framework declares its own way (pydantic fields for LangChain, attributes for
LlamaIndex).

Example:
    >>> from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding  # doctest: +SKIP
    >>> r = EnsembleRRFRetriever.from_texts(["FTS5 error E42", "vector search"], HashingEmbedding())  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from rrf_retriever.analysis.analyzer import Analyzer, as_analyzer
from rrf_retriever.engine import DEFAULT_HYBRID_RRF_K, HybridEngine, Leg, RetrievalSettings
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.index.directory import (
    DEFAULT_KEYWORD_STORE,
    JOURNAL_FILE,
    make_dense_store,
    make_keyword_store,
    make_qdrant_stores,
    open_stores,
    refresh_manifest,
    with_saved_settings,
)
from rrf_retriever.metadata import public_metadata
from rrf_retriever.types import FusedHit, Record, SearchResult
from rrf_retriever.validate import check_mapping, check_top_k

__all__ = ["RRF_METADATA_KEYS", "SEARCH_KWARGS", "FrameworkSide", "RetrieverCore", "content_id", "result_metadata"]

#: Metadata keys this retriever adds to every result; excluded from LlamaIndex's LLM and embedding metadata.
RRF_METADATA_KEYS = (
    "rrf_score", "rrf_score_normalized", "rrf_ranks", "rrf_scores", "rrf_expanded_from", "rrf_pinned",
    "rrf_rerank_score",
)
#: What a search accepts per call (``invoke(query, **kwargs)``) and per instance (``search_kwargs``, ``scoped``).
SEARCH_KWARGS = frozenset({
    "top_k", "k", "filter", "exclude_ids", "weights", "offset", "query_vector", "score_threshold", "pinned_ids",
    "diversity", "reranker", "rerank_k", "dense_paths", "expand_limit",
})
_WEIGHTS_ARE = "source name to weight"


def result_metadata(hit: FusedHit) -> dict[str, Any]:
    """The user's metadata plus how the hit was scored (``rrf_score``, ``rrf_ranks``, ``rrf_scores``); LlamaIndex's
    bookkeeping keys of a node-written document hidden (:mod:`~rrf_retriever.metadata`:
    ``ref_doc_id`` stays, ``_node_content`` goes)."""
    metadata = public_metadata(hit.metadata, hit.id)
    metadata["rrf_score"] = hit.score
    metadata["rrf_score_normalized"] = hit.normalized_score
    metadata["rrf_ranks"] = dict(hit.ranks)
    metadata["rrf_scores"] = dict(hit.scores)
    return metadata


def content_id(text: str) -> str:
    """A stable id from a text (for framework documents that carry none)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def content_ids(texts: Sequence[str], metadatas: Sequence[Mapping[str, Any] | None] | None) -> list[str]:
    """Stable ids for documents given without ids: a hash of the text and the metadata, so re-running the same
    indexing script upserts instead of duplicating. A repeat within one batch gets the occurrence appended.

    Example:
        >>> a, b = content_ids(["x", "x"], None); a != b and content_ids(["x"], [{}])[0] == a
        True
    """
    metas = list(metadatas) if metadatas is not None and not isinstance(metadatas, (str, Mapping)) else []
    seen: dict[str, int] = {}
    out: list[str] = []
    for i, text in enumerate(texts):
        meta = metas[i] if i < len(metas) and metas[i] is not None else {}
        try:
            meta_json = json.dumps(meta, sort_keys=True, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):  # not JSON: validate_batch refuses the batch with its own message
            meta_json = repr(meta)
        base = content_id(f"{text}\x00{meta_json}" if isinstance(text, str) else repr(text))
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


class FrameworkSide:
    """What one framework contributes to the retriever; subclassed by the LangChain and LlamaIndex sides.

    A side converts the framework's documents and retrievers into ours, and initialises its own base class.
    """

    #: Constructor keywords the framework's base class takes (``tags`` for LangChain, ``verbose`` for LlamaIndex).
    framework_kwargs: ClassVar[frozenset[str]] = frozenset()

    @staticmethod
    def leg_for(source: Any, id_key: str | None) -> Leg | None:
        """A read-only leg over this framework's retriever ``source``, or None if it is not one."""
        return None

    @staticmethod
    def document_parts(doc: Any) -> tuple[str | None, str, dict[str, Any]] | None:
        """``(id, text, metadata)`` of this framework's document, or None if it is not one."""
        return None

    def _init_side(self, engine: HybridEngine, search_kwargs: dict[str, Any], kwargs: dict[str, Any]) -> None:
        raise NotImplementedError

    def _side_kwargs(self) -> dict[str, Any]:
        """The framework keywords a copy (``scoped``) must be built with."""
        return {}


def check_search_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse an unknown search argument (a typo never silently does nothing); a LlamaIndex ``MetadataFilters``
    given as ``filter`` becomes our filter tree here, at the edge (:mod:`~rrf_retriever.llama_index.filters`)."""
    unknown = sorted(set(kwargs) - SEARCH_KWARGS)
    if unknown:
        msg = f"unknown search argument(s) {unknown}; accepted: {sorted(SEARCH_KWARGS)} (rrf_k is a setting)"
        raise InvalidArgumentError(msg)
    out = dict(kwargs)
    if out.get("filter") is not None:
        from rrf_retriever.llama_index.filters import as_filter

        out["filter"] = as_filter(out["filter"])
    return out


def resolve_top_k(top_k: int | None, k: int | None) -> int | None:
    """``k`` is LangChain's name for the number of results: accept it as ``top_k``, never as the RRF constant."""
    if k is not None and top_k is not None and k != top_k:
        msg = f"k ({k}) and top_k ({top_k}) both given and different; k is an alias of top_k"
        raise InvalidArgumentError(msg)
    value = top_k if top_k is not None else k
    return None if value is None else check_top_k(value)


class RetrieverCore:
    """The framework-neutral half of :class:`~rrf_retriever.retriever.EnsembleRRFRetriever` (see its docstring)."""

    #: The framework sides this class was composed of (set by each concrete class).
    _sides: ClassVar[tuple[type[FrameworkSide], ...]] = ()

    def __init__(
        self,
        dense: Any = None,
        keyword: Any = None,
        *,
        sources: Mapping[str, Any] | None = None,
        weights: Mapping[str, float] | None = None,
        semantic_weight: float | None = None,
        keyword_weight: float | None = None,
        rrf_k: float = DEFAULT_HYBRID_RRF_K,
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
            msg = f"unknown argument(s) {unknown} for {type(self).__name__}; see its docstring for the accepted ones"
            raise InvalidArgumentError(msg)
        top_k = resolve_top_k(top_k, k)
        if engine is None:
            engine = self._build_engine(
                dense, keyword, sources, weights, semantic_weight, keyword_weight, id_key,
                rrf_k=rrf_k, top_k=10 if top_k is None else top_k, fetch_k=fetch_k, leg_timeout=leg_timeout,
                on_error=on_error, fusion=fusion, expand=expand, links_key=links_key, expand_limit=expand_limit,
                journal=journal,
            )
        elif not isinstance(engine, HybridEngine):
            msg = f"engine must be a HybridEngine, not {type(engine).__name__}"
            raise InvalidTypeError(msg)
        elif top_k is not None:
            engine.update_settings(top_k=top_k)
        self._init_sides(engine, check_search_kwargs(search_kwargs or {}), kwargs)

    def _init_sides(self, engine: HybridEngine, search_kwargs: dict[str, Any], kwargs: dict[str, Any]) -> None:
        for side in self._sides:
            wanted = {k: v for k, v in kwargs.items() if k in side.framework_kwargs}
            side._init_side(self, engine, search_kwargs, wanted)  # type: ignore[arg-type]

    @classmethod
    def _leg_for(cls, source: Any, id_key: str | None) -> Any:
        for side in cls._sides:
            leg = side.leg_for(source, id_key)
            if leg is not None:
                return leg
        return source  # a store or a Leg: the engine checks it

    @classmethod
    def _build_engine(
        cls,
        dense: Any,
        keyword: Any,
        sources: Mapping[str, Any] | None,
        weights: Mapping[str, float] | None,
        semantic_weight: float | None,
        keyword_weight: float | None,
        id_key: str | None,
        **settings: Any,
    ) -> HybridEngine:
        legs: dict[str, Any] = {}
        if dense is not None:
            legs["dense"] = dense
        if keyword is not None:
            legs["keyword"] = keyword
        for name, source in check_mapping(sources or {}, "sources", "source name to store or retriever").items():
            if name in legs:
                msg = f"source {name!r} is given twice (as a keyword argument and in sources)"
                raise InvalidArgumentError(msg)
            legs[name] = cls._leg_for(source, id_key)
        if not legs:
            msg = "EnsembleRRFRetriever needs at least one source: dense=, keyword= or sources={...}"
            raise InvalidArgumentError(msg)
        merged = dict(check_mapping(weights or {}, "weights", _WEIGHTS_ARE))
        for name, value in (("dense", semantic_weight), ("keyword", keyword_weight)):
            if value is not None:
                if name not in legs:
                    msg = f"{'semantic' if name == 'dense' else 'keyword'}_weight given but there is no {name} source"
                    raise InvalidArgumentError(msg)
                merged[name] = value
        return HybridEngine(legs, merged, **settings)

    # ---- constructors -----------------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        embedding: Any,
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
        **kwargs: Any,
    ) -> Any:
        """Build the embedded default stack and index ``texts``.

        Args:
            texts: The documents.
            embedding: A LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter.
            metadatas: One mapping per text (optional).
            ids: One id per text. Default: derived from the text and its metadata (:func:`content_ids`), so running
                the same script twice updates the same documents instead of adding copies.
            keyword: ``"qdrant-edge"`` (BM25 as Qdrant sparse vectors in Qdrant's in-process engine: ~1 ms at 100k
                documents), ``"fts5"`` (SQLite FTS5; tens of ms at 100k), ``"bm25"`` (in memory; saved in ``path``
                after every write), ``"qdrant"`` (with ``dense="qdrant"``: both legs in one Qdrant collection) or a
                keyword store. Default: the index's own kind at ``path``, else ``"qdrant-edge"`` (the choice is
                argued in benchmarks/RESULTS.md, "The path users take").
            dense: ``"qdrant-edge"`` (Qdrant's in-process engine, in ``path`` or a temporary folder; an int8 scan
                with exact rescoring once optimized, which an add of 10k+ points does by itself), ``"qdrant"``
                (qdrant-client local mode, ``:memory:`` or ``path``;
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
                stopwords). Default: English (Porter); CJK text is cut into bigrams either way. An index at ``path``
                remembers it (its manifest and store); reopening with another is an error, None uses the index's.
            **kwargs: Passed on to the constructor (``top_k``, ``k``, ``weights``, ``rrf_k``, ``fetch_k``, ...).
        """
        stores = None
        if (url is not None or location is not None) and not (keyword == dense == "qdrant"):
            msg = "url= and location= are for keyword='qdrant', dense='qdrant' (both legs in one Qdrant collection)"
            raise InvalidArgumentError(msg)
        analyzer = as_analyzer(analyzer)
        if analyzer is not None and keyword is not None and not isinstance(keyword, str):
            msg = "analyzer= is for a keyword store built here; give the analyzer to the keyword store you pass"
            raise InvalidArgumentError(msg)
        if path is None:
            keyword, dense = keyword or DEFAULT_KEYWORD_STORE, dense or "qdrant-edge"
            joint = make_qdrant_stores(keyword, dense, embedding, None, collection_name or "rrf_retriever",
                                       url=url, location=location, api_key=api_key, analyzer=analyzer)
            if joint is not None:
                keyword_store, dense_store = joint
            else:
                dense_store = (make_dense_store(dense, embedding, None, collection_name or "rrf_retriever")
                               if isinstance(dense, str) else dense)
                keyword_store = make_keyword_store(keyword, None, analyzer) if isinstance(keyword, str) else keyword
        else:
            if location is not None:
                msg = "location= and path= exclude each other (path is an index directory)"
                raise InvalidArgumentError(msg)
            stores = open_stores(path, embedding, keyword=keyword, dense=dense, collection=collection_name,
                                 url=url, api_key=api_key, analyzer=analyzer)
            dense_store, keyword_store = stores.dense, stores.keyword
            kwargs = with_saved_settings(stores.manifest, kwargs)  # settings tuned for this index, unless given
            kwargs.setdefault("journal", Path(path) / JOURNAL_FILE)
        try:
            retriever = cls(dense=dense_store, keyword=keyword_store, **kwargs)
        except BaseException:
            if stores is not None:
                stores.close()
            raise
        try:
            if texts:
                retriever.add_texts(texts, metadatas=metadatas, ids=ids)  # no ids: content_ids (re-runs upsert)
            if stores is not None:
                refresh_manifest(stores.root, retriever.engine)
        except BaseException:
            if stores is not None:  # release the index (its locks) rather than leave it to the garbage collector
                retriever.close()
            raise
        return retriever

    @classmethod
    def from_documents(cls, documents: Sequence[Any], embedding: Any, **kwargs: Any) -> Any:
        """Like :meth:`from_texts`, from LangChain ``Document`` s or LlamaIndex nodes / ``Document`` s."""
        retriever = cls.from_texts([], embedding, **kwargs)
        if documents:
            retriever.add_documents(documents)
        return retriever

    # ---- writes -----------------------------------------------------------------------------------------

    @staticmethod
    def _texts_and_ids(
        texts: Sequence[str], ids: Sequence[str] | None, metadatas: Sequence[Mapping[str, Any] | None] | None
    ) -> tuple[list[str], list[str]]:
        if isinstance(texts, str):
            msg = "texts must be a list of strings, not a single string"
            raise InvalidTypeError(msg)
        text_list = list(texts)
        return text_list, list(ids) if ids is not None else content_ids(text_list, metadatas)

    def _document_batch(self, documents: Sequence[Any], ids: Sequence[str] | None) -> tuple[list[str], ...]:
        parts = [self._document_parts(d) for d in documents]
        derived = content_ids([p[1] for p in parts], [p[2] for p in parts])
        given = list(ids) if ids is not None else [p[0] or d for p, d in zip(parts, derived)]
        return given, [p[1] for p in parts], [p[2] for p in parts]  # type: ignore[return-value]

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
    ) -> list[str]:
        """Add (upsert) texts to every store with the same ids; all stores or none. Returns the ids."""
        text_list, id_list = self._texts_and_ids(texts, ids, metadatas)
        return self.engine.add(id_list, text_list, metadatas)  # type: ignore[attr-defined]

    async def aadd_texts(
        self,
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Async twin of :meth:`add_texts`."""
        text_list, id_list = self._texts_and_ids(texts, ids, metadatas)
        return await self.engine.aadd(id_list, text_list, metadatas)  # type: ignore[attr-defined]

    def add_documents(self, documents: Sequence[Any], ids: Sequence[str] | None = None) -> list[str]:
        """Add LangChain ``Document`` s or LlamaIndex nodes; their own ids are kept (new UUIDs where missing)."""
        return self.engine.add(*self._document_batch(documents, ids))  # type: ignore[attr-defined]

    async def aadd_documents(self, documents: Sequence[Any], ids: Sequence[str] | None = None) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        return await self.engine.aadd(*self._document_batch(documents, ids))  # type: ignore[attr-defined]

    def delete(self, ids: Sequence[str]) -> None:
        """Delete ids from every store (all or none)."""
        self.engine.delete(ids)  # type: ignore[attr-defined]

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`delete`."""
        await self.engine.adelete(ids)  # type: ignore[attr-defined]

    def get_by_ids(self, ids: Sequence[str]) -> list[Record]:
        """Stored documents by id, in the order asked (missing ids are skipped); metadata as results show it
        (LlamaIndex's ``_node_content`` and copies of ``ref_doc_id`` hidden; ``engine.get`` gives it raw)."""
        return [replace(r, metadata=public_metadata(r.metadata, r.id)) for r in self.engine.get(ids)]  # type: ignore[attr-defined]

    # ---- settings -----------------------------------------------------------------------------------

    @property
    def settings(self) -> RetrievalSettings:
        """The engine's current immutable settings snapshot."""
        return self.engine.settings  # type: ignore[attr-defined]

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
        weights = dict(check_mapping(changes.pop("weights", None) or {}, "weights", _WEIGHTS_ARE))
        for name, value in (("dense", semantic_weight), ("keyword", keyword_weight)):
            if value is not None:
                weights[name] = value
        if weights:
            changes["weights"] = weights
        if changes.get("reranker") is not None:  # a LangChain compressor / LlamaIndex postprocessor: converted here
            from rrf_retriever.langchain.rerankers import as_reranker

            changes["reranker"] = as_reranker(changes["reranker"])
        return self.engine.update_settings(**changes)  # type: ignore[attr-defined]

    def scoped(self, **search_kwargs: Any) -> Any:
        """A copy with per-instance search defaults (``filter``, ``exclude_ids``, ``top_k``/``k``, ``weights``).

        LlamaIndex's ``retrieve(query)`` takes no keywords; use this to scope it. The copy shares the engine.

        Example:
            >>> retriever.scoped(filter={"session_id": [7]}, exclude_ids=["m1"]).retrieve("deploy")  # doctest: +SKIP
        """
        merged = check_search_kwargs({**self.search_kwargs, **search_kwargs})  # type: ignore[attr-defined]
        side_kwargs: dict[str, Any] = {}
        for side in self._sides:
            side_kwargs.update(side._side_kwargs(self))  # type: ignore[arg-type]
        return type(self)(engine=self.engine, search_kwargs=merged, **side_kwargs)  # type: ignore[attr-defined]

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
        from rrf_retriever.tuning import tune

        return tune(self.engine, queries, qrels, metric, folds, **kwargs)  # type: ignore[attr-defined]

    # ---- lifecycle --------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release every store, file, lock and thread of the engine (shared by every ``scoped`` copy); later calls
        raise :class:`~rrf_retriever.errors.EngineClosedError`. Also ``with EnsembleRRFRetriever(...) as r:``."""
        self.engine.close()  # type: ignore[attr-defined]

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reads ------------------------------------------------------------------------------------------

    def _search_args(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        merged = check_search_kwargs({**self.search_kwargs, **kwargs})  # type: ignore[attr-defined]
        if merged.get("reranker") is not None:  # a framework reranker becomes the engine's shape at the edge
            from rrf_retriever.langchain.rerankers import as_reranker

            merged["reranker"] = as_reranker(merged["reranker"])
        top_k = resolve_top_k(merged.pop("top_k", None), merged.pop("k", None))
        return {"top_k": top_k, **merged}

    def search(self, query: str, **kwargs: Any) -> SearchResult:
        """Framework-neutral search: fused hits and the trace (see :meth:`HybridEngine.search`)."""
        return self.engine.search(query, **self._search_args(kwargs))  # type: ignore[attr-defined]

    async def asearch(self, query: str, **kwargs: Any) -> SearchResult:
        """Async twin of :meth:`search`."""
        return await self.engine.asearch(query, **self._search_args(kwargs))  # type: ignore[attr-defined]

