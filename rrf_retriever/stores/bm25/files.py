"""The on-disk format of :class:`~rrf_retriever.stores.bm25.store.BM25KeywordStore`: JSON and ``.npy`` files (never
pickle), and the snapshot switch that makes a persistent store's saves atomic.

A folder holds ``store.json`` (format, settings, vocabulary), ``documents.jsonl`` (id, text, metadata per line),
``tokens.npy`` and ``offsets.npy`` (each document's analyzed terms as vocabulary indexes). A persistent store
(``BM25KeywordStore(path=dir)``) writes each save to a new ``snapshot-<uuid>/`` folder, fsyncs it, then replaces
``CURRENT`` (which names the live snapshot) atomically: a crash leaves the old store or the new one, never half.

Example:
    >>> import tempfile; from pathlib import Path; root = Path(tempfile.mkdtemp())
    >>> settings = {"engine": "bm25s", "k1": 1.2, "b": 0.75, "analyzer": {}}
    >>> write_folder(root, ["a"], [Doc("x y", {}, ("x",))], settings, durable=False)
    >>> read_folder(root)[1]["a"].tokens
    ('x',)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer, saved_config
from rrf_retriever.errors import InvalidArgumentError, StoreError

__all__ = [
    "CURRENT",
    "LOCK_FILE",
    "SAVED_FILES",
    "Doc",
    "fsync_dir",
    "live_folder",
    "read_folder",
    "save_snapshot",
    "saved_settings",
    "write_folder",
]

FORMAT = "rrf-retriever/bm25-store"
FORMAT_VERSION = 1
CURRENT = "CURRENT"  # names the live snapshot folder of a persistent store
SNAPSHOT_PREFIX = "snapshot-"
LOCK_FILE = ".lock"
SAVED_FILES = ("store.json", "documents.jsonl", "tokens.npy", "offsets.npy")


@dataclass(frozen=True)
class Doc:
    """One stored document: its text, metadata and analyzed terms."""

    text: str
    metadata: dict[str, Any]
    tokens: tuple[str, ...]


def write_folder(root: Path, ids: list[str], docs: list[Doc], settings: dict[str, Any], *, durable: bool) -> None:
    """Write ``docs`` to ``root`` (``settings``: engine, k1, b, analyzer config); ``durable`` fsyncs every file."""
    import numpy as np

    vocab: dict[str, int] = {}
    flat = [vocab.setdefault(t, len(vocab)) for d in docs for t in d.tokens]
    offsets = np.cumsum([0, *(len(d.tokens) for d in docs)], dtype=np.int64)
    meta = {"format": FORMAT, "version": FORMAT_VERSION, **settings, "vocab": list(vocab)}
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / "store.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        with (root / "documents.jsonl").open("w", encoding="utf-8") as fh:
            for doc_id, d in zip(ids, docs):
                fh.write(json.dumps({"id": doc_id, "text": d.text, "metadata": d.metadata}, ensure_ascii=False))
                fh.write("\n")
        np.save(root / "tokens.npy", np.asarray(flat, dtype=np.int32), allow_pickle=False)
        np.save(root / "offsets.npy", offsets, allow_pickle=False)
        if durable:
            for name in SAVED_FILES:
                with (root / name).open("rb+") as fh:
                    os.fsync(fh.fileno())
            fsync_dir(root)
    except OSError as exc:
        msg = f"cannot save the BM25 store to {root}: {exc}"
        raise StoreError(msg) from exc


def save_snapshot(root: Path, write: Callable[[Path], None]) -> None:
    """``write`` a new snapshot folder under ``root``, then switch ``CURRENT`` to it atomically; drop the old ones."""
    target = root / f"{SNAPSHOT_PREFIX}{uuid.uuid4().hex}"
    try:
        write(target)
        pointer = root / f".{CURRENT}.{os.getpid()}.tmp"
        with pointer.open("w", encoding="utf-8") as fh:
            fh.write(target.name + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(pointer, root / CURRENT)
        fsync_dir(root)
    except BaseException as exc:
        shutil.rmtree(target, ignore_errors=True)
        if isinstance(exc, OSError):
            msg = f"cannot save the BM25 store to {root}: {exc}"
            raise StoreError(msg) from exc
        raise
    for old in root.iterdir():  # best effort: an old snapshot left by a crash is removed by the next save
        if old.name.startswith(SNAPSHOT_PREFIX) and old.name != target.name:
            shutil.rmtree(old, ignore_errors=True)
        elif old.name in SAVED_FILES:  # a plain save() the store was opened from
            with contextlib.suppress(OSError):
                old.unlink()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def live_folder(root: Path) -> Path | None:
    """The folder holding a store's files: the snapshot ``CURRENT`` names, ``root`` itself for a plain
    :meth:`~rrf_retriever.stores.bm25.store.BM25KeywordStore.save`, or None if ``root`` holds no store."""
    pointer = root / CURRENT
    if pointer.is_file():
        name = pointer.read_text(encoding="utf-8").strip()
        if not name.startswith(SNAPSHOT_PREFIX) or "/" in name or "\\" in name:
            msg = f"{pointer} is corrupt (it names {name!r})"
            raise StoreError(msg)
        return root / name
    return root if (root / "store.json").is_file() else None


def read_folder(root: Path) -> tuple[dict[str, Any], dict[str, Doc]]:
    """The settings and documents saved in ``root`` (no pickle)."""
    import numpy as np

    try:
        meta = json.loads((root / "store.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
            msg = f"{root} does not hold a BM25KeywordStore (format {meta.get('format')!r})"
            raise StoreError(msg)
        rows = [json.loads(line) for line in (root / "documents.jsonl").read_text(encoding="utf-8").splitlines()]
        flat = np.load(root / "tokens.npy", allow_pickle=False)
        offsets = np.load(root / "offsets.npy", allow_pickle=False)
        if len(offsets) != len(rows) + 1:
            msg = f"{root}: {len(rows)} documents but {len(offsets) - 1} token lists"
            raise StoreError(msg)
        vocab = meta["vocab"]
        docs = {}
        for i, row in enumerate(rows):
            tokens = tuple(vocab[t] for t in flat[offsets[i] : offsets[i + 1]].tolist())
            docs[row["id"]] = Doc(row["text"], row["metadata"], tokens)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        msg = f"cannot load a BM25 store from {root}: {exc}"
        raise StoreError(msg) from exc
    return meta, docs


def saved_settings(
    root: Path, meta: dict[str, Any], engine: str | None, analyzer: Analyzer | None, k1: float | None,
    b: float | None,
) -> tuple[Any, Analyzer, float, float]:
    """The saved engine, analyzer, k1 and b; a setting asked for that differs from the saved one is an error."""
    for name, given in (("engine", engine), ("k1", k1), ("b", b)):
        if given is not None and given != meta[name]:
            msg = f"{root} holds a BM25 store with {name}={meta[name]!r}, not {given!r}"
            raise InvalidArgumentError(msg)
    if analyzer is None:
        analyzer = Analyzer.from_config(meta["analyzer"])
    elif analyzer.config() != saved_config(meta["analyzer"]):
        msg = f"{root} was indexed with another analyzer ({meta['analyzer']})"
        raise InvalidArgumentError(msg)
    return meta["engine"], analyzer, meta["k1"], meta["b"]
