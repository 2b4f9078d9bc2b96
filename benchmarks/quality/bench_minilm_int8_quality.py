"""What int8 MiniLM costs in quality: dense leg and hybrid nDCG@10 on the five collections, int8 vs fp32.

``MiniLMEmbedding(precision="int8")`` against the exact fp32 model, on the same texts:

* parity: cosine of each document vector to its fp32 vector (mean / min / 1st percentile) and the mean overlap
  of the dense top-10 (exact cosine search over the corpus) per query;
* quality: nDCG@10 of the dense leg alone (exact search, numpy) and of the hybrid through the public API
  (``EnsembleRRFRetriever.from_texts(texts, embedding, ids=ids).invoke(query, top_k=10)``, as
  ``bench_defaults_api.py`` runs it), each with fp32 and with int8 vectors.

ArguAna: the query's own document excluded, on the fixed 300-query subset (``common/beir.py``). fp32 vectors come
from the shared cache of ``common/beir.py``; int8 vectors are cached beside them (``cached_embed_documents``, keyed by
the model id ``all-MiniLM-L6-v2-int8``). The int8 embedding of the five corpora (~30k passages) took ~18 min at
load average ~10 (SciFact's long passages 11 of them); run it under ``nice`` on a shared machine.

Usage::

    nice .venv/bin/python benchmarks/quality/bench_minilm_int8_quality.py [--collections med cacm ...]

Writes ``benchmarks/results/minilm_int8_quality.json`` (after each collection).
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

from benchmarks.common.beir import COLLECTIONS, load_collection
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import CACHE, RESULTS
from rrf_retriever import EnsembleRRFRetriever, MiniLMEmbedding
from rrf_retriever.embeddings import cached_embed_documents
from rrf_retriever.evaluation import evaluate

OUT = RESULTS / "minilm_int8_quality.json"


def dense_top(doc_vectors: np.ndarray, query_vectors: np.ndarray, doc_ids: list[str], query_ids: list[str],
              exclude_self: bool, k: int = 10) -> dict[str, list[str]]:
    """Exact cosine top-k per query (unit vectors: a dot product), the query's own id dropped if asked."""
    out: dict[str, list[str]] = {}
    scores = query_vectors @ doc_vectors.T
    for row, qid in enumerate(query_ids):
        top = np.argsort(-scores[row], kind="stable")[: k + 1]
        ids = [doc_ids[i] for i in top if not (exclude_self and doc_ids[i] == qid)]
        out[qid] = ids[:k]
    return out


def ndcg(run_ids: dict[str, list[str]], qrels: dict[str, dict[str, int]], exclude_self: bool) -> float:
    run = {q: {d: float(len(ids) - r) for r, d in enumerate(ids)} for q, ids in run_ids.items()}
    return round(evaluate(run, qrels, ("ndcg@10",), ignore_identical_ids=exclude_self)["ndcg@10"], 4)


def hybrid(c: Any, doc_vectors: np.ndarray, query_vectors: np.ndarray) -> tuple[dict[str, list[str]], int]:
    table = TableEmbedding(c.doc_texts, doc_vectors)
    table.add(c.query_texts, query_vectors)
    run: dict[str, list[str]] = {}
    with EnsembleRRFRetriever.from_texts(c.doc_texts, table, ids=c.doc_ids) as retriever:
        for qid, text in zip(c.query_ids, c.query_texts):
            extra = {"exclude_ids": [qid]} if c.exclude_self else {}
            run[qid] = [d.id for d in retriever.invoke(text, top_k=10, **extra)]
    return run, table.misses


def int8_vectors(model: MiniLMEmbedding, name: str) -> tuple[np.ndarray, np.ndarray, float]:
    """int8 vectors of the corpus and of the scored queries (cached); the seconds it took (~0 when cached)."""
    c = load_collection(name, vectors=False)
    t0 = time.perf_counter()
    dv = cached_embed_documents(model, c.doc_texts, CACHE)
    qv = cached_embed_documents(model, c.query_texts, CACHE)
    return dv, qv, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", nargs="+", default=["med", "cacm", "scifact", "npl", "arguana"],
                        choices=COLLECTIONS)
    args = parser.parse_args()
    model = MiniLMEmbedding(precision="int8", show_progress=False)
    results: dict[str, Any] = json.loads(OUT.read_text())["results"] if OUT.is_file() else {}
    int8: dict[str, Any] = {}
    # int8 first for every collection (this benchmark's own work), fp32 after: another process may be warming
    # the shared fp32 cache meanwhile.
    for name in args.collections:
        int8[name] = int8_vectors(model, name)
        print(f"{name}: int8 vectors {int8[name][0].shape} in {int8[name][2]:.0f} s, load {os.getloadavg()[0]:.1f}",
              flush=True)
    for name in args.collections:
        c = load_collection(name)
        dv8, qv8, seconds = int8[name]
        cos = np.sum(c.doc_vectors * dv8, axis=1)
        top32 = dense_top(c.doc_vectors, c.query_vectors, c.doc_ids, c.query_ids, c.exclude_self)
        top8 = dense_top(dv8, qv8, c.doc_ids, c.query_ids, c.exclude_self)
        overlap = float(np.mean([len(set(top32[q]) & set(top8[q])) / 10 for q in c.query_ids]))
        hyb32, miss32 = hybrid(c, c.doc_vectors, c.query_vectors)
        hyb8, miss8 = hybrid(c, dv8, qv8)
        r = {
            "docs": len(c.doc_ids),
            "queries": len(c.query_ids),
            "doc_cosine_to_fp32": {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5),
                                   "p01": round(float(np.percentile(cos, 1)), 5)},
            "dense_top10_overlap": round(overlap, 4),
            "dense_ndcg@10": {"fp32": ndcg(top32, c.qrels, c.exclude_self), "int8": ndcg(top8, c.qrels, c.exclude_self)},
            "hybrid_ndcg@10": {"fp32": ndcg(hyb32, c.qrels, c.exclude_self), "int8": ndcg(hyb8, c.qrels, c.exclude_self)},
            "table_misses": miss32 + miss8,
            "int8_embed_s": round(seconds, 1),
        }
        for leg in ("dense_ndcg@10", "hybrid_ndcg@10"):
            r[leg]["delta"] = round(r[leg]["int8"] - r[leg]["fp32"], 4)
        results[name] = r
        print(name, json.dumps(r), flush=True)
        OUT.write_text(json.dumps({"results": results, "load_avg_end": os.getloadavg()[0]}, indent=2) + "\n")
    rows = ["| collection | docs | mean / min cosine to fp32 | dense top-10 overlap | dense nDCG@10 fp32 / int8 (delta) "
            "| hybrid nDCG@10 fp32 / int8 (delta) |", "|---|---|---|---|---|---|"]
    for name, r in results.items():
        d, h, cs = r["dense_ndcg@10"], r["hybrid_ndcg@10"], r["doc_cosine_to_fp32"]
        rows.append(f"| {name} | {r['docs']} | {cs['mean']:.4f} / {cs['min']:.4f} | {r['dense_top10_overlap']:.3f} | "
                    f"{d['fp32']:.4f} / {d['int8']:.4f} ({d['delta']:+.4f}) | "
                    f"{h['fp32']:.4f} / {h['int8']:.4f} ({h['delta']:+.4f}) |")
    table = "\n".join(rows)
    print(table)
    OUT.write_text(json.dumps({"results": results, "table": table, "load_avg_end": os.getloadavg()[0]}, indent=2)
                   + "\n")


if __name__ == "__main__":
    main()
