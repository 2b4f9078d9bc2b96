"""What a qdrant-edge shard holds on disk after a bulk add: a write-ahead log bounded by the flushes every
FLUSH_POINTS points, no second copy of the vectors left by an optimize, and the data read back exactly, reopened
(benchmarks/scale/bench_disk_parts.py measures the parts at 200k)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeKeywordStore, backend_edge

DIM = 2048  # large vectors: a log segment (32 MB) fills with ~3k points
DOCS = 12_000
SEGMENT = 32 * 2**20  # a log segment


def _allocated(folder: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


def _vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(0).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _bulk_add(path: Path, vectors: np.ndarray) -> int:
    with QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path, auto_optimize=False) as store:
        ids = [f"d{i}" for i in range(len(vectors))]
        store.add(ids, [f"text {i}" for i in ids], [{"n": i} for i in range(len(vectors))], vectors)
        wal = _allocated(path / "shard" / "wal")
        assert store.count() == len(vectors)
    return wal


@pytest.mark.slow
def test_a_bulk_add_keeps_the_write_ahead_log_bounded(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    vectors = _vectors(DOCS)
    monkeypatch.setattr(backend_edge, "FLUSH_POINTS", 10**9)  # as before: no flush until the store is closed
    unbounded = _bulk_add(tmp_path / "unbounded", vectors)
    monkeypatch.setattr(backend_edge, "FLUSH_POINTS", 1000)  # a flush every ~10 MB of log here
    bounded = _bulk_add(tmp_path / "bounded", vectors)
    assert unbounded > 3 * SEGMENT and unbounded / DOCS > 4 * DIM  # every vector written since the last flush
    assert bounded <= 2 * SEGMENT  # Qdrant keeps one closed segment and the open one: whatever the points
    with QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=tmp_path / "bounded") as store:  # reopened
        assert store.count() == DOCS
        record = store.get(["d4321"], with_vectors=True)[0]
        assert (record.text, record.metadata) == ("text d4321", {"n": 4321})
        np.testing.assert_array_equal(np.asarray(record.vector, dtype=np.float32), vectors[4321])


def test_optimize_leaves_no_second_copy_of_the_vectors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    vectors = _vectors(3000)
    path = tmp_path / "d"
    with QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path, auto_optimize=False) as store:
        store.add([f"d{i}" for i in range(3000)], ["t"] * 3000, None, vectors)
        assert store.optimize()
        assert store.unoptimized_points() == 0
        segments = _allocated(path / "shard" / "segments")
        # float vectors + the int8 copy, and small parts: the segment the optimize replaced is gone
        assert segments < 1.3 * 3000 * (4 * DIM + DIM)
        hits = store.search(vectors[7].tolist(), 1)
        assert [h.id for h in hits] == ["d7"]


def test_a_keyword_bulk_add_flushes_as_it_goes_and_reads_back(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(backend_edge, "FLUSH_POINTS", 500)
    path = tmp_path / "k"
    texts = [f"word{i % 97} other{i % 13} doc{i}" for i in range(2000)]
    with QdrantEdgeKeywordStore(path=path) as store:
        store.add([f"d{i}" for i in range(2000)], texts)
    with QdrantEdgeKeywordStore(path=path) as store:
        assert store.count() == 2000
        assert [h.id for h in store.search("doc1234", 3)] == ["d1234"]
        assert store.get(["d1999"])[0].text == texts[1999]
