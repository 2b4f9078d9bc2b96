"""The engine's GIL head start, on and off, alone and under concurrent queries (FTS5 file + qdrant-edge).

Run: .venv/bin/python benchmarks/speed/bench_head_start.py [--docs 30000] [--queries 400]

qdrant-edge-py holds the GIL for a whole search, so ``HybridEngine`` starts that leg only once the keyword leg is
inside SQLite (``HybridEngine._head_start``). ``bench_hybrid_speed.py`` measures what it gains for one query at a
time; this checks what it costs when many queries share the engine's thread pool (1 and 8 client threads, half
the queries filtered to 3 of 100 sessions), on and off interleaved, two rounds each. Query vectors are
precomputed (no embedding), the worst case for the GIL. Prints queries/s and p50 / p95 ms per setting and writes
``benchmarks/results/head_start.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from benchmarks.speed.bench_hybrid_speed import synthetic
from rrf_retriever.engine import HeadStart, HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore


def build(n_docs: int, n_queries: int) -> tuple[HybridEngine, list[str]]:
    c = synthetic(n_docs, n_queries)
    ids, texts, vectors = c["ids"], c["texts"], c["vectors"]
    metas = [{"session_id": i % 100} for i in range(n_docs)]
    emb = PrecomputedEmbedding(texts, vectors)
    emb.add(c["q_texts"], c["q_vectors"])
    keyword = FTS5KeywordStore(Path(tempfile.mkdtemp(prefix="head-start-")) / "keyword.sqlite3")
    for i in range(0, n_docs, 10_000):
        keyword.add(ids[i : i + 10_000], texts[i : i + 10_000], metas[i : i + 10_000])
    keyword.optimize()
    dense = QdrantEdgeDenseStore(emb, path=Path(tempfile.mkdtemp(prefix="head-start-edge-")))
    dense.add(ids, texts, metas, vectors=vectors)
    return HybridEngine({"dense": dense, "keyword": keyword}, top_k=10), c["q_texts"]


def run(built: HybridEngine, queries: list[str], threads: int, head_start: bool) -> dict[str, float]:
    # The same stores under an engine with or without the head start.
    engine = HybridEngine(dict(built.legs), top_k=10, head_start=HeadStart() if head_start else HeadStart.OFF)
    latencies: list[float] = []
    lock = threading.Lock()

    def client(first: int) -> None:
        for q in range(first, len(queries), threads):
            flt: dict[str, Any] | None = {"session_id": [1, 2, 3]} if q % 2 else None
            t0 = time.perf_counter()
            engine.search(queries[q], filter=flt)
            with lock:
                latencies.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    return {"queries_per_s": round(len(queries) / wall, 1), "p50_ms": round(statistics.median(latencies), 2),
            "p95_ms": round(float(np.percentile(latencies, 95)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    engine, queries = build(args.docs, args.queries)
    for q in queries[:10]:
        engine.search(q)  # warm-up
    rows = []
    for threads in (1, 8):
        for round_ in (1, 2):
            for head_start in (True, False):
                row = {"threads": threads, "round": round_, "head_start": head_start,
                       **run(engine, queries, threads, head_start)}
                rows.append(row)
                print(f"threads={threads} round={round_} head_start={head_start!s:5} {row['queries_per_s']:7.1f} q/s"
                      f"  p50 {row['p50_ms']:6.2f} ms  p95 {row['p95_ms']:6.2f} ms", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "head_start.json").write_text(json.dumps({"docs": args.docs, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
