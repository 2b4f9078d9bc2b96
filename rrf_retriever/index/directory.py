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
* ``embedder``: the spec the CLI can build (``"minilm-int8"``, ``"minilm"``, ``"hashing:<dim>"``) or None for any
  other embedding, with ``embedder_class``, ``embedder_model`` (its ``model_id`` or model name) and ``dimension``
  recorded beside. A reopen with another spec or another dimension is an :class:`IndexDirectoryError` (an embedding
  that does not announce its dimension embeds one probe text to check it); another model name of the same
  dimension warns. The CLI opens an index only if it can build its embedder; for any other it says what was used
  and to open it from Python with the same embedding.
* ``doc_count``: refreshed from the stores' real counts after writes and on every open (so an interrupted run, or
  writes made without the CLI, never leave a stale count).

A directory without a manifest that holds only layout entries (what ``from_texts(path=)`` wrote before it kept a
manifest) is adopted; one holding anything else is refused, so an index never mixes with other files.

The CLI and the settings service open an index with :func:`open_index` and get a
:class:`~rrf_retriever.engine.HybridEngine` (no LangChain, no LlamaIndex: they stay light).

Example:
    >>> engine = create_index("/tmp/idx", embedder="hashing:64")  # doctest: +SKIP
    >>> from rrf_retriever.index.manifest import save_manifest
    >>> engine.add(["a"], ["hybrid search"]); save_manifest("/tmp/idx", engine)  # doctest: +SKIP
    >>> engine.close(); open_index("/tmp/idx").search("hybrid").ids  # doctest: +SKIP
    ['a']
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer, as_analyzer
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import IndexDirectoryError, InvalidArgumentError, RRFRetrieverError
from rrf_retriever.index.manifest import (
    EXTERNAL,
    JOURNAL_FILE,
    MANIFEST_FILE,
    check_analyzer,
    check_manifest,
    claim_manifest,
    is_external,
    new_manifest,
    read_manifest,
    refresh_manifest,
    with_saved_settings,
)
from rrf_retriever.index.registry import (
    DEFAULT_COLLECTION,
    DEFAULT_EMBEDDER,
    DENSE_DIRS,
    JOINT_QDRANT,
    KEYWORD_PLACES,
    make_dense_store,
    make_embedding,
    make_keyword_store,
    make_qdrant_stores,
    normalize_embedder_spec,
)
from rrf_retriever.stores.qdrant.scoping import check_index_keys

__all__ = ["IndexStores", "create_index", "open_index", "open_stores"]


def _kind(store: Any, role: str) -> str | None:
    """The manifest's name for a store: the kind string itself (checked), ``external:<Class>`` for an object,
    None for "the index's own"."""
    if store is None:
        return None
    if isinstance(store, str):
        known = KEYWORD_PLACES if role == "keyword" else DENSE_DIRS
        if store not in known:
            msg = f"{role} must be {' or '.join(repr(k) for k in known)} or a {role} store, got {store!r}"
            raise InvalidArgumentError(msg)
        return store
    return f"{EXTERNAL}{type(store).__name__}"


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
    index_keys: Sequence[str] = (),
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
        analyzer: The keyword analyzer of a new index (an :class:`~.analysis.analyzer.Analyzer` or a language name
            such as ``"german"``), recorded in the manifest; None: the default (new) or the index's own (reopen).
        index_keys: Metadata keys the Qdrant stores index as documents are written (payload indexes in place
            before an HNSW graph is built), added to those the manifest's ``index_keys`` records.

    Raises:
        IndexDirectoryError: ``path`` is a file or a folder of other files; the manifest is corrupt; or a store kind,
            the collection, the embedder or its dimension, or the analyzer differs from the index's.
        StoreLockedError: a store is open elsewhere (in this or another process).
    """
    from rrf_retriever.embeddings.adapters import as_embedding

    root = Path(path)
    adapter = as_embedding(embedding)
    keyword_kind, dense_kind = _kind(keyword, "keyword"), _kind(dense, "dense")
    asked_analyzer = as_analyzer(analyzer)
    if asked_analyzer is not None and keyword_kind is not None and is_external(keyword_kind):
        msg = "analyzer= is for the index's own keyword store; give the analyzer to the keyword store you pass"
        raise InvalidArgumentError(msg)
    if root.exists() and not root.is_dir():
        msg = f"cannot open an index at {root}: it is a file, not a directory"
        raise IndexDirectoryError(msg)
    created = False
    for _ in range(3):  # a manifest appearing between our look and our claim is read on the next turn
        if (root / MANIFEST_FILE).exists() or not create:
            manifest = read_manifest(root)
            check_manifest(root, manifest, keyword_kind, dense_kind, collection, adapter)
            check_analyzer(root, manifest, asked_analyzer)
            break
        manifest = new_manifest(root, adapter, keyword_kind, dense_kind, collection)
        if asked_analyzer is not None:
            manifest["analyzer"] = asked_analyzer.config()
        if manifest["keyword_store"] == manifest["dense_store"] == "qdrant":  # both legs in one collection
            manifest["qdrant_layout"] = JOINT_QDRANT
            if url is not None:
                manifest["qdrant_url"] = url
        elif url is not None:
            msg = "url= is for an index whose keyword and dense stores are both 'qdrant'"
            raise InvalidArgumentError(msg)
        if claim_manifest(root, manifest):
            created = True
            break
    else:  # pragma: no cover - a manifest that keeps vanishing
        msg = f"cannot create an index at {root}: its manifest keeps changing"
        raise IndexDirectoryError(msg)
    # Checked as the stores check them (one key may be a string; each a filter key, else InvalidFilterError)
    # before sorting: an int among them raised a raw TypeError from sorted().
    asked_keys = check_index_keys(index_keys)
    keys = sorted({*(manifest.get("index_keys") or ()), *asked_keys})
    owned: list[Any] = []
    try:
        keyword_store = keyword if not isinstance(keyword, (str, type(None))) else None
        dense_store = dense if not isinstance(dense, (str, type(None))) else None
        if keyword_store is None and dense_store is None and manifest.get("qdrant_layout") == JOINT_QDRANT:
            joint = make_qdrant_stores("qdrant", "qdrant", adapter, root, manifest["collection"],
                                       url=url or manifest.get("qdrant_url"), api_key=api_key,
                                       analyzer=asked_analyzer, index_keys=keys)
            assert joint is not None
            keyword_store, dense_store = joint
            owned.append(dense_store.store)
        if keyword_store is None:
            keyword_store = make_keyword_store(manifest.get("keyword_store", "fts5"), root, asked_analyzer, keys)
            owned.append(keyword_store)
        if dense_store is None:
            dense_store = make_dense_store(manifest.get("dense_store", "qdrant"), adapter, root,
                                           manifest["collection"], keys)
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


def create_index(
    path: str | os.PathLike[str],
    *,
    embedder: str | None = None,
    collection: str = DEFAULT_COLLECTION,
    analyzer: Analyzer | str | None = None,
    keyword: str | None = None,
    dense: str | None = None,
    url: str | None = None,
    index_keys: Sequence[str] = (),
    **settings: Any,
) -> HybridEngine:
    """Open the index at ``path``, creating an empty one (directory and manifest) if there is none.

    An existing index keeps its embedder; asking for a different one is an error (its vectors would not match).

    Args:
        path: The index directory.
        embedder: ``"minilm-int8"``, ``"minilm"`` (fp32) or ``"hashing:<dim>"``; None: the existing index's, or
            :data:`~rrf_retriever.index.registry.DEFAULT_EMBEDDER` (``"minilm-int8"``) for a new one.
        collection: The Qdrant collection name (used only when the index is new).
        analyzer: The keyword analyzer of a new index (an Analyzer or a language name such as ``"german"``); an
            existing index keeps its own, and naming another is an error.
        keyword, dense: The store kinds of a new index (an existing one keeps its own; naming another is an error).
            Both ``"qdrant"``: one collection for both legs, on the Qdrant server ``url`` if given.
        index_keys: Metadata keys to index as documents are written (see :func:`open_stores`; kept in the manifest).
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
            same = f" (--embedder {manifest['embedder']})" if manifest["embedder"] else ""
            msg = (f"the index at {root} was built with embedder {built!r}, not {wanted!r}; "
                   f"use the same embedder{same} or a new --index-dir")
            raise IndexDirectoryError(msg)
        check_analyzer(root, manifest, as_analyzer(analyzer))
        for role, asked, key in (("keyword", keyword, "keyword_store"), ("dense", dense, "dense_store")):
            if asked is not None and asked != manifest.get(key):
                msg = f"the index at {root} keeps its {role} store as {manifest.get(key)!r}, not {asked!r}"
                raise IndexDirectoryError(msg)
        return open_index(root, url=url, index_keys=index_keys, **settings)
    adapter = make_embedding(wanted or DEFAULT_EMBEDDER)  # fails on a bad spec before anything is written
    stores = open_stores(root, adapter, collection=collection, analyzer=analyzer, keyword=keyword, dense=dense,
                         url=url, index_keys=index_keys)
    return _engine(stores, settings)


#: Saved settings the engine's constructor does not take: applied right after it.
_SET_AFTER_OPEN = ("diversity", "rerank_k")


def _engine(stores: IndexStores, settings: dict[str, Any]) -> HybridEngine:
    settings = with_saved_settings(stores.manifest, settings)
    later = {name: settings.pop(name) for name in _SET_AFTER_OPEN if name in settings}
    try:
        engine = HybridEngine({"dense": stores.dense, "keyword": stores.keyword}, journal=stores.root / JOURNAL_FILE,
                              **settings)
    except BaseException:
        stores.close()
        raise
    engine.leg_probe.restore(stores.manifest.get("leg_strength"))
    if later:
        try:
            engine.update_settings(**later)
        except BaseException:
            engine.close()
            raise
    with contextlib.suppress(OSError, IndexDirectoryError):
        refresh_manifest(stores.root, engine)  # the journal has redone any interrupted batch: count now
    return engine


def open_index(path: str | os.PathLike[str], *, url: str | None = None, index_keys: Sequence[str] = (),
               **settings: Any) -> HybridEngine:
    """Open an existing index directory as a :class:`~rrf_retriever.engine.HybridEngine` (sources
    ``"dense"`` and ``"keyword"``), whichever wrote it (the CLI or ``from_texts(path=)``).

    Its ``doc_count`` is refreshed from the stores on open.

    Args:
        path: The index directory (holding ``rrf-index.json``).
        url: For an index whose two legs share one Qdrant collection on a server: another URL than the one the
            manifest records (the server moved); None: the manifest's.
        index_keys: More metadata keys to index as documents are written (besides the manifest's ``index_keys``).
        **settings: Passed to the engine (``top_k``, ``rrf_k``, ``weights``, ...).

    Raises:
        IndexDirectoryError: missing directory, missing or corrupt manifest or store, an embedder this module
            cannot build (a custom embedding: open it from Python), or the index is open in another process.

    Example:
        >>> open_index("/nonexistent")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.IndexDirectoryError: no index at /nonexistent: the directory does not exist ...
    """
    root = Path(path)
    manifest = read_manifest(root)
    spec = manifest["embedder"]
    if spec is None:
        msg = (f"the index at {root} was built from Python with a custom embedding ({manifest.get('embedder_class')}"
               f", model {manifest.get('embedder_model')!r}, dimension {manifest.get('dimension')}); the CLI can "
               "only build 'minilm-int8', 'minilm' or 'hashing:<dim>'. Open it with "
               "EnsembleRRFRetriever.from_texts([], "
               f"<that embedding>, path={str(root)!r})")
        raise IndexDirectoryError(msg)
    for role, key in (("keyword", "keyword_store"), ("dense", "dense_store")):
        if is_external(str(manifest.get(key, ""))):
            msg = (f"the index at {root} uses an external {role} store ({manifest[key][len(EXTERNAL):]}); open it "
                   "from Python with that store")
            raise IndexDirectoryError(msg)
    try:
        stores = open_stores(root, make_embedding(spec), create=False, url=url, index_keys=index_keys)
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
