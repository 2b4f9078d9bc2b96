"""The meta file of a qdrant-edge store's directory (``rrf_store.json``): what the shard beside it is, written
atomically, read back with our own error for a damaged file.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> where = Path(tempfile.mkdtemp())
    >>> (where / SHARD_DIR).mkdir()
    >>> write_meta(where, {"dimension": 8})
    >>> read_meta(where)
    {'format': 1, 'dimension': 8}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rrf_retriever.errors import StoreError

__all__ = ["META_FILE", "SHARD_DIR", "read_meta", "write_meta"]

#: The store's meta file in its directory.
META_FILE = "rrf_store.json"
#: The directory of Qdrant's segments and write-ahead log.
SHARD_DIR = "shard"
_META_FORMAT = 1


def read_meta(path: Path) -> dict[str, Any] | None:
    """The meta file in ``path`` as a dict, or None when no shard was created there yet.

    Raises:
        StoreError: the file is unreadable or not a JSON object (never a raw OSError / ValueError).
    """
    meta_file = path / META_FILE
    if not meta_file.is_file() or not (path / SHARD_DIR).is_dir():
        return None
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        msg = f"{meta_file} is unreadable: {exc}"
        raise StoreError(msg) from exc
    if not isinstance(meta, dict):
        msg = f"{meta_file} is unreadable: not a JSON object"
        raise StoreError(msg)
    return meta


def write_meta(path: Path, meta: Mapping[str, Any]) -> None:
    """Write the meta file atomically (a temporary file, then ``os.replace``)."""
    meta_file = path / META_FILE
    tmp = meta_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"format": _META_FORMAT, **meta}), encoding="utf-8")
    os.replace(tmp, meta_file)
