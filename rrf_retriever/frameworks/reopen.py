"""Index directories open in this process: reopening one (a notebook cell run twice) says what to do.

An index directory is held by one store set at a time (its lock files, :class:`~rrf_retriever.errors.StoreLockedError`
for a second opener). A retriever built on a directory is remembered here, weakly; when opening the directory again
fails on its lock:

* the first retriever is garbage that only the cycle collector would free: it is collected and the open retried;
* it is alive: the :class:`~rrf_retriever.errors.StoreLockedError` says the directory is open in this process and
  that ``retriever.close()`` (or ``with ...:``) releases it. It is never closed behind its holder's back.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import StoreLockedError
from rrf_retriever.index.manifest import read_manifest

__all__ = ["check_index_exists", "open_once", "remember_open"]

_T = TypeVar("_T")
_OPEN: weakref.WeakValueDictionary[Path, HybridEngine] = weakref.WeakValueDictionary()


def _key(path: str | Path) -> Path:
    return Path(path).expanduser().resolve()


def check_index_exists(path: str | Path) -> None:
    """Raise :class:`~rrf_retriever.errors.IndexDirectoryError` unless ``path`` holds an index (creates nothing)."""
    read_manifest(path)


def remember_open(path: str | Path, engine: HybridEngine) -> None:
    """Note that ``engine`` holds the index directory ``path``."""
    _OPEN[_key(path)] = engine


def _holder(key: Path) -> HybridEngine | None:
    engine = _OPEN.get(key)
    return None if engine is None or engine.closed else engine


def open_once(path: str | Path, opening: Callable[[], _T]) -> _T:
    """``opening()``, which opens the index directory ``path``; a lock held in this process is explained."""
    try:
        return opening()
    except StoreLockedError as exc:
        key = _key(path)
        if _holder(key) is None:
            raise  # held by another process, or by something this module never saw
        gc.collect()  # a holder that is garbage in a reference cycle releases its locks
        if _holder(key) is None:
            return opening()
        msg = (f"the index at {key} is already open in this process (a retriever built on it earlier, e.g. by a "
               "notebook cell run before, is still alive): call .close() on that retriever first (or build it in "
               "`with EnsembleRRFRetriever.open(...) as retriever:`), or keep using it")
        raise StoreLockedError(msg) from exc
