"""The shipped defaults through the public API on the five collections, beside the best anchor hybrid.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections            # once: cache the MiniLM vectors of all five collections
    .venv/bin/python benchmarks/quality/bench_collections.py    # once: the anchors (writes results/loco.json)
    .venv/bin/python benchmarks/quality/bench_defaults_api.py   # this: writes results/defaults_api.json
    .venv/bin/python benchmarks/quality/bench_defaults_api.py --keyword fts5 --out defaults_api_fts5.json   # a keyword leg

What a new user does: ``EnsembleRRFRetriever.from_texts(texts, embedding, ids=ids)`` (texts only: title + text as
one string, nothing in the metadata), then ``invoke(query, top_k=...)``, with the cached MiniLM vectors. Two
protocols: ``top_k=10`` (what a RAG chain asks; nDCG@10, MRR@10) and ``top_k=100`` (the issue's protocol; R@100 too).
ArguAna: the query's own document excluded (``exclude_ids=[qid]``) and scored on the fixed 300-query subset, as the
anchors are. The best anchor per collection is read from ``results/loco.json`` (bench_collections.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.beir import COLLECTIONS, load_collection
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import RESULTS
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.evaluation import evaluate


def run_collection(name: str, keyword: str | None = None) -> dict[str, Any]:
    c = load_collection(name)
    table = TableEmbedding(c.doc_texts, c.doc_vectors)
    table.add(c.query_texts, c.query_vectors)
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    kwargs = {} if keyword is None else {"keyword": keyword}
    with EnsembleRRFRetriever.from_texts(c.doc_texts, table, ids=c.doc_ids, **kwargs) as retriever:
        build_s = time.perf_counter() - t0
        out["keyword_store"] = type(retriever.engine.legs["keyword"].store).__name__
        for top_k in (10, 100):
            run: dict[str, dict[str, float]] = {}
            for qid, text in zip(c.query_ids, c.query_texts):
                extra = {"exclude_ids": [qid]} if c.exclude_self else {}
                docs = retriever.invoke(text, top_k=top_k, **extra)
                run[qid] = {d.id: float(len(docs) - rank) for rank, d in enumerate(docs)}
            metrics = ("ndcg@10", "mrr@10") if top_k == 10 else ("ndcg@10", "recall@100")
            scores = evaluate(run, c.qrels, metrics, ignore_identical_ids=c.exclude_self)
            out[f"top_k={top_k}"] = {m: round(v, 4) for m, v in scores.items()}
    out["build_s"] = round(build_s, 1)
    out["queries"] = len(c.query_ids)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keyword", default=None, help="keyword store kind (default: from_texts's own)")
    parser.add_argument("--out", default="defaults_api.json")
    args = parser.parse_args()
    anchors_file = RESULTS / "loco.json"
    block = json.loads(anchors_file.read_text())["blocks"]["proposed"]
    results: dict[str, Any] = {}
    for name in COLLECTIONS:
        results[name] = run_collection(name, args.keyword)
        results[name]["best_anchor"] = block[name]["best_anchor"]
        results[name]["best_anchor_ndcg@10"] = round(block[name]["best_anchor_ndcg@10"], 4)
        print(name, json.dumps(results[name]), flush=True)
    rows = ["| collection | queries | ours top_k=10 | ours top_k=100 | best anchor | margin (top_k=10) | margin (top_k=100) |",
            "|---|---|---|---|---|---|---|"]
    margins10, margins100 = [], []
    for name, r in results.items():
        a = r["best_anchor_ndcg@10"]
        m10, m100 = r["top_k=10"]["ndcg@10"] - a, r["top_k=100"]["ndcg@10"] - a
        margins10.append(m10)
        margins100.append(m100)
        rows.append(f"| {name} | {r['queries']} | {r['top_k=10']['ndcg@10']:.4f} | {r['top_k=100']['ndcg@10']:.4f} | "
                    f"{a:.4f} ({r['best_anchor']}) | {m10:+.4f} | {m100:+.4f} |")
    rows.append(f"| mean margin | | | | | {sum(margins10) / 5:+.4f} | {sum(margins100) / 5:+.4f} |")
    table = "\n".join(rows)
    print(table)
    (RESULTS / args.out).write_text(json.dumps({"results": results, "table": table}, indent=2) + "\n")


if __name__ == "__main__":
    main()
