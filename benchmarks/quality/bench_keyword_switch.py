"""Should the default keyword leg be the qdrant-edge sparse store? Paired per-query comparison with FTS5 through the
public API on the five collections.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections              # once: cache the MiniLM vectors of all five collections
    .venv/bin/python benchmarks/quality/bench_keyword_switch.py   # writes results/keyword_switch.json (~5 min)

What a user does, twice per collection: ``EnsembleRRFRetriever.from_texts(texts, embedding, ids=ids,
keyword="qdrant-edge" | "fts5")`` then ``invoke(query, top_k=10)`` (ArguAna: the 300-query subset, the query's own
document excluded), as ``bench_defaults_api.py`` does. nDCG@10 per query (ranx); the difference sparse - FTS5 with a
paired bootstrap 95% interval (10,000 resamples of the queries) and how many queries each side wins.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np
from ranx import Qrels, Run, evaluate

from benchmarks.common.beir import COLLECTIONS, load_collection
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import RESULTS
from rrf_retriever import EnsembleRRFRetriever

KINDS = ("qdrant-edge", "fts5")


def per_query_ndcg(name: str) -> dict[str, np.ndarray]:
    c = load_collection(name)
    table = TableEmbedding(c.doc_texts, c.doc_vectors)
    table.add(c.query_texts, c.query_vectors)
    qrels = {q: {d: int(v) for d, v in c.qrels[q].items() if not (c.exclude_self and d == q)} for q in c.query_ids}
    out: dict[str, np.ndarray] = {}
    for kind in KINDS:
        with EnsembleRRFRetriever.from_texts(c.doc_texts, table, ids=c.doc_ids, keyword=kind) as retriever:
            run: dict[str, dict[str, float]] = {}
            for qid, text in zip(c.query_ids, c.query_texts):
                extra = {"exclude_ids": [qid]} if c.exclude_self else {}
                docs = retriever.invoke(text, top_k=10, **extra)
                run[qid] = {d.id: float(len(docs) - i) for i, d in enumerate(docs)} or {"__none__": 0.0}
        out[kind] = np.asarray(evaluate(Qrels(qrels), Run(run), "ndcg@10", return_mean=False))
    return out


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help; no options
    results: dict[str, Any] = {}
    for name in COLLECTIONS:
        scores = per_query_ndcg(name)
        rng = np.random.default_rng(0)
        diff = scores["qdrant-edge"] - scores["fts5"]
        boots = [float(diff[rng.integers(0, len(diff), len(diff))].mean()) for _ in range(10_000)]
        results[name] = {
            "sparse": round(float(scores["qdrant-edge"].mean()), 4), "fts5": round(float(scores["fts5"].mean()), 4),
            "diff": round(float(diff.mean()), 4),
            "ci95": [round(float(np.percentile(boots, 2.5)), 4), round(float(np.percentile(boots, 97.5)), 4)],
            "better": int((diff > 0).sum()), "worse": int((diff < 0).sum()), "n": len(diff),
        }
        print(name, results[name], flush=True)
    (RESULTS / "keyword_switch.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
