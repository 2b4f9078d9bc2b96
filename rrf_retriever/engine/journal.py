"""A cross-store write-ahead journal: an interrupted write completes in every store on the next open.

The engine writes a batch to several stores (FTS5, Qdrant, ...) that share no transaction. A process killed
between two store writes would leave a document in one leg only. The journal closes that gap with the classic
intent log:

1. Before the first store write, the whole batch is recorded durably in a tiny SQLite file: the operation
   (``add`` or ``delete``), ids, texts, metadata and the vectors of every dense source (embedded once, so a
   redo never calls the embedding model and writes exactly the vectors the first attempt wrote).
2. The stores are written.
3. The entry is cleared.

On open, :meth:`HybridEngine.recover <rrf_retriever.engine.HybridEngine.recover>` REDOES every pending
entry in every store, in order. Store writes are idempotent (upsert by id, delete by id), so replaying a batch
that had partly or fully reached the stores is harmless, and afterwards every store holds the same documents.

The journal is one SQLite file in WAL mode with ``synchronous=FULL``: a recorded entry survives a killed
process and a power cut; an entry half-written when the process died is rolled back by SQLite, and then no
store had been written either (the record comes first).

It stays small: an entry's vectors are float32 bytes (base64 in the entry's JSON, format 2: 5.3 characters a
value, where format 1 wrote ~20 as a JSON number; the stores keep float32 too, so a redo writes the same vectors),
the file is created with ``auto_vacuum = FULL`` and checkpointed once a large entry is cleared, so it shrinks back
after each batch (an older file, without auto-vacuum, is vacuumed once when an entry leaves it mostly free space).
Entries of format 1 (JSON float lists, written by earlier versions) are still read and redone.

Example:
    >>> journal = Journal(":memory:")
    >>> entry = journal.begin("add", ["a"], ["hello"], [{"n": 1}], {"dense": [[0.1, 0.2]]})
    >>> [e.ids for e in journal.pending()]
    [['a']]
    >>> journal.clear(entry)
    >>> journal.pending()
    []
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import sqlite3
import sys
import threading
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rrf_retriever.errors import (
    DimensionMismatchError,
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
    StoreLockedError,
)
from rrf_retriever.vectors import float_array

__all__ = ["Journal", "JournalEntry", "open_journal"]

JournalOp = Literal["add", "delete"]
#: The format new entries are written in (2: vectors as float32 bytes); 1 (vectors as JSON float lists) is read.
_FORMAT = 2
_FORMATS_READ = (1, 2)
#: Cleared entries larger than this are checkpointed out of the WAL at once (the file shrinks now, not later).
_LARGE_ENTRY = 1 << 20
#: A file without auto-vacuum (written by an earlier version) holding this many free pages is vacuumed.
_VACUUM_FREE_PAGES = 256


@dataclass(frozen=True)
class JournalEntry:
    """One pending batch.

    Attributes:
        seq: The entry's sequence number (replay order).
        op: ``"add"`` (upsert) or ``"delete"``.
        ids: The document ids.
        texts: The texts (``add`` only).
        metadatas: The metadata mappings (``add`` only).
        vectors: ``{dense source name: one vector per id}`` (``add`` only).
    """

    seq: int
    op: JournalOp
    ids: list[str]
    texts: list[str] = field(default_factory=list)
    metadatas: list[dict[str, Any]] = field(default_factory=list)
    vectors: dict[str, list[list[float]]] = field(default_factory=dict)


class Journal:
    """A durable intent log of store writes, in one SQLite file.

    Args:
        path: The journal file (created if missing), or ``":memory:"`` (no durability: tests only).
        timeout: Seconds to wait for another writer of the same file before :class:`StoreLockedError`.

    Example:
        >>> with Journal(":memory:") as journal:
        ...     journal.clear(journal.begin("delete", ["a"]))
        ...     len(journal.pending())
        0
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 5.0) -> None:
        if not isinstance(path, (str, os.PathLike)):
            msg = f"journal path must be a str or a path, not {type(path).__name__}"
            raise InvalidTypeError(msg)
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._sizes: dict[int, int] = {}  # the entries begun here and not cleared: their bodies' sizes
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            # Before the first table: a new file then gives the pages of a cleared entry back to the disk. On an
            # older file this takes effect at its next VACUUM (see clear).
            self._conn.execute("PRAGMA auto_vacuum = FULL")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute(f"PRAGMA journal_size_limit = {_LARGE_ENTRY}")  # the WAL shrinks back too
            # FULL: the record is on disk before any store is written (WAL + NORMAL could lose it on power loss).
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS rrf_journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                "format INTEGER NOT NULL, op TEXT NOT NULL, body TEXT NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise self._translate(exc, "open") from exc
        self._shrink(checkpoint=False)  # an older file holding a past batch's free pages gives them back now

    def _translate(self, exc: sqlite3.Error, action: str) -> StoreError:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            return StoreLockedError(f"the journal {self.path!r} is locked by another writer ({action}): {exc}")
        return StoreError(f"journal {self.path!r}: {action} failed: {type(exc).__name__}: {exc}")

    def begin(
        self,
        op: JournalOp,
        ids: Sequence[str],
        texts: Sequence[str] = (),
        metadatas: Sequence[Mapping[str, Any]] = (),
        vectors: Mapping[str, Any] | None = None,
    ) -> int:
        """Durably record a batch about to be written; returns its sequence number (pass it to :meth:`clear`).

        ``vectors``: ``{dense source name: one vector per id}``, lists of floats or a 2-D float array; recorded as
        float32.

        Raises:
            InvalidArgumentError: an unknown ``op``.
            DimensionMismatchError: vectors of mixed dimensions, or a value NaN, infinite or beyond float32's
                range (no store would take it, and a redo could never complete).
            InvalidTypeError: a vector holding something else than numbers.
            StoreError: the journal could not be written (then nothing must be written to the stores).
        """
        if op not in ("add", "delete"):
            msg = f"journal op must be 'add' or 'delete', got {op!r}"
            raise InvalidArgumentError(msg)
        body = {
            "ids": list(ids),
            "texts": list(texts),
            "metadatas": [dict(m) for m in metadatas],
            "vectors": {name: _pack(name, vecs) for name, vecs in (vectors or {}).items()},
        }
        payload = json.dumps(body, ensure_ascii=False, allow_nan=False)
        with self._lock:
            try:
                cursor = self._conn.execute(
                    "INSERT INTO rrf_journal (format, op, body) VALUES (?, ?, ?)", (_FORMAT, op, payload)
                )
            except sqlite3.Error as exc:
                raise self._translate(exc, "record a batch") from exc
            seq = int(cursor.lastrowid or 0)
            self._sizes[seq] = len(payload)
        return seq

    def clear(self, seq: int) -> None:
        """Forget an entry whose batch reached every store (or was rolled back everywhere); the file gives a
        large entry's space back at once."""
        with self._lock:
            try:
                self._conn.execute("DELETE FROM rrf_journal WHERE seq = ?", (seq,))
            except sqlite3.Error as exc:
                raise self._translate(exc, "clear an entry") from exc
            if self._sizes.pop(seq, 0) >= _LARGE_ENTRY:
                self._shrink(checkpoint=True)

    def _shrink(self, *, checkpoint: bool) -> None:
        """Give free pages back: VACUUM a file without auto-vacuum that holds many (it then has auto-vacuum: once),
        and with ``checkpoint`` checkpoint the WAL (a WAL database file is truncated by its checkpoint)."""
        try:
            (free,) = self._conn.execute("PRAGMA freelist_count").fetchone()
            if free >= _VACUUM_FREE_PAGES:
                self._conn.execute("VACUUM")
            if checkpoint and self.path != ":memory:":
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            # Space only (another connection reading, a full disk): the entry is cleared, the next clear retries.
            pass

    def pending(self) -> list[JournalEntry]:
        """Entries not cleared yet, oldest first."""
        with self._lock:
            try:
                rows = self._conn.execute("SELECT seq, format, op, body FROM rrf_journal ORDER BY seq").fetchall()
            except sqlite3.Error as exc:
                raise self._translate(exc, "read") from exc
        entries = []
        for seq, fmt, op, body in rows:
            if fmt not in _FORMATS_READ or op not in ("add", "delete"):
                msg = f"journal {self.path!r} entry {seq} has an unknown format ({fmt}, {op!r}); upgrade rrf-retriever"
                raise StoreError(msg)
            entries.append(self._entry(seq, fmt, op, body))
        return entries

    def _entry(self, seq: int, fmt: int, op: JournalOp, body: str) -> JournalEntry:
        """Parse one row; a row that is not what :meth:`begin` writes is reported, never half-replayed."""
        problem = None
        try:
            data = json.loads(body)
        except (TypeError, ValueError) as exc:
            data, problem = None, f"not JSON ({exc})"
        if problem is None:
            problem = _body_problem(data, op)
        if problem is None and fmt == _FORMAT:
            data["vectors"], problem = _unpack_all(data["vectors"], len(data["ids"]))
        elif problem is None:
            problem = _float_lists_problem(data["vectors"], len(data["ids"]))
        if problem is not None:
            msg = (
                f"journal {self.path!r} entry {seq} ({op}) is corrupt: {problem}. It is left in place; the stores "
                "may differ for its ids: check them, then delete the entry (DELETE FROM rrf_journal WHERE seq = "
                f"{seq}) and reopen"
            )
            raise StoreError(msg)
        return JournalEntry(seq, op, data["ids"], data["texts"], data["metadatas"], data["vectors"])

    def close(self) -> None:
        """Close the file (pending entries stay for the next open)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Journal({self.path!r})"


def open_journal(journal: str | os.PathLike[str] | Journal | None) -> Journal | None:
    """A :class:`Journal` from a path, an existing journal, or None (no journal).

    Example:
        >>> open_journal(None) is None
        True
    """
    if journal is None or isinstance(journal, Journal):
        return journal
    if isinstance(journal, (str, os.PathLike)):
        return Journal(journal)
    msg = f"journal must be a path, a Journal or None, not {type(journal).__name__}"
    raise InvalidTypeError(msg)


def _pack(name: str, vectors: Any) -> dict[str, Any]:
    """One source's vectors as format 2 records them: ``{"dim": d, "float32": base64 of the little-endian rows}``.

    Raises:
        DimensionMismatchError: mixed dimensions, or a value NaN, infinite or beyond float32's range.
        InvalidTypeError: a vector holding something else than numbers.
    """
    rows = float_array(vectors)
    if rows is not None:
        import numpy as np  # an array was given: numpy is loaded

        dim = int(rows.shape[1]) if len(rows) else 0
        data = np.ascontiguousarray(rows, dtype="<f4").tobytes()
        finite = bool(np.isfinite(np.frombuffer(data, dtype="<f4")).all())
    else:
        dim, values = 0, array("f")
        try:
            for i, vec in enumerate(vectors):
                values.extend(vec)
                if i == 0:
                    dim = len(values)
                elif len(values) != dim * (i + 1):
                    msg = f"vectors of source {name!r}: vectors[{i}] has another dimension than vectors[0] ({dim})"
                    raise DimensionMismatchError(msg)
        except TypeError as exc:
            msg = f"vectors of source {name!r} must be sequences of numbers ({exc})"
            raise InvalidTypeError(msg) from exc
        # Finite float32 values sum to a finite float64 (no overflow): a NaN or infinity anywhere shows.
        finite = math.isfinite(sum(values))
        if sys.byteorder == "big":
            values.byteswap()
        data = values.tobytes()
    if not finite:
        msg = f"vectors of source {name!r} hold NaN, infinity or a value beyond float32's range"
        raise DimensionMismatchError(msg)
    return {"dim": dim, "float32": base64.b64encode(data).decode("ascii")}


def _unpack(packed: Any, count: int) -> list[list[float]] | str:
    """One source's vectors from :func:`_pack`'s record, or what is wrong with it."""
    if not isinstance(packed, dict) or not isinstance(packed.get("dim"), int) or not isinstance(
            packed.get("float32"), str):
        return "a source's vectors lack dim or float32"
    dim = packed["dim"]
    try:
        data = base64.b64decode(packed["float32"], validate=True)
    except (binascii.Error, ValueError) as exc:
        return f"a source's vectors are not base64 ({exc})"
    if dim < 0 or (count > 0 and dim == 0) or len(data) != 4 * dim * count:
        return f"a source's vectors hold {len(data)} bytes, not {count} vectors of dimension {dim} in float32"
    values = array("f")
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    flat = values.tolist()
    return [flat[i : i + dim] for i in range(0, len(flat), dim)]


def _unpack_all(vectors: dict[str, Any], count: int) -> tuple[dict[str, list[list[float]]], str | None]:
    """Every source's vectors of a format-2 body, or what is wrong with one."""
    out: dict[str, list[list[float]]] = {}
    for name, packed in vectors.items():
        rows = _unpack(packed, count)
        if isinstance(rows, str):
            return {}, rows
        out[name] = rows
    return out, None


def _float_lists_problem(vectors: dict[str, Any], count: int) -> str | None:
    """What is wrong with a format-1 body's vectors (JSON float lists), or None."""
    if not all(isinstance(v, list) and len(v) == count and all(isinstance(vec, list) for vec in v)
               for v in vectors.values()):
        return "vectors is not one list of vectors per dense store"
    return None


def _body_problem(data: Any, op: str) -> str | None:
    """What is wrong with a parsed journal body (but its vectors: see the format's own check), or None."""
    if not isinstance(data, dict) or any(k not in data for k in ("ids", "texts", "metadatas", "vectors")):
        return "it lacks ids, texts, metadatas or vectors"
    ids, texts, metadatas, vectors = data["ids"], data["texts"], data["metadatas"], data["vectors"]
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return "ids is not a list of strings"
    if op == "add" and (not isinstance(texts, list) or len(texts) != len(ids)
                        or not all(isinstance(t, str) for t in texts)):
        return "texts is not one string per id"
    if op == "add" and (not isinstance(metadatas, list) or len(metadatas) != len(ids)
                        or not all(isinstance(m, dict) for m in metadatas)):
        return "metadatas is not one mapping per id"
    if not isinstance(vectors, dict):
        return "vectors is not a mapping of the dense stores' vectors"
    return None
