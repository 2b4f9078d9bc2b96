"""Filtered recall@10 of the default dense store against exact search on the SAME vectors, at every selectivity.

Usage:
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py                      # 100k clustered synthetic vectors
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py --docs 300000        # or 1000000 (not run yet: hours here)
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py --lazy               # payload indexes made by the queries
    .venv/bin/python benchmarks/scale/bench_filtered_recall.py --vectors minilm     # MiniLM vectors of synthetic texts

The store is :class:`~rrf_retriever.stores.qdrant.QdrantEdgeDenseStore` with its defaults (``index="int8"``; at
100k points the shard grows its HNSW graph, kind ``"int8-hnsw"``), written in chunks of 10k inside
``deferred_maintenance`` as the engine writes an add. Each document carries two keyword keys per selectivity
``p`` (0.1%, 1%, 3%, 10%, 35%, 45%, 70%, 95%), ``"in"`` on exactly ``p`` x N documents:

* ``rand_<p>``: documents drawn at random (the scope is spread over every cluster);
* ``clus_<p>``: whole clusters, in a random order (the scope is a region of the space: a tenant whose documents
  are about its own topics; the hard case for a graph walk, whose query often lies outside the scope).

By default the keys are declared (``index_keys=``): their payload indexes exist before the first point is written,
so before the graph. ``--lazy`` declares none: the first filtered query on a key builds its index (after the
graph), within ``max_auto_indexes`` (raised to cover the 16 keys).

Truth: numpy brute-force cosine over the in-scope vectors (float32, the same unit vectors the store holds).
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
reuses them (``--rebuild`` builds again). Writes ``benchmarks/results/filtered_recall_<vectors>_<N>[_lazy].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

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
    """MiniLM vectors of synthetic texts: each text mixes words of one of 1,000 topics (its "cluster")."""
    from rrf_retriever.embeddings import MiniLMEmbedding

    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, int(rng.integers(3, 9)))) for _ in range(20_000)]
    topics = rng.integers(0, len(vocab), size=(CLUSTERS, 40))
    labels = rng.integers(0, CLUSTERS, n + n_queries)
    texts = [" ".join(vocab[w] for w in rng.choice(topics[t], 12)) for t in labels]
    model = MiniLMEmbedding()
    vectors = np.asarray(model.embed_documents(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors[:n], labels[:n], vectors[n:]


def scopes(labels: np.ndarray) -> dict[str, np.ndarray]:
    """The in-scope mask of each filter key: ``rand_<p>`` random documents, ``clus_<p>`` whole clusters."""
    n = len(labels)
    rng = np.random.default_rng(7)
    out: dict[str, np.ndarray] = {}
    order = rng.permutation(n)
    by_cluster = np.concatenate([np.flatnonzero(labels == c) for c in rng.permutation(int(labels.max()) + 1)])
    for p in SELECTIVITIES:
        k = round(p * n)
        for name, chosen in (("rand", order[:k]), ("clus", by_cluster[:k])):
            mask = np.zeros(n, dtype=bool)
            mask[chosen] = True
            out[f"{name}_{tag(p)}"] = mask
    return out


def exact_top(vectors: np.ndarray, mask: np.ndarray, query: np.ndarray) -> list[int]:
    """The exact top :data:`TOP` document rows within ``mask`` (cosine: the vectors are unit vectors)."""
    rows = np.flatnonzero(mask)
    scores = vectors[rows] @ query
    best = np.argpartition(-scores, min(TOP, len(rows) - 1))[:TOP]
    return rows[best[np.argsort(-scores[best])]].tolist()


def build(path: Path, vectors: np.ndarray, masks: dict[str, np.ndarray], lazy: bool) -> float:
    """Write the corpus into a new default store at ``path`` (chunks of 10k, maintenance at the end); seconds."""
    keys = sorted(masks)
    store = QdrantEdgeDenseStore(HashingEmbedding(dim=vectors.shape[1]), path=path,
                                 index_keys=() if lazy else keys, max_auto_indexes=len(keys) + 2)
    start = time.perf_counter()
    with store:
        with store.deferred_maintenance():
            for i in range(0, len(vectors), CHUNK):
                rows = range(i, min(i + CHUNK, len(vectors)))
                metas = [{k: "in" if masks[k][r] else "out" for k in keys} for r in rows]
                store.add([f"d{r}" for r in rows], [""] * len(rows), metas, vectors[i:i + len(rows)])
        index = store.index
    seconds = time.perf_counter() - start
    print(f"built {len(vectors):,} points in {seconds:.1f} s, index={index}", flush=True)
    return seconds


def measure(store: Any, vectors: np.ndarray, masks: dict[str, np.ndarray], queries: np.ndarray,
            paths: list[str]) -> dict[str, Any]:
    """Recall and p50 latency of each search path on each filter key (and unfiltered)."""
    results: dict[str, Any] = {}
    everything = np.ones(len(vectors), dtype=bool)
    keys = [None, *sorted(masks, key=lambda k: (k[:4], float(k[5:].replace("_", "."))))]
    for key in keys:
        mask = everything if key is None else masks[key]
        truth = [set(exact_top(vectors, mask, q)) for q in queries]
        flt = None if key is None else {key: "in"}
        row: dict[str, Any] = {"points": int(mask.sum())}
        for path in paths:  # warm (and, with --lazy, index the key)
            configure(store, path)
            store.search(queries[0].tolist(), TOP, filter=flt)
        recalls: dict[str, list[float]] = {p: [] for p in paths}
        times: dict[str, list[float]] = {p: [] for p in paths}
        for i, (q, true) in enumerate(zip(queries, truth)):
            vec = q.tolist()
            for path in paths[i % len(paths):] + paths[:i % len(paths)]:  # interleaved: the same machine load
                configure(store, path)
                start = time.perf_counter()
                hits = store.search(vec, TOP, filter=flt)
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
    parser.add_argument("--vectors", choices=("synthetic", "minilm"), default="synthetic")
    parser.add_argument("--lazy", action="store_true", help="declare no index_keys: queries build the indexes")
    parser.add_argument("--paths", default="default,graph,acorn,exact", help="search paths measured (comma-separated)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rrf_filtered_recall"))
    parser.add_argument("--rebuild", action="store_true")
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
    where = args.cache / f"store_{args.vectors}_{args.docs}{'_lazy' if args.lazy else ''}"
    build_s = None
    if args.rebuild and where.exists():
        shutil.rmtree(where)
    if not where.exists():
        build_s = build(where, vectors, masks, args.lazy)
    with QdrantEdgeDenseStore(HashingEmbedding(dim=vectors.shape[1]), path=where,
                              max_auto_indexes=len(masks) + 2) as store:
        index = store.index
        results = measure(store, vectors, masks, queries, args.paths.split(","))
    out = {"docs": args.docs, "queries": args.queries, "vectors": args.vectors, "lazy": args.lazy,
           "index": index, "build_s": build_s, "top": TOP, "selectivities": list(SELECTIVITIES),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load_avg": os.getloadavg()}, "results": results}
    target = args.out or RESULTS / f"filtered_recall_{args.vectors}_{args.docs}{'_lazy' if args.lazy else ''}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
