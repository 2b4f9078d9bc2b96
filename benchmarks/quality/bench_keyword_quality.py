"""Keyword-store quality on BEIR SciFact and ArguAna: nDCG@10, Recall@100, MRR@10 per store and mode.

Usage:
    .venv/bin/python benchmarks/quality/bench_keyword_quality.py                 # test split, every config
    .venv/bin/python benchmarks/quality/bench_keyword_quality.py --split train --datasets scifact   # tuning (SciFact train)

ArguAna: the query's own document is excluded inside the store (``exclude_ids=[query_id]``), as every published
figure does (BEIR ``ignore_identical_ids``, Anserini ``-removeQuery``). Results go to
``benchmarks/results/keyword_quality_<split>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.beir import read_beir
from benchmarks.common.paths import RESULTS
from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.evaluation import doc_text, evaluate
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore

PUBLISHED = {"scifact": 0.679, "arguana": 0.414}  # Lucene BM25 (flat / multifield best), BASELINES.md


def _flat(ds: Any) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    ids = list(ds.corpus)
    return ids, [doc_text(ds.corpus[i]) for i in ids], [{} for _ in ids]


def _fielded(ds: Any) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    ids = list(ds.corpus)
    return ids, [ds.corpus[i]["text"] for i in ids], [{"title": ds.corpus[i]["title"]} for i in ids]


# name -> (store factory, corpus layout)
CONFIGS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "fts5 flat or (default)": (lambda: FTS5KeywordStore(), _flat),
    "fts5 flat and_or": (lambda: FTS5KeywordStore(mode="and_or"), _flat),
    "fts5 flat or, no stopwords": (lambda: FTS5KeywordStore(analyzer=Analyzer(stopwords=())), _flat),
    "fts5 title+text w=1,1": (lambda: FTS5KeywordStore(fields=("title", "text")), _fielded),
    "fts5 title+text w=2,1": (
        lambda: FTS5KeywordStore(fields=("title", "text"), field_weights={"title": 2.0}),
        _fielded,
    ),
    "bm25s k1=1.2 b=0.75 (default)": (lambda: BM25KeywordStore(), _flat),
    "bm25s k1=0.9 b=0.4 (Anserini)": (lambda: BM25KeywordStore(k1=0.9, b=0.4), _flat),
    "bm25s k1=1.5 b=0.75": (lambda: BM25KeywordStore(k1=1.5, b=0.75), _flat),
    "bm25s k1=1.2 b=0.75, no stopwords": (lambda: BM25KeywordStore(analyzer=Analyzer(stopwords=())), _flat),
    "rank_bm25 (LangChain parity)": (lambda: BM25KeywordStore(engine="rank_bm25"), _flat),
}


def run_config(name: str, dataset: str, split: str) -> dict[str, Any]:
    factory, layout = CONFIGS[name]
    ds = read_beir(dataset, split=split)
    store = factory()
    ids, texts, metas = layout(ds)
    t0 = time.perf_counter()
    for start in range(0, len(ids), 5000):
        store.add(ids[start : start + 5000], texts[start : start + 5000], metas[start : start + 5000])
    if isinstance(store, FTS5KeywordStore):
        store.optimize()
    build_s = time.perf_counter() - t0
    exclude_self = dataset == "arguana"
    run: dict[str, dict[str, float]] = {}
    t0 = time.perf_counter()
    for qid, text in ds.queries.items():
        hits = store.search(text, 100, exclude_ids=[qid] if exclude_self else None)
        # Rank-based scores: and_or concatenates two passes whose raw scores are not comparable.
        run[qid] = {h.id: float(100 - r) for r, h in enumerate(hits)}
    query_s = time.perf_counter() - t0
    metrics = evaluate(run, ds.qrels, ignore_identical_ids=True)
    return {
        "config": name,
        "dataset": dataset,
        "split": split,
        **{k: round(v, 4) for k, v in metrics.items()},
        "build_s": round(build_s, 2),
        "ms_per_query": round(1000 * query_s / max(1, len(ds.queries)), 2),
        "queries": len(ds.queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["scifact", "arguana"])
    parser.add_argument("--split", default="test")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), help="config names (default: all)")
    args = parser.parse_args()
    rows = []
    for dataset in args.datasets:
        for name in args.configs:
            row = run_config(name, dataset, args.split)
            rows.append(row)
            print(
                f"{dataset:8s} {args.split:5s} {name:36s} nDCG@10={row['ndcg@10']:.4f} R@100={row['recall@100']:.4f} "
                f"MRR@10={row['mrr@10']:.4f}  build {row['build_s']:.1f}s  {row['ms_per_query']:.1f} ms/q",
                flush=True,
            )
        print(f"{dataset}: published Lucene BM25 nDCG@10 = {PUBLISHED[dataset]}")
    out = RESULTS / f"keyword_quality_{args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
