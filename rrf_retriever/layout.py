"""An index directory on disk: the embedded default stack (SQLite FTS5 + Qdrant in-process) and its manifest.

Layout of an index directory (the same as ``EnsembleRRFRetriever.from_texts(..., path=DIR)`` writes)::

    DIR/
      rrf-index.json     manifest: embedder, collection, analyzer, created/updated time, doc count
      keyword.sqlite3    FTS5KeywordStore
      qdrant-edge/       QdrantEdgeDenseStore (Qdrant's in-process engine; the default since it stays fast past
                         100k points, where qdrant-client's local mode takes seconds per filtered query)
      qdrant/            QdrantDenseStore (qdrant-client local mode), in indexes built with dense_store "qdrant"
      journal.sqlite3    the engine's write-ahead journal (an interrupted batch is redone on open)

The CLI and the settings service open an index with :func:`open_index` and get a
:class:`~rrf_retriever.engine.HybridEngine` (no LangChain, no LlamaIndex: they stay light).

Example:
    >>> engine = create_index("/tmp/idx", embedder="hashing:64")  # doctest: +SKIP
    >>> engine.add(["a"], ["hybrid search"]); save_manifest("/tmp/idx", engine)  # doctest: +SKIP
    >>> close_engine(engine); open_index("/tmp/idx").search("hybrid").ids  # doctest: +SKIP
    ['a']
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError, RRFRetrieverError, StoreUnavailableError

__all__ = [
    "DEFAULT_COLLECTION",
    "JOURNAL_FILE",
    "KEYWORD_FILE",
    "MANIFEST_FILE",
    "QDRANT_DIR",
    "QDRANT_EDGE_DIR",
    "IndexDirectoryError",
    "close_engine",
    "create_index",
    "make_dense_store",
    "make_embedding",
    "make_keyword_store",
    "open_index",
    "read_manifest",
    "save_manifest",
]

MANIFEST_FILE = "rrf-index.json"
KEYWORD_FILE = "keyword.sqlite3"
QDRANT_DIR = "qdrant"
QDRANT_EDGE_DIR = "qdrant-edge"
#: The dense store of new indexes; an index records its own in the manifest (older ones: "qdrant").
DEFAULT_DENSE_STORE = "qdrant-edge"
_DENSE_DIRS = {"qdrant": QDRANT_DIR, "qdrant-edge": QDRANT_EDGE_DIR}
#: The engine's write-ahead journal: a batch interrupted by a crash is redone in both stores on the next open.
JOURNAL_FILE = "journal.sqlite3"
DEFAULT_COLLECTION = "rrf_retriever"
FORMAT_VERSION = 1
_REQUIRED_KEYS = ("format", "embedder", "collection", "created", "doc_count")


class IndexDirectoryError(StoreUnavailableError):
    """An index directory is missing, incomplete or corrupt (the message says which and what to run)."""


def make_embedding(spec: str) -> Any:
    """Build the embedder an index names: ``"minilm"`` (offline all-MiniLM-L6-v2) or ``"hashing:<dim>"``.

    ``"hashing"`` alone means ``"hashing:256"``. The hashing embedder is deterministic plumbing, not semantics.

    Example:
        >>> make_embedding("hashing:8").dimension
        8
    """
    from rrf_retriever.embeddings import HashingEmbedding, MiniLMEmbedding

    if spec == "minilm":
        return MiniLMEmbedding(show_progress=False)
    if spec == "hashing" or spec.startswith("hashing:"):
        raw = spec.partition(":")[2] or "256"
        if not raw.isdigit() or not 1 <= int(raw) <= 65536:
            msg = f"embedder {spec!r}: the hashing dimension must be an integer from 1 to 65536"
            raise InvalidArgumentError(msg)
        return HashingEmbedding(dim=int(raw))
    msg = f"unknown embedder {spec!r}: use 'minilm' or 'hashing:<dim>'"
    raise InvalidArgumentError(msg)


def normalize_embedder_spec(spec: str) -> str:
    """Canonical spelling of an embedder spec (``"hashing"`` -> ``"hashing:256"``)."""
    return "hashing:256" if spec == "hashing" else spec


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check ``rrf-index.json`` of an index directory.

    Raises:
        IndexDirectoryError: the directory or its manifest is missing or unreadable.
    """
    root = Path(path)
    manifest_file = root / MANIFEST_FILE
    if not root.is_dir():
        msg = f"no index at {root}: the directory does not exist (build one with `rrf-retriever index`)"
        raise IndexDirectoryError(msg)
    if not manifest_file.is_file():
        msg = f"no index at {root}: {MANIFEST_FILE} is missing (build one with `rrf-retriever index`)"
        raise IndexDirectoryError(msg)
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"corrupt index at {root}: {MANIFEST_FILE} is not valid JSON ({exc})"
        raise IndexDirectoryError(msg) from exc
    if not isinstance(manifest, dict) or any(key not in manifest for key in _REQUIRED_KEYS):
        msg = f"corrupt index at {root}: {MANIFEST_FILE} lacks one of {list(_REQUIRED_KEYS)}"
        raise IndexDirectoryError(msg)
    if manifest["format"] != FORMAT_VERSION:
        msg = f"index at {root} has format {manifest['format']!r}; this version reads format {FORMAT_VERSION}"
        raise IndexDirectoryError(msg)
    return manifest


def make_keyword_store(kind: str, root: str | os.PathLike[str] | None) -> Any:
    """The keyword store of the index layout: ``"fts5"`` (``root/keyword.sqlite3``; in memory without a root) or
    ``"bm25"`` (always in memory). Shared by index directories and ``EnsembleRRFRetriever.from_texts``.

    Example:
        >>> make_keyword_store("fts5", None).count()
        0
    """
    if kind == "fts5":
        from rrf_retriever.stores.fts5 import FTS5KeywordStore

        if root is None:
            return FTS5KeywordStore(":memory:")
        Path(root).mkdir(parents=True, exist_ok=True)
        return FTS5KeywordStore(Path(root) / KEYWORD_FILE)
    if kind == "bm25":
        from rrf_retriever.stores.bm25 import BM25KeywordStore

        return BM25KeywordStore()
    msg = f"keyword must be 'fts5', 'bm25' or a keyword store, got {kind!r}"
    raise InvalidArgumentError(msg)


def make_dense_store(
    kind: str, embedding: Any, root: str | os.PathLike[str] | None, collection: str = DEFAULT_COLLECTION
) -> Any:
    """The dense store of the index layout: ``"qdrant-edge"`` (``root/qdrant-edge/``; a temporary folder without a
    root) or ``"qdrant"`` (qdrant-client, ``root/qdrant/``; ``:memory:`` without a root).

    Example:
        >>> make_dense_store("faiss", None, None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidArgumentError: dense must be 'qdrant', 'qdrant-edge' ...
    """
    if kind not in _DENSE_DIRS:
        msg = f"dense must be 'qdrant', 'qdrant-edge' or a dense store, got {kind!r}"
        raise InvalidArgumentError(msg)
    from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

    folder = None if root is None else Path(root) / _DENSE_DIRS[kind]
    if kind == "qdrant-edge":
        return QdrantEdgeDenseStore(embedding, path=folder)  # no root: removed when closed or collected
    if folder is None:
        return QdrantDenseStore(embedding, location=":memory:", collection_name=collection)
    return QdrantDenseStore(embedding, path=folder, collection_name=collection)


def _build_engine(
    root: Path, embedder: str, collection: str, dense_store: str = DEFAULT_DENSE_STORE, **settings: Any
) -> HybridEngine:
    if dense_store not in _DENSE_DIRS:
        msg = f"unknown dense store {dense_store!r} in the manifest; expected one of {sorted(_DENSE_DIRS)}"
        raise InvalidArgumentError(msg)
    embedding = make_embedding(embedder)
    keyword = make_keyword_store("fts5", root)
    try:
        dense = make_dense_store(dense_store, embedding, root, collection)
    except BaseException:
        keyword.close()
        raise
    return HybridEngine({"dense": dense, "keyword": keyword}, journal=root / JOURNAL_FILE, **settings)


def create_index(
    path: str | os.PathLike[str],
    *,
    embedder: str | None = None,
    collection: str = DEFAULT_COLLECTION,
    **settings: Any,
) -> HybridEngine:
    """Open the index at ``path``, creating an empty one (directory and manifest) if there is none.

    An existing index keeps its embedder; asking for a different one is an error (its vectors would not match).

    Args:
        path: The index directory.
        embedder: ``"minilm"`` or ``"hashing:<dim>"``; None: the existing index's, or ``"minilm"`` for a new one.
        collection: The Qdrant collection name (used only when the index is new).
        **settings: Passed to :class:`~rrf_retriever.engine.HybridEngine` (``top_k``, ``rrf_k``, ...).

    Raises:
        IndexDirectoryError: ``path`` is a file, or the existing index is corrupt or uses another embedder.
    """
    root = Path(path)
    wanted = None if embedder is None else normalize_embedder_spec(embedder)
    if root.exists() and not root.is_dir():
        msg = f"cannot create an index at {root}: it is a file, not a directory"
        raise IndexDirectoryError(msg)
    if (root / MANIFEST_FILE).exists():
        manifest = read_manifest(root)
        if wanted is not None and manifest["embedder"] != wanted:
            msg = (
                f"the index at {root} was built with embedder {manifest['embedder']!r}, not {wanted!r}; "
                "use the same embedder or a new --index-dir"
            )
            raise IndexDirectoryError(msg)
        return open_index(root, **settings)
    if root.exists() and any(root.iterdir()):
        msg = f"cannot create an index at {root}: the directory is not empty and holds no {MANIFEST_FILE}"
        raise IndexDirectoryError(msg)
    embedder = wanted or "minilm"
    make_embedding(embedder)  # fail on a bad spec before anything is written
    root.mkdir(parents=True, exist_ok=True)
    engine = _build_engine(root, embedder, collection, DEFAULT_DENSE_STORE, **settings)
    now = _now()
    manifest = {
        "format": FORMAT_VERSION,
        "embedder": embedder,
        "collection": collection,
        "keyword_store": "fts5",
        "dense_store": DEFAULT_DENSE_STORE,
        "analyzer": engine.legs["keyword"].store.analyzer.config(),  # type: ignore[attr-defined]
        "created": now,
        "updated": now,
        "doc_count": 0,
    }
    _write_manifest(root, manifest)
    return engine


def open_index(path: str | os.PathLike[str], **settings: Any) -> HybridEngine:
    """Open an existing index directory as a :class:`~rrf_retriever.engine.HybridEngine` (sources
    ``"dense"`` and ``"keyword"``).

    Args:
        path: The index directory (holding ``rrf-index.json``).
        **settings: Passed to the engine (``top_k``, ``rrf_k``, ``weights``, ...).

    Raises:
        IndexDirectoryError: missing directory, missing or corrupt manifest or store, or the index is open in
            another process (Qdrant local mode allows one client per folder).

    Example:
        >>> open_index("/nonexistent")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.layout.IndexDirectoryError: no index at /nonexistent: the directory does not exist ...
    """
    root = Path(path)
    manifest = read_manifest(root)
    keyword_file = root / KEYWORD_FILE
    if not keyword_file.is_file():
        msg = f"corrupt index at {root}: {KEYWORD_FILE} is missing"
        raise IndexDirectoryError(msg)
    dense_store = manifest.get("dense_store", "qdrant")
    dense_dir = _DENSE_DIRS.get(dense_store, QDRANT_DIR)
    if manifest["doc_count"] > 0 and not (root / dense_dir).is_dir():
        msg = f"corrupt index at {root}: the Qdrant folder {dense_dir}/ is missing"
        raise IndexDirectoryError(msg)
    try:
        return _build_engine(root, manifest["embedder"], manifest["collection"], dense_store, **settings)
    except IndexDirectoryError:
        raise
    except InvalidArgumentError as exc:
        msg = f"corrupt index at {root}: {exc}"
        raise IndexDirectoryError(msg) from exc
    except RRFRetrieverError as exc:
        if isinstance(exc, ImportError):
            raise  # a missing extra: its own message says what to install
        msg = f"cannot open the index at {root}: {exc}"
        raise IndexDirectoryError(msg) from exc


def save_manifest(path: str | os.PathLike[str], engine: HybridEngine, **extra: Any) -> dict[str, Any]:
    """Refresh the manifest after writes: doc count, update time, and any ``extra`` keys (e.g. a corpus hash).

    Raises:
        IndexDirectoryError: the stores disagree on the document count (a write was interrupted).
    """
    root = Path(path)
    manifest = read_manifest(root)
    counts = engine.count()
    if len(set(counts.values())) > 1:
        msg = f"index at {root} is inconsistent: document counts per store {counts}; re-run the indexing"
        raise IndexDirectoryError(msg)
    manifest.update(extra)
    manifest["doc_count"] = next(iter(counts.values()), 0)
    manifest["updated"] = _now()
    _write_manifest(root, manifest)
    return manifest


def close_engine(engine: HybridEngine) -> None:
    """Close the engine's worker threads and its stores (releases the Qdrant folder lock)."""
    engine.close()
    for leg in engine.legs.values():
        close = getattr(getattr(leg, "store", None), "close", None)
        if callable(close):
            close()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    tmp = root / f".{MANIFEST_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(root / MANIFEST_FILE)  # atomic: a reader sees the old or the new manifest, never half
