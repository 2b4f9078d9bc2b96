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

import json
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError, StoreLockedError

__all__ = ["Journal", "JournalEntry", "open_journal"]

JournalOp = Literal["add", "delete"]
_FORMAT = 1


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
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            # FULL: the record is on disk before any store is written (WAL + NORMAL could lose it on power loss).
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS rrf_journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                "format INTEGER NOT NULL, op TEXT NOT NULL, body TEXT NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise self._translate(exc, "open") from exc

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
        vectors: Mapping[str, Sequence[Sequence[float]]] | None = None,
    ) -> int:
        """Durably record a batch about to be written; returns its sequence number (pass it to :meth:`clear`).

        Raises:
            InvalidArgumentError: an unknown ``op``.
            StoreError: the journal could not be written (then nothing must be written to the stores).
        """
        if op not in ("add", "delete"):
            msg = f"journal op must be 'add' or 'delete', got {op!r}"
            raise InvalidArgumentError(msg)
        body = {
            "ids": list(ids),
            "texts": list(texts),
            "metadatas": [dict(m) for m in metadatas],
            "vectors": {name: [[float(x) for x in vec] for vec in vecs] for name, vecs in (vectors or {}).items()},
        }
        payload = json.dumps(body, ensure_ascii=False, allow_nan=False)
        with self._lock:
            try:
                cursor = self._conn.execute(
                    "INSERT INTO rrf_journal (format, op, body) VALUES (?, ?, ?)", (_FORMAT, op, payload)
                )
            except sqlite3.Error as exc:
                raise self._translate(exc, "record a batch") from exc
        return int(cursor.lastrowid or 0)

    def clear(self, seq: int) -> None:
        """Forget an entry whose batch reached every store (or was rolled back everywhere)."""
        with self._lock:
            try:
                self._conn.execute("DELETE FROM rrf_journal WHERE seq = ?", (seq,))
            except sqlite3.Error as exc:
                raise self._translate(exc, "clear an entry") from exc

    def pending(self) -> list[JournalEntry]:
        """Entries not cleared yet, oldest first."""
        with self._lock:
            try:
                rows = self._conn.execute("SELECT seq, format, op, body FROM rrf_journal ORDER BY seq").fetchall()
            except sqlite3.Error as exc:
                raise self._translate(exc, "read") from exc
        entries = []
        for seq, fmt, op, body in rows:
            if fmt != _FORMAT or op not in ("add", "delete"):
                msg = f"journal {self.path!r} entry {seq} has an unknown format ({fmt}, {op!r}); upgrade rrf-retriever"
                raise StoreError(msg)
            entries.append(self._entry(seq, op, body))
        return entries

    def _entry(self, seq: int, op: JournalOp, body: str) -> JournalEntry:
        """Parse one row; a row that is not what :meth:`begin` writes is reported, never half-replayed."""
        problem = None
        try:
            data = json.loads(body)
        except (TypeError, ValueError) as exc:
            data, problem = None, f"not JSON ({exc})"
        if problem is None:
            problem = _body_problem(data, op)
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


def _body_problem(data: Any, op: str) -> str | None:
    """What is wrong with a parsed journal body, or None."""
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
    if not isinstance(vectors, dict) or not all(
        isinstance(v, list) and len(v) == len(ids) and all(isinstance(vec, list) for vec in v) for v in vectors.values()
    ):
        return "vectors is not one list of vectors per dense store"
    return None
