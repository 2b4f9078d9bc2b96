"""Fusion methods side by side on the same legs: weighted RRF (the default) vs relative-score fusion vs DBSF.

Run: .venv/bin/python benchmarks/quality/bench_fusion_methods.py [--datasets scifact arguana] [--depth 200]

Each leg (qdrant-edge dense over the cached MiniLM vectors; FTS5 flat, and the default FTS5 store with the title in
the metadata: its own field of weight 2) runs once per query at ``--depth``; every fusion method (RRF with k=60 and
with the default k=2, relative-score, DBSF) then fuses the same hits with the library's own
functions (what ``HybridEngine(fusion=...)`` does with ``top_k=100``, ``fetch_k=200``). Reports nDCG@10 on SciFact
train and test and ArguAna test (ArguAna: the query's own document excluded inside the stores). Writes
``benchmarks/results/fusion_methods.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.beir import Bundle, load_bundle
from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from rrf_retriever.evaluation import evaluate
from rrf_retriever.fusion import DEFAULT_RRF_K, distribution_based_score_fusion, relative_score_fusion, weighted_rrf
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore
from rrf_retriever.types import Hit

METHODS: dict[str, Callable[..., list]] = {
    "rrf (k=60)": lambda ranked, w: weighted_rrf(ranked, w, k=60, limit=100),
    "rrf (k=2, the default)": lambda ranked, w: weighted_rrf(ranked, w, k=DEFAULT_RRF_K, limit=100),
    "relative_score": lambda ranked, w: relative_score_fusion(ranked, w, limit=100),
    "dbsf": lambda ranked, w: distribution_based_score_fusion(ranked, w, limit=100),
}


def leg_runs(b: Bundle, depth: int) -> dict[str, dict[str, list[Hit]]]:
    def excl(qid: str) -> list[str] | None:
        return [qid] if b.exclude_self else None

    with tempfile.TemporaryDirectory() as tmp:
        dense = QdrantEdgeDenseStore(PrecomputedEmbedding(b.doc_texts, b.doc_vectors), path=tmp)
        dense.add(b.doc_ids, b.doc_texts, vectors=b.doc_vectors)
        runs = {"dense": {q: dense.search(v, depth, exclude_ids=excl(q)) for q, v in zip(b.query_ids, b.query_vectors)}}
        dense.close()
    titles = [{"title": b.ds.corpus[i]["title"]} for i in b.doc_ids]
    variants = {
        "fts5 flat": (FTS5KeywordStore(fields=("text",)), b.doc_texts, None),
        "fts5 default (title field x2)": (FTS5KeywordStore(), b.doc_texts, titles),
    }
    for name, (store, texts, metas) in variants.items():
        store.add(b.doc_ids, texts, metas)
        runs[name] = {q: store.search(t, depth, exclude_ids=excl(q)) for q, t in zip(b.query_ids, b.query_texts)}
    return runs


def score(b: Bundle, runs: Mapping[str, Mapping[str, list[Hit]]], keyword: str, method: str, kw_weight: float) -> float:
    fuse = METHODS[method]
    run = {}
    for q in b.query_ids:
        hits = fuse({"dense": runs["dense"][q], "keyword": runs[keyword][q]}, {"dense": 1.0, "keyword": kw_weight})
        run[q] = {h.id: float(100 - r) for r, h in enumerate(hits)}
    return round(evaluate(run, b.ds.qrels, ("ndcg@10",), ignore_identical_ids=True)["ndcg@10"], 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", nargs="+", default=["scifact", "arguana"])
    parser.add_argument("--depth", type=int, default=200)
    args = parser.parse_args()
    sets = [(d, s) for d in args.datasets for s in (("train", "test") if d == "scifact" else ("test",))]
    out: dict[str, dict[str, float]] = {}
    for name, split in sets:
        b = load_bundle(name, split)
        runs = leg_runs(b, args.depth)
        rows = {}
        for keyword in ("fts5 flat", "fts5 default (title field x2)"):
            for kw_weight in (1.0, 1.25, 1.5):
                for method in METHODS:
                    rows[f"{method} | {keyword} | keyword weight {kw_weight:g}"] = score(b, runs, keyword, method, kw_weight)
        out[f"{name}-{split}"] = rows
        print(f"\n{name} {split} (nDCG@10, {len(b.query_ids)} queries)")
        for label, value in rows.items():
            print(f"  {label:<72} {value:.4f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fusion_methods.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
