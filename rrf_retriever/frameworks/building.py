"""Building a retriever's engine and stores from its arguments, for every framework alike.

:func:`engine_from_sources` turns the constructor's ``dense=`` / ``keyword=`` / ``sources=`` and weights into a
:class:`~rrf_retriever.engine.HybridEngine`; :func:`stores_from_arguments` makes the stores ``from_texts`` names
(``keyword="fts5"``, ``dense="qdrant-edge"``, ``path=DIR``, a Qdrant URL, ...). Neither knows a framework: a
framework's retriever given as a source is turned into a leg by the ``leg_for`` the caller passes.

Example:
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> dict(engine_from_sources(None, FTS5KeywordStore(), None, None, None, 2.0, lambda s: s).settings.weights)
    {'keyword': 2.0}
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.analysis.detect import DEFAULT_SAMPLE, LanguageDetection, detect_language
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.index.directory import IndexStores, open_stores
from rrf_retriever.index.manifest import JOURNAL_FILE, MANIFEST_FILE, refresh_manifest, with_saved_settings
from rrf_retriever.index.registry import (
    DEFAULT_COLLECTION,
    DEFAULT_KEYWORD_STORE,
    make_dense_store,
    make_keyword_store,
    make_qdrant_stores,
)
from rrf_retriever.validate import WEIGHTS_ARE, check_mapping

__all__ = [
    "BuiltStores",
    "corpus_language",
    "detected_analyzer",
    "document_sample",
    "documents_analyzer",
    "engine_from_sources",
    "record_detection",
    "stores_from_arguments",
]

logger = logging.getLogger(__name__)

def engine_from_sources(
    dense: Any,
    keyword: Any,
    sources: Mapping[str, Any] | None,
    weights: Mapping[str, float] | None,
    semantic_weight: float | None,
    keyword_weight: float | None,
    leg_for: Callable[[Any], Any],
    **settings: Any,
) -> HybridEngine:
    """The engine over the stores and sources given to a retriever's constructor.

    Args:
        dense, keyword: The stores of the sources ``"dense"`` and ``"keyword"`` (None: no such source).
        sources: More sources by name; each goes through ``leg_for`` (a framework retriever becomes a leg).
        weights, semantic_weight, keyword_weight: ``weights`` with the two shortcuts merged in.
        leg_for: Turns a source into what the engine takes (a store or a leg).
        **settings: The engine's settings (``rrf_k``, ``top_k``, ``fetch_k``, ...).

    Raises:
        InvalidArgumentError: no source at all, a source named twice, a shortcut weight without its source.
    """
    legs: dict[str, Any] = {}
    if dense is not None:
        legs["dense"] = dense
    if keyword is not None:
        legs["keyword"] = keyword
    for name, source in check_mapping(sources or {}, "sources", "source name to store or retriever").items():
        if name in legs:
            msg = f"source {name!r} is given twice (as a keyword argument and in sources)"
            raise InvalidArgumentError(msg)
        legs[name] = leg_for(source)
    if not legs:
        msg = "EnsembleRRFRetriever needs at least one source: dense=, keyword= or sources={...}"
        raise InvalidArgumentError(msg)
    merged = dict(check_mapping(weights or {}, "weights", WEIGHTS_ARE))
    for name, value in (("dense", semantic_weight), ("keyword", keyword_weight)):
        if value is not None:
            if name not in legs:
                msg = f"{'semantic' if name == 'dense' else 'keyword'}_weight given but there is no {name} source"
                raise InvalidArgumentError(msg)
            merged[name] = value
    return HybridEngine(legs, merged, **settings)


@dataclass
class BuiltStores:
    """The stores ``from_texts`` made, and the index directory they live in (None: in memory)."""

    dense: Any
    keyword: Any
    #: The opened index directory: closed if building the retriever fails, its manifest refreshed after the add.
    index: IndexStores | None = None
    #: The constructor keywords, with an index directory's saved settings and journal added where not given.
    kwargs: dict[str, Any] = field(default_factory=dict)


def stores_from_arguments(
    embedding: Any,
    *,
    keyword: str | Any,
    dense: str | Any,
    path: str | Path | None,
    collection_name: str | None,
    url: str | None,
    location: str | None,
    api_key: str | None,
    analyzer: Analyzer | None,
    kwargs: dict[str, Any],
) -> BuiltStores:
    """The stores ``from_texts`` names (see its docstring for each argument).

    Raises:
        InvalidArgumentError: ``url=`` / ``location=`` without both legs in Qdrant, ``location=`` with ``path=``,
            ``analyzer=`` with a keyword store object.
        IndexDirectoryError: ``path`` holds an index of other kinds, collection, embedder or dimension.
    """
    if (url is not None or location is not None) and not (keyword == dense == "qdrant"):
        msg = "url= and location= are for keyword='qdrant', dense='qdrant' (both legs in one Qdrant collection)"
        raise InvalidArgumentError(msg)
    if analyzer is not None and keyword is not None and not isinstance(keyword, str):
        msg = "analyzer= is for a keyword store built here; give the analyzer to the keyword store you pass"
        raise InvalidArgumentError(msg)
    index_keys = kwargs.pop("index_keys", ())  # the stores built here: their payload indexes (from_texts' doc)
    if path is None:
        keyword, dense = keyword or DEFAULT_KEYWORD_STORE, dense or "qdrant-edge"
        collection = collection_name or DEFAULT_COLLECTION
        joint = make_qdrant_stores(keyword, dense, embedding, None, collection, url=url, location=location,
                                   api_key=api_key, analyzer=analyzer, index_keys=index_keys)
        if joint is not None:
            return BuiltStores(dense=joint[1], keyword=joint[0], kwargs=kwargs)
        dense_store = (make_dense_store(dense, embedding, None, collection, index_keys) if isinstance(dense, str)
                       else dense)
        keyword_store = (make_keyword_store(keyword, None, analyzer, index_keys) if isinstance(keyword, str)
                         else keyword)
        return BuiltStores(dense=dense_store, keyword=keyword_store, kwargs=kwargs)
    if location is not None:
        msg = "location= and path= exclude each other (path is an index directory)"
        raise InvalidArgumentError(msg)
    stores = open_stores(path, embedding, keyword=keyword, dense=dense, collection=collection_name,
                         url=url, api_key=api_key, analyzer=analyzer, index_keys=index_keys)
    kwargs = with_saved_settings(stores.manifest, kwargs)  # settings tuned for this index, unless given
    kwargs.setdefault("journal", Path(path) / JOURNAL_FILE)
    return BuiltStores(dense=stores.dense, keyword=stores.keyword, index=stores, kwargs=kwargs)


def detected_analyzer(
    texts: Sequence[Any], *, analyzer: Analyzer | None, keyword: Any, path: str | Path | None, url: str | None
) -> tuple[Analyzer | None, LanguageDetection | None]:
    """The analyzer of the keyword store ``from_texts`` builds: the one asked for, else one for the language
    detected on ``texts`` (:func:`~rrf_retriever.analysis.detect.detect_language`).

    Nothing is detected (the analyzer is returned as given, None: the store's own or the default) when an analyzer
    was given, there are no texts, the keyword store is an object (it has its analyzer), the index at ``path``
    exists (it keeps its analyzer), or the stores live on a Qdrant server (``url``: its collection may exist).

    Example:
        >>> analyzer, found = detected_analyzer(["Der Hund ist nicht im Haus."], analyzer=None, keyword=None,
        ...                                     path=None, url=None)
        >>> analyzer.language, found.reason
        ('german', 'german: 1 of 1 latin-script texts that decided (function words); latin is 1 of 1 texts')
    """
    if analyzer is not None or not texts or url is not None or (keyword is not None and not isinstance(keyword, str)):
        return analyzer, None
    if path is not None and Path(path).is_dir() and any(Path(path).iterdir()):
        return None, None
    found = detect_language(texts)
    logger.info("corpus language: %s (%s)", found.language, found.reason)
    return found.analyzer(), found


def document_sample(documents: Sequence[Any], text_of: Callable[[Any], str]) -> list[str]:
    """The texts of the documents :func:`~rrf_retriever.analysis.detect.sample_texts` would read."""
    n = len(documents)
    picked = documents if n <= DEFAULT_SAMPLE else [documents[i * n // DEFAULT_SAMPLE] for i in range(DEFAULT_SAMPLE)]
    return [text_of(d) for d in picked]


def documents_analyzer(documents: Sequence[Any], text_of: Callable[[Any], str], kwargs: dict[str, Any]
                       ) -> LanguageDetection | None:
    """``from_documents``' detection: when no analyzer is asked for, the one detected on the documents' texts is
    set in ``kwargs["analyzer"]`` (as ``from_texts`` does on its texts); what was found, or None."""
    if not documents or kwargs.get("analyzer") is not None:
        return None
    chosen, found = detected_analyzer(document_sample(documents, text_of), analyzer=None,
                                      keyword=kwargs.get("keyword"), path=kwargs.get("path"), url=kwargs.get("url"))
    kwargs["analyzer"] = chosen
    return found


def record_detection(root: str | Path | None, engine: HybridEngine, found: LanguageDetection | None) -> None:
    """Save what the language detection found in the index manifest at ``root`` (key ``language_detection``)."""
    if root is not None and found is not None and (Path(root) / MANIFEST_FILE).exists():
        refresh_manifest(root, engine, language_detection=found.as_dict())


def corpus_language(engine: HybridEngine) -> str | None:
    """The language of the engine's keyword store's analyzer (``"english"`` for the default), None without one.

    Example:
        >>> from rrf_retriever.stores.bm25.store import BM25KeywordStore
        >>> corpus_language(HybridEngine({"keyword": BM25KeywordStore(analyzer=Analyzer(language="de"))}))
        'german'
    """
    leg = engine.legs.get("keyword")
    analyzer = getattr(getattr(leg, "store", None), "analyzer", None)
    if not isinstance(analyzer, Analyzer):
        return None
    return analyzer.language or "english"
