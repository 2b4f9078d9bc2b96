"""The multi-store write unit: every writable leg gets the same ids, all or nothing.

One write (add or delete) is: validate the batch, embed the texts once per model BEFORE anything is written (a
failing embedding writes nothing), snapshot what the ids hold now, record the write in the journal, then write
leg by leg. If one leg fails, the legs already written (and whatever the failing one wrote of the batch) are
restored from the snapshot and the journal entry is cleared: no document is ever in one leg only. A crash
(the process killed mid-write) leaves the journal entry pending: :meth:`WriteUnit.recover` redoes it in every leg
on the next open (store writes are idempotent: upserts and deletes by id).

An add of more than :data:`ADD_CHUNK` documents is written as consecutive chunks of that many, each such a write
of its own (embedded, snapshotted, journaled, written to every leg, cleared), so a write holds one chunk's vectors,
snapshot and journal entry at a time, whatever the batch's size (a delete of more ids goes in such chunks too).
The whole batch is validated first; a chunk that fails is rolled back and the chunks before it stay written (the
error says how many documents that is). A model with ``embed_array``
(:class:`~rrf_retriever.embeddings.base.EmbedsArrays`) embeds into a float32 array, which goes to the stores and
the journal as it is (rows become lists one upsert request at a time).

Example:
    >>> from rrf_retriever.engine.legs import as_leg
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> unit = WriteUnit({"keyword": as_leg("keyword", FTS5KeywordStore())})
    >>> unit.add(["a"], ["hello"]), unit.count()
    (['a'], {'keyword': 1})
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any, NamedTuple

from rrf_retriever.embeddings.base import EmbedsArrays
from rrf_retriever.engine.journal import Journal
from rrf_retriever.engine.legs import Leg, StoreLeg, Vectors, writable_legs
from rrf_retriever.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidArgumentError,
    InvalidVectorError,
    RRFRetrieverError,
    StoreError,
)
from rrf_retriever.progress import progress_span
from rrf_retriever.stores.base import DefersMaintenance, IdsMatching, KnowsDimension, WritesThrough
from rrf_retriever.types import Record
from rrf_retriever.validate import CheckedList, check_ids, check_int, check_limit, check_links, validate_batch
from rrf_retriever.vectors import validate_vectors

__all__ = ["ADD_CHUNK", "WriteUnit", "embed_documents"]

logger = logging.getLogger("rrf_retriever")
Snapshot = dict[str, list[Record]]

#: Documents per all-or-nothing write of an add: a larger batch goes in consecutive chunks of this many. 10,000
#: MiniLM vectors are 15 MB as float32 (120 MB as Python floats, where a model has no ``embed_array``).
ADD_CHUNK = 10_000


def _embed(model: Any, texts: list[str]) -> Vectors:
    """One model's vectors of ``texts``: its float32 array where it has ``embed_array`` (checked here, before the
    journal records it: count, one dimension, finite), else ``embed_documents``'s lists."""
    if isinstance(model, EmbedsArrays):
        vectors, _ = validate_vectors(model.embed_array(texts), len(texts))
        return vectors
    return model.embed_documents(texts)


def embed_documents(legs: Sequence[tuple[str, Leg]], texts: list[str],
                    written: str = "nothing was written") -> dict[int, Vectors]:
    """The texts embedded once per distinct model of ``legs`` (``{id(model): vectors}``).

    Args:
        legs: The legs whose models embed the texts.
        texts: The texts.
        written: What the error message says was written (a later chunk of an add: the chunks before it).

    Raises:
        EmbeddingError: the model failed (the message says what was written: by default nothing).
    """
    vectors: dict[int, Vectors] = {}
    for _, leg in legs:
        model = leg.embedding
        if model is None or id(model) in vectors:
            continue
        try:
            vectors[id(model)] = _embed(model, texts)
        except RRFRetrieverError as exc:
            raise type(exc)(f"{exc}; {written}") from exc
        except Exception as exc:
            msg = f"embedding {len(texts)} document(s) failed: {type(exc).__name__}: {exc}; {written}"
            raise EmbeddingError(msg) from exc
    return vectors


class _Chunk(NamedTuple):
    """Where one chunk sits in its add: documents ``start`` to ``stop`` (excluded) of ``total``."""

    start: int
    stop: int
    total: int
    size: int

    def not_written(self) -> str:
        """What an embedding failure of this chunk leaves written."""
        if self.start == 0:
            return "nothing was written"
        return (f"documents {self.start} to {self.stop - 1} of the batch of {self.total} were not written; the "
                f"{self.start} document(s) of the chunks before them stay written in every store")

    def failure(self, doing: str = "adding", done: str = "written", undone: str = "rolled back") -> tuple[str, str]:
        """How a store failure of this chunk is told: what failed, and what was rolled back and what stays
        (``doing`` / ``done`` / ``undone``: ``"deleting"`` / ``"deleted"`` / ``"restored"`` for a delete's chunk)."""
        if self.total <= self.size:
            return f"{doing} {self.total} document(s) failed", "the other stores were rolled back"
        what = (f"{doing} documents {self.start} to {self.stop - 1} of a batch of {self.total} (in chunks of "
                f"{self.size}) failed")
        if self.start == 0:
            return what, f"the other stores were rolled back and nothing of the batch was {done}"
        return what, (f"this chunk was {undone} in every store; the {self.start} document(s) of the chunks "
                      f"before it stay {done}")

    def kept(self, done: str) -> str:
        """What a failure before any store was written leaves (``done``: ``"written"`` or ``"deleted"``)."""
        if self.start == 0:
            return f"nothing was {done}"
        return f"the {self.start} document(s) of the chunks before this one stay {done}"


def _vectors_for(leg: Leg, vectors: Mapping[int, Vectors]) -> Vectors | None:
    return None if leg.embedding is None else vectors[id(leg.embedding)]


def _store_error(exc: BaseException, text: str) -> StoreError:
    # Keep the store's own class (StoreLockedError: retry later), else the generic StoreError.
    return (type(exc) if isinstance(exc, StoreError) else StoreError)(text)


def _given_vectors(legs: Sequence[tuple[str, StoreLeg]], vectors: Vectors, count: int) -> Vectors:
    """The vectors given with a batch, checked whole at the door, before anything is written: finite, within
    float32's range, of one dimension, the dense stores' own (the first vector's for stores never written).

    Raises:
        InvalidVectorError: the first vector that fails, by its position (``vectors[10000] ...``).
    """
    dims = sorted({leg.store.dimension for _, leg in legs if leg.embedding is not None
                   and isinstance(leg.store, KnowsDimension) and leg.store.dimension is not None})
    try:
        checked, _ = validate_vectors(vectors, count, dims[0] if dims else None)
    except DimensionMismatchError as exc:
        msg = f"{exc}; nothing was written"
        raise InvalidVectorError(msg) from exc
    if len(dims) > 1:
        msg = f"the dense stores hold vectors of dimensions {dims}: one list of vectors cannot go to all of them"
        raise InvalidVectorError(msg)
    return checked


def _check_writes_through(legs: Sequence[tuple[str, StoreLeg]]) -> None:
    """A store whose writes are carried by another (``writes_through``, e.g. the keyword view of a joint Qdrant
    collection, written by its dense view) needs that other store among the legs: else its writes would go nowhere.

    Raises:
        InvalidArgumentError: the carrying store is not a source.
    """
    stores = {id(leg.store) for _, leg in legs}
    for name, leg in legs:
        carrier = leg.store.writes_through if isinstance(leg.store, WritesThrough) else None
        if carrier is not None and id(carrier) not in stores:
            msg = (f"source {name!r} is written through {carrier!r}, which is not a source: add it as a source too "
                   "(weight 0 if it should not rank), or nothing would be written to this one")
            raise InvalidArgumentError(msg)


class WriteUnit:
    """Writes to every writable leg of ``legs`` as one unit (see the module docstring).

    Args:
        legs: The engine's legs by source name (read-only legs are skipped).
        journal: An open write-ahead journal, or None.
        chunk_size: Documents per all-or-nothing write of an add (:data:`ADD_CHUNK`); a larger batch is written in
            chunks of this many.
        links_key: The metadata key of a document's neighbour ids: an add whose document lists more than
            :data:`~rrf_retriever.validate.MAX_LINKS` there is refused.

    Raises:
        InvalidArgumentError: ``chunk_size`` is not a positive integer, or a leg is written through a store
            that is not a leg.
    """

    def __init__(self, legs: Mapping[str, Leg], journal: Journal | None = None, *,
                 chunk_size: int = ADD_CHUNK, links_key: str = "links") -> None:
        self._legs = writable_legs(legs)
        self.links_key = links_key
        _check_writes_through(self._legs)
        self.journal = journal
        self.chunk_size = check_int(chunk_size, "chunk_size", 1)
        self.lock = threading.RLock()
        self.changes = 0  # documents written (added or deleted) so far: the cosine background's refresh reads it

    @property
    def legs(self) -> list[tuple[str, StoreLeg]]:
        """The writable legs, in source order."""
        return list(self._legs)

    def count(self) -> dict[str, int]:
        """Documents per writable leg, by source name."""
        return {name: leg.count() for name, leg in self._legs}

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        vectors: Vectors | None = None,
        chunk_size: int | None = None,
    ) -> list[str]:
        """Upsert documents into every writable leg, all or nothing per chunk of :attr:`chunk_size` (the whole
        batch when it is no larger; a call's ``chunk_size`` makes the chunks smaller, never larger). Returns the ids
        written.

        ``vectors`` (one per text, embedded by the caller: lists or a 2-D array) go to every dense leg instead of
        embedding the texts.

        Raises:
            InvalidArgumentError, InvalidTypeError: a bad batch (checked whole: nothing is written), given vectors
                included (:class:`~rrf_retriever.errors.InvalidVectorError`, naming the first bad one).
            EmbeddingError, StoreError: a chunk failed; it was rolled back everywhere, the chunks before it stay
                written (the message says how many documents).

        Example:
            >>> from rrf_retriever.engine.legs import as_leg
            >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
            >>> unit = WriteUnit({"keyword": as_leg("keyword", FTS5KeywordStore())}, chunk_size=2)
            >>> unit.add(["a", "b", "c"], ["one", "two", "three"]), unit.count()  # two writes: a, b then c
            (['a', 'b', 'c'], {'keyword': 3})
        """
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        if not id_list:
            return []
        if vectors is not None and len(vectors) != len(id_list):
            msg = f"vectors has {len(vectors)} entries for {len(id_list)} document(s); give one vector per text"
            raise InvalidArgumentError(msg)
        check_links(meta_list, self.links_key)
        if vectors is not None:
            vectors = _given_vectors(self._legs, vectors, len(id_list))
        total = len(id_list)
        size = self.chunk_size if chunk_size is None else min(self.chunk_size, check_int(chunk_size, "chunk_size", 1))
        if total <= size:
            with self.lock:
                self._add_chunk(id_list, text_list, meta_list, vectors, _Chunk(0, total, total, size))
            return id_list
        # One bar per kind of work over the whole batch, not one per chunk; a store's upkeep (qdrant-edge's
        # optimizers) once, after the last chunk, as after one add.
        with self.lock, progress_span(total) as span, ExitStack() as upkeep:
            for _, leg in self._legs:
                if isinstance(leg.store, DefersMaintenance):
                    upkeep.enter_context(leg.store.deferred_maintenance())
            for start in range(0, total, size):
                stop = min(start + size, total)
                span.part(stop - start)
                part = slice(start, stop)  # slices of a checked batch are checked: they pass unchecked
                self._add_chunk(CheckedList(id_list[part]), CheckedList(text_list[part]),
                                CheckedList(meta_list[part]), None if vectors is None else vectors[part],
                                _Chunk(start, stop, total, size))
        return id_list

    def _add_chunk(self, ids: list[str], texts: list[str], metas: list[dict[str, Any]], vectors: Vectors | None,
                   chunk: _Chunk) -> None:
        """One all-or-nothing write: embed (unless ``vectors``), snapshot, journal, every leg, clear."""
        by_model = (embed_documents(self._legs, texts, chunk.not_written()) if vectors is None else
                    {id(leg.embedding): vectors for _, leg in self._legs if leg.embedding is not None})
        journal_vectors = {name: _vectors_for(leg, by_model) for name, leg in self._legs if leg.embedding}
        self._apply(
            "add", ids, lambda leg: leg.add(ids, texts, metas, _vectors_for(leg, by_model)),
            lambda: self._journal_begin("add", ids, texts, metas, journal_vectors), *chunk.failure(),
            chunk.not_written(),
        )

    def delete(self, ids: Sequence[str]) -> None:
        """Delete ids from every writable leg, all or nothing per chunk of :attr:`chunk_size` as :meth:`add` writes
        (each chunk snapshotted, journaled, deleted everywhere, cleared: a delete of 100k ids holds one chunk's
        vectors at a time); if one leg fails the others get that chunk back, the chunks before it stay deleted."""
        id_list = CheckedList(check_ids(ids))  # checked here, once: the legs' stores take it as it is
        if not id_list:
            return
        total, size = len(id_list), self.chunk_size
        with self.lock:
            for start in range(0, total, size):
                part = id_list if total <= size else CheckedList(id_list[start:start + size])
                chunk = _Chunk(start, start + len(part), total, size)
                self._apply("delete", part, lambda leg, part=part: leg.delete(part),
                            lambda part=part: self._journal_begin("delete", part),
                            *chunk.failure("deleting", "deleted", "restored"), chunk.kept("deleted"))

    def ids_matching(self, flt: Any, limit: int | None = None) -> list[str]:
        """Every id whose metadata matches the normalized filter ``flt`` (None: every id), in ANY writable store
        (the union, so a document present in only some stores is found), in a reproducible order; with ``limit``
        (checked), the first ``limit`` of the union sorted by id (each store lists its first ``limit``: the union's
        first ``limit`` are among them). Call it under :attr:`lock`.

        Raises:
            StoreError: a store cannot list its documents by filter (no ``ids_matching``), or listing failed.
        """
        found: dict[str, None] = {}  # insertion-ordered set: the delete (and its journal entry) is reproducible
        for name, leg in self._legs:
            if not isinstance(leg.store, IdsMatching):
                msg = f"store {name!r} ({type(leg.store).__name__}) cannot list documents by filter; delete by ids"
                raise StoreError(msg)
            try:
                found.update(dict.fromkeys(leg.store.ids_matching(flt, limit)))
            except RRFRetrieverError:
                raise
            except Exception as exc:
                msg = f"listing the documents by filter in store {name!r} failed: {type(exc).__name__}: {exc}"
                raise StoreError(msg) from exc
        return list(found) if limit is None else sorted(found)[:limit]

    def records_matching(self, flt: Any, limit: int) -> list[Record]:
        """The stored documents whose metadata matches the normalized filter ``flt`` (None: every one), sorted by
        id, the first ``limit`` (checked): the ids of :meth:`ids_matching`, each read from the first writable store
        that holds it (as ``HybridEngine.get``; a document half-written is listed too), under :attr:`lock` (a
        concurrent write is seen whole or not at all).

        Raises:
            InvalidArgumentError / InvalidTypeError: ``limit`` is not an int from 0 to ``MAX_LIMIT``.
            StoreError: as :meth:`ids_matching`.
        """
        limit = check_limit(limit)
        records: dict[str, Record] = {}
        with self.lock:
            ids = self.ids_matching(flt, limit) if limit else []
            for _, leg in self._legs:
                missing = [i for i in ids if i not in records]
                if not missing:
                    break
                records.update((r.id, r) for r in leg.get(missing))
        return [records[i] for i in ids if i in records]

    def _apply(self, op: str, ids: list[str], write: Any, begin: Any, failure: str, rolled_back: str,
               not_written: str = "nothing was written") -> None:
        # An entry still pending here was left by an interrupted rollback in this process: complete it BEFORE this
        # write, so that it can never be replayed over this write (a delete undone on the next open).
        if self.journal is not None and self.journal.pending():
            self.recover()
        self.changes += len(ids)
        try:
            before = {name: leg.snapshot(ids) for name, leg in self._legs}
            seq = begin()
        except RRFRetrieverError as exc:  # no store written yet (of this chunk): say what is
            raise type(exc)(f"{exc}; {not_written}") from exc
        done: list[tuple[str, StoreLeg]] = []
        for name, leg in self._legs:
            try:
                write(leg)
            except BaseException as exc:
                # Any interruption (an error, Ctrl-C, SystemExit) rolls the stores back. A rollback that fails or is
                # itself interrupted raises and keeps the journal entry: recover() then completes the batch.
                self._restore(done, ids, before)
                self._undo_partial(name, leg, ids, before)
                self._journal_clear(seq)
                if not isinstance(exc, Exception):
                    raise
                msg = f"{failure} in store {name!r}; {rolled_back}: {exc}"
                raise _store_error(exc, msg) from exc
            done.append((name, leg))
        self._journal_clear(seq)

    def _journal_begin(self, op: str, ids: list[str], texts: Sequence[str] = (),
                       metadatas: Sequence[Mapping[str, Any]] = (), vectors: Mapping[str, Any] | None = None
                       ) -> int | None:
        if self.journal is None:
            return None
        return self.journal.begin(op, ids, texts, metadatas, vectors)  # type: ignore[arg-type]  # validated lists

    def _journal_clear(self, seq: int | None) -> None:
        if self.journal is not None and seq is not None:
            self.journal.clear(seq)

    def recover(self) -> int:
        """Redo every write the journal holds as pending (interrupted by a crash) in every writable leg.

        Returns:
            The number of batches redone (0 without a journal).

        Raises:
            StoreError: a store refused the redo; the entry stays pending for the next attempt.
        """
        if self.journal is None:
            return 0
        with self.lock:
            entries = self.journal.pending()
            for entry in entries:
                for name, leg in self._legs:
                    try:
                        if entry.op == "delete":
                            leg.delete(entry.ids)
                            continue
                        vectors: Vectors | None = entry.vectors.get(name) if leg.embedding is not None else None
                        if leg.embedding is not None and vectors is None:  # a dense leg added after the entry
                            vectors = embed_documents([(name, leg)], entry.texts)[id(leg.embedding)]
                        leg.add(entry.ids, entry.texts, entry.metadatas, vectors)
                    except Exception as exc:
                        detail = str(exc) if isinstance(exc, RRFRetrieverError) else f"{type(exc).__name__}: {exc}"
                        msg = f"redoing journal entry {entry.seq} ({entry.op}) in store {name!r} failed: {detail}"
                        raise StoreError(msg) from exc
                self.journal.clear(entry.seq)
            if entries:
                logger.warning("rrf_retriever journal: redid %d interrupted write(s) in every store", len(entries))
        return len(entries)

    @staticmethod
    def _undo_partial(name: str, leg: StoreLeg, ids: list[str], before: Snapshot) -> None:
        """The leg that failed may have written part of the batch (Qdrant upserts in chunks): undo that."""
        try:
            now = leg.snapshot(ids)
        except Exception:
            return

        def view(records: list[Record]) -> list[tuple[str, str, dict[str, Any]]]:
            return [(r.id, r.text, dict(r.metadata)) for r in records]

        if view(now) != view(before[name]):
            WriteUnit._restore([(name, leg)], ids, before)

    @staticmethod
    def _restore(done: list[tuple[str, StoreLeg]], ids: list[str], before: Snapshot) -> None:
        """Put the legs already written back as they were (reported if it fails)."""
        for name, leg in done:
            try:
                leg.restore(ids, before[name])
            except Exception as exc:  # pragma: no cover - a failure during rollback
                msg = f"rollback of store {name!r} failed; its content may differ from the other stores"
                raise StoreError(msg) from exc
