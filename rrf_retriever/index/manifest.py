"""The manifest of an index directory (``rrf-index.json``): reading and checking it, writing a new one
(exclusively), adopting a manifest-less folder of layout entries, refreshing it from the stores, and the settings it
saves for the next open.

The manifest's keys and the directory layout are described in :mod:`rrf_retriever.index.directory`, which opens
the stores the manifest names.

Example:
    >>> saved_settings({"settings": {"rrf_k": 20.0}})
    {'rrf_k': 20.0}
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
import warnings
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rrf_retriever import strict_json
from rrf_retriever.analysis.analyzer import Analyzer, saved_config
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import IndexDirectoryError, InvalidArgumentError, RRFRetrieverError
from rrf_retriever.index.manifest_fields import check_fields
from rrf_retriever.index.registry import (
    BM25_DIR,
    DEFAULT_COLLECTION,
    DEFAULT_DENSE_STORE,
    DEFAULT_KEYWORD_STORE,
    DENSE_DIRS,
    JOINT_QDRANT,
    KEYWORD_FILE,
    KEYWORD_PLACES,
    MINILM_PYTHON,
    QDRANT_DIR,
    QDRANT_EDGE_DIR,
    describe_embedding,
    embedder_spec,
)

__all__ = [
    "EXTERNAL",
    "FORMAT_VERSION",
    "JOURNAL_FILE",
    "MANIFEST_FILE",
    "MANIFEST_SETTINGS_KEY",
    "SAVED_FIELDS",
    "check_analyzer",
    "check_manifest",
    "claim_manifest",
    "is_external",
    "new_manifest",
    "persist_settings",
    "read_manifest",
    "refresh_manifest",
    "save_manifest",
    "saved_settings",
    "with_saved_settings",
]

# The logger these functions always used (they lived in rrf_retriever.index.directory): logging filters keep working.
logger = logging.getLogger("rrf_retriever.index.directory")

MANIFEST_FILE = "rrf-index.json"
#: The engine's write-ahead journal: a batch interrupted by a crash is redone in both stores on the next open.
JOURNAL_FILE = "journal.sqlite3"
FORMAT_VERSION = 1
#: The prefix of a store kind that is an object passed in (``"external:<Class>"``), not one the layout builds.
EXTERNAL = "external:"
#: What an index directory may hold (hidden files, e.g. temporary ones, are ignored).
_LAYOUT_ENTRIES = frozenset(
    {MANIFEST_FILE, BM25_DIR, QDRANT_DIR, QDRANT_EDGE_DIR}
    | {f"{name}{suffix}" for name in (KEYWORD_FILE, JOURNAL_FILE) for suffix in ("", "-wal", "-shm", "-journal")}
)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check ``rrf-index.json`` of an index directory.

    Raises:
        IndexDirectoryError: the directory or its manifest is missing or unreadable, or a field of the manifest
            holds something of the wrong type (:func:`~rrf_retriever.index.manifest_fields.check_fields`).
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
        manifest = strict_json.loads(manifest_file.read_text(encoding="utf-8"), what=MANIFEST_FILE)
    except strict_json.DuplicateKeyError as exc:  # which of the two values is the index's? neither is guessed
        msg = f"corrupt index at {root}: {exc}"
        raise IndexDirectoryError(msg) from exc
    except (OSError, ValueError) as exc:  # UnicodeDecodeError, JSONDecodeError, a number past 4,300 digits
        msg = f"corrupt index at {root}: {MANIFEST_FILE} is not valid JSON ({exc})"
        raise IndexDirectoryError(msg) from exc
    check_fields(manifest, f"corrupt index at {root}: {MANIFEST_FILE}")
    if manifest["format"] != FORMAT_VERSION:
        msg = f"index at {root} has format {manifest['format']!r}; this version reads format {FORMAT_VERSION}"
        raise IndexDirectoryError(msg)
    return manifest


def is_external(kind: str) -> bool:
    """Whether a manifest's store kind names a store object passed in rather than one the layout builds.

    Example:
        >>> is_external("external:MyStore"), is_external("fts5")
        (True, False)
    """
    return kind.startswith(EXTERNAL)


def check_analyzer(root: Path, manifest: dict[str, Any], analyzer: Analyzer | None) -> None:
    """Refuse an analyzer other than the one the index was built with (its terms would not match the queries')."""
    saved = manifest.get("analyzer")
    if analyzer is not None and isinstance(saved, dict) and analyzer.config() != saved_config(saved):
        msg = (f"the index at {root} was indexed with another analyzer (language {saved.get('language') or 'english'}"
               f", stem {saved.get('stem')!r}); pass analyzer=None to use its own, or use another directory")
        raise IndexDirectoryError(msg)


def new_manifest(root: Path, adapter: Any, keyword_kind: str | None, dense_kind: str | None,
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
    if not is_external(keyword_kind):
        from rrf_retriever.analysis.analyzer import default_analyzer

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


def claim_manifest(root: Path, manifest: dict[str, Any]) -> bool:
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


def check_manifest(root: Path, manifest: dict[str, Any], keyword_kind: str | None, dense_kind: str | None,
                   collection: str | None, adapter: Any) -> None:
    """Refuse what would not match the index: another store kind, collection, embedder or dimension."""
    for role, asked, key, default in (("keyword", keyword_kind, "keyword_store", "fts5"),
                                      ("dense", dense_kind, "dense_store", "qdrant")):
        kind = manifest.get(key, default)
        if asked is not None and asked != kind:
            hint = (f"pass {role}={kind!r} or nothing" if not is_external(kind)
                    else f"pass the same kind of {role} store object ({kind[len(EXTERNAL):]})")
            msg = (f"the index at {root} keeps its {role} store as {kind!r}, not {asked!r}: {hint} "
                   "(or use another directory)")
            raise IndexDirectoryError(msg)
        if asked is None and is_external(kind):
            msg = (f"the index at {root} was built with an external {role} store ({kind[len(EXTERNAL):]}); "
                   f"pass that store again as {role}=")
            raise IndexDirectoryError(msg)
        place = KEYWORD_PLACES.get(kind) if role == "keyword" else DENSE_DIRS.get(kind)
        if place is None and not is_external(kind):
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
        hint = f" ({MINILM_PYTHON[then]})" if then in MINILM_PYTHON else ""
        msg = f"the index at {root} was built with embedder {then!r}, not {now!r}; use the same one{hint} or " \
              "another directory"
        raise IndexDirectoryError(msg)
    model = manifest.get("embedder_model")
    if then is None and model is not None and model != getattr(adapter, "model_id", model):
        warnings.warn(f"the index at {root} was built with the embedding model {model!r}, this one is "
                      f"{adapter.model_id!r} (same dimension): check it is the same model", stacklevel=4)


#: The manifest key holding settings chosen for this index (``tune``): the next open uses them.
MANIFEST_SETTINGS_KEY = "settings"
#: The engine settings a manifest may hold: ``tune`` writes the first four, the service's ``PATCH /settings`` the
#: ones it can change (reranker, timeouts and dense paths are code or per-process choices, never saved).
SAVED_FIELDS = ("fusion", "rrf_k", "weights", "fetch_k", "top_k", "diversity", "rerank_k", "expand_limit")


def saved_settings(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The engine keywords a manifest's saved ``settings`` hold (for ``open_index``; unknown keys dropped).

    Example:
        >>> saved_settings({"settings": {"rrf_k": 20.0, "fetch_k": None, "other": 1}})
        {'rrf_k': 20.0, 'fetch_k': None}
    """
    saved = manifest.get(MANIFEST_SETTINGS_KEY) or {}
    return {k: saved[k] for k in SAVED_FIELDS if k in saved} if isinstance(saved, Mapping) else {}


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


def persist_settings(path: str | os.PathLike[str], settings: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``settings`` (engine keywords of :data:`SAVED_FIELDS`) over the manifest's saved ones, atomically;
    the next ``open_index`` applies them. Other keys of the manifest are kept.

    Raises:
        InvalidArgumentError: a key outside :data:`SAVED_FIELDS`.
        IndexDirectoryError / OSError: no readable manifest, or it cannot be written.

    Example:
        >>> persist_settings("/nonexistent", {"top_k": 3})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.IndexDirectoryError: no index at /nonexistent: ...
    """
    unknown = sorted(set(settings) - set(SAVED_FIELDS))
    if unknown:
        msg = f"settings {unknown} are not saved in a manifest; saved: {list(SAVED_FIELDS)}"
        raise InvalidArgumentError(msg)
    root = Path(path)
    manifest = read_manifest(root)
    saved = manifest.get(MANIFEST_SETTINGS_KEY)
    manifest[MANIFEST_SETTINGS_KEY] = {**(saved if isinstance(saved, Mapping) else {}), **settings}
    manifest["updated"] = _now()
    _write_manifest(root, manifest)
    return manifest


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
    dense: Any = getattr(engine.legs.get("dense"), "store", None)
    if new.get("dimension") is None and getattr(dense, "dimension", None) is not None:
        new["dimension"] = dense.dimension
    keyword: Any = getattr(engine.legs.get("keyword"), "store", None)
    # The metadata keys the Qdrant stores index as documents are written: declared again on every open.
    keys = set(new.get("index_keys") or ())
    for store in (dense, keyword):
        declared = getattr(store, "index_keys", None)
        if isinstance(declared, (frozenset, set)):
            keys.update(k for k in declared if isinstance(k, str))
    if keys:
        new["index_keys"] = sorted(keys)
    measured = engine.leg_probe.measured  # the legs measured on the corpus: kept, so a reopen measures no more
    if measured is not None:
        new["leg_strength"] = measured.as_dict()
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
