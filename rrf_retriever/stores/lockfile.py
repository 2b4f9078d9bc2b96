"""A directory lock held for a store's life: an ``fcntl.flock`` on a file in the store's directory.

One writer per directory: a second opener, in this process or another, gets
:class:`~rrf_retriever.errors.StoreLockedError` at once (no waiting). Closing the file releases the lock, so a
process that dies holds nothing.

Example:
    >>> import tempfile; from pathlib import Path; d = Path(tempfile.mkdtemp())
    >>> lock = lock_directory(d / ".lock", "the store at d")
    >>> lock_directory(d / ".lock", "the store at d")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rrf_retriever.errors.StoreLockedError: the store at d is open elsewhere ...
    >>> release(lock)
"""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import IO, Any

from rrf_retriever.errors import StoreError, StoreLockedError

__all__ = ["lock_directory", "release"]


def lock_directory(lock_file: Path, what: str) -> IO[Any]:
    """Create ``lock_file``'s directory if needed and take the lock; returns the open file that holds it.

    Raises:
        StoreLockedError: another holder has it.
        StoreError: the directory or the file cannot be created.
    """
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fh = open(lock_file, "a+")  # noqa: SIM115 - held open for the store's life
    except OSError as exc:
        msg = f"cannot open {what}: {exc}"
        raise StoreError(msg) from exc
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        fh.close()
        msg = f"{what} is open elsewhere (in this or another process); close it first"
        raise StoreLockedError(msg) from exc
    return fh


def release(fh: IO[Any] | None) -> None:
    """Release a lock taken by :func:`lock_directory` (None or already released: nothing to do)."""
    if fh is None or fh.closed:
        return
    with contextlib.suppress(OSError):
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        fh.close()
