"""The keyword leg's ``short_query_terms`` through the public API on the ten collections, chosen leave-one-out.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections more   # once: the MiniLM vectors of all ten
    .venv/bin/python benchmarks/quality/bench_short_query_terms.py         # writes results/short_query_terms.json
    .venv/bin/python benchmarks/quality/bench_short_query_terms.py --collections med cacm --values 0 20

``short_query_terms`` (``rrf_retriever/stores/qdrant/bm25_params.py``): "a query of at most this many distinct
terms counts each term once (0: never)"; the shipped default is ``DEFAULT_SHORT_QUERY_TERMS``. What a user does:
``EnsembleRRFRetriever.from_texts(texts, embedding, ids=ids)`` (texts only, the cached MiniLM vectors through
:class:`~benchmarks.common.embedders.TableEmbedding`), then ``invoke(query, top_k=10)``; nDCG@10 per query. A value
is given the public way, as the keyword store ``from_texts`` builds by default (``QdrantEdgeKeywordStore``) with
that setting and the analyzer the default retriever chose for the corpus (``keyword=QdrantEdgeKeywordStore(
analyzer=..., short_query_terms=v)``); the default value given that way is checked to rank every query exactly as
the plain default does. ArguAna: the query's own document excluded, the fixed 300-query subset (as
``bench_defaults_api.py``).

Per collection: each value's nDCG@10, its paired difference from the default with a per-query bootstrap 95%
interval (10,000 resamples, seed 0), and how many queries it changes (a repeated term in a query of at most that
many distinct terms). Leave-one-collection-out: for each collection left out, the value with the best mean gain over
the default on the other nine among the values that lose at most :data:`TOLERANCE` on every one of them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import ALL_COLLECTIONS, Collection, load_collection
from benchmarks.common.collection_fusion import Scorer, bootstrap_ci
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import RESULTS
from rrf_retriever import EnsembleRRFRetriever, QdrantEdgeKeywordStore
from rrf_retriever.evaluation import evaluate

VALUES = (0, 10, 20, 40)
TOLERANCE = 0.005
TOP_K = 10


def _ranked(retriever: Any, c: Collection) -> dict[str, list[str]]:
    out = {}
    for qid, text in zip(c.query_ids, c.query_texts):
        extra = {"exclude_ids": [qid]} if c.exclude_self else {}
        out[qid] = [d.id for d in retriever.invoke(text, top_k=TOP_K, **extra)]
    return out


def _changed(analyzer: Any, c: Collection, value: int) -> int:
    """Queries whose keyword vector this value changes against raw counts: a repeat within <= value distinct terms."""
    n = 0
    for text in c.query_texts:
        terms = analyzer.analyze_query(text)
        n += len(set(terms)) < len(terms) and len(set(terms)) <= value
    return n


def run_collection(name: str, values: tuple[int, ...]) -> dict[str, Any]:
    c = load_collection(name)
    table = TableEmbedding(c.doc_texts, c.doc_vectors)
    table.add(c.query_texts, c.query_vectors)
    scorer = Scorer(c)
    pos = {d: i for i, d in enumerate(c.doc_ids)}
    t0 = time.perf_counter()
    with EnsembleRRFRetriever.from_texts(c.doc_texts, table, ids=c.doc_ids) as retriever:
        store = retriever.engine.legs["keyword"].store
        analyzer, default = store.analyzer, store.short_query_terms
        kind = type(store).__name__
        runs: dict[int | str, dict[str, list[str]]] = {"default": _ranked(retriever, c)}
    for v in values:
        kw = QdrantEdgeKeywordStore(analyzer=analyzer, short_query_terms=v)
        with EnsembleRRFRetriever.from_texts(c.doc_texts, table, ids=c.doc_ids, keyword=kw) as retriever:
            runs[v] = _ranked(retriever, c)
    per_query: dict[int | str, np.ndarray] = {k: np.array([scorer.ndcg10(i, [pos[d] for d in run[q]]) for i, q in enumerate(c.query_ids)])
                 for k, run in runs.items()}
    for k, run in runs.items():  # the per-query scorer agrees with ranx
        ranx = evaluate({q: {d: float(len(r) - j) for j, d in enumerate(r)} for q, r in run.items()}, c.qrels,
                        ("ndcg@10",), ignore_identical_ids=c.exclude_self)["ndcg@10"]
        assert abs(ranx - per_query[k].mean()) < 6e-5, (name, k, ranx, per_query[k].mean())
    same = sum(runs[default][q] == runs["default"][q] for q in c.query_ids) if default in runs else None
    base = per_query["default"]
    out: dict[str, Any] = {
        "queries": len(c.query_ids), "keyword_store": kind, "default_short_query_terms": default,
        "analyzer_language": getattr(analyzer, "language", None), "default_ndcg@10": round(float(base.mean()), 4),
        "default_given_explicitly_identical_queries": same, "values": {},
    }
    for v in values:
        d = per_query[v] - base
        lo, hi = bootstrap_ci(d)
        out["values"][str(v)] = {"ndcg@10": round(float(per_query[v].mean()), 4), "gain": round(float(d.mean()), 4),
                                 "ci95": [round(lo, 4), round(hi, 4)], "queries_changed_vs_raw": _changed(analyzer, c, v),
                                 "queries_differing_from_default": int(sum(runs[v][q] != runs["default"][q]
                                                                           for q in c.query_ids))}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def loco(results: dict[str, dict[str, Any]], values: tuple[int, ...]) -> dict[str, Any]:
    """For each collection left out: the value the others choose (a tie goes to the default), and what it does on
    the one left out."""
    names = list(results)
    default = results[names[0]]["default_short_query_terms"]
    gain = {v: {n: results[n]["values"][str(v)]["gain"] for n in names} for v in values}
    folds = {}
    for left in names:
        others = [n for n in names if n != left]
        ok = [v for v in values if all(gain[v][n] >= -TOLERANCE for n in others)]
        def rank(v: int, others: list[str] = others) -> tuple[float, bool]:
            return round(statistics.fmean(gain[v][n] for n in others), 6), v == default

        pick = max(ok, key=rank)
        folds[left] = {"pick": pick, "mean_gain_on_others": round(statistics.fmean(gain[pick][n] for n in others), 4),
                       "admissible": ok, "left_out_gain": gain[pick][left],
                       "left_out_ci95": results[left]["values"][str(pick)]["ci95"]}
    ok_all = [v for v in values if all(g >= -TOLERANCE for g in gain[v].values())]
    return {"tolerance": TOLERANCE, "folds": folds, "admissible_on_all": ok_all,
            "mean_gain_on_all": {str(v): round(statistics.fmean(gain[v].values()), 4) for v in values}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", nargs="+", default=list(ALL_COLLECTIONS), choices=ALL_COLLECTIONS)
    parser.add_argument("--values", nargs="+", type=int, default=list(VALUES))
    parser.add_argument("--out", default="short_query_terms.json")
    args = parser.parse_args()
    values = tuple(args.values)
    results = {}
    for name in args.collections:
        results[name] = run_collection(name, values)
        print(name, json.dumps(results[name]), flush=True)
    folds = loco(results, values)
    head = "| collection | queries | default | " + " | ".join(f"{v}: nDCG@10, gain [95% CI]" for v in values) + " |"
    rows = [head, "|" + "---|" * (3 + len(values))]
    for n, r in results.items():
        cells = [f"{r['values'][str(v)]['ndcg@10']:.4f}, {r['values'][str(v)]['gain']:+.4f} "
                 f"[{r['values'][str(v)]['ci95'][0]:+.4f}, {r['values'][str(v)]['ci95'][1]:+.4f}]" for v in values]
        rows.append(f"| {n} | {r['queries']} | {r['default_ndcg@10']:.4f} | " + " | ".join(cells) + " |")
    rows.append("| mean gain | | | " + " | ".join(f"{folds['mean_gain_on_all'][str(v)]:+.4f}" for v in values) + " |")
    loco_rows = ["| left out | pick of the others | mean gain on the others | admissible | left-out gain [95% CI] |",
                 "|---|---|---|---|---|"]
    for n, f in folds["folds"].items():
        loco_rows.append(f"| {n} | {f['pick']} | {f['mean_gain_on_others']:+.4f} | {f['admissible']} | "
                         f"{f['left_out_gain']:+.4f} [{f['left_out_ci95'][0]:+.4f}, {f['left_out_ci95'][1]:+.4f}] |")
    table, loco_md = "\n".join(rows), "\n".join(loco_rows)
    print(table + "\n\n" + loco_md)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps({"results": results, "loco": folds, "table": table,
                                                "loco_table": loco_md}, indent=2) + "\n")


if __name__ == "__main__":
    main()
