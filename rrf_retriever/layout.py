"""An index directory on disk: the manifest, the stores and the journal. One layout for
``EnsembleRRFRetriever.from_texts(..., path=DIR)`` and the ``rrf-retriever`` CLI (either opens what the other wrote).

Layout of an index directory::

    DIR/
      rrf-index.json     manifest: embedder, stores, analyzer, collection, dimension, doc count, times
      keyword.sqlite3    FTS5KeywordStore (keyword store "fts5", the default before 2026-12)
      keyword-bm25/      BM25KeywordStore (keyword store "bm25"; saved after every write)
      keyword-qdrant-edge/  QdrantEdgeKeywordStore (keyword store "qdrant-edge", the default: BM25 as sparse vectors)
      qdrant-edge/       QdrantEdgeDenseStore (dense store "qdrant-edge", the default: Qdrant's in-process engine,
                         fast past 100k points, where qdrant-client's local mode takes seconds per filtered query)
      qdrant/            QdrantDenseStore (dense store "qdrant": qdrant-client local mode); with keyword and dense
                         both "qdrant", QdrantHybridStore: both legs in ONE collection (manifest
                         ``qdrant_layout: "joint"``), or on a server (``qdrant_url``: nothing local but the manifest
                         and the journal)
      journal.sqlite3    the engine's write-ahead journal (an interrupted batch is redone on open)

The manifest decides. It is written (exclusively: of two processes creating one index, one wins and the other
reads its manifest) before any store is opened, and every later open checks against it:

* ``keyword_store`` / ``dense_store``: the kinds above, or ``"external:<Class>"`` for a store object passed to
  ``from_texts``. Asking for another kind is an :class:`IndexDirectoryError` (two kinds would split the index).
  Asking for none (``from_texts(..., path=DIR)`` without ``keyword=`` / ``dense=``) uses the index's.
* ``embedder``: the spec the CLI can build (``"minilm"``, ``"hashing:<dim>"``) or None for any other embedding,
  with ``embedder_class``, ``embedder_model`` (its ``model_id`` or model name) and ``dimension`` recorded beside.
  A reopen with another spec or another dimension is an :class:`IndexDirectoryError` (an embedding that does not
  announce its dimension embeds one probe text to check it); another model name of the same dimension warns. The
  CLI opens an index only if it can build its embedder; for any other it says what was used and to open it from
  Python with the same embedding.
* ``doc_count``: refreshed from the stores' real counts after writes and on every open (so an interrupted run, or
  writes made without the CLI, never leave a stale count).

A directory without a manifest that holds only layout entries (what ``from_texts(path=)`` wrote before it kept a
manifest) is adopted; one holding anything else is refused, so an index never mixes with other files.

The CLI and the settings service open an index with :func:`open_index` and get a
:class:`~rrf_retriever.engine.HybridEngine` (no LangChain, no LlamaIndex: they stay light).

Example:
    >>> engine = create_index("/tmp/idx", embedder="hashing:64")  # doctest: +SKIP
    >>> engine.add(["a"], ["hybrid search"]); save_manifest("/tmp/idx", engine)  # doctest: +SKIP
    >>> engine.close(); open_index("/tmp/idx").search("hybrid").ids  # doctest: +SKIP
    ['a']
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError, RRFRetrieverError, StoreUnavailableError
from rrf_retriever.text import Analyzer, as_analyzer, saved_config

__all__ = [
    "BM25_DIR",
    "DEFAULT_COLLECTION",
    "JOINT_QDRANT",
    "JOURNAL_FILE",
    "KEYWORD_FILE",
    "MANIFEST_FILE",
    "QDRANT_DIR",
    "QDRANT_EDGE_DIR",
    "IndexDirectoryError",
    "IndexStores",
    "create_index",
    "describe_embedding",
    "embedder_spec",
    "make_dense_store",
    "make_embedding",
    "make_keyword_store",
    "make_qdrant_stores",
    "open_index",
    "open_stores",
    "read_manifest",
    "refresh_manifest",
    "save_manifest",
]

logger = logging.getLogger(__name__)

MANIFEST_FILE = "rrf-index.json"
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
_KEYWORD_PLACES = {"fts5": KEYWORD_FILE, "bm25": BM25_DIR, "qdrant": KEYWORD_QDRANT_DIR,
                   "qdrant-edge": KEYWORD_QDRANT_EDGE_DIR}
_DENSE_DIRS = {"qdrant": QDRANT_DIR, "qdrant-edge": QDRANT_EDGE_DIR}
#: The engine's write-ahead journal: a batch interrupted by a crash is redone in both stores on the next open.
JOURNAL_FILE = "journal.sqlite3"
DEFAULT_COLLECTION = "rrf_retriever"
FORMAT_VERSION = 1
_REQUIRED_KEYS = ("format", "embedder", "collection", "created", "doc_count")
_EXTERNAL = "external:"
#: What an index directory may hold (hidden files, e.g. temporary ones, are ignored).
_LAYOUT_ENTRIES = frozenset(
    {MANIFEST_FILE, BM25_DIR, QDRANT_DIR, QDRANT_EDGE_DIR}
    | {f"{name}{suffix}" for name in (KEYWORD_FILE, JOURNAL_FILE) for suffix in ("", "-wal", "-shm", "-journal")}
)


class IndexDirectoryError(StoreUnavailableError):
    """An index directory is missing, incomplete, corrupt or does not match what was asked (another store kind,
    another embedder); the message says which and what to do."""


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
    from rrf_retriever.embeddings.frameworks import as_embedding

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
    from rrf_retriever.embeddings.frameworks import as_embedding

    adapter = as_embedding(embedding)
    inner = getattr(adapter, "model", None) or getattr(adapter, "fn", None)
    return {
        "embedder": embedder_spec(adapter),
        "embedder_class": type(inner if inner is not None else adapter).__name__,
        "embedder_model": str(getattr(adapter, "model_id", None) or type(adapter).__name__),
        "dimension": getattr(adapter, "dimension", None),
    }


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


def make_keyword_store(kind: str, root: str | os.PathLike[str] | None, analyzer: Any = None) -> Any:
    """The keyword store of the index layout: ``"fts5"`` (``root/keyword.sqlite3``; in memory without a root),
    ``"bm25"`` (``root/keyword-bm25/``, saved after every write; in memory without a root), or BM25 as Qdrant sparse
    vectors: ``"qdrant-edge"`` (``root/keyword-qdrant-edge/``) or ``"qdrant"`` (qdrant-client,
    ``root/keyword-qdrant/``). Shared by index directories and ``EnsembleRRFRetriever.from_texts``.
    ``analyzer`` (an :class:`~rrf_retriever.text.Analyzer`, or a language name: :func:`as_analyzer`) is the store's;
    None: a new store's default, a reopened store's saved one.

    Example:
        >>> make_keyword_store("fts5", None).count()
        0
    """
    analyzer = as_analyzer(analyzer)
    if kind == "fts5":
        from rrf_retriever.stores.fts5 import FTS5KeywordStore

        if root is None:
            return FTS5KeywordStore(":memory:", analyzer=analyzer)
        Path(root).mkdir(parents=True, exist_ok=True)
        return FTS5KeywordStore(Path(root) / KEYWORD_FILE, analyzer=analyzer)
    if kind == "bm25":
        from rrf_retriever.stores.bm25 import BM25KeywordStore

        return BM25KeywordStore(path=None if root is None else Path(root) / BM25_DIR, analyzer=analyzer)
    if kind == "qdrant-edge":
        from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore

        folder = None if root is None else Path(root) / KEYWORD_QDRANT_EDGE_DIR
        return QdrantEdgeKeywordStore(path=folder, analyzer=analyzer)
    if kind == "qdrant":
        from rrf_retriever.stores.qdrant import QdrantKeywordStore

        if root is None:
            return QdrantKeywordStore(location=":memory:", analyzer=analyzer)
        return QdrantKeywordStore(path=Path(root) / KEYWORD_QDRANT_DIR, analyzer=analyzer)
    msg = f"keyword must be one of {sorted(_KEYWORD_PLACES)} or a keyword store, got {kind!r}"
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


#: Manifest value of ``qdrant_layout`` for an index whose two legs share one Qdrant collection.
JOINT_QDRANT = "joint"


def make_qdrant_stores(
    keyword: str, dense: str, embedding: Any, root: str | os.PathLike[str] | None,
    collection: str = DEFAULT_COLLECTION, *, url: str | None = None, location: str | None = None,
    api_key: str | None = None, analyzer: Analyzer | None = None,
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
        store = QdrantHybridStore(embedding, url=url, api_key=api_key, collection_name=collection, analyzer=analyzer)
    elif root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
        store = QdrantHybridStore(embedding, path=Path(root) / QDRANT_DIR, collection_name=collection,
                                  analyzer=analyzer)
    else:
        store = QdrantHybridStore(embedding, location=location or ":memory:", collection_name=collection,
                                  analyzer=analyzer)
    return store.keyword, store.dense


def _kind(store: Any, role: str) -> str | None:
    """The manifest's name for a store: the kind string itself (checked), ``external:<Class>`` for an object,
    None for "the index's own"."""
    if store is None:
        return None
    if isinstance(store, str):
        known = _KEYWORD_PLACES if role == "keyword" else _DENSE_DIRS
        if store not in known:
            msg = f"{role} must be {' or '.join(repr(k) for k in known)} or a {role} store, got {store!r}"
            raise InvalidArgumentError(msg)
        return store
    return f"{_EXTERNAL}{type(store).__name__}"


def _is_external(kind: str) -> bool:
    return kind.startswith(_EXTERNAL)


@dataclass
class IndexStores:
    """The stores of an index directory, opened by :func:`open_stores` and checked against its manifest."""

    root: Path
    manifest: dict[str, Any]
    keyword: Any
    dense: Any
    #: True when this call created the index (wrote its manifest).
    created: bool = False
    #: The stores this call built (closed by :meth:`close`; a store object the caller passed is theirs).
    owned: tuple[Any, ...] = ()

    def close(self) -> None:
        """Close the stores this call built."""
        for store in self.owned:
            close = getattr(store, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()


def open_stores(
    path: str | os.PathLike[str],
    embedding: Any,
    *,
    keyword: str | Any = None,
    dense: str | Any = None,
    collection: str | None = None,
    create: bool = True,
    url: str | None = None,
    api_key: str | None = None,
    analyzer: Any = None,
) -> IndexStores:
    """Open (or create) the stores of the index directory ``path``, as its manifest says.

    Args:
        path: The index directory.
        embedding: The embedding of the dense store (any kind :func:`~rrf_retriever.embeddings.as_embedding` takes).
        keyword: ``"fts5"``, ``"bm25"``, a keyword store object, or None: the index's kind (``"fts5"`` if new).
        dense: ``"qdrant-edge"``, ``"qdrant"``, a dense store object, or None: the index's (``"qdrant-edge"``).
        collection: The Qdrant collection (None: the index's, or ``"rrf_retriever"``).
        create: Create the index if there is none (else :class:`IndexDirectoryError`).
        url: With ``keyword="qdrant", dense="qdrant"``: the Qdrant server (or cluster) holding the joint collection
            (a new index records it as ``qdrant_url``; a reopen uses it unless another is given). ``api_key`` for a
            secured server (never written to the manifest).
        analyzer: The keyword analyzer of a new index (an :class:`~rrf_retriever.text.Analyzer` or a language name
            such as ``"german"``), recorded in the manifest; None: the default (new) or the index's own (reopen).

    Raises:
        IndexDirectoryError: ``path`` is a file or a folder of other files; the manifest is corrupt; or a store kind,
            the collection, the embedder or its dimension, or the analyzer differs from the index's.
        StoreLockedError: a store is open elsewhere (in this or another process).
    """
    from rrf_retriever.embeddings.frameworks import as_embedding

    root = Path(path)
    adapter = as_embedding(embedding)
    keyword_kind, dense_kind = _kind(keyword, "keyword"), _kind(dense, "dense")
    asked_analyzer = as_analyzer(analyzer)
    if asked_analyzer is not None and keyword_kind is not None and _is_external(keyword_kind):
        msg = "analyzer= is for the index's own keyword store; give the analyzer to the keyword store you pass"
        raise InvalidArgumentError(msg)
    if root.exists() and not root.is_dir():
        msg = f"cannot open an index at {root}: it is a file, not a directory"
        raise IndexDirectoryError(msg)
    created = False
    for _ in range(3):  # a manifest appearing between our look and our claim is read on the next turn
        if (root / MANIFEST_FILE).exists() or not create:
            manifest = read_manifest(root)
            _check_manifest(root, manifest, keyword_kind, dense_kind, collection, adapter)
            _check_analyzer(root, manifest, asked_analyzer)
            break
        manifest = _new_manifest(root, adapter, keyword_kind, dense_kind, collection)
        if asked_analyzer is not None:
            manifest["analyzer"] = asked_analyzer.config()
        if manifest["keyword_store"] == manifest["dense_store"] == "qdrant":  # both legs in one collection
            manifest["qdrant_layout"] = JOINT_QDRANT
            if url is not None:
                manifest["qdrant_url"] = url
        elif url is not None:
            msg = "url= is for an index whose keyword and dense stores are both 'qdrant'"
            raise InvalidArgumentError(msg)
        if _claim_manifest(root, manifest):
            created = True
            break
    else:  # pragma: no cover - a manifest that keeps vanishing
        msg = f"cannot create an index at {root}: its manifest keeps changing"
        raise IndexDirectoryError(msg)
    owned: list[Any] = []
    try:
        keyword_store = keyword if not isinstance(keyword, (str, type(None))) else None
        dense_store = dense if not isinstance(dense, (str, type(None))) else None
        if keyword_store is None and dense_store is None and manifest.get("qdrant_layout") == JOINT_QDRANT:
            joint = make_qdrant_stores("qdrant", "qdrant", adapter, root, manifest["collection"],
                                       url=url or manifest.get("qdrant_url"), api_key=api_key,
                                       analyzer=asked_analyzer)
            assert joint is not None
            keyword_store, dense_store = joint
            owned.append(dense_store.store)
        if keyword_store is None:
            keyword_store = make_keyword_store(manifest.get("keyword_store", "fts5"), root, asked_analyzer)
            owned.append(keyword_store)
        if dense_store is None:
            dense_store = make_dense_store(manifest.get("dense_store", "qdrant"), adapter, root,
                                           manifest["collection"])
            owned.append(dense_store)
    except BaseException:
        for store in owned:
            with contextlib.suppress(Exception):
                store.close()
        if created:  # nothing was written: leave no manifest claiming an index that never opened
            with contextlib.suppress(OSError):
                (root / MANIFEST_FILE).unlink()
        raise
    if not created and manifest.get("dimension") is None:
        manifest["dimension"] = getattr(adapter, "dimension", None)
    return IndexStores(root, manifest, keyword_store, dense_store, created, tuple(owned))


def _check_analyzer(root: Path, manifest: dict[str, Any], analyzer: Analyzer | None) -> None:
    """Refuse an analyzer other than the one the index was built with (its terms would not match the queries')."""
    saved = manifest.get("analyzer")
    if analyzer is not None and isinstance(saved, dict) and analyzer.config() != saved_config(saved):
        msg = (f"the index at {root} was indexed with another analyzer (language {saved.get('language') or 'english'}"
               f", stem {saved.get('stem')!r}); pass analyzer=None to use its own, or use another directory")
        raise IndexDirectoryError(msg)


def _new_manifest(root: Path, adapter: Any, keyword_kind: str | None, dense_kind: str | None,
                  collection: str | None) -> dict[str, Any]:
    """The manifest of a new index (or of a manifest-less folder of layout entries, which is adopted)."""
    entries = {p.name for p in root.iterdir() if not p.name.startswith(".")} if root.is_dir() else set()
    foreign = sorted(entries - _LAYOUT_ENTRIES)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        msg = (f"cannot create an index at {root}: the directory is not empty and holds no {MANIFEST_FILE} "
               f"({shown}); use an empty or new directory")
        raise IndexDirectoryError(msg)
    if keyword_kind is None:
        # an older folder without a manifest keeps the store it holds (FTS5 was the default before)
        keyword_kind = ("fts5" if KEYWORD_FILE in entries else "bm25" if BM25_DIR in entries
                        else DEFAULT_KEYWORD_STORE)
    if dense_kind is None:
        dense_kind = "qdrant" if QDRANT_DIR in entries and QDRANT_EDGE_DIR not in entries else DEFAULT_DENSE_STORE
    now = _now()
    analyzer = None
    if not _is_external(keyword_kind):
        from rrf_retriever.text import default_analyzer

        analyzer = default_analyzer().config()  # the layout's keyword stores use the default analyzer
    return {
        "format": FORMAT_VERSION,
        **describe_embedding(adapter),
        "collection": collection or DEFAULT_COLLECTION,
        "keyword_store": keyword_kind,
        "dense_store": dense_kind,
        "analyzer": analyzer,
        "created": now,
        "updated": now,
        "doc_count": 0,
    }


def _claim_manifest(root: Path, manifest: dict[str, Any]) -> bool:
    """Write the manifest only if there is none (atomically: a reader never sees half). False if another
    process got there first."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{MANIFEST_FILE}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    try:
        os.link(tmp, root / MANIFEST_FILE)  # fails if the manifest exists: the first creator wins
    except FileExistsError:
        return False
    except OSError:  # a filesystem without hard links: exclusive create instead
        try:
            fd = os.open(root / MANIFEST_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(tmp.read_text(encoding="utf-8"))
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return True


def _check_manifest(root: Path, manifest: dict[str, Any], keyword_kind: str | None, dense_kind: str | None,
                    collection: str | None, adapter: Any) -> None:
    """Refuse what would not match the index: another store kind, collection, embedder or dimension."""
    for role, asked, key, default in (("keyword", keyword_kind, "keyword_store", "fts5"),
                                      ("dense", dense_kind, "dense_store", "qdrant")):
        kind = manifest.get(key, default)
        if asked is not None and asked != kind:
            hint = (f"pass {role}={kind!r} or nothing" if not _is_external(kind)
                    else f"pass the same kind of {role} store object ({kind[len(_EXTERNAL):]})")
            msg = (f"the index at {root} keeps its {role} store as {kind!r}, not {asked!r}: {hint} "
                   "(or use another directory)")
            raise IndexDirectoryError(msg)
        if asked is None and _is_external(kind):
            msg = (f"the index at {root} was built with an external {role} store ({kind[len(_EXTERNAL):]}); "
                   f"pass that store again as {role}=")
            raise IndexDirectoryError(msg)
        place = _KEYWORD_PLACES.get(kind) if role == "keyword" else _DENSE_DIRS.get(kind)
        if place is None and not _is_external(kind):
            msg = f"corrupt index at {root}: unknown {role} store {kind!r} in {MANIFEST_FILE}"
            raise IndexDirectoryError(msg)
        if manifest.get("qdrant_layout") == JOINT_QDRANT:  # one collection: in qdrant/, or on the server
            place = None if manifest.get("qdrant_url") else QDRANT_DIR
        if place is not None and manifest["doc_count"] > 0 and not (root / place).exists():
            msg = f"corrupt index at {root}: its {role} store {place} is missing"
            raise IndexDirectoryError(msg)
    if collection is not None and collection != manifest["collection"]:
        msg = f"the index at {root} uses the collection {manifest['collection']!r}, not {collection!r}"
        raise IndexDirectoryError(msg)
    _check_embedding(root, manifest, adapter)


def _check_embedding(root: Path, manifest: dict[str, Any], adapter: Any) -> None:
    expected = manifest.get("dimension")
    if expected is not None:
        dim = getattr(adapter, "dimension", None)
        if dim is None:  # an embedding that does not announce its dimension: embed one probe text
            try:
                dim = len(adapter.embed_query("rrf-retriever dimension check"))
            except RRFRetrieverError as exc:
                warnings.warn(f"could not check the embedding against the index at {root}: {exc}", stacklevel=4)
        if dim is not None and dim != expected:
            msg = (f"the index at {root} holds vectors of dimension {expected} "
                   f"({manifest.get('embedder') or manifest.get('embedder_model')}), but this embedding "
                   f"({getattr(adapter, 'model_id', type(adapter).__name__)}) gives dimension {dim}; use the "
                   "embedding the index was built with")
            raise IndexDirectoryError(msg)
    then, now = manifest.get("embedder"), embedder_spec(adapter)
    if then is not None and now is not None and then != now:
        msg = f"the index at {root} was built with embedder {then!r}, not {now!r}; use the same one or another " \
              "directory"
        raise IndexDirectoryError(msg)
    model = manifest.get("embedder_model")
    if then is None and model is not None and model != getattr(adapter, "model_id", model):
        warnings.warn(f"the index at {root} was built with the embedding model {model!r}, this one is "
                      f"{adapter.model_id!r} (same dimension): check it is the same model", stacklevel=4)


def create_index(
    path: str | os.PathLike[str],
    *,
    embedder: str | None = None,
    collection: str = DEFAULT_COLLECTION,
    analyzer: Analyzer | str | None = None,
    keyword: str | None = None,
    dense: str | None = None,
    url: str | None = None,
    **settings: Any,
) -> HybridEngine:
    """Open the index at ``path``, creating an empty one (directory and manifest) if there is none.

    An existing index keeps its embedder; asking for a different one is an error (its vectors would not match).

    Args:
        path: The index directory.
        embedder: ``"minilm"`` or ``"hashing:<dim>"``; None: the existing index's, or ``"minilm"`` for a new one.
        collection: The Qdrant collection name (used only when the index is new).
        analyzer: The keyword analyzer of a new index (an Analyzer or a language name such as ``"german"``); an
            existing index keeps its own, and naming another is an error.
        keyword, dense: The store kinds of a new index (an existing one keeps its own; naming another is an error).
            Both ``"qdrant"``: one collection for both legs, on the Qdrant server ``url`` if given.
        **settings: Passed to :class:`~rrf_retriever.engine.HybridEngine` (``top_k``, ``rrf_k``, ...).

    Raises:
        IndexDirectoryError: ``path`` is a file or a folder of other files, or the existing index is corrupt or
            uses another embedder.
    """
    root = Path(path)
    wanted = None if embedder is None else normalize_embedder_spec(embedder)
    if root.exists() and not root.is_dir():
        msg = f"cannot create an index at {root}: it is a file, not a directory"
        raise IndexDirectoryError(msg)
    if (root / MANIFEST_FILE).exists():
        manifest = read_manifest(root)
        if wanted is not None and manifest["embedder"] != wanted:
            built = manifest["embedder"] or f"a custom embedding ({manifest.get('embedder_model')})"
            msg = (f"the index at {root} was built with embedder {built!r}, not {wanted!r}; "
                   "use the same embedder or a new --index-dir")
            raise IndexDirectoryError(msg)
        _check_analyzer(root, manifest, as_analyzer(analyzer))
        for role, asked, key in (("keyword", keyword, "keyword_store"), ("dense", dense, "dense_store")):
            if asked is not None and asked != manifest.get(key):
                msg = f"the index at {root} keeps its {role} store as {manifest.get(key)!r}, not {asked!r}"
                raise IndexDirectoryError(msg)
        return open_index(root, url=url, **settings)
    adapter = make_embedding(wanted or "minilm")  # fails on a bad spec before anything is written
    stores = open_stores(root, adapter, collection=collection, analyzer=analyzer, keyword=keyword, dense=dense,
                         url=url)
    return _engine(stores, settings)


#: The manifest key holding settings chosen for this index (``tune``): the next open uses them.
MANIFEST_SETTINGS_KEY = "settings"
_SAVED_FIELDS = ("fusion", "rrf_k", "weights", "fetch_k")


def saved_settings(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The engine keywords a manifest's saved ``settings`` hold (for ``open_index``; unknown keys dropped).

    Example:
        >>> saved_settings({"settings": {"rrf_k": 20.0, "fetch_k": None, "other": 1}})
        {'rrf_k': 20.0, 'fetch_k': None}
    """
    saved = manifest.get(MANIFEST_SETTINGS_KEY) or {}
    return {k: saved[k] for k in _SAVED_FIELDS if k in saved} if isinstance(saved, Mapping) else {}


def with_saved_settings(manifest: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` over the manifest's saved ones (explicit keywords win; weights merge per source).

    Example:
        >>> with_saved_settings({"settings": {"rrf_k": 20.0, "weights": {"keyword": 0.5}}}, {"weights": {"dense": 2}})
        {'rrf_k': 20.0, 'weights': {'keyword': 0.5, 'dense': 2}}
    """
    saved = saved_settings(manifest)
    merged = {**saved, **settings}
    if isinstance(saved.get("weights"), Mapping) and isinstance(settings.get("weights"), Mapping):
        merged["weights"] = {**saved["weights"], **settings["weights"]}
    return merged


def _engine(stores: IndexStores, settings: dict[str, Any]) -> HybridEngine:
    settings = with_saved_settings(stores.manifest, settings)
    try:
        engine = HybridEngine({"dense": stores.dense, "keyword": stores.keyword}, journal=stores.root / JOURNAL_FILE,
                              **settings)
    except BaseException:
        stores.close()
        raise
    with contextlib.suppress(OSError, IndexDirectoryError):
        refresh_manifest(stores.root, engine)  # the journal has redone any interrupted batch: count now
    return engine


def open_index(path: str | os.PathLike[str], *, url: str | None = None, **settings: Any) -> HybridEngine:
    """Open an existing index directory as a :class:`~rrf_retriever.engine.HybridEngine` (sources
    ``"dense"`` and ``"keyword"``), whichever wrote it (the CLI or ``from_texts(path=)``).

    Its ``doc_count`` is refreshed from the stores on open.

    Args:
        path: The index directory (holding ``rrf-index.json``).
        url: For an index whose two legs share one Qdrant collection on a server: another URL than the one the
            manifest records (the server moved); None: the manifest's.
        **settings: Passed to the engine (``top_k``, ``rrf_k``, ``weights``, ...).

    Raises:
        IndexDirectoryError: missing directory, missing or corrupt manifest or store, an embedder this module
            cannot build (a custom embedding: open it from Python), or the index is open in another process.

    Example:
        >>> open_index("/nonexistent")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.layout.IndexDirectoryError: no index at /nonexistent: the directory does not exist ...
    """
    root = Path(path)
    manifest = read_manifest(root)
    spec = manifest["embedder"]
    if spec is None:
        msg = (f"the index at {root} was built from Python with a custom embedding ({manifest.get('embedder_class')}"
               f", model {manifest.get('embedder_model')!r}, dimension {manifest.get('dimension')}); the CLI can "
               "only build 'minilm' or 'hashing:<dim>'. Open it with EnsembleRRFRetriever.from_texts([], "
               f"<that embedding>, path={str(root)!r})")
        raise IndexDirectoryError(msg)
    for role, key in (("keyword", "keyword_store"), ("dense", "dense_store")):
        if _is_external(str(manifest.get(key, ""))):
            msg = (f"the index at {root} uses an external {role} store ({manifest[key][len(_EXTERNAL):]}); open it "
                   "from Python with that store")
            raise IndexDirectoryError(msg)
    try:
        stores = open_stores(root, make_embedding(spec), create=False, url=url)
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
    return _engine(stores, settings)


def refresh_manifest(path: str | os.PathLike[str], engine: HybridEngine, **extra: Any) -> dict[str, Any]:
    """Bring the manifest up to date with the stores: doc count (from the stores' real counts), the dense
    dimension once known, and ``extra`` keys. Writes only if something changed. Never raises on stores that
    disagree (an interrupted write the journal could not redo): it logs it and records the smaller count.
    """
    root = Path(path)
    manifest = read_manifest(root)
    counts = engine.count()
    if len(set(counts.values())) > 1:
        logger.warning("index at %s: the stores disagree on the document count %s", root, counts)
    new = dict(manifest)
    new.update(extra)
    new["doc_count"] = min(counts.values(), default=0)
    dense = getattr(engine.legs.get("dense"), "store", None)
    if new.get("dimension") is None and getattr(dense, "dimension", None) is not None:
        new["dimension"] = dense.dimension
    keyword = getattr(engine.legs.get("keyword"), "store", None)
    if new.get("analyzer") is None and hasattr(keyword, "analyzer"):
        with contextlib.suppress(Exception):
            new["analyzer"] = keyword.analyzer.config()
    if new != manifest:
        new["updated"] = _now()
        _write_manifest(root, new)
    return new


def save_manifest(path: str | os.PathLike[str], engine: HybridEngine, **extra: Any) -> dict[str, Any]:
    """Refresh the manifest after writes: doc count, update time, and any ``extra`` keys (e.g. a corpus hash).

    Raises:
        IndexDirectoryError: the stores disagree on the document count (a write was interrupted).
    """
    counts = engine.count()
    if len(set(counts.values())) > 1:
        msg = f"index at {path} is inconsistent: document counts per store {counts}; re-run the indexing"
        raise IndexDirectoryError(msg)
    manifest = refresh_manifest(path, engine, **extra)
    if manifest.get("updated") is None:  # pragma: no cover - every manifest has one
        manifest["updated"] = _now()
    return manifest


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    tmp = root / f".{MANIFEST_FILE}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(root / MANIFEST_FILE)  # atomic: a reader sees the old or the new manifest, never half
