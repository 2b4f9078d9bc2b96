"""Filtered recall@10 of the default dense store against exact search on the SAME vectors, at every selectivity.

Usage:
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py                      # 100k clustered synthetic vectors
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py --docs 300000 --paths default,graph --measured 50
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py --vectors minilm     # real MiniLM vectors, jittered copies
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py --store joint        # QdrantEdgeHybridStore's dense leg
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py --lazy               # payload indexes made by the queries

The store is :class:`~rrf_retriever.stores.qdrant.QdrantEdgeDenseStore` with its defaults (``index="int8"``; at
100k points the shard grows its HNSW graph, kind ``"int8-hnsw"``), written in chunks of 10k inside
``deferred_maintenance`` as the engine writes an add. Each document carries two keyword keys per selectivity
``p`` (0.1%, 1%, 3%, 10%, 35%, 45%, 70%, 95%), ``"in"`` on exactly ``p`` x N documents:

* ``rand_<p>``: documents drawn at random (the scope is spread over every cluster);
* ``clus_<p>``: whole clusters, in a random order (the scope is a region of the space: a tenant whose documents
  are about its own topics; the hard case for a graph walk, whose query often lies outside the scope).

Vectors (``--vectors``):

* ``synthetic``: a mixture of 1,000 Gaussian clusters in 384 dimensions (unit length); queries drawn from the same
  mixture; a ``clus`` scope is whole clusters.
* ``minilm``: the REAL fp32 MiniLM vectors of the five BEIR collections (scifact, arguana, med, cacm, npl: 29,523
  documents, ``common/beir.py``'s cache, warmed by ``benchmarks/quality/warm_vectors.py collections``), copied to N
  by ``common/scaled.py`` (each copy after the first jittered, cosine ~0.96 to its source); queries are real judged
  test queries' vectors of the five, round-robin. A ``clus`` scope is whole collections in a random order, each
  collection's source documents (with all their copies) in a random order: a scope of 10% at 1M is two or three
  whole collections, a tenant of its own subject, and queries of the other collections lie outside it.

Stores (``--store``): ``dense`` (the default dense store, above) or ``joint``
(:class:`~rrf_retriever.stores.qdrant.QdrantEdgeHybridStore`, dense and BM25 in one shard, empty texts): it has no
``auto_optimize``; its shard keeps Qdrant's default config (an HNSW graph over the float vectors, no int8 copy),
grown when :meth:`optimize` runs, which this script calls after the last chunk (before it, the joint shard is
unindexed segments, every search a scan).

By default the keys are declared (``index_keys=``): their payload indexes exist before the first point is written,
so before the graph. ``--lazy`` declares none: the first filtered query on a key builds its index (after the
graph), within ``max_auto_indexes`` (raised to cover the 16 keys).

Truth: numpy brute-force cosine over the in-scope vectors (float32, the same unit vectors the store holds; cached
beside the vectors, as it does not depend on the store).
Recall@10 = |store top 10 & exact top 10| / 10 per query; reported as the mean and the 5th percentile over the
queries, with the p50 of ``store.search`` (ms, warm) for each search path, measured side by side in one run (the
paths interleaved query by query, so a busy machine slows each alike):

* ``default``: the store as users get it (``filtered_search="auto"``: Qdrant's int8 scan of a scope below the
  shard's scan reach, 97k points for a graph grown by this version; exact below 97% of the points in scope; else
  the graph with ACORN);
* ``graph``: ``filtered_search="graph"``, Qdrant's own plan (a scan below its full-scan threshold, else the graph
  walk): what the store did before ``filtered_search`` existed;
* ``acorn``: ``filtered_search="acorn"``, Qdrant's plan with ACORN on every filtered graph walk;
* ``exact``: ``exact=True``, every in-scope float vector scored.

The vectors and the store are cached under ``--cache`` (default ``/tmp/rrf_filtered_recall``): a second run
reuses them (``--rebuild`` builds again). Writes
``benchmarks/results/filtered_recall_<vectors>_<N>[_joint][_lazy].json``; the load average is recorded before and
after the build and the measurement (read the latencies as ratios between paths of one run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeHybridStore

SELECTIVITIES = (0.001, 0.01, 0.03, 0.10, 0.35, 0.45, 0.70, 0.95)
TOP = 10
DIM = 384
CHUNK = 10_000
CLUSTERS = 1000


def tag(p: float) -> str:
    """``0.001`` -> ``"0_1"`` (percent, a key without dots: a dot is a nested path in a filter)."""
    return f"{p * 100:g}".replace(".", "_")


def clustered(n: int, rng: np.random.Generator, centers: np.ndarray, spread: float = 0.8) -> tuple[Any, Any]:
    """Unit vectors from a mixture of Gaussian clusters (as ``bench_scale_curve``'s corpus) and each one's cluster."""
    labels = rng.integers(0, len(centers), n)
    out = np.empty((n, centers.shape[1]), dtype=np.float32)
    for i in range(0, n, CHUNK):
        block = centers[labels[i:i + CHUNK]] + spread * rng.normal(size=(len(labels[i:i + CHUNK]), centers.shape[1]))
        out[i:i + CHUNK] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out, labels


def synthetic(n: int, n_queries: int) -> tuple[Any, Any, Any]:
    """Corpus vectors, their clusters and query vectors (drawn from the same mixture, not in the corpus)."""
    centers = np.random.default_rng(99).normal(size=(CLUSTERS, DIM)).astype(np.float32)
    vectors, labels = clustered(n, np.random.default_rng(0), centers)
    queries, _ = clustered(n_queries, np.random.default_rng(5), centers)
    return vectors, labels, queries


def minilm(n: int, n_queries: int) -> tuple[Any, Any, Any]:
    """Real MiniLM vectors of the five collections copied to ``n`` (``common/scaled.py``); each row's "cluster"
    label is its position in the ``clus`` order (:func:`clus_order`), encoded as collection x 10^6 + source row."""
    from benchmarks.common.scaled import five_collections

    got = five_collections(n, n_queries)
    labels = got["collections"].astype(np.int64) * 1_000_000 + got["groups"]
    return got["vectors"], labels, got["queries"]


def clus_order(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows in the ``clus`` order: whole label groups in a random order; for MiniLM labels (collection x 10^6 +
    source row) whole collections in a random order, each one's source documents (with their copies) shuffled."""
    groups = np.unique(labels)
    if labels.max() < 1_000_000:
        picked = rng.permutation(groups)
    else:
        colls = np.unique(groups // 1_000_000)
        picked = np.concatenate([rng.permutation(groups[groups // 1_000_000 == c]) for c in rng.permutation(colls)])
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], picked)
    ends = np.searchsorted(labels[order], picked, side="right")
    return np.concatenate([order[a:b] for a, b in zip(starts, ends)])


def scopes(labels: np.ndarray) -> dict[str, np.ndarray]:
    """The in-scope mask of each filter key: ``rand_<p>`` random documents, ``clus_<p>`` whole clusters."""
    n = len(labels)
    rng = np.random.default_rng(7)
    out: dict[str, np.ndarray] = {}
    order = rng.permutation(n)
    by_cluster = clus_order(labels, rng)
    for p in SELECTIVITIES:
        k = round(p * n)
        for name, chosen in (("rand", order[:k]), ("clus", by_cluster[:k])):
            mask = np.zeros(n, dtype=bool)
            mask[chosen] = True
            out[f"{name}_{tag(p)}"] = mask
    return out


def exact_tops(vectors: np.ndarray, masks: dict[str, np.ndarray], queries: np.ndarray) -> dict[str, np.ndarray]:
    """The exact top :data:`TOP` rows of each query within each mask (and ``"unfiltered"``), as a (queries x TOP)
    array per key (cosine: the vectors are unit vectors). All query scores at once, in blocks of rows."""
    n = len(vectors)
    scores = np.empty((n, len(queries)), dtype=np.float32)
    for i in range(0, n, 100_000):
        scores[i:i + 100_000] = vectors[i:i + 100_000] @ queries.T
    out: dict[str, np.ndarray] = {}
    for key, mask in (("unfiltered", None), *masks.items()):
        rows = np.arange(n) if mask is None else np.flatnonzero(mask)
        sub = scores if mask is None else scores[rows]
        k = min(TOP, len(rows) - 1)
        best = np.argpartition(-sub, k, axis=0)[:TOP]  # (TOP x queries)
        part = np.take_along_axis(sub, best, axis=0)
        best = np.take_along_axis(best, np.argsort(-part, axis=0), axis=0)
        out[key] = rows[best.T]
    return out


def exact_top(vectors: np.ndarray, mask: np.ndarray, query: np.ndarray) -> list[int]:
    """The exact top :data:`TOP` document rows within ``mask`` for one query (``probe_filtered_scan`` uses it)."""
    rows = np.flatnonzero(mask)
    scores = vectors[rows] @ query
    best = np.argpartition(-scores, min(TOP, len(rows) - 1))[:TOP]
    return rows[best[np.argsort(-scores[best])]].tolist()


def open_store(kind: str, path: Path, dim: int, keys: list[str], lazy: bool) -> Any:
    """The store under test: the default dense store, or the joint store (whose dense leg is searched)."""
    emb = HashingEmbedding(dim=dim)
    options: dict[str, Any] = {"index_keys": () if lazy else keys, "max_auto_indexes": len(keys) + 2}
    if kind == "joint":
        return QdrantEdgeHybridStore(emb, path=path, **options)
    return QdrantEdgeDenseStore(emb, path=path, **options)


def build(kind: str, path: Path, vectors: np.ndarray, masks: dict[str, np.ndarray], lazy: bool) -> float:
    """Write the corpus into a new store at ``path`` (chunks of 10k; the dense store's maintenance at the end of
    ``deferred_maintenance``, the joint store's ``optimize()`` after the last chunk); seconds."""
    keys = sorted(masks)
    store = open_store(kind, path, vectors.shape[1], keys, lazy)
    start = time.perf_counter()
    with store:
        with store.deferred_maintenance() if kind == "dense" else contextlib.nullcontext():
            for i in range(0, len(vectors), CHUNK):
                rows = range(i, min(i + CHUNK, len(vectors)))
                metas = [{k: "in" if masks[k][r] else "out" for k in keys} for r in rows]
                store.add([f"d{r}" for r in rows], [""] * len(rows), metas, vectors[i:i + len(rows)])
        if kind == "joint":
            store.optimize()
        index = getattr(store, "index", "Qdrant default (HNSW, float)")
    seconds = time.perf_counter() - start
    print(f"built {len(vectors):,} points in {seconds:.1f} s, index={index}", flush=True)
    return seconds


def measure(store: Any, masks: dict[str, np.ndarray], truths: dict[str, np.ndarray], queries: np.ndarray,
            paths: list[str]) -> dict[str, Any]:
    """Recall and p50 latency of each search path on each filter key (and unfiltered)."""
    results: dict[str, Any] = {}
    n = len(next(iter(masks.values())))
    keys = [None, *sorted(masks, key=lambda k: (k[:4], float(k[5:].replace("_", "."))))]
    search = store.dense.search if isinstance(store, QdrantEdgeHybridStore) else store.search
    for key in keys:
        truth = [set(t.tolist()) for t in truths[key or "unfiltered"]]
        flt = None if key is None else {key: "in"}
        points = n if key is None else int(masks[key].sum())
        row: dict[str, Any] = {"points": points}
        for path in paths:  # warm (and, with --lazy, index the key)
            configure(store, path)
            search(queries[0].tolist(), TOP, filter=flt)
        recalls: dict[str, list[float]] = {p: [] for p in paths}
        times: dict[str, list[float]] = {p: [] for p in paths}
        for i, (q, true) in enumerate(zip(queries, truth)):
            vec = q.tolist()
            for path in paths[i % len(paths):] + paths[:i % len(paths)]:  # interleaved: the same machine load
                configure(store, path)
                start = time.perf_counter()
                hits = search(vec, TOP, filter=flt)
                times[path].append((time.perf_counter() - start) * 1000)
                recalls[path].append(len(true & {int(h.id[1:]) for h in hits}) / len(true))
        for path in paths:
            row[path] = {"recall_mean": round(float(np.mean(recalls[path])), 4),
                         "recall_p5": round(float(np.percentile(recalls[path], 5)), 4),
                         "recall_min": round(float(np.min(recalls[path])), 4),
                         "p50_ms": round(float(np.median(times[path])), 3)}
        configure(store, "default")
        results[key or "unfiltered"] = row
        cells = "  ".join(f"{p}: {row[p]['recall_mean']:.3f}/{row[p]['recall_p5']:.2f} {row[p]['p50_ms']:.1f}ms"
                          for p in paths)
        print(f"{key or 'unfiltered':>10} {row['points']:>7,}  {cells}", flush=True)
    return results


def configure(store: Any, path: str) -> None:
    """Set the store's search path: ``default``, ``graph`` (Qdrant's plan alone), ``acorn`` or ``exact``."""
    store.exact = path == "exact"
    store.filtered_search = path if path in ("graph", "acorn") else "auto"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--vectors", choices=("synthetic", "minilm"), default="synthetic",
                        help="clustered synthetic vectors, or the five collections' real MiniLM vectors (copies)")
    parser.add_argument("--store", choices=("dense", "joint"), default="dense")
    parser.add_argument("--lazy", action="store_true", help="declare no index_keys: queries build the indexes")
    parser.add_argument("--paths", default="default,graph,acorn,exact", help="search paths measured (comma-separated)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rrf_filtered_recall"))
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--truth-only", action="store_true", help="cache the vectors and the exact truth, then stop")
    parser.add_argument("--build-only", action="store_true", help="build the store (and the truth), then stop")
    parser.add_argument("--measured", type=int, default=None,
                        help="measure the first this many of the --queries (the cached truth is for --queries)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    args.cache.mkdir(parents=True, exist_ok=True)
    data = args.cache / f"{args.vectors}_{args.docs}_{args.queries}.npz"
    if data.exists():
        loaded = np.load(data)
        vectors, labels, queries = loaded["vectors"], loaded["labels"], loaded["queries"]
    else:
        vectors, labels, queries = (synthetic if args.vectors == "synthetic" else minilm)(args.docs, args.queries)
        np.savez(data, vectors=vectors, labels=labels, queries=queries)
    masks = scopes(labels)
    truth_file = args.cache / f"truth_{args.vectors}_{args.docs}_{args.queries}.npz"
    if truth_file.exists():
        truths = dict(np.load(truth_file))
    else:
        t0 = time.perf_counter()
        truths = exact_tops(vectors, masks, queries)
        np.savez(truth_file, **truths)
        print(f"exact truth in {time.perf_counter() - t0:.1f} s", flush=True)
    if args.truth_only:
        return
    suffix = f"{'_joint' if args.store == 'joint' else ''}{'_lazy' if args.lazy else ''}"
    where = args.cache / f"store_{args.vectors}_{args.docs}{suffix}"
    build_s = None
    load_before_build = os.getloadavg()
    if args.rebuild and where.exists():
        shutil.rmtree(where)
    if not where.exists():
        build_s = build(args.store, where, vectors, masks, args.lazy)
    if args.build_only:
        return
    if args.measured is not None:
        queries = queries[: args.measured]
        truths = {k: v[: args.measured] for k, v in truths.items()}
    dim = vectors.shape[1]
    del vectors  # the truth is cached: the store alone from here on
    load_before = os.getloadavg()
    with open_store(args.store, where, dim, sorted(masks), args.lazy) as store:
        index = getattr(store, "index", None) or "Qdrant default (HNSW over float vectors)"
        results = measure(store, masks, truths, queries, args.paths.split(","))
    out = {"docs": args.docs, "queries": len(queries), "vectors": args.vectors, "store": type(store).__name__,
           "lazy": args.lazy, "index": index, "build_s": build_s, "store_built_at": time.strftime(
               "%Y-%m-%dT%H:%M:%SZ", time.gmtime((where / "rrf_store.json").stat().st_mtime)), "top": TOP, "selectivities": list(SELECTIVITIES),
           "command": " ".join(["python", *sys.argv]), "code": subprocess.run(
               ["git", "-C", str(Path(__file__).parent), "log", "-1", "--format=%h %s"], capture_output=True,
               text=True, check=False).stdout.strip()[:100],
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load_before_build": load_before_build, "load_before": load_before,
                       "load_avg": os.getloadavg()}, "results": results}
    target = args.out or RESULTS / f"filtered_recall_{args.vectors}_{args.docs}{suffix}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
