"""The write unit (rrf_retriever/engine/writes.py): an add larger than ``chunk_size`` is written as consecutive
all-or-nothing chunks (validated whole first; a failing chunk rolled back, the earlier ones kept and counted in the
error), and a model's float32 ``embed_array`` reaches the stores as the array.

Real stores (FTS5, qdrant-edge), a real journal; the failures come from real stores and models subclassed to fail
on cue, the recording journal and store are real ones that also note what they were given.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine.journal import Journal
from rrf_retriever.engine.legs import as_leg
from rrf_retriever.engine.writes import ADD_CHUNK, WriteUnit
from rrf_retriever.errors import EmbeddingError, InvalidArgumentError, InvalidVectorError, StoreError
from rrf_retriever.progress import progress_shown
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

DIM = 16
IDS = [f"d{i}" for i in range(7)]
TEXTS = [f"text number {i} about chunked writes" for i in range(7)]


class RecordingJournal(Journal):
    """A real journal that also notes the ids of every entry it records."""

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.batches: list[list[str]] = []

    def begin(self, op: Any, ids: Sequence[str], *args: Any, **kwargs: Any) -> int:
        self.batches.append(list(ids))
        return super().begin(op, ids, *args, **kwargs)


class FailingKeyword(FTS5KeywordStore):
    """A real FTS5 store whose ``fail_on``-th add (1-based) fails, a disk that filled up mid-batch."""

    fail_on = 0
    adds = 0

    def add(self, *args: Any, **kwargs: Any) -> None:
        self.adds += 1
        if self.adds == self.fail_on:
            msg = "disk full"
            raise OSError(msg)
        super().add(*args, **kwargs)


class ArrayHashing(HashingEmbedding):
    """Hashing vectors with MiniLM's two paths: ``embed_array`` (float32) and ``embed_documents`` (its lists).
    A text containing ``boom`` makes it fail."""

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        if any("boom" in t for t in texts):
            msg = "model crashed"
            raise RuntimeError(msg)
        return np.asarray(super().embed_documents(texts), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()


class RecordingDense(QdrantEdgeDenseStore):
    """A real qdrant-edge dense store that notes the type of the vectors each add is given, and its optimizations."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.given: list[str] = []
        self.optimizations = 0

    def add(self, ids: Any, texts: Any, metadatas: Any = None, vectors: Any = None) -> None:
        self.given.append(type(vectors).__name__)
        super().add(ids, texts, metadatas, vectors)

    def optimize(self) -> bool:
        self.optimizations += 1
        return super().optimize()


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[dict[str, Any]]:
    made = {"dense": RecordingDense(HashingEmbedding(DIM), tmp_path / "edge"),
            "keyword": FailingKeyword(str(tmp_path / "kw.sqlite3"))}
    yield made
    for store in made.values():
        store.close()


def _unit(stores: dict[str, Any], journal: Journal | None = None, chunk_size: int = 3) -> WriteUnit:
    return WriteUnit({name: as_leg(name, store) for name, store in stores.items()}, journal, chunk_size=chunk_size)


def test_a_batch_larger_than_a_chunk_is_written_chunk_by_chunk(stores: dict[str, Any], tmp_path: Path) -> None:
    journal = RecordingJournal(tmp_path / "journal.sqlite3")
    unit = _unit(stores, journal)
    assert unit.add(IDS, TEXTS, [{"n": i} for i in range(7)]) == IDS
    assert journal.batches == [IDS[0:3], IDS[3:6], IDS[6:7]]  # one entry a chunk, each cleared
    assert journal.pending() == []
    assert unit.count() == {"dense": 7, "keyword": 7}
    assert [dict(r.metadata) for r in stores["keyword"].get(IDS)] == [{"n": i} for i in range(7)]
    journal.close()


def test_the_stores_upkeep_runs_once_after_the_last_chunk(tmp_path: Path) -> None:
    dense = RecordingDense(HashingEmbedding(DIM), tmp_path / "edge", auto_optimize=3)  # each chunk crosses it
    unit = _unit({"dense": dense, "keyword": FTS5KeywordStore()})
    unit.add(IDS, TEXTS)
    assert dense.given == ["list"] * 3 and dense.optimizations == 1  # as after one add, not once a chunk
    dense.add(["x", "y", "z"], ["a", "b", "c"])  # outside a chunked write: after the add, as before
    assert dense.optimizations == 2
    dense.close()


def test_a_batch_within_one_chunk_is_one_write_and_the_default_chunk_is_10000(stores: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    journal = RecordingJournal(tmp_path / "journal.sqlite3")
    unit = WriteUnit({name: as_leg(name, store) for name, store in stores.items()}, journal)
    assert unit.chunk_size == ADD_CHUNK == 10_000
    unit.add(IDS, TEXTS)
    assert journal.batches == [IDS]
    journal.close()


@pytest.mark.parametrize("size", [0, -1])
def test_a_chunk_size_that_is_not_positive_is_refused(stores: dict[str, Any], size: int) -> None:
    with pytest.raises(InvalidArgumentError, match="chunk_size"):
        _unit(stores, chunk_size=size)


def test_ids_are_checked_for_the_whole_batch_before_any_chunk_is_written(stores: dict[str, Any]) -> None:
    unit = _unit(stores)
    with pytest.raises(InvalidArgumentError, match="unique"):
        unit.add([*IDS[:6], IDS[0]], TEXTS)  # the duplicate is in the third chunk
    with pytest.raises(InvalidArgumentError, match="one vector per text"):
        unit.add(IDS, TEXTS, vectors=[[1.0] * DIM] * 6)
    assert unit.count() == {"dense": 0, "keyword": 0}


def test_a_failing_chunk_is_rolled_back_and_the_chunks_before_it_stay(stores: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3")
    unit = _unit(stores, journal)
    unit.add(["d6"], ["the document the failing chunk replaces"], [{"v": "old"}])
    stores["keyword"].fail_on = stores["keyword"].adds + 3  # the third chunk: d6
    with pytest.raises(StoreError) as caught:
        unit.add(IDS, TEXTS, [{"v": "new"}] * 7)
    message = str(caught.value)
    assert "documents 6 to 6 of a batch of 7" in message and "in store 'keyword'" in message
    assert "this chunk was rolled back in every store" in message
    assert "the 6 document(s) of the chunks before it stay written" in message and "disk full" in message
    assert unit.count() == {"dense": 7, "keyword": 7}
    assert [(r.id, dict(r.metadata)) for r in stores["dense"].get(IDS)] == (
        [(i, {"v": "new"}) for i in IDS[:6]] + [("d6", {"v": "old"})])  # d6 as it was, in both stores
    assert [dict(r.metadata) for r in stores["keyword"].get(["d6"])] == [{"v": "old"}]
    assert journal.pending() == []
    journal.close()


class InterruptedKeyword(FTS5KeywordStore):
    """A real FTS5 store whose second add is interrupted (Ctrl-C half-way through a chunked add)."""

    adds = 0

    def add(self, *args: Any, **kwargs: Any) -> None:
        self.adds += 1
        if self.adds == 2:
            raise KeyboardInterrupt
        super().add(*args, **kwargs)


def test_an_interrupt_in_a_later_chunk_rolls_that_chunk_back_and_keeps_the_earlier_ones(tmp_path: Path) -> None:
    dense = RecordingDense(HashingEmbedding(DIM), tmp_path / "edge", auto_optimize=2)
    keyword = InterruptedKeyword(str(tmp_path / "kw.sqlite3"))
    journal = Journal(tmp_path / "journal.sqlite3")
    unit = _unit({"dense": dense, "keyword": keyword}, journal)
    with pytest.raises(KeyboardInterrupt):
        unit.add(IDS, TEXTS)
    assert unit.count() == {"dense": 3, "keyword": 3}  # the first chunk, in both stores; the second rolled back
    assert [r.id for r in dense.get(IDS)] == IDS[:3] and journal.pending() == []
    assert dense.optimizations == 0  # the interrupted block ran no upkeep ...
    unit.add(IDS[3:], TEXTS[3:])
    assert dense.optimizations >= 1 and unit.count() == {"dense": 7, "keyword": 7}  # ... and deferred none after it
    journal.close()
    dense.close()
    keyword.close()


def test_two_threads_adding_in_chunks_never_interleave_their_chunks(stores: dict[str, Any], tmp_path: Path) -> None:
    import threading

    journal = RecordingJournal(tmp_path / "journal.sqlite3")
    unit = _unit(stores, journal)
    batches = {name: [f"{name}{i}" for i in range(7)] for name in ("a", "b")}
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def add(ids: list[str]) -> None:
        start.wait()
        try:
            unit.add(ids, [f"text of {i}" for i in ids])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(ids,)) for ids in batches.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    owners = ["".join(sorted({i[0] for i in chunk})) for chunk in journal.batches]
    assert owners in (["a"] * 3 + ["b"] * 3, ["b"] * 3 + ["a"] * 3)  # one whole batch, then the other
    assert unit.count() == {"dense": 14, "keyword": 14} and journal.pending() == []
    journal.close()


def test_a_first_chunk_that_fails_says_nothing_was_written(stores: dict[str, Any]) -> None:
    unit = _unit(stores)
    stores["keyword"].fail_on = 1
    with pytest.raises(StoreError, match="nothing of the batch was written"):
        unit.add(IDS, TEXTS)
    assert unit.count() == {"dense": 0, "keyword": 0}


def test_an_embedding_failure_in_a_later_chunk_says_what_stays_written(tmp_path: Path) -> None:
    dense = QdrantEdgeDenseStore(ArrayHashing(DIM), tmp_path / "edge")
    keyword = FTS5KeywordStore()
    unit = _unit({"dense": dense, "keyword": keyword})
    texts = [*TEXTS[:4], "boom", *TEXTS[5:]]  # the second chunk
    with pytest.raises(EmbeddingError) as caught:
        unit.add(IDS, texts)
    message = str(caught.value)
    assert "model crashed" in message and "documents 3 to 5 of the batch of 7 were not written" in message
    assert "the 3 document(s) of the chunks before them stay written" in message
    assert unit.count() == {"dense": 3, "keyword": 3}
    dense.close()
    keyword.close()


def test_a_bad_vector_in_a_later_chunk_is_refused_before_any_chunk_is_written(stores: dict[str, Any],
                                                                              tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3")
    rows = np.random.default_rng(4).standard_normal((7, DIM)).tolist()
    rows[4][0] = float("nan")  # the second chunk: the given vectors are checked whole, at the door
    unit = _unit(stores, journal)
    with pytest.raises(InvalidVectorError, match=r"vectors\[4\] holds NaN.*nothing was written"):
        unit.add(IDS, TEXTS, vectors=rows)
    assert unit.count() == {"dense": 0, "keyword": 0} and journal.pending() == []
    journal.close()


@pytest.mark.parametrize("as_array", [True, False])
def test_vectors_given_by_the_caller_are_sliced_per_chunk(stores: dict[str, Any], as_array: bool) -> None:
    rows = np.random.default_rng(2).standard_normal((7, DIM)).astype(np.float32)
    unit = _unit(stores)
    unit.add(IDS, TEXTS, vectors=rows if as_array else rows.tolist())
    assert stores["dense"].given == (["ndarray"] * 3 if as_array else ["list"] * 3)
    for i, doc_id in enumerate(IDS):  # each document got its own row (cosine: the store keeps the direction)
        (hit,) = stores["dense"].search(rows[i].tolist(), 1)
        assert hit.id == doc_id and hit.score == pytest.approx(1.0, abs=1e-5)


def test_a_model_with_embed_array_writes_its_float32_array(tmp_path: Path) -> None:
    model = ArrayHashing(DIM)
    through_array = RecordingDense(model, tmp_path / "array")
    through_lists = QdrantEdgeDenseStore(HashingEmbedding(DIM), tmp_path / "lists")
    unit = _unit({"dense": through_array, "keyword": FTS5KeywordStore()})
    unit.add(IDS, TEXTS)
    assert through_array.given == ["ndarray"] * 3  # the model's array, never lists of Python floats
    through_lists.add(IDS, TEXTS, vectors=model.embed_documents(TEXTS))
    stored = [r.vector for r in through_array.get(IDS, with_vectors=True)]
    assert stored == [r.vector for r in through_lists.get(IDS, with_vectors=True)]  # exactly the same vectors
    through_array.close()
    through_lists.close()


def test_minilm_writes_exactly_the_vectors_of_its_embed_documents(minilm: Any, tmp_path: Path) -> None:
    texts = ["the cat sits on the mat", "qdrant stores dense vectors", "a third, longer document " * 8]
    ids = ["m0", "m1", "m2"]
    through_array = RecordingDense(minilm, tmp_path / "array")
    through_lists = QdrantEdgeDenseStore(minilm, tmp_path / "lists")
    WriteUnit({"dense": as_leg("dense", through_array)}, chunk_size=2).add(ids, texts)
    assert through_array.given == ["ndarray", "ndarray"]
    # Per chunk, as the unit embedded them (MiniLM pads each batch to its longest text: another grouping of the
    # same texts gives vectors within ~2e-7, not the same bits).
    through_lists.add(ids, texts, vectors=minilm.embed_documents(texts[:2]) + minilm.embed_documents(texts[2:]))
    assert ([r.vector for r in through_array.get(ids, with_vectors=True)]
            == [r.vector for r in through_lists.get(ids, with_vectors=True)])
    through_array.close()
    through_lists.close()


def test_a_chunked_write_draws_one_bar_per_kind_of_work_over_the_whole_batch(
        stores: dict[str, Any], capfd: pytest.CaptureFixture[str]) -> None:
    unit = _unit(stores)
    with progress_shown(True):
        unit.add(IDS, TEXTS)
    err = capfd.readouterr().err
    assert len(re.findall(r"embedding \(hashing-16\):\s+0%", err)) == 1
    assert len(re.findall(r"upserting into Qdrant edge:\s+0%", err)) == 1
    assert "0/7" in err and "7/7" in err and "/3 " not in err


class DeleteFailingKeyword(FTS5KeywordStore):
    """A real FTS5 store whose ``fail_on``-th delete (1-based) fails with ``error``, and which notes each delete."""

    fail_on = 0
    error: BaseException = OSError("disk full")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deletes: list[list[str]] = []

    def delete(self, ids: Sequence[str]) -> None:
        self.deletes.append(list(ids))
        if len(self.deletes) == self.fail_on:
            raise self.error
        super().delete(ids)


class SnapshotSizes(RecordingDense):
    """The dense store noting how many records each read with vectors (a write's snapshot) asks for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[int] = []

    def get(self, ids: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("with_vectors"):
            self.reads.append(len(ids))
        return super().get(ids, *args, **kwargs)


def test_a_delete_larger_than_a_chunk_is_deleted_chunk_by_chunk(tmp_path: Path) -> None:
    dense = SnapshotSizes(HashingEmbedding(DIM), tmp_path / "edge")
    keyword = DeleteFailingKeyword(str(tmp_path / "kw.sqlite3"))
    journal = RecordingJournal(tmp_path / "journal.sqlite3")
    unit = _unit({"dense": dense, "keyword": keyword}, journal)
    unit.add(IDS, TEXTS)
    journal.batches.clear()
    dense.reads.clear()
    unit.delete(IDS)
    assert journal.batches == [IDS[0:3], IDS[3:6], IDS[6:7]] and journal.pending() == []  # one entry a chunk
    assert dense.reads == [3, 3, 1]  # each snapshot holds one chunk's vectors, never the whole delete's
    assert keyword.deletes == [IDS[0:3], IDS[3:6], IDS[6:7]]
    assert unit.count() == {"dense": 0, "keyword": 0}
    unit.add(IDS[:2], TEXTS[:2])
    journal.batches.clear()
    unit.delete(IDS[:2])  # within one chunk: one write, as before
    assert journal.batches == [IDS[:2]]
    journal.close()
    dense.close()
    keyword.close()


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failing_delete_chunk_is_restored_and_the_chunks_before_it_stay_deleted(tmp_path: Path,
                                                                                  error: BaseException) -> None:
    dense = RecordingDense(HashingEmbedding(DIM), tmp_path / "edge")
    keyword = DeleteFailingKeyword(str(tmp_path / "kw.sqlite3"))
    journal = Journal(tmp_path / "journal.sqlite3")
    unit = _unit({"dense": dense, "keyword": keyword}, journal)
    unit.add(IDS, TEXTS, [{"n": i} for i in range(7)])
    keyword.fail_on, keyword.error = 2, error  # the second chunk: d3, d4, d5
    with pytest.raises(type(error) if isinstance(error, KeyboardInterrupt) else StoreError) as caught:
        unit.delete(IDS)
    if not isinstance(error, KeyboardInterrupt):
        message = str(caught.value)
        assert "deleting documents 3 to 5 of a batch of 7 (in chunks of 3) failed in store 'keyword'" in message
        assert "the 3 document(s) of the chunks before it stay deleted" in message and "disk full" in message
    for store in (dense, keyword):  # the first chunk deleted, the second back as it was, the third untouched
        assert [(r.id, dict(r.metadata)) for r in store.get(IDS)] == [(i, {"n": n}) for n, i in enumerate(IDS)][3:]
    assert journal.pending() == []
    assert dense.get_vectors(["d3"])["d3"] == pytest.approx(HashingEmbedding(DIM).embed_documents([TEXTS[3]])[0])
    journal.close()
    dense.close()
    keyword.close()


_CRASH_CHILD = """
import os, sys
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine.journal import Journal
from rrf_retriever.engine.legs import as_leg
from rrf_retriever.engine.writes import WriteUnit
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

class Killed(FTS5KeywordStore):
    deletes = 0
    def delete(self, ids):
        self.deletes += 1
        if self.deletes == 2:  # the dense leg deleted this chunk, the keyword leg not: the process dies here
            os._exit(9)
        super().delete(ids)

root = sys.argv[1]
dense = QdrantEdgeDenseStore(HashingEmbedding(16), path=root + "/edge")
keyword = Killed(root + "/kw.sqlite3")
unit = WriteUnit({"dense": as_leg("dense", dense), "keyword": as_leg("keyword", keyword)},
                 Journal(root + "/journal.sqlite3"), chunk_size=3)
unit.add([f"d{i}" for i in range(7)], [f"text number {i} about chunked writes" for i in range(7)])
unit.delete([f"d{i}" for i in range(7)])
"""


def test_a_process_killed_in_a_later_delete_chunk_is_completed_by_the_journal(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "child.py"
    script.write_text(_CRASH_CHILD)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], check=False, timeout=300)
    assert done.returncode == 9  # killed between the two legs' writes of the second chunk
    dense = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp_path / "edge")
    keyword = FTS5KeywordStore(str(tmp_path / "kw.sqlite3"))
    journal = Journal(tmp_path / "journal.sqlite3")
    assert [e.ids for e in journal.pending()] == [IDS[3:6]]  # only the chunk in flight is pending
    assert [r.id for r in keyword.get(IDS)] == IDS[3:]  # torn: the first chunk deleted in both, the second in one
    unit = _unit({"dense": dense, "keyword": keyword}, journal)
    assert unit.recover() == 1
    for store in (dense, keyword):  # the chunk in flight completed in both; the third never started
        assert [r.id for r in store.get(IDS)] == IDS[6:]
    journal.close()
    dense.close()
    keyword.close()
