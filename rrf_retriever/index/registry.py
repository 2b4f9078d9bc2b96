"""Store construction of an index directory: the keyword and dense stores (and the joint Qdrant pair) where the
layout puts them, and the embedders an index names by spec (``"minilm"``, ``"hashing:<dim>"``).

The directory layout is described in :mod:`~rrf_retriever.index.directory`, which opens these stores.

Example:
    >>> make_keyword_store("fts5", None).count()
    0
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer, as_analyzer
from rrf_retriever.errors import InvalidArgumentError, RRFRetrieverError

__all__ = [
    "BM25_DIR",
    "DEFAULT_COLLECTION",
    "DEFAULT_DENSE_STORE",
    "DEFAULT_KEYWORD_STORE",
    "DENSE_DIRS",
    "JOINT_QDRANT",
    "KEYWORD_FILE",
    "KEYWORD_PLACES",
    "KEYWORD_QDRANT_DIR",
    "KEYWORD_QDRANT_EDGE_DIR",
    "QDRANT_DIR",
    "QDRANT_EDGE_DIR",
    "describe_embedding",
    "embedder_spec",
    "make_dense_store",
    "make_embedding",
    "make_keyword_store",
    "make_qdrant_stores",
    "normalize_embedder_spec",
]

KEYWORD_FILE = "keyword.sqlite3"
BM25_DIR = "keyword-bm25"
QDRANT_DIR = "qdrant"
QDRANT_EDGE_DIR = "qdrant-edge"
#: The stores of new indexes; an index records its own in the manifest (older ones: "fts5" and "qdrant").
DEFAULT_KEYWORD_STORE = "qdrant-edge"
DEFAULT_DENSE_STORE = "qdrant-edge"
#: The sparse-vector BM25 keyword stores on Qdrant (their own folders: a qdrant-client path admits one client).
KEYWORD_QDRANT_DIR = "keyword-qdrant"
KEYWORD_QDRANT_EDGE_DIR = "keyword-qdrant-edge"
#: Where each keyword store kind lives in an index directory (a file or a folder), by kind.
KEYWORD_PLACES = {"fts5": KEYWORD_FILE, "bm25": BM25_DIR, "qdrant": KEYWORD_QDRANT_DIR,
                  "qdrant-edge": KEYWORD_QDRANT_EDGE_DIR}
#: The folder of each dense store kind in an index directory, by kind.
DENSE_DIRS = {"qdrant": QDRANT_DIR, "qdrant-edge": QDRANT_EDGE_DIR}
DEFAULT_COLLECTION = "rrf_retriever"
#: The embedder of a new index when none is named: MiniLM in int8 (``MiniLMEmbedding()``'s precision). ``"minilm"``
#: is the exact fp32 model (the name older indexes record).
DEFAULT_EMBEDDER = "minilm-int8"
#: The Python that builds each MiniLM spec (named in errors, so a mismatch says what to pass).
MINILM_PYTHON = {"minilm": 'MiniLMEmbedding(precision="fp32")', "minilm-int8": "MiniLMEmbedding()"}


def make_embedding(spec: str) -> Any:
    """Build the embedder an index names: ``"minilm-int8"`` (offline all-MiniLM-L6-v2 in int8, the default of a new
    index), ``"minilm"`` (the same model in exact fp32) or ``"hashing:<dim>"``.

    ``"hashing"`` alone means ``"hashing:256"``. The hashing embedder is deterministic plumbing, not semantics.

    Example:
        >>> make_embedding("hashing:8").dimension
        8
    """
    from rrf_retriever.embeddings import HashingEmbedding, MiniLMEmbedding

    if spec == "minilm":
        return MiniLMEmbedding(show_progress=False, precision="fp32")
    if spec == "minilm-int8":  # the int8 quantisation: another model as far as an index is concerned
        return MiniLMEmbedding(show_progress=False, precision="int8")
    if spec == "hashing" or spec.startswith("hashing:"):
        raw = spec.partition(":")[2] or "256"
        if not raw.isdigit() or not 1 <= int(raw) <= 65536:
            msg = f"embedder {spec!r}: the hashing dimension must be an integer from 1 to 65536"
            raise InvalidArgumentError(msg)
        return HashingEmbedding(dim=int(raw))
    msg = f"unknown embedder {spec!r}: use 'minilm', 'minilm-int8' or 'hashing:<dim>'"
    raise InvalidArgumentError(msg)


def normalize_embedder_spec(spec: str) -> str:
    """Canonical spelling of an embedder spec (``"hashing"`` -> ``"hashing:256"``)."""
    return "hashing:256" if spec == "hashing" else spec


def embedder_spec(embedding: Any) -> str | None:
    """The spec :func:`make_embedding` rebuilds ``embedding`` from, or None if it cannot (any other model).

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> embedder_spec(HashingEmbedding(16)), embedder_spec(lambda texts: [[1.0] for _ in texts])
        ('hashing:16', None)
    """
    from rrf_retriever.embeddings import HashingEmbedding, MiniLMEmbedding
    from rrf_retriever.embeddings.adapters import as_embedding

    try:
        adapter = as_embedding(embedding)
    except RRFRetrieverError:
        return None
    if type(adapter) is HashingEmbedding:
        return f"hashing:{adapter.dimension}"
    if type(adapter) is MiniLMEmbedding:
        precision = getattr(adapter, "precision", "fp32")
        return "minilm" if precision == "fp32" else f"minilm-{precision}"
    return None


def describe_embedding(embedding: Any) -> dict[str, Any]:
    """What the manifest records of an embedding: ``embedder`` (spec or None), ``embedder_class``,
    ``embedder_model`` and ``dimension`` (None while unknown).

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> describe_embedding(HashingEmbedding(8))["dimension"]
        8
    """
    from rrf_retriever.embeddings.adapters import as_embedding

    adapter = as_embedding(embedding)
    inner = getattr(adapter, "model", None) or getattr(adapter, "fn", None)
    return {
        "embedder": embedder_spec(adapter),
        "embedder_class": type(inner if inner is not None else adapter).__name__,
        "embedder_model": str(getattr(adapter, "model_id", None) or type(adapter).__name__),
        "dimension": getattr(adapter, "dimension", None),
    }


def make_keyword_store(kind: str, root: str | os.PathLike[str] | None, analyzer: Any = None,
                       index_keys: Sequence[str] = ()) -> Any:
    """The keyword store of the index layout: ``"fts5"`` (``root/keyword.sqlite3``; in memory without a root),
    ``"bm25"`` (``root/keyword-bm25/``, saved after every write; in memory without a root), or BM25 as Qdrant sparse
    vectors: ``"qdrant-edge"`` (``root/keyword-qdrant-edge/``) or ``"qdrant"`` (qdrant-client,
    ``root/keyword-qdrant/``). Shared by index directories and ``EnsembleRRFRetriever.from_texts``.
    ``analyzer`` (an :class:`~.analysis.analyzer.Analyzer`, or a language name: :func:`as_analyzer`) is the store's;
    None: a new store's default, a reopened store's saved one. ``index_keys``: the metadata keys a Qdrant store
    indexes as documents are written (its payload indexes; FTS5 and BM25 stores have none).

    Example:
        >>> make_keyword_store("fts5", None).count()
        0
    """
    analyzer = as_analyzer(analyzer)
    if kind == "fts5":
        from rrf_retriever.stores.fts5.store import FTS5KeywordStore

        if root is None:
            return FTS5KeywordStore(":memory:", analyzer=analyzer)
        Path(root).mkdir(parents=True, exist_ok=True)
        return FTS5KeywordStore(Path(root) / KEYWORD_FILE, analyzer=analyzer)
    if kind == "bm25":
        from rrf_retriever.stores.bm25.store import BM25KeywordStore

        return BM25KeywordStore(path=None if root is None else Path(root) / BM25_DIR, analyzer=analyzer)
    if kind == "qdrant-edge":
        from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore

        folder = None if root is None else Path(root) / KEYWORD_QDRANT_EDGE_DIR
        return QdrantEdgeKeywordStore(path=folder, analyzer=analyzer, index_keys=index_keys)
    if kind == "qdrant":
        from rrf_retriever.stores.qdrant import QdrantKeywordStore

        if root is None:
            return QdrantKeywordStore(location=":memory:", analyzer=analyzer, index_keys=index_keys)
        return QdrantKeywordStore(path=Path(root) / KEYWORD_QDRANT_DIR, analyzer=analyzer, index_keys=index_keys)
    msg = f"keyword must be one of {sorted(KEYWORD_PLACES)} or a keyword store, got {kind!r}"
    raise InvalidArgumentError(msg)


def make_dense_store(
    kind: str, embedding: Any, root: str | os.PathLike[str] | None, collection: str = DEFAULT_COLLECTION,
    index_keys: Sequence[str] = (),
) -> Any:
    """The dense store of the index layout: ``"qdrant-edge"`` (``root/qdrant-edge/``; a temporary folder without a
    root) or ``"qdrant"`` (qdrant-client, ``root/qdrant/``; ``:memory:`` without a root). ``index_keys``: the
    metadata keys indexed as documents are written (before an HNSW graph is built over them).

    Example:
        >>> make_dense_store("faiss", None, None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidArgumentError: dense must be 'qdrant', 'qdrant-edge' ...
    """
    if kind not in DENSE_DIRS:
        msg = f"dense must be 'qdrant', 'qdrant-edge' or a dense store, got {kind!r}"
        raise InvalidArgumentError(msg)
    from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

    folder = None if root is None else Path(root) / DENSE_DIRS[kind]
    if kind == "qdrant-edge":
        return QdrantEdgeDenseStore(embedding, path=folder, index_keys=index_keys)  # no root: removed when closed
    if folder is None:
        return QdrantDenseStore(embedding, location=":memory:", collection_name=collection, index_keys=index_keys)
    return QdrantDenseStore(embedding, path=folder, collection_name=collection, index_keys=index_keys)


#: Manifest value of ``qdrant_layout`` for an index whose two legs share one Qdrant collection.
JOINT_QDRANT = "joint"


def make_qdrant_stores(
    keyword: str, dense: str, embedding: Any, root: str | os.PathLike[str] | None,
    collection: str = DEFAULT_COLLECTION, *, url: str | None = None, location: str | None = None,
    api_key: str | None = None, analyzer: Analyzer | None = None, index_keys: Sequence[str] = (),
) -> tuple[Any, Any] | None:
    """The (keyword, dense) stores for ``keyword="qdrant", dense="qdrant"``: ONE collection holding both legs
    (:class:`~rrf_retriever.stores.qdrant.QdrantHybridStore`; its two views), on the server ``url``, else in
    ``root/qdrant/`` (local mode), else in memory (``location``). None for any other pair of kinds. A server's
    ``api_key`` defaults to the environment variable ``QDRANT_API_KEY``.

    Example:
        >>> from rrf_retriever.embeddings import HashingEmbedding
        >>> keyword, dense = make_qdrant_stores("qdrant", "qdrant", HashingEmbedding(8), None)
        >>> keyword.store is dense.store
        True
    """
    if keyword != "qdrant" or dense != "qdrant":
        return None
    from rrf_retriever.stores.qdrant import QdrantHybridStore

    if url is not None:  # the key from QDRANT_API_KEY unless given: it is never written to the manifest
        api_key = api_key if api_key is not None else os.environ.get("QDRANT_API_KEY") or None
        store = QdrantHybridStore(embedding, url=url, api_key=api_key, collection_name=collection, analyzer=analyzer,
                                  index_keys=index_keys)
    elif root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
        store = QdrantHybridStore(embedding, path=Path(root) / QDRANT_DIR, collection_name=collection,
                                  analyzer=analyzer, index_keys=index_keys)
    else:
        store = QdrantHybridStore(embedding, location=location or ":memory:", collection_name=collection,
                                  analyzer=analyzer, index_keys=index_keys)
    return store.keyword, store.dense
