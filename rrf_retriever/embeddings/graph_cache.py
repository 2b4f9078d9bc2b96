"""Where MiniLM's built ONNX graphs are cached: the directory checked before a build, a file published atomically
and durably, and an unusable cache turned into an :class:`~rrf_retriever.errors.EmbeddingError` naming the path and
the fix (``cache_dir=`` or ``$RRF_RETRIEVER_CACHE_DIR``).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "g.onnx.tmp").write_bytes(b"graph")
    5
    >>> publish(root / "g.onnx.tmp", root / "g.onnx"); (root / "g.onnx").read_bytes()
    b'graph'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from rrf_retriever.errors import EmbeddingError

__all__ = ["cache_error", "new_temp_file", "publish", "remembered_hash"]

#: What a remembered hash may be (lowercase hex, as the weights' hash is written): anything else is computed again.
_HASH = re.compile(r"[0-9a-f]{8,64}")
_FIX = "pass cache_dir= a writable directory, or set RRF_RETRIEVER_CACHE_DIR to one"


def cache_error(cache_dir: Path, exc: OSError) -> EmbeddingError:
    """The error for a cache directory the graph cannot be written to (``exc`` is what the filesystem said)."""
    if cache_dir.exists() and not cache_dir.is_dir():
        why = "it is a file, not a directory"
    elif isinstance(exc, NotADirectoryError):
        why = "a part of the path is a file, not a directory"
    elif isinstance(exc, PermissionError):
        why = "it is not writable"
    else:
        why = exc.strerror or type(exc).__name__
    msg = f"cannot cache the MiniLM graph in {cache_dir}: {why}; {_FIX}"
    return EmbeddingError(msg)


def new_temp_file(target: Path) -> Path:
    """A new empty temporary file beside ``target`` (same directory, so :func:`publish` is a rename), creating the
    directory if needed.

    Raises:
        EmbeddingError: the directory cannot be created or written (:func:`cache_error`).
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise cache_error(target.parent, exc) from exc
    os.close(fd)
    return Path(name)


def publish(tmp: Path, target: Path) -> None:
    """Move the written ``tmp`` to ``target`` atomically and durably: the file is fsynced before the rename (so the
    name never points at unwritten blocks after a crash) and the directory after it (so the rename itself lasts).

    Raises:
        OSError: the filesystem failed (``tmp`` is left for the caller to remove).
    """
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    try:
        dir_fd = os.open(target.parent, os.O_RDONLY)
    except OSError:  # a platform that cannot open a directory (Windows): the rename is all there is
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remembered_hash(source: Path, cache_dir: Path, compute: Callable[[Path], str]) -> str:
    """``compute(source)``, remembered in ``cache_dir`` against the file's identity (device, inode, size, and
    modification and change times in nanoseconds): a process that opens an index does not read the 87 MB of weights
    again to find its cached graph. Any change to the file (rewritten, replaced, touched) computes it again; a
    memo that cannot be read or written is ignored (the value is computed; an unusable ``cache_dir`` is reported
    by the build, not here).
    """
    try:
        st = source.stat()
    except OSError:
        return compute(source)
    stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    memo = cache_dir / f"hash-{hashlib.sha256(os.fsencode(source.resolve())).hexdigest()[:16]}.json"
    try:
        kept = json.loads(memo.read_text(encoding="utf-8"))
        # only what compute() writes is taken back: the value names the graph file, so "../x" must never pass
        if isinstance(kept, dict) and kept.get("stamp") == stamp and isinstance(kept.get("hash"), str) \
                and _HASH.fullmatch(kept["hash"]):
            return str(kept["hash"])
    except (OSError, ValueError, RecursionError):  # RecursionError: a memo nested too deep for the parser
        pass
    value = compute(source)
    if cache_dir.is_dir():
        try:
            tmp = new_temp_file(memo)
        except EmbeddingError:
            return value
        try:
            tmp.write_text(json.dumps({"source": str(source), "stamp": stamp, "hash": value}), encoding="utf-8")
            publish(tmp, memo)  # durable and atomic, as the graphs: a crash leaves the old memo or the new one
        except OSError:
            tmp.unlink(missing_ok=True)
    return value
