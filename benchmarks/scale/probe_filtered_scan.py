"""Probe: a faster exact-enough path for filtered search on the graph: Qdrant's plain int8 scan of the
scope, reached through a larger ``full_scan_threshold``, against the exact float scan the store uses today.

Usage (after ``bench_filtered_recall.py`` has cached its 100k store and vectors under ``--cache``):
    .venv/bin/python benchmarks/scale/probe_filtered_scan.py
    .venv/bin/python benchmarks/scale/probe_filtered_scan.py --scan-kb 145500   # the threshold of the copy (KB)

It copies the cached store's shard twice (the cache stays as it is): ``t33k``, as built (``FULL_SCAN_KB``
50,000 KB: 33,333 points of 384-d floats), and ``t<scan-kb>`` (t145500: 97,000 points), reopened with
``full_scan_threshold=--scan-kb`` and optimized (qdrant-edge rewrites the shard's config and its optimizer rebuilds
the graph; Qdrant fixes a segment's threshold in points when it builds the segment, so only a rebuild changes it).
Then, on the raw shards, paths interleaved query by query, recall@10 against numpy brute force
(``bench_filtered_recall.exact_top``) and the p50 (ms) of:

* ``exact``: ``SearchParams(exact=True)`` on t33k: every in-scope float vector (the store's ``"auto"`` below 97%);
* ``exact_q``: exact with ``QuantizationSearchParams(ignore=False, rescore=True, oversampling=2)``: Qdrant's HNSW
  index drops the quantization of an exact search (``exact_params``, "disable quantization for exact search");
* ``scan``: Qdrant's plan with int8 rescoring (oversampling 2) on t<scan-kb>: a scope under the threshold is scanned
  on the int8 copy, its top 20 rescored with the float vectors;
* ``acorn`` / ``acorn1024``: Qdrant's plan with ACORN on t33k, Qdrant's default ``hnsw_ef`` or 1024.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root

from benchmarks.scale.bench_filtered_recall import TOP, exact_top, scopes, tag

KEYS = ("clus", "rand")
SHOWN = (0.03, 0.10, 0.35, 0.45, 0.70, 0.95)


def copies(cache: Path, work: Path, scan_kb: int) -> tuple[Path, Path]:
    """The t33k and t<scan-kb> copies of the cached store's shard (made once)."""
    import qdrant_edge as qe

    from rrf_retriever.stores.qdrant.edge_index import GRAPH_KIND, index_config

    made = []
    for name in ("t33k", f"t{scan_kb}"):
        target = work / name
        if not target.exists():
            shutil.copytree(cache / "store_synthetic_100000" / "shard", target)
        made.append(target)
    config = index_config(qe, GRAPH_KIND)
    config["hnsw_config"] = qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=scan_kb)
    shard = qe.EdgeShard.load(str(made[1]), qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine), **config))
    start = time.perf_counter()
    print(f"t{scan_kb}: optimized {shard.optimize()} in {time.perf_counter() - start:.1f} s", flush=True)
    shard.close()
    return made[0], made[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rrf_filtered_recall"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/rrf_filtered_scan"))
    parser.add_argument("--scan-kb", type=int, default=145_500, help="97,000 points of 384-d floats")
    args = parser.parse_args()
    import qdrant_edge as qe

    loaded = np.load(args.cache / "synthetic_100000_100.npz")
    vectors, labels, queries = loaded["vectors"], loaded["labels"], loaded["queries"]
    masks = scopes(labels)
    args.work.mkdir(parents=True, exist_ok=True)
    low_dir, high_dir = copies(args.cache, args.work, args.scan_kb)
    low, high = qe.EdgeShard.load(str(low_dir)), qe.EdgeShard.load(str(high_dir))
    quant = qe.QuantizationSearchParams(rescore=True, oversampling=2.0)
    acorn = qe.AcornSearchParams(enable=True, max_selectivity=1.0)
    paths: dict[str, tuple[Any, Any]] = {
        "exact": (low, qe.SearchParams(exact=True)),
        "exact_q": (low, qe.SearchParams(exact=True, quantization=qe.QuantizationSearchParams(
            ignore=False, rescore=True, oversampling=2.0))),
        "scan": (high, qe.SearchParams(quantization=quant)),
        "acorn": (low, qe.SearchParams(quantization=quant, acorn=acorn)),
        "acorn1024": (low, qe.SearchParams(hnsw_ef=1024, quantization=quant, acorn=acorn)),
    }
    names = list(paths)
    for shard in (low, high):  # every float vector read once: a freshly optimized copy is not in the page cache yet
        shard.query(qe.QueryRequest(limit=TOP, query=qe.Query.Nearest(queries[0].tolist()),
                                    params=qe.SearchParams(exact=True)))
    for key in [None] + [f"{k}_{tag(p)}" for k in KEYS for p in SHOWN]:
        mask = np.ones(len(vectors), dtype=bool) if key is None else masks[key]
        truth = [set(exact_top(vectors, mask, q)) for q in queries]
        flt = None if key is None else qe.Filter(must=[qe.FieldCondition(key=f"metadata.{key}",
                                                                          match=qe.MatchValue("in"))])
        recalls: dict[str, list[float]] = {n: [] for n in names}
        times: dict[str, list[float]] = {n: [] for n in names}
        for i, (q, true) in enumerate(zip(queries, truth)):
            vec = q.tolist()
            for name in names[i % len(names):] + names[:i % len(names)]:  # interleaved: the same machine load
                shard, params = paths[name]
                start = time.perf_counter()
                hits = shard.query(qe.QueryRequest(limit=TOP, query=qe.Query.Nearest(vec), filter=flt,
                                                   params=params, with_payload=True))
                times[name].append((time.perf_counter() - start) * 1000)
                recalls[name].append(len(true & {int(h.payload["doc_id"][1:]) for h in hits}) / TOP)
        cells = "  ".join(f"{n}: {np.mean(recalls[n]):.3f}/{np.percentile(recalls[n], 5):.2f} "
                          f"{np.median(times[n]):.2f}ms" for n in names)
        print(f"{key or 'unfiltered':>10} {int(mask.sum()):>7,}  {cells}", flush=True)
    low.close()
    high.close()
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
