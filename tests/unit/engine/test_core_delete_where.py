"""HybridEngine.delete_where: every matching document leaves every store, all or none, whatever the callers do.

Real stores: SQLite FTS5 and qdrant-client local mode, the hashing embedder.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import EngineClosedError, InvalidArgumentError, StoreError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore


def _engine(keyword: Any = None, journal: Path | None = None) -> HybridEngine:
    dense = QdrantDenseStore(HashingEmbedding(32), client=QdrantClient(location=":memory:"))
    return HybridEngine({"dense": dense, "keyword": keyword or FTS5KeywordStore()}, journal=journal)


def _docs(engine: HybridEngine, n: int, source: str, start: int = 0) -> list[str]:
    ids = [f"{source}-{i}" for i in range(start, start + n)]
    return engine.add(ids, [f"chunk {i} of {source}" for i in range(start, start + n)],
                      [{"ref_doc_id": source, "n": i} for i in range(start, start + n)])


def test_deletes_every_match_in_every_store_and_nothing_else(tmp_path: Path) -> None:
    engine = _engine(journal=tmp_path / "journal")
    _docs(engine, 3, "a")
    _docs(engine, 2, "b")
    assert engine.delete_where({"ref_doc_id": "a"}) == 3
    assert engine.count() == {"dense": 2, "keyword": 2}
    assert [r.id for r in engine.get(["a-0", "b-0", "b-1"])] == ["b-0", "b-1"]
    assert engine.journal is not None and engine.journal.pending() == []  # went through the journaled delete
    assert engine.delete_where({"ref_doc_id": "a"}) == 0
    assert engine.delete_where({"ref_doc_id": "b", "n": {"$gte": 1}}) == 1  # the full filter language


def test_a_document_in_one_store_only_is_found_and_deleted() -> None:
    keyword = FTS5KeywordStore()
    engine = _engine(keyword)
    _docs(engine, 1, "a")
    keyword.add(["stray"], ["stray chunk"], [{"ref_doc_id": "a"}])  # written around the engine
    assert engine.delete_where({"ref_doc_id": "a"}) == 2
    assert keyword.count() == 0 and engine.count()["dense"] == 0


@pytest.mark.parametrize("empty", [None, {}])
def test_an_empty_filter_is_refused(empty: Any) -> None:
    engine = _engine()
    _docs(engine, 2, "a")
    with pytest.raises(InvalidArgumentError):
        engine.delete_where(empty)
    assert engine.count() == {"dense": 2, "keyword": 2}


def test_a_malformed_filter_is_refused() -> None:
    engine = _engine()
    _docs(engine, 1, "a")
    for bad in ({"ref_doc_id": {"$regex": "a"}}, {"bad key!": 1}, {"ref_doc_id": 1.5}, "ref_doc_id=a"):
        with pytest.raises(InvalidArgumentError):
            engine.delete_where(bad)  # type: ignore[arg-type]
    assert engine.count() == {"dense": 1, "keyword": 1}


class _NoListing(FTS5KeywordStore):
    """A keyword store that cannot list its documents by filter (as a third-party store may be)."""

    ids_matching = None  # type: ignore[assignment]


class _BrokenListing(FTS5KeywordStore):
    def ids_matching(self, filter: Any, limit: int | None = None) -> list[str]:
        raise OSError("disk gone")


@pytest.mark.parametrize("store", [_NoListing, _BrokenListing])
def test_a_store_that_cannot_list_gives_our_error_and_nothing_is_deleted(store: type) -> None:
    engine = _engine(store())
    _docs(engine, 2, "a")
    with pytest.raises(StoreError):
        engine.delete_where({"ref_doc_id": "a"})
    assert engine.count() == {"dense": 2, "keyword": 2}


def test_a_closed_engine_refuses() -> None:
    engine = _engine()
    engine.close()
    with pytest.raises(EngineClosedError):
        engine.delete_where({"ref_doc_id": "a"})


def test_concurrent_adds_never_leave_a_document_in_one_store() -> None:
    engine = _engine()
    errors: list[BaseException] = []

    def writer(source: str) -> None:
        try:
            for start in range(0, 200, 5):
                _docs(engine, 5, source, start)
        except BaseException as exc:  # reported below: a writer must never fail
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in ("a", "b")]
    for t in threads:
        t.start()
    deleted = 0
    while any(t.is_alive() for t in threads):
        deleted += engine.delete_where({"ref_doc_id": ["a", "b"]})
    for t in threads:
        t.join()
    assert not errors
    deleted += engine.delete_where({"ref_doc_id": ["a", "b"]})
    # Each document added was deleted exactly once, from both stores: none left in one store only.
    assert deleted == 400 and engine.count() == {"dense": 0, "keyword": 0}
