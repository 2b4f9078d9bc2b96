"""Where the HNSW graph takes over from the int8 scan, what it costs, and what the filtered sparse leg costs.

Usage:
    .venv/bin/python benchmarks/scale/bench_graph_threshold.py                 # 100k synthetic (about 6 min, quiet)
    .venv/bin/python benchmarks/scale/bench_graph_threshold.py --docs 30000    # another size

On one 100k stack of the default kinds (``from_texts`` with precomputed clustered vectors, ``bench_scale_curve``'s
corpus and frequent-word queries):

* ``scan``: the stack built with ``QdrantEdgeDenseStore(emb, graph_points=None)`` (the int8 scan): p50 of
  ``invoke`` (warm, back to back), each leg alone at depth 40, then adds of 10k, 1k and 9k new documents;
* ``graph``: the same stack (now 20k larger), :meth:`QdrantEdgeDenseStore.grow_graph` timed, then the same queries
  and adds of another 20k documents;
* the filtered sparse leg (3 of 100 sessions) on keyword stores built with Qdrant's sparse ``full_scan_threshold``
  at its default, 1,000 and unbounded (passed through ``qdrant_edge.EdgeSparseVectorParams``: a probe of the
  engine's setting, not a library option);
* the process's ``RssAnon`` / ``RssFile`` after each build (``/proc/self/status``): anonymous memory vs pages of
  memory-mapped store files.

Writes ``benchmarks/results/graph_threshold.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from benchmarks.scale.bench_scale_curve import clustered_vectors, synthetic_corpus, timed
from benchmarks.speed.bench_public_path import FILTER, SESSIONS, pct, rss_kb, stores_of
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeKeywordStore

DEPTH = 40


def rss() -> dict[str, float]:
    """The process's memory now, MB: its RSS and that RSS's anonymous and file-backed parts, and its peak."""
    return {field: round(rss_kb(field) / 1024, 1) for field in ("VmRSS", "RssAnon", "RssFile", "VmHWM")}


def queries_and_legs(r: Any, queries: list[str], emb: PrecomputedEmbedding) -> dict[str, float]:
    kw, dense = stores_of(r)
    vecs = {q: emb.embed_query(q) for q in queries}
    out: dict[str, float] = {}
    for q in queries[:5]:
        r.invoke(q, top_k=10)
    for _ in range(2):  # the first pass warms the caches; the second is reported
        for flt, key in ((None, "unfiltered"), (FILTER, "filtered")):
            out[f"invoke_{key}_p50_ms"] = pct([timed(lambda q=q, flt=flt: r.invoke(q, top_k=10, filter=flt))[0]
                                               for q in queries], 50)
            out[f"keyword_{key}_p50_ms"] = pct([timed(lambda q=q, flt=flt: kw.search(q, DEPTH, filter=flt))[0]
                                                for q in queries], 50)
            out[f"dense_{key}_p50_ms"] = pct([timed(lambda q=q, flt=flt: dense.search(vecs[q], DEPTH, filter=flt))[0]
                                              for q in queries], 50)
    return out


def adds(r: Any, texts: list[str], prefix: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for lo, hi in ((0, 10_000), (10_000, 11_000), (11_000, 20_000)):
        ids = [f"{prefix}{i}" for i in range(lo, hi)]
        t0 = time.perf_counter()
        r.add_texts(texts[lo:hi], ids=ids, metadatas=[{"session_id": i % SESSIONS} for i in range(lo, hi)])
        out[f"add_{hi - lo}_s"] = round(time.perf_counter() - t0, 2)
    return out


def sparse_thresholds(c: dict[str, Any], metas: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    import qdrant_edge as qe

    original = qe.EdgeSparseVectorParams
    out: dict[str, dict[str, float]] = {}
    try:
        for label, threshold in (("default (5,000)", None), ("1,000", 1_000), ("unbounded", 10**9)):
            if threshold is None:
                qe.EdgeSparseVectorParams = original
            else:
                qe.EdgeSparseVectorParams = (  # type: ignore[misc]
                    lambda t=threshold, **kw: original(full_scan_threshold=t, **kw))
            with QdrantEdgeKeywordStore(index_keys=["session_id"]) as store:
                store.add(c["ids"], c["texts"], metas)
                row = {}
                for flt, key in ((None, "unfiltered"), (FILTER, "filtered")):
                    for _ in range(2):
                        row[f"{key}_p50_ms"] = pct([timed(lambda q=q, flt=flt: store.search(q, DEPTH, filter=flt))[0]
                                                    for q in c["queries"]], 50)
                out[label] = row
                print(f"sparse full_scan_threshold {label}: {row}", flush=True)
    finally:
        qe.EdgeSparseVectorParams = original
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    import numpy as np

    n = args.docs
    c = synthetic_corpus(n, args.queries)
    extra = [t + " extra" for t in c["texts"][:20_000]]
    extra2 = [t + " more" for t in c["texts"][:20_000]]
    emb = PrecomputedEmbedding(c["texts"], c["vectors"])
    emb.add(c["queries"], c["q_vectors"])
    emb.add(extra, clustered_vectors(len(extra), np.random.default_rng(11)))
    emb.add(extra2, clustered_vectors(len(extra2), np.random.default_rng(12)))
    metas = [{"session_id": i % SESSIONS} for i in range(n)]
    out: dict[str, Any] = {"docs": n, "load_at_start": [round(x, 2) for x in os.getloadavg()]}
    before = rss()
    t0 = time.perf_counter()
    dense = QdrantEdgeDenseStore(emb, graph_points=None)  # the scan until grow_graph() below
    with EnsembleRRFRetriever.from_texts(c["texts"], emb, metadatas=metas, ids=c["ids"], dense=dense) as r:
        out["build_s"] = round(time.perf_counter() - t0, 1)
        out["rss_before_mb"], out["rss_after_build_mb"] = before, rss()
        for name in ("scan", "graph"):
            row: dict[str, Any] = {"docs_before": dense.count()}
            if name == "graph":
                t0, c0 = time.perf_counter(), time.process_time()
                dense.grow_graph()
                row["grow_graph_s"] = round(time.perf_counter() - t0, 1)
                row["grow_graph_cpu_s"] = round(time.process_time() - c0, 1)
            row["dense_index"] = dense.index
            row.update(queries_and_legs(r, c["queries"], emb))
            row.update(adds(r, extra if name == "scan" else extra2, prefix=name))
            out[name] = row
            print(f"{name}: {row}", flush=True)
    out["sparse_full_scan_threshold"] = sparse_thresholds(c, metas)
    out["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    (RESULTS / "graph_threshold.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS / 'graph_threshold.json'}")


if __name__ == "__main__":
    main()
