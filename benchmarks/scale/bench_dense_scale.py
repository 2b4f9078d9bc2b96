"""The dense leg alone at 1M points: the default store (int8 scan, then the HNSW graph it grows at
``GRAPH_POINTS``) against the int8 scan without a graph, on the clustered vectors of ``bench_scale_curve.py``.

Usage:
    nice .venv/bin/python benchmarks/scale/bench_dense_scale.py [--docs 1000000] [--kinds graph scan]

The store is written as ``from_texts`` + ``add_texts`` write it, in adds of 100k (``QdrantEdgeDenseStore.add`` with
precomputed vectors, metadata ``{"session_id": i % 100}``); each add's wall and CPU seconds are kept (the add that
crosses ``GRAPH_POINTS`` builds the graph over every point so far; later adds optimize their new points into it).
Then ``search(v, 40)`` p50/p95 wall and p50 CPU ms, unfiltered and filtered (3 of 100 sessions; the first filtered
query builds the payload index), recall@10 against the store's own exact search, RSS kept, disk blocks. Cheaper
than a 1M point of ``bench_scale_curve.py`` (no keyword store, no ``from_texts`` over 1M texts) on a loaded
machine. Writes ``benchmarks/results/dense_scale.json`` after each kind.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from benchmarks.scale.bench_scale_curve import clustered_vectors
from benchmarks.speed.bench_public_path import FILTER, pct
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

CHUNK = 100_000
OUT = RESULTS / "dense_scale.json"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(kind: str, vectors: np.ndarray, queries: np.ndarray) -> dict[str, Any]:
    n = len(vectors)
    emb = PrecomputedEmbedding(["t"], vectors[:1])
    gc.collect()
    rss0 = _rss_mb()
    store = QdrantEdgeDenseStore(emb) if kind == "graph" else QdrantEdgeDenseStore(emb, graph_points=None)
    adds = []
    for i in range(0, n, CHUNK):
        m = min(CHUNK, n - i)
        ids = [f"d{j}" for j in range(i, i + m)]
        metas = [{"session_id": j % 100} for j in range(i, i + m)]
        c0, t0 = time.process_time(), time.perf_counter()
        store.add(ids, ["t"] * m, metas, vectors=vectors[i : i + m])
        adds.append({"points": i + m, "wall_s": round(time.perf_counter() - t0, 1),
                     "cpu_s": round(time.process_time() - c0, 1), "index": store.index,
                     "load": round(os.getloadavg()[0], 1)})
        print(kind, adds[-1], flush=True)
    gc.collect()
    out: dict[str, Any] = {"docs": n, "index": store.index, "adds": adds,
                           "build_wall_s": round(sum(a["wall_s"] for a in adds), 1),
                           "build_cpu_s": round(sum(a["cpu_s"] for a in adds), 1),
                           "rss_kept_mb": round(_rss_mb() - rss0, 1),
                           "disk_allocated_mb": round(sum(f.stat().st_blocks * 512 for f in store.path.rglob("*")
                                                          if f.is_file()) / 2**20, 1)}
    for key, flt in (("unfiltered", None), ("filtered", FILTER)):
        store.search(queries[0], 40, filter=flt)  # the first filtered query builds the payload index
        wall, cpu = [], []
        for q in queries:
            c0, t0 = time.process_time(), time.perf_counter()
            store.search(q, 40, filter=flt)
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        got = [{h.id for h in store.search(q, 10, filter=flt)} for q in queries[:50]]
        store.exact = True
        t0 = time.perf_counter()
        truth = [{h.id for h in store.search(q, 10, filter=flt)} for q in queries[:50]]
        exact_ms = (time.perf_counter() - t0) * 1000 / 50
        store.exact = False
        out[key] = {"p50_ms": pct(wall, 50), "p95_ms": pct(wall, 95), "cpu_p50_ms": pct(cpu, 50),
                    "recall@10": round(float(np.mean([len(a & b) / 10 for a, b in zip(got, truth)])), 4),
                    "exact_mean_ms": round(exact_ms, 1), "load": round(os.getloadavg()[0], 1)}
        print(kind, key, out[key], flush=True)
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--kinds", nargs="+", default=["graph", "scan"], choices=["graph", "scan"])
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    vectors = clustered_vectors(args.docs, np.random.default_rng(0))
    queries = clustered_vectors(args.queries, np.random.default_rng(5))
    result: dict[str, Any] = json.loads(OUT.read_text()) if OUT.is_file() else {}
    for kind in args.kinds:
        result[f"{kind} {args.docs}"] = run(kind, vectors, queries)
        OUT.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
