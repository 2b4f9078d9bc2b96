"""Both legs in one qdrant-edge call: ``EdgeShard.query_batch`` (two requests, "one planned batch") against two
``query`` calls on the same shard, and against two shards (the default stack's layout), at the engine level of
qdrant-edge (no rrf_retriever code in the timed loop: what one engine call could save at most).

Usage:
    .venv/bin/python benchmarks/speed/bench_joint_batch.py [--docs 100000] [--queries 200]

One shard holds, per point, a 384-d dense vector (int8 scalar quantization, no graph: the default dense index) and
a sparse vector (``Modifier.Idf``; ~60 Zipf-distributed term ids per document, a query of 3-6 terms); the second
layout is two shards, one vector kind each, as ``QdrantEdgeDenseStore`` + ``QdrantEdgeKeywordStore`` build them.
Timed per query (p50 wall and CPU ms, interleaved): dense then sparse ``query`` on one shard; ``query_batch`` of
both; dense and sparse ``query`` on the two shards; and each alone. Also: whether ``query_batch`` releases the GIL
(a Python thread counting meanwhile). Writes ``benchmarks/results/joint_batch.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np
import qdrant_edge as qe

from benchmarks.common.paths import RESULTS

DIM = 384


def _config(dense: bool, sparse: bool) -> Any:
    kwargs: dict[str, Any] = {}
    if dense:
        kwargs["vectors"] = {"dense": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)}
        kwargs["hnsw_config"] = qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000)
        kwargs["quantization_config"] = qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, quantile=0.99,
                                                                     always_ram=True)
    if sparse:
        kwargs["sparse_vectors"] = {"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
    return qe.EdgeConfig(**kwargs, optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1))


def _sparse(rng: np.random.Generator, p: np.ndarray, k: int) -> qe.SparseVector:
    ids = np.unique(rng.choice(len(p), size=k, p=p))
    return qe.SparseVector(ids.tolist(), rng.uniform(0.5, 2.0, len(ids)).tolist())


def build(root: str, n: int) -> tuple[Any, Any, Any, list[Any], list[Any]]:
    rng = np.random.default_rng(0)
    vocab = 20_000
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    joint = qe.EdgeShard.create(os.path.join(root, "joint"), _config(True, True))
    dense = qe.EdgeShard.create(os.path.join(root, "dense"), _config(True, False))
    sparse = qe.EdgeShard.create(os.path.join(root, "sparse"), _config(False, True))
    for i in range(0, n, 1000):
        m = min(1000, n - i)
        v = rng.normal(size=(m, DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        sv = [_sparse(rng, p, 60) for _ in range(m)]
        pids = [uuid.UUID(int=i + j + 1) for j in range(m)]
        joint.update(qe.UpdateOperation.upsert_points(
            [qe.Point(pid, {"dense": v[j].tolist(), "bm25": sv[j]}, {}) for j, pid in enumerate(pids)]))
        dense.update(qe.UpdateOperation.upsert_points(
            [qe.Point(pid, {"dense": v[j].tolist()}, {}) for j, pid in enumerate(pids)]))
        sparse.update(qe.UpdateOperation.upsert_points(
            [qe.Point(pid, {"bm25": sv[j]}, {}) for j, pid in enumerate(pids)]))
    for shard in (joint, dense, sparse):
        shard.optimize()
    qv = rng.normal(size=(400, DIM)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    dense_q = [qe.Query.Nearest(v.tolist(), using="dense") for v in qv]
    sparse_q = [qe.Query.Nearest(_sparse(rng, p, int(rng.integers(3, 7))), using="bm25") for _ in range(400)]
    return joint, dense, sparse, dense_q, sparse_q


def requests(dq: Any, sq: Any) -> tuple[Any, Any]:
    params = qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True, oversampling=2.0))
    return (qe.QueryRequest(limit=40, query=dq, params=params, with_payload=True),
            qe.QueryRequest(limit=40, query=sq, with_payload=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="joint-batch-")
    load0 = [round(x, 2) for x in os.getloadavg()]
    try:
        t0 = time.perf_counter()
        joint, dense, sparse, dqs, sqs = build(root, args.docs)
        build_s = time.perf_counter() - t0
        variants = {
            "one shard: query(dense) + query(sparse)": lambda d, s: (joint.query(d), joint.query(s)),
            "one shard: query_batch([dense, sparse])": lambda d, s: joint.query_batch(qe.QueryBatchRequest([d, s])),
            "two shards: query(dense) + query(sparse)": lambda d, s: (dense.query(d), sparse.query(s)),
            "dense alone (one shard)": lambda d, s: joint.query(d),
            "sparse alone (one shard)": lambda d, s: joint.query(s),
        }
        wall: dict[str, list[float]] = {k: [] for k in variants}
        cpu: dict[str, list[float]] = {k: [] for k in variants}
        same = 0
        for i in range(-5, args.queries):
            d, s = requests(dqs[i % 400], sqs[i % 400])
            for name, fn in variants.items():
                c0, w0 = time.process_time(), time.perf_counter()
                fn(d, s)
                if i >= 0:
                    wall[name].append((time.perf_counter() - w0) * 1000)
                    cpu[name].append((time.process_time() - c0) * 1000)
            a = [p.id for p in joint.query(d)] + [p.id for p in joint.query(s)]
            b = [p.id for r in joint.query_batch(qe.QueryBatchRequest([d, s])) for p in r]
            same += a == b
        # Does query_batch let another Python thread run? Count loop iterations in a thread meanwhile.
        stop, count = threading.Event(), [0]

        def spin() -> None:
            while not stop.is_set():
                count[0] += 1

        t = threading.Thread(target=spin)
        t.start()
        time.sleep(0.05)
        c_before, w0 = count[0], time.perf_counter()
        for i in range(50):
            joint.query_batch(qe.QueryBatchRequest(list(requests(dqs[i], sqs[i]))))
        batch_s = time.perf_counter() - w0
        during = count[0] - c_before
        w1 = time.perf_counter()
        time.sleep(batch_s)
        alone = count[0] - c_before - during
        stop.set()
        t.join()
        out = {
            "docs": args.docs, "queries": args.queries, "build_s": round(build_s, 1), "load_at_start": load0,
            "load_at_end": [round(x, 2) for x in os.getloadavg()],
            "p50_ms": {k: round(float(np.median(v)), 3) for k, v in wall.items()},
            "cpu_p50_ms": {k: round(float(np.median(v)), 3) for k, v in cpu.items()},
            "query_batch_same_answers": f"{same}/{args.queries + 5}",
            "thread_iterations_during_query_batch_vs_sleep": [during, alone, round(time.perf_counter() - w1, 3)],
        }
        (RESULTS / "joint_batch.json").write_text(json.dumps(out, indent=2))
        print(json.dumps(out, indent=2))
        for shard in (joint, dense, sparse):
            shard.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
