"""The cross-store write-ahead journal (rrf_retriever/engine/journal.py) and its hook in HybridEngine.

Crashes are simulated here by writing a journal entry and then only part of the batch, exactly the state a
process killed between two store writes leaves; the real SIGKILL runs live in tests/reliability/.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.journal import Journal, JournalEntry, open_journal
from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError, InvalidTypeError, StoreError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

DIM = 16


class FailingAdds(FTS5KeywordStore):
    """A real FTS5 store whose adds fail while ``fail`` is set (a disk that filled up)."""

    fail = False

    def add(self, *args: Any, **kwargs: Any) -> None:
        if self.fail:
            msg = "disk full"
            raise OSError(msg)
        super().add(*args, **kwargs)


def _stack(tmp: Path, journal: Any = "default", keyword_cls: type = FTS5KeywordStore) -> HybridEngine:
    keyword = keyword_cls(str(tmp / "kw.sqlite3"))
    dense = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=str(tmp / "edge"))
    return HybridEngine({"dense": dense, "keyword": keyword},
                        journal=tmp / "journal.sqlite3" if journal == "default" else journal)


def _close(engine: HybridEngine) -> None:
    for leg in engine.legs.values():
        leg.store.close()  # type: ignore[attr-defined]
    if engine.journal is not None:
        engine.journal.close()


def test_an_entry_round_trips_and_clears() -> None:
    journal = Journal(":memory:")
    seq = journal.begin("add", ["a", "b"], ["x", "y"], [{"n": 1}, {}], {"dense": [[0.5, 1.0], [1, 2]]})
    (entry,) = journal.pending()
    assert entry == JournalEntry(seq, "add", ["a", "b"], ["x", "y"], [{"n": 1}, {}],
                                 {"dense": [[0.5, 1.0], [1.0, 2.0]]})
    journal.clear(seq)
    assert journal.pending() == []


def test_entries_survive_reopening_in_order(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with Journal(path) as journal:
        journal.begin("add", ["a"], ["é \u2603 text"], [{"k": [1, "x"]}])
        journal.begin("delete", ["b"])
    with Journal(path) as journal:
        assert [(e.op, e.ids) for e in journal.pending()] == [("add", ["a"]), ("delete", ["b"])]
        assert journal.pending()[0].texts == ["é \u2603 text"]


def test_bad_arguments_are_our_errors() -> None:
    journal = Journal(":memory:")
    with pytest.raises(InvalidArgumentError, match="op"):
        journal.begin("upsert", ["a"])  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="journal"):
        open_journal(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="journal path"):
        Journal(None)  # type: ignore[arg-type]
    assert open_journal(journal) is journal
    assert open_journal(None) is None


def test_an_unknown_entry_format_is_refused_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    Journal(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO rrf_journal (format, op, body) VALUES (99, 'add', '{}')")
    with Journal(path) as journal, pytest.raises(StoreError, match="unknown format"):
        journal.pending()


def test_an_unreadable_journal_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="journal"):
        Journal(path)


def test_healthy_writes_leave_no_pending_entry(tmp_path: Path) -> None:
    engine = _stack(tmp_path)
    engine.add(["a", "b"], ["alpha text", "beta text"], [{"s": 1}, {"s": 2}])
    engine.delete(["a"])
    assert engine.journal is not None and engine.journal.pending() == []
    assert engine.count() == {"dense": 1, "keyword": 1}
    _close(engine)


def test_an_interrupted_add_is_redone_in_every_store_on_open(tmp_path: Path) -> None:
    engine = _stack(tmp_path)
    engine.add(["old"], ["an older document"], [{"v": 0}])
    # The crash: the batch is recorded, reaches the keyword store, and the process dies before the dense one.
    texts = ["first new text", "second new text"]
    vectors = HashingEmbedding(DIM).embed_documents(texts)
    assert engine.journal is not None
    engine.journal.begin("add", ["n1", "n2"], texts, [{"v": 1}, {"v": 2}], {"dense": vectors})
    engine.legs["keyword"].store.add(["n1", "n2"], texts, [{"v": 1}, {"v": 2}])  # type: ignore[attr-defined]
    assert engine.count() == {"dense": 1, "keyword": 3}
    _close(engine)

    reopened = _stack(tmp_path)
    assert reopened.journal is not None and reopened.journal.pending() == []
    assert reopened.count() == {"dense": 3, "keyword": 3}
    dense = reopened.legs["dense"].store.get(["n1", "n2"], with_vectors=True)  # type: ignore[attr-defined]
    assert [(r.text, dict(r.metadata)) for r in dense] == [("first new text", {"v": 1}), ("second new text", {"v": 2})]
    for record, expected in zip(dense, vectors):
        assert record.vector == pytest.approx(expected, abs=1e-6)
    assert reopened.recover() == 0  # nothing left: a second recover is a no-op
    _close(reopened)


def test_an_interrupted_delete_is_redone(tmp_path: Path) -> None:
    engine = _stack(tmp_path)
    engine.add(["a", "b"], ["alpha text", "beta text"])
    assert engine.journal is not None
    engine.journal.begin("delete", ["a"])
    engine.legs["dense"].store.delete(["a"])  # type: ignore[attr-defined]
    _close(engine)
    reopened = _stack(tmp_path)
    assert reopened.count() == {"dense": 1, "keyword": 1}
    assert reopened.get(["a", "b"])[0].id == "b"
    _close(reopened)


def test_an_entry_without_vectors_for_a_dense_source_is_embedded_on_redo(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3")
    journal.begin("add", ["x"], ["text only entry"], [{}])
    engine = _stack(tmp_path, journal=journal)
    (record,) = engine.legs["dense"].store.get(["x"], with_vectors=True)  # type: ignore[attr-defined]
    assert record.vector == pytest.approx(HashingEmbedding(DIM).embed_query("text only entry"), abs=1e-6)
    _close(engine)


def test_a_failed_add_rolled_back_everywhere_clears_its_entry(tmp_path: Path) -> None:
    engine = _stack(tmp_path, keyword_cls=FailingAdds)
    engine.add(["a"], ["kept text"], [{"v": 1}])
    engine.legs["keyword"].store.fail = True  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="rolled back"):
        engine.add(["a", "b"], ["replaced text", "new text"], [{"v": 2}, {"v": 2}])
    assert engine.journal is not None and engine.journal.pending() == []
    assert [(r.text, dict(r.metadata)) for r in engine.get(["a", "b"])] == [("kept text", {"v": 1})]
    assert engine.count() == {"dense": 1, "keyword": 1}
    _close(engine)


def test_a_redo_that_fails_keeps_the_entry_for_the_next_open(tmp_path: Path) -> None:
    engine = _stack(tmp_path)
    assert engine.journal is not None
    engine.journal.begin("add", ["z"], ["pending text"], [{}])
    _close(engine)
    FailingAdds.fail = True
    try:
        with pytest.raises(StoreError, match="redoing journal entry"):
            _stack(tmp_path, keyword_cls=FailingAdds)
    finally:
        FailingAdds.fail = False
    # The failed constructor left its stores open; free the edge directory lock the way a new process would.
    import gc

    gc.collect()
    with Journal(tmp_path / "journal.sqlite3") as journal:
        assert [e.ids for e in journal.pending()] == [["z"]]
    reopened = _stack(tmp_path)
    assert reopened.count() == {"dense": 1, "keyword": 1}
    _close(reopened)


def test_no_journal_is_todays_behaviour(tmp_path: Path) -> None:
    engine = _stack(tmp_path, journal=None)
    assert engine.journal is None and engine.recover() == 0
    engine.add(["a"], ["alpha"])
    assert not (tmp_path / "journal.sqlite3").exists()
    _close(engine)


class InterruptedAdds(FTS5KeywordStore):
    """A real FTS5 store whose next add is interrupted (Ctrl-C) after it wrote the batch."""

    interrupt = False

    def add(self, *args: Any, **kwargs: Any) -> None:
        super().add(*args, **kwargs)
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt


def test_a_keyboard_interrupt_mid_write_rolls_back_and_a_later_delete_is_never_undone(tmp_path: Path) -> None:
    engine = _stack(tmp_path, keyword_cls=InterruptedAdds)
    engine.add(["keep"], ["kept document"])
    engine.legs["keyword"].store.interrupt = True  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt):
        engine.add(["gone"], ["interrupted document"])
    # Rolled back: the interrupted batch is in no store, and nothing is left pending.
    assert engine.count() == {"dense": 1, "keyword": 1}
    assert engine.journal is not None and engine.journal.pending() == []
    engine.add(["gone"], ["written again"])
    engine.delete(["gone"])
    _close(engine)
    reopened = _stack(tmp_path)
    assert reopened.count() == {"dense": 1, "keyword": 1}
    assert reopened.get(["gone"]) == []
    _close(reopened)


def test_a_pending_entry_is_completed_before_the_next_write_so_it_never_replays_over_it(tmp_path: Path) -> None:
    engine = _stack(tmp_path)
    assert engine.journal is not None
    # The state an interrupted rollback leaves in a live process: a pending entry, one store written.
    engine.journal.begin("add", ["x"], ["half written"], [{}], {"dense": [[1.0] * DIM]})
    engine.legs["keyword"].store.add(["x"], ["half written"], [{}])  # type: ignore[attr-defined]
    engine.delete(["x"])  # a later write: the pending entry is completed first, then the delete
    assert engine.journal.pending() == []
    _close(engine)
    reopened = _stack(tmp_path)
    assert reopened.get(["x"]) == [] and reopened.count() == {"dense": 0, "keyword": 0}
    _close(reopened)


@pytest.mark.parametrize("body", ["{not json", "[]", '{"ids": ["a"]}', '{"ids": "a", "texts": [], "metadatas": [], '
                                  '"vectors": {}}', '{"ids": ["a"], "texts": ["x"], "metadatas": [{}], "vectors": 5}'])
def test_a_corrupt_journal_row_is_our_error_and_stays_for_inspection(tmp_path: Path, body: str) -> None:
    path = tmp_path / "journal.sqlite3"
    with Journal(path) as journal:
        journal.begin("add", ["a"], ["x"], [{}])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE rrf_journal SET body = ?", (body,))
    conn.commit()
    conn.close()
    with Journal(path) as journal, pytest.raises(StoreError, match="corrupt"):
        journal.pending()
    with pytest.raises(StoreError, match="corrupt"):
        _stack(tmp_path)  # opening the engine reports it (no raw JSONDecodeError / KeyError)


# -- compact vectors, old entries, a file that shrinks ------------------------------------------------------------


def _unit_rows(n: int, dim: int, seed: int = 1) -> Any:
    import numpy as np

    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _body_size(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (size,) = conn.execute("SELECT max(length(body)) FROM rrf_journal").fetchone()
    return int(size)


def test_vectors_are_recorded_as_float32_bytes_and_read_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    rows = _unit_rows(200, 384)
    with Journal(path) as journal:
        journal.begin("add", [f"a{i}" for i in range(200)], ["t"] * 200, [{}] * 200,
                      {"dense": rows, "other": rows[:, :8].tolist()})
        size = _body_size(path)
        (entry,) = journal.pending()
    assert entry.vectors["dense"] == rows.tolist()  # exact: float32 in, the same float32 out
    assert entry.vectors["other"] == rows[:, :8].tolist()
    # 200 x 392 float32 as base64: ~420 KB; as JSON float lists it was ~1.6 MB.
    assert size < 200 * 392 * 4 * 1.4 + 10_000


def test_an_old_entry_with_json_float_lists_is_read_and_redone(tmp_path: Path) -> None:
    texts = ["an entry an older version wrote", "its second document"]
    vectors = HashingEmbedding(DIM).embed_documents(texts)
    Journal(tmp_path / "journal.sqlite3").close()
    body = {"ids": ["o1", "o2"], "texts": texts, "metadatas": [{"v": 1}, {}], "vectors": {"dense": vectors}}
    with sqlite3.connect(tmp_path / "journal.sqlite3") as conn:  # format 1, as rrf-retriever wrote it before
        conn.execute("INSERT INTO rrf_journal (format, op, body) VALUES (1, 'add', ?)", (json.dumps(body),))
    engine = _stack(tmp_path)
    assert engine.journal is not None and engine.journal.pending() == []
    assert engine.count() == {"dense": 2, "keyword": 2}
    dense = engine.legs["dense"].store.get(["o1", "o2"], with_vectors=True)  # type: ignore[attr-defined]
    for record, expected in zip(dense, vectors):
        assert record.vector == pytest.approx(expected, abs=1e-6)
    _close(engine)


def test_the_file_gives_a_cleared_batch_back(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    n = 3_000
    with Journal(path) as journal:
        seq = journal.begin("add", [f"a{i}" for i in range(n)], ["some text"] * n, [{}] * n,
                            {"dense": _unit_rows(n, 384)})
        assert path.stat().st_size + Path(f"{path}-wal").stat().st_size > 4_000_000  # the batch is on disk
        journal.clear(seq)
        assert journal.pending() == []
        # Still open (the stack keeps it open): the file and its WAL are back to a few pages.
        assert path.stat().st_size < 100_000
        assert Path(f"{path}-wal").stat().st_size < 100_000
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone() == (1,)  # FULL


def test_an_older_file_without_auto_vacuum_is_shrunk_and_converted_on_open(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    # What an earlier version left: no auto-vacuum, a large batch recorded, then cleared.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE rrf_journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, format INTEGER NOT NULL, "
                 "op TEXT NOT NULL, body TEXT NOT NULL)")
    conn.execute("INSERT INTO rrf_journal (format, op, body) VALUES (1, 'delete', ?)",
                 (json.dumps({"ids": ["x"] * 600_000, "texts": [], "metadatas": [], "vectors": {}}),))
    conn.execute("DELETE FROM rrf_journal")
    conn.close()  # the last connection closing checkpoints the WAL into the file
    assert path.stat().st_size > 3_000_000
    with Journal(path) as journal:
        assert journal.pending() == []
    assert path.stat().st_size < 100_000
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone() == (1,)


@pytest.mark.parametrize("bad", ["nan", "huge", "ragged"])
def test_a_vector_no_store_would_take_is_refused_before_anything_is_written(tmp_path: Path, bad: str) -> None:
    engine = _stack(tmp_path)
    good = HashingEmbedding(DIM).embed_documents(["x", "y"])
    vectors = {"nan": [good[0], [float("nan")] * DIM], "huge": [good[0], [1e39] * DIM],
               "ragged": [good[0], good[1][:-1]]}[bad]
    with pytest.raises(DimensionMismatchError):
        engine.add(["a", "b"], ["x", "y"], vectors=vectors)
    assert engine.count() == {"dense": 0, "keyword": 0}
    assert engine.journal is not None and engine.journal.pending() == []
    _close(engine)
