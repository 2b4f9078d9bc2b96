"""Crash safety: a writer process is SIGKILLed at random moments; after reopening, both stores agree.

A child process adds, upserts and deletes thousands of documents in batches through a journaled HybridEngine on
a persistent SQLite FTS5 file and a persistent QdrantEdgeDenseStore. It is killed with SIGKILL at a random
moment (sometimes during the previous round's recovery), the stores are reopened (the journal redoes the
interrupted batch) and checked: the same id set in both stores, every document complete (text, metadata and
the vector of that text) and the same version in both. The soak does 20 kills; the test does 5.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore
from tests.reliability.workloads import DIM, run_crash_safety, verify_crash_dir


@pytest.mark.slow
def test_sigkilled_writers_leave_both_stores_identical_and_complete(tmp_path: Path) -> None:
    result = run_crash_safety(kills=5, seed=11, directory=tmp_path, max_docs=3000, max_delay=1.5)
    assert result["problems"] == []
    assert result["killed_while_writing"] >= 4  # the child cannot write 3000 docs before most kills
    assert result["documents"] > 0


def test_without_the_journal_a_torn_batch_is_visible(tmp_path: Path) -> None:
    """The check above can fail: a batch in the keyword store only, with no journal, is reported as torn."""
    keyword = FTS5KeywordStore(str(tmp_path / "keyword.sqlite3"))
    dense = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=str(tmp_path / "edge"))
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    engine.add(["r0-0"], ["document r0-0 version 0"], [{"doc": "r0-0", "version": 0}])
    keyword.add(["r0-1"], ["torn"], [{"doc": "r0-1", "version": 0}])  # the crash between two store writes
    keyword.close()
    dense.close()
    result = verify_crash_dir(tmp_path, ["r0-0", "r0-1"])
    assert any("id sets differ" in p for p in result["problems"])
