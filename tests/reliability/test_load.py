"""Load: many reader threads and async queries while a writer swaps settings, adds and deletes documents.

Every response must be consistent with ONE settings snapshot (its trace weights are one the writer set, no hit
comes from a zero-weight leg, at most that snapshot's top_k hits) and no query may fail or degrade. Real stores:
SQLite FTS5 in memory and Qdrant local mode. (The soak runs 8 threads x 500 queries.)
"""

from __future__ import annotations

from tests.reliability.workloads import run_load


def test_readers_and_a_writer_see_whole_snapshots_and_no_errors() -> None:
    result = run_load(threads=4, queries_per_thread=60, seed=7)
    assert result["errors"] == []
    assert result["inconsistent"] == []
    assert result["queries"] == 240
    assert result["updates"] > 0 and result["writes"] > 0
