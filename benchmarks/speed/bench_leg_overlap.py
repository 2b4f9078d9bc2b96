"""Can the legs overlap in threads? Each store's search run alone, then beside a GIL-free C workload.

Run: .venv/bin/python benchmarks/speed/bench_leg_overlap.py [--docs 50000]

For each store (qdrant-edge exact, SQLite FTS5 on a file) it times 40 searches alone, 300 SHA-256 hashes of 1 MB
alone (hashlib releases the GIL for large buffers), and both at once in two threads. If the store's search released
the GIL, "together" would be close to the larger of the two; if it holds the GIL, the hashing thread waits for it
between calls and "together" is close to the sum. Also reports process CPU time / wall time of the searches (1.0 =
single-threaded). Prints figures only; writes benchmarks/results/leg_overlap.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.paths import RESULTS
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore


def hashing() -> None:
    block = b"x" * 1_000_000
    for _ in range(300):
        hashlib.sha256(block).digest()


def timed(fn: Callable[[], None]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def overlap(search: Callable[[], None]) -> dict[str, float]:
    alone, cpu = timed(search)
    other, _ = timed(hashing)

    def both() -> None:
        thread = threading.Thread(target=search)
        thread.start()
        hashing()
        thread.join()

    together, _ = timed(both)
    return {"search_s": round(alone, 3), "search_cpu_per_wall": round(cpu / alone, 2), "hashing_s": round(other, 3),
            "sum_s": round(alone + other, 3), "together_s": round(together, 3),
            "overlap": round((alone + other - together) / min(alone, other), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=50_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.docs, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"d{i}" for i in range(args.docs)]
    words = [f"w{i}" for i in range(5000)]
    pick = random.Random(0)
    texts = [" ".join(pick.choices(words, k=60)) for _ in ids]
    tmp = Path(tempfile.mkdtemp(prefix="overlap-"))
    edge = QdrantEdgeDenseStore(HashingEmbedding(384), path=tmp / "edge")
    edge.add(ids, texts, None, vectors=vectors)
    fts = FTS5KeywordStore(tmp / "keyword.sqlite3")
    fts.add(ids, texts)
    fts.optimize()
    queries = [" ".join(pick.sample(words[:200], 5)) for _ in range(40)]
    results = {
        "qdrant-edge exact": overlap(lambda: [edge.search(v, 20) for v in vectors[:40]] and None),
        "SQLite FTS5 (file)": overlap(lambda: [fts.search(q, 20) for q in queries] and None),
    }
    for name, row in results.items():
        print(f"{name:<20} {json.dumps(row)}")
    out = RESULTS / "leg_overlap.json"
    out.write_text(json.dumps({"docs": args.docs, **results}, indent=2))


if __name__ == "__main__":
    main()
