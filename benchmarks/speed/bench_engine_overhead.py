"""The engine's own cost per hybrid query: HybridEngine.search over two instant legs (20 fixed hits each).

Usage:
    .venv/bin/python benchmarks/speed/bench_engine_overhead.py

What remains is the engine: settings snapshot, the per-call options, planning, the thread-pool handoff of both
legs, weighted RRF over 2 x 20 hits, the trace; once bare, once with per-call options (``top_k``, ``filter``,
``exclude_ids``, ``offset``). Compare with ``weighted_rrf`` alone over the same hits. Prints p50 in ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root

from rrf_retriever.embeddings import CallableEmbedding
from rrf_retriever.engine import HybridEngine, Leg
from rrf_retriever.fusion import weighted_rrf
from rrf_retriever.stores.base import StoreBase
from rrf_retriever.types import Hit, Record

HITS = [Hit(f"d{i}", "", {}, 1.0 - i / 20) for i in range(20)]


class InstantKeywordLeg(Leg):
    kind = "keyword"

    def search(self, request):  # type: ignore[no-untyped-def]
        return HITS


class InstantDenseStore(StoreBase):
    """A dense store (the whole :class:`~rrf_retriever.stores.base.DenseStore` protocol) that answers at once."""

    def __init__(self) -> None:
        self.embedding = CallableEmbedding(lambda texts: [[1.0, 0.0] for _ in texts])

    def search(self, vector, limit, filter=None, exclude_ids=None):  # type: ignore[no-untyped-def]
        return HITS

    def add(self, *args: object, **kwargs: object) -> None:
        return None

    def delete(self, ids: object) -> None:
        return None

    def get(self, ids: object, *, with_vectors: bool = False) -> list[Record]:
        return []

    def count(self) -> int:
        return 0


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help; no options
    engine = HybridEngine({"dense": InstantDenseStore(), "keyword": InstantKeywordLeg()}, top_k=10)
    for _ in range(200):
        engine.search("hello world")
    total = []
    for _ in range(3000):
        t0 = time.perf_counter()
        engine.search("hello world")
        total.append((time.perf_counter() - t0) * 1000)
    scoped = []
    for _ in range(3000):
        t0 = time.perf_counter()
        engine.search("hello world", top_k=10, filter={"lang": "en"}, exclude_ids=["d3"], offset=0)
        scoped.append((time.perf_counter() - t0) * 1000)
    fusion = []
    for _ in range(3000):
        t0 = time.perf_counter()
        weighted_rrf({"dense": HITS, "keyword": HITS}, None, k=60, limit=10)
        fusion.append((time.perf_counter() - t0) * 1000)
    print(f"HybridEngine.search, two instant legs: p50 {statistics.median(total):.3f} ms")
    print(f"... with top_k, filter, exclude_ids, offset: p50 {statistics.median(scoped):.3f} ms")
    print(f"weighted_rrf 2 x 20 hits alone:        p50 {statistics.median(fusion):.3f} ms")


if __name__ == "__main__":
    main()
