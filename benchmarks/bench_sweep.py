"""Tuning the hybrid defaults: weight x rrf_k sweep (heatmap), leg depth, and an ablation table.

Usage:
    .venv/bin/python benchmarks/bench_sweep.py            # sweep on SciFact TRAIN, ablation on train + both test sets

Tuning uses SciFact TRAIN qrels only (809 queries); the test splits are only reported. Each leg is run ONCE per
query at depth 400 with the real stores (QdrantDenseStore over the cached MiniLM vectors, FTS5KeywordStore, and
variants), then every configuration is fused from the leading ``fetch_k`` hits of each leg with the library's own
:func:`rrf_retriever.fusion.weighted_rrf` - exactly what the engine does for one query (it asks each store for
``fetch_k`` hits and fuses them), minus the threads. ArguAna: each store drops the query's own document
(``exclude_ids``), as the retriever does.

Writes ``benchmarks/results/sweep.json``, ``benchmarks/results/sweep_heatmap.png`` and
``benchmarks/results/sweep_depth.png``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from _data import RESULTS, Bundle, load_bundle

from rrf_retriever.evaluation import evaluate
from rrf_retriever.fusion import weighted_rrf
from rrf_retriever.stores.bm25 import BM25KeywordStore
from rrf_retriever.stores.fts5 import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from rrf_retriever.text import Analyzer
from rrf_retriever.types import Hit

MAX_DEPTH = 400
RRF_KS = [1, 2, 5, 10, 20, 30, 40, 60, 100, 200]
KEYWORD_WEIGHTS = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0]  # dense weight fixed at 1.0
DEPTHS = [10, 20, 50, 100, 200, 400]

Runs = dict[str, list[Hit]]  # query id -> hits, best first


def leg_runs(b: Bundle) -> dict[str, Runs]:
    """Each leg (and keyword variant) once per query, at MAX_DEPTH."""
    excl: Callable[[str], list[str] | None] = (lambda q: [q]) if b.exclude_self else (lambda q: None)
    from _data import PrecomputedEmbedding

    emb = PrecomputedEmbedding(b.doc_texts, b.doc_vectors)
    dense = QdrantDenseStore(emb)
    dense.add(b.doc_ids, b.doc_texts, vectors=b.doc_vectors)
    out: dict[str, Runs] = {"dense": {}}
    for qid, vec in zip(b.query_ids, b.query_vectors):
        out["dense"][qid] = dense.search(vec, MAX_DEPTH, exclude_ids=excl(qid))
    titles = [{"title": b.ds.corpus[i]["title"]} for i in b.doc_ids]
    bodies = [b.ds.corpus[i]["text"] for i in b.doc_ids]
    keyword_variants: dict[str, tuple[Any, list[str], list[dict[str, Any]] | None]] = {
        "fts5": (FTS5KeywordStore(), b.doc_texts, None),
        "fts5_nostop": (FTS5KeywordStore(analyzer=Analyzer(stopwords=())), b.doc_texts, None),
        "fts5_title2": (FTS5KeywordStore(fields=("title", "text"), field_weights={"title": 2.0}), bodies, titles),
        "bm25s": (BM25KeywordStore(), b.doc_texts, None),
    }
    for name, (store, texts, metas) in keyword_variants.items():
        store.add(b.doc_ids, texts, metas)
        out[name] = {qid: store.search(t, MAX_DEPTH, exclude_ids=excl(qid)) for qid, t in zip(b.query_ids, b.query_texts)}
    return out


def fuse(
    runs: Mapping[str, Runs], legs: Sequence[str], weights: Mapping[str, float], k: float, depth: int, top_k: int = 100
) -> dict[str, dict[str, float]]:
    """The engine's fusion for every query: each leg's first ``depth`` hits, weighted RRF, first ``top_k``."""
    fused: dict[str, dict[str, float]] = {}
    for qid in runs[legs[0]]:
        ranked = {leg: runs[leg][qid][:depth] for leg in legs}
        hits = weighted_rrf(ranked, {leg: weights.get(leg, 1.0) for leg in legs}, k=k, limit=top_k)
        fused[qid] = {h.id: float(len(hits) - r) for r, h in enumerate(hits)}
    return fused


def single(runs: Runs, top_k: int = 100) -> dict[str, dict[str, float]]:
    return {q: {h.id: float(top_k - r) for r, h in enumerate(hits[:top_k])} for q, hits in runs.items()}


def metrics(run: Mapping[str, Mapping[str, float]], b: Bundle) -> dict[str, float]:
    return {k: round(v, 4) for k, v in evaluate(run, b.ds.qrels).items()}


def ablation_steps(kw_weight: float, rrf_k: float, keyword: str) -> list[tuple[str, dict[str, Any]]]:
    """Textbook RRF -> + each change, cumulatively."""
    steps: list[tuple[str, dict[str, Any]]] = [
        ("textbook RRF: dense + FTS5, w 1/1, k=60, depth 20 (top_k=10, fetch_k=2*top_k)",
         {"keyword": "fts5", "w": 1.0, "k": 60, "depth": 20, "top_k": 10}),
        ("+ depth 200 (top_k=100 -> fetch_k=200)", {"keyword": "fts5", "w": 1.0, "k": 60, "depth": 200, "top_k": 100}),
    ]
    current = dict(steps[-1][1])
    if rrf_k != 60:
        current = {**current, "k": rrf_k}
        steps.append((f"+ rrf_k={rrf_k:g}", dict(current)))
    if kw_weight != 1.0:
        current = {**current, "w": kw_weight}
        steps.append((f"+ keyword weight {kw_weight:g} (dense 1.0)", dict(current)))
    if keyword != "fts5":
        current = {**current, "keyword": keyword}
        steps.append((f"+ keyword leg {keyword}", dict(current)))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keyword-weight", type=float, default=None, help="chosen default (else: train best)")
    parser.add_argument("--rrf-k", type=float, default=None, help="chosen default (else: train best)")
    args = parser.parse_args()
    train = load_bundle("scifact", "train")
    runs = leg_runs(train)
    result: dict[str, Any] = {"tuned_on": "scifact train (809 queries)", "legs_train": {}}
    for leg in runs:
        result["legs_train"][leg] = metrics(single(runs[leg]), train)
        print(f"train leg {leg:12s} {result['legs_train'][leg]}", flush=True)

    # weight x rrf_k grid, top_k=100, fetch_k default 200
    grid: dict[str, dict[str, float]] = {}
    for w in KEYWORD_WEIGHTS:
        for k in RRF_KS:
            m = metrics(fuse(runs, ["dense", "fts5"], {"dense": 1.0, "fts5": w}, k, 200), train)
            grid[f"{w}|{k}"] = m
        print(f"w_kw={w:<5} " + " ".join(f"k{k}={grid[f'{w}|{k}']['ndcg@10']:.4f}" for k in RRF_KS), flush=True)
    result["grid"] = {"keyword_weights": KEYWORD_WEIGHTS, "rrf_ks": RRF_KS, "ndcg@10": {
        key: v["ndcg@10"] for key, v in grid.items()}, "recall@100": {key: v["recall@100"] for key, v in grid.items()}}
    best_key = max(grid, key=lambda key: grid[key]["ndcg@10"])
    best_w, best_k = (float(x) for x in best_key.split("|"))
    result["grid_best"] = {"keyword_weight": best_w, "rrf_k": best_k, **grid[best_key]}
    print(f"train grid best: w_kw={best_w} k={best_k} {grid[best_key]}")
    chosen_w = best_w if args.keyword_weight is None else args.keyword_weight
    chosen_k = best_k if args.rrf_k is None else args.rrf_k

    # depth sweep at the chosen weights (top_k=10 vs 100 changes nothing above rank 10; depth does)
    depth_rows = {}
    for variant in ("fts5", "fts5_nostop", "fts5_title2", "bm25s"):
        for depth in DEPTHS:
            m = metrics(fuse(runs, ["dense", variant], {"dense": 1.0, variant: chosen_w}, chosen_k, depth), train)
            depth_rows[f"{variant}|{depth}"] = m
        print(f"depth {variant:12s} " + " ".join(f"d{d}={depth_rows[f'{variant}|{d}']['ndcg@10']:.4f}" for d in DEPTHS))
    result["depth_train"] = depth_rows

    # ablation on train and on both test sets
    steps = ablation_steps(chosen_w, chosen_k, "fts5")
    result["ablation"] = {}
    bundles: dict[str, tuple[Bundle, dict[str, Runs]]] = {"scifact-train": (train, runs)}
    for name in ("scifact", "arguana"):
        test = load_bundle(name, "test")
        bundles[f"{name}-test"] = (test, leg_runs(test))
    for label, (b, r) in bundles.items():
        rows = []
        for step, cfg in steps:
            m = metrics(fuse(r, ["dense", cfg["keyword"]], {"dense": 1.0, cfg["keyword"]: cfg["w"]}, cfg["k"],
                             cfg["depth"], cfg["top_k"]), b)
            rows.append({"step": step, **cfg, **m})
            print(f"{label:14s} {step:80s} {m}", flush=True)
        rows.append({"step": "dense alone", **metrics(single(r["dense"]), b)})
        rows.append({"step": "FTS5 alone", **metrics(single(r["fts5"]), b)})
        result["ablation"][label] = rows
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sweep.json").write_text(json.dumps(result, indent=2))
    plot(result)
    print(f"wrote {RESULTS / 'sweep.json'}")


def plot(result: Mapping[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ws, ks = result["grid"]["keyword_weights"], result["grid"]["rrf_ks"]
    z = np.array([[result["grid"]["ndcg@10"][f"{w}|{k}"] for k in ks] for w in ws])
    fig, ax = plt.subplots(figsize=(9, 5))
    im = ax.imshow(z, cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(ks)), [str(k) for k in ks])
    ax.set_yticks(range(len(ws)), [str(w) for w in ws])
    ax.set_xlabel("rrf_k")
    ax.set_ylabel("keyword weight (dense weight = 1.0)")
    ax.set_title("Hybrid nDCG@10 on SciFact TRAIN (dense MiniLM + FTS5, top_k=100, fetch_k=200)")
    for i in range(len(ws)):
        for j in range(len(ks)):
            ax.text(j, i, f"{z[i, j]:.3f}", ha="center", va="center", fontsize=7,
                    color="white" if z[i, j] < z.mean() else "black")
    fig.colorbar(im, ax=ax, label="nDCG@10")
    fig.tight_layout()
    fig.savefig(RESULTS / "sweep_heatmap.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for variant in ("fts5", "fts5_nostop", "fts5_title2", "bm25s"):
        ys = [result["depth_train"][f"{variant}|{d}"]["ndcg@10"] for d in DEPTHS]
        ax.plot(DEPTHS, ys, marker="o", label=variant)
    ax.set_xscale("log")
    ax.set_xlabel("fetch_k (hits per leg)")
    ax.set_ylabel("nDCG@10")
    ax.set_title("Leg depth on SciFact TRAIN (chosen weights and rrf_k)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "sweep_depth.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
