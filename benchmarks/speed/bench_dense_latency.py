"""Dense store query latency at scale, and HNSW recall on real embeddings.

Part 1 (scale): N random unit vectors of dimension 384 (N = 10k and 100k) with metadata
``{"session_id": i % 100}``; queries are random unit vectors. Per store, p50 / p95 latency of
``search(vector, 10)`` without a filter and with ``filter={"session_id": [0..9]}`` (10 % of the points):

* ``edge-exact``  QdrantEdgeDenseStore, exact search (plain segments, the default before ``optimize()``),
* ``edge-hnsw``   the same store after ``optimize()`` (HNSW index built in-process),
* ``qdrant-local`` QdrantDenseStore on qdrant-client's local mode (``:memory:``).

Part 2 (recall): SciFact + ArguAna MiniLM vectors (cached) as one corpus, their queries; recall@10 of
edge-hnsw against exact search.

Usage::

    .venv/bin/python benchmarks/speed/bench_dense_latency.py [--sizes 10000 100000] [--queries 200]

Writes ``benchmarks/results/dense_latency.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.paths import CACHE, RESULTS
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

DIM = 384
FILTER = {"session_id": list(range(10))}


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _latency(store: Any, queries: np.ndarray, flt: dict[str, Any] | None) -> dict[str, float]:
    for q in queries[:5]:
        store.search(q.tolist(), 10, filter=flt)
    times = []
    for q in queries:
        vec = q.tolist()
        t = time.perf_counter()
        store.search(vec, 10, filter=flt)
        times.append(1000 * (time.perf_counter() - t))
    times.sort()
    return {"p50_ms": round(float(np.median(times)), 2), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}


def scale(n: int, n_queries: int, tmp: Path, hnsw_max: int) -> dict[str, Any]:
    rng = np.random.default_rng(n)
    vectors = _unit(rng, n)
    queries = _unit(rng, n_queries)
    ids = [f"d{i}" for i in range(n)]
    metas = [{"session_id": i % 100} for i in range(n)]
    texts = [""] * n
    out: dict[str, Any] = {}
    emb = HashingEmbedding(dim=DIM)

    edge = QdrantEdgeDenseStore(emb, path=tmp / f"edge-{n}")
    t = time.perf_counter()
    edge.add(ids, texts, metas, vectors=vectors)
    build = time.perf_counter() - t
    out["edge-exact"] = {"add_s": round(build, 1), "no_filter": _latency(edge, queries, None),
                         "filter_10pct": _latency(edge, queries, FILTER)}
    if n > hnsw_max:
        edge.close()
        print(n, "edge", json.dumps(out["edge-exact"]))
        return _local(n, n_queries, ids, texts, metas, vectors, queries, emb, out)
    t = time.perf_counter()
    edge.optimize()
    out["edge-hnsw"] = {"optimize_s": round(time.perf_counter() - t, 1),
                        "indexed_vectors": edge.count() - edge.unoptimized_points(),
                        "no_filter": _latency(edge, queries, None),
                        "filter_10pct": _latency(edge, queries, FILTER)}
    edge.close()
    print(n, "edge", json.dumps({k: out[k] for k in ("edge-exact", "edge-hnsw")}))
    return _local(n, n_queries, ids, texts, metas, vectors, queries, emb, out)


def _local(
    n: int, n_queries: int, ids: list[str], texts: list[str], metas: list[dict[str, Any]],
    vectors: np.ndarray, queries: np.ndarray, emb: HashingEmbedding, out: dict[str, Any],
) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # local mode warns above 20,000 points: that is what we measure
        local = QdrantDenseStore(emb)
        t = time.perf_counter()
        local.add(ids, texts, metas, vectors=vectors)
        build = time.perf_counter() - t
        nq = n_queries if n <= 20_000 else 10  # seconds per filtered query at 100k
        out["qdrant-local"] = {"add_s": round(build, 1), "queries": nq,
                               "no_filter": _latency(local, queries[:nq], None),
                               "filter_10pct": _latency(local, queries[:nq], FILTER)}
        local.close()
    print(n, "qdrant-local", json.dumps(out["qdrant-local"]))
    return out


def hnsw_recall(tmp: Path, n_queries: int) -> dict[str, Any]:
    from benchmarks.common.beir import read_beir
    from rrf_retriever.embeddings import MiniLMEmbedding, cached_embed_documents
    from rrf_retriever.evaluation import doc_text

    model = MiniLMEmbedding(show_progress=True, precision="fp32")
    corpora, query_sets = [], []
    for name in ("scifact", "arguana"):  # cached by bench_dense_quality.py; computed here otherwise
        ds = read_beir(name)
        corpora.append(cached_embed_documents(model, [doc_text(d) for d in ds.corpus.values()], CACHE))
        query_sets.append(cached_embed_documents(model, list(ds.queries.values()), CACHE))
    corpus = np.concatenate(corpora)
    queries = np.concatenate(query_sets)[:n_queries]
    ids = [f"d{i}" for i in range(len(corpus))]
    emb = HashingEmbedding(dim=DIM)
    exact = QdrantEdgeDenseStore(emb, path=tmp / "recall", exact=True)
    exact.add(ids, [""] * len(ids), vectors=corpus)
    truth = [[h.id for h in exact.search(q.tolist(), 10)] for q in queries]
    exact.optimize()
    indexed = exact.count() - exact.unoptimized_points()
    exact.exact = False
    approx = [[h.id for h in exact.search(q.tolist(), 10)] for q in queries]
    lat = _latency(exact, queries, None)
    exact.close()
    recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(approx, truth)]))
    result = {"corpus": len(corpus), "queries": len(queries), "indexed_vectors": indexed,
              "recall@10_vs_exact": round(recall, 4), "hnsw_latency": lat}
    print("hnsw recall", json.dumps(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-recall", action="store_true", help="skip part 2 (needs the MiniLM corpus vectors)")
    parser.add_argument("--hnsw-max", type=int, default=1_000_000, help="build HNSW only up to this size")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            results[str(n)] = scale(n, args.queries, Path(tmp), args.hnsw_max)
            _save(results)
        if not args.no_recall:
            results["hnsw_recall_real_embeddings"] = hnsw_recall(Path(tmp), 1000)
            _save(results)


def _save(results: dict[str, Any]) -> None:
    target = RESULTS / "dense_latency.json"
    merged = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else {}  # keep other sizes
    merged.update(results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(merged, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
