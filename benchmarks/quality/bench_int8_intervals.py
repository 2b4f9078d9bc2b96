"""int8 MiniLM against fp32 per query: hybrid (the shipped defaults, through the public API) and dense nDCG@10 on
the five collections, with paired bootstrap 95% intervals of int8 - fp32: the evidence for the default embedder.

Usage:
    nice .venv/bin/python benchmarks/quality/bench_int8_intervals.py [--collections med cacm ...]

fp32 vectors from ``common/beir.py``'s cache; int8 vectors from ``cached_embed_documents`` (cached beside them, model id
``all-MiniLM-L6-v2-int8``: computed once, ~18 min for the ~30k passages at load ~10). Hybrid:
``EnsembleRRFRetriever.from_texts(texts, table, ids=ids).invoke(query, top_k=10)`` (today's default stack: sparse
BM25 + int8-scanned dense on qdrant-edge), once with each model's vectors; dense: exact cosine top-10 (numpy).
ArguAna: the query's own document excluded, the fixed 300-query subset. Paired bootstrap: 10,000 resamples of the
queries (``bench_collections.bootstrap_ci``). Writes ``benchmarks/results/minilm_int8_intervals.json`` after each
collection.
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

import numpy as np
from ranx import Qrels, Run, evaluate

from benchmarks.common.beir import COLLECTIONS, load_collection
from benchmarks.common.collection_fusion import bootstrap_ci
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import CACHE, RESULTS
from benchmarks.quality.bench_minilm_int8_quality import dense_top
from rrf_retriever import EnsembleRRFRetriever, MiniLMEmbedding
from rrf_retriever.embeddings import cached_embed_documents

OUT = RESULTS / "minilm_int8_intervals.json"


def per_query(run: dict[str, list[str]], c: Any) -> np.ndarray:
    qrels = {q: {d: int(v) for d, v in c.qrels[q].items() if not (c.exclude_self and d == q)} for q in c.query_ids}
    scored = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} or {"__none__": 0.0} for q, ids in run.items()}
    return np.asarray(evaluate(Qrels(qrels), Run(scored), "ndcg@10", return_mean=False))


def hybrid_run(c: Any, doc_vectors: np.ndarray, query_vectors: np.ndarray) -> dict[str, list[str]]:
    table = TableEmbedding(c.doc_texts, doc_vectors)
    table.add(c.query_texts, query_vectors)
    run: dict[str, list[str]] = {}
    with EnsembleRRFRetriever.from_texts(c.doc_texts, table, ids=c.doc_ids) as retriever:
        for qid, text in zip(c.query_ids, c.query_texts):
            extra = {"exclude_ids": [qid]} if c.exclude_self else {}
            run[qid] = [d.id for d in retriever.invoke(text, top_k=10, **extra)]
    return run


def summary(fp32: np.ndarray, int8: np.ndarray) -> dict[str, Any]:
    diff = int8 - fp32
    lo, hi = bootstrap_ci(diff)
    return {"fp32": round(float(fp32.mean()), 4), "int8": round(float(int8.mean()), 4),
            "delta": round(float(diff.mean()), 4), "ci95": [round(lo, 4), round(hi, 4)],
            "better": int((diff > 0).sum()), "worse": int((diff < 0).sum()), "n": len(diff)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS), choices=COLLECTIONS)
    args = parser.parse_args()
    model = MiniLMEmbedding(precision="int8", show_progress=False)
    results: dict[str, Any] = json.loads(OUT.read_text())["results"] if OUT.is_file() else {}
    for name in args.collections:
        t0 = time.perf_counter()
        c8 = load_collection(name, vectors=False)
        dv8 = cached_embed_documents(model, c8.doc_texts, CACHE)
        qv8 = cached_embed_documents(model, c8.query_texts, CACHE)
        embed_s = time.perf_counter() - t0
        c = load_collection(name)
        dv8, qv8 = np.asarray(dv8, dtype=np.float32), np.asarray(qv8, dtype=np.float32)
        h32, h8 = per_query(hybrid_run(c, c.doc_vectors, c.query_vectors), c), per_query(hybrid_run(c, dv8, qv8), c)
        d32 = per_query(dense_top(c.doc_vectors, c.query_vectors, c.doc_ids, c.query_ids, c.exclude_self), c)
        d8 = per_query(dense_top(dv8, qv8, c.doc_ids, c.query_ids, c.exclude_self), c)
        results[name] = {"docs": len(c.doc_ids), "hybrid_ndcg@10": summary(h32, h8), "dense_ndcg@10": summary(d32, d8),
                         "int8_embed_s": round(embed_s, 1), "load": [round(x, 2) for x in os.getloadavg()],
                         "per_query": {"hybrid_fp32": h32.round(4).tolist(), "hybrid_int8": h8.round(4).tolist()}}
        print(name, {k: v for k, v in results[name].items() if k != "per_query"}, flush=True)
        OUT.write_text(json.dumps({"results": results}, indent=2) + "\n")
    done = [r for r in results.values() if "hybrid_ndcg@10" in r]
    if done:
        mean = float(np.mean([r["hybrid_ndcg@10"]["delta"] for r in done]))
        OUT.write_text(json.dumps({"results": results, "mean_hybrid_delta": round(mean, 4)}, indent=2) + "\n")
        print(f"mean hybrid delta over {len(done)} collections: {mean:+.4f}")


if __name__ == "__main__":
    main()
