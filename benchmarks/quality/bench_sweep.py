"""Tuning the hybrid defaults: title field x keyword weight x rrf_k sweep (heatmaps), leg depth, ablation table.

Usage:
    .venv/bin/python benchmarks/quality/bench_sweep.py            # sweep on SciFact TRAIN, ablation on train + both test sets

Tuning uses SciFact TRAIN qrels only (809 queries); the test splits are only reported. Each leg is run ONCE per
query at depth 400 with the real stores (QdrantDenseStore over the cached MiniLM vectors; FTS5KeywordStore flat
and with the document title as its own field of weight 1-4, the text holding title + body as ``from_texts`` gets it;
bm25s), then every configuration is fused from the leading ``fetch_k`` hits of each leg with the library's own
:func:`rrf_retriever.fusion.weighted_rrf` - exactly what the engine does for one query (it asks each store for
``fetch_k`` hits and fuses them), minus the threads. ArguAna: each store drops the query's own document
(``exclude_ids``), as the retriever does.

Choice of the defaults: the one-standard-error rule. Among the configurations whose train nDCG@10 is within one
standard error (of the paired per-query difference) of the best, take the most conservative: the largest rrf_k,
then the keyword weight closest to 1, then the title weight closest to 1. This keeps a knife-edge optimum of 809
queries from deciding alone.

Writes ``benchmarks/results/sweep.json``, ``benchmarks/results/sweep_heatmap.png`` and
``benchmarks/results/sweep_depth.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.beir import Bundle, load_bundle
from benchmarks.common.paths import RESULTS
from rrf_retriever.evaluation import evaluate, remove_identical_ids
from rrf_retriever.fusion import weighted_rrf
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from rrf_retriever.types import Hit

MAX_DEPTH = 400
TITLE_WEIGHTS = [1.0, 2.0, 3.0, 4.0]  # FTS5 title field weight; "fts5_flat" is the index without a title field
RRF_KS = [1, 2, 5, 10, 20, 30, 60, 100]
KEYWORD_WEIGHTS = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0]  # dense weight fixed at 1.0
DEPTHS = [10, 20, 50, 100, 200, 400]

Runs = dict[str, list[Hit]]  # query id -> hits, best first


def title_variant(w: float) -> str:
    return f"fts5_title{w:g}"


def leg_runs(b: Bundle) -> dict[str, Runs]:
    """Each leg (and keyword variant) once per query, at MAX_DEPTH."""
    excl: Callable[[str], list[str] | None] = (lambda q: [q]) if b.exclude_self else (lambda q: None)
    from benchmarks.common.embedders import PrecomputedEmbedding

    emb = PrecomputedEmbedding(b.doc_texts, b.doc_vectors)
    dense = QdrantDenseStore(emb)
    dense.add(b.doc_ids, b.doc_texts, vectors=b.doc_vectors)
    out: dict[str, Runs] = {"dense": {}}
    for qid, vec in zip(b.query_ids, b.query_vectors):
        out["dense"][qid] = dense.search(vec, MAX_DEPTH, exclude_ids=excl(qid))
    titles = [{"title": b.ds.corpus[i]["title"]} for i in b.doc_ids]
    keyword_variants: dict[str, tuple[Any, list[dict[str, Any]] | None]] = {
        "fts5_flat": (FTS5KeywordStore(fields=("text",)), None),
        **{title_variant(w): (FTS5KeywordStore(field_weights={"title": w}), titles) for w in TITLE_WEIGHTS},
        "bm25s": (BM25KeywordStore(), None),
    }
    for name, (store, metas) in keyword_variants.items():
        store.add(b.doc_ids, b.doc_texts, metas)
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
    return {k: round(v, 4) for k, v in evaluate(run, b.ds.qrels, ignore_identical_ids=True).items()}


def per_query_ndcg(runs: Mapping[Any, Mapping[str, Mapping[str, float]]], b: Bundle) -> dict[Any, list[float]]:
    """nDCG@10 of every qrels query (ranx) for each of several runs, in qrels order (for the paired standard
    errors). ONE ranx call: each (run, query) is its own key, so ranx converts and compiles once, not per run."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    merged_run: dict[str, dict[str, float]] = {}
    merged_qrels: dict[str, dict[str, int]] = {}
    for i, run in enumerate(runs.values()):
        run = remove_identical_ids(run)
        for q, rels in b.ds.qrels.items():
            merged_run[f"{i}|{q}"] = dict(run.get(q) or {}) or {"__none__": 0.0}
            merged_qrels[f"{i}|{q}"] = dict(rels)
    scored = Run.from_dict(merged_run)
    ranx_evaluate(Qrels.from_dict(merged_qrels), scored, "ndcg@10", make_comparable=True)
    per_query = scored.scores["ndcg@10"]
    return {key: [float(per_query[f"{i}|{q}"]) for q in b.ds.qrels] for i, key in enumerate(runs)}


Config = tuple[float, float, float]  # (title weight, keyword weight, rrf_k)


def one_se_choice(per_query: Mapping[Config, list[float]]) -> tuple[Config, Config, list[Config]]:
    """(best, chosen, within-1-SE) by the one-standard-error rule described in the module docstring."""
    mean = {c: statistics.fmean(v) for c, v in per_query.items()}
    best = max(mean, key=lambda c: mean[c])
    within = []
    for c, values in per_query.items():
        diffs = [x - y for x, y in zip(per_query[best], values)]
        se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if c != best else 0.0
        if mean[best] - mean[c] <= se:
            within.append(c)
    chosen = min(within, key=lambda c: (-c[2], abs(c[1] - 1.0), abs(c[0] - 1.0)))
    return best, chosen, sorted(within)


def ablation_steps(title_w: float, kw_weight: float, rrf_k: float) -> list[tuple[str, dict[str, Any]]]:
    """Textbook RRF -> + each change, cumulatively (the last step is the shipped default)."""
    steps: list[tuple[str, dict[str, Any]]] = [
        ("textbook RRF: dense + flat FTS5, w 1/1, k=60, depth 20 (top_k=10, fetch_k=2*top_k)",
         {"keyword": "fts5_flat", "w": 1.0, "k": 60, "depth": 20, "top_k": 10}),
        ("+ depth 200 (top_k=100 -> fetch_k=200): the previous defaults",
         {"keyword": "fts5_flat", "w": 1.0, "k": 60, "depth": 200, "top_k": 100}),
    ]
    current = dict(steps[-1][1])
    for label, change in (
        (f"+ FTS5 title field, weight {title_w:g}", {"keyword": title_variant(title_w)}),
        (f"+ keyword weight {kw_weight:g} (dense 1.0)", {"w": kw_weight}),
        (f"+ rrf_k={rrf_k:g}", {"k": rrf_k}),
    ):
        if any(current[key] != value for key, value in change.items()):
            current = {**current, **change}
            steps.append((label, dict(current)))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    train = load_bundle("scifact", "train")
    runs = leg_runs(train)
    result: dict[str, Any] = {"tuned_on": "scifact train (809 queries)", "rule": "one standard error", "legs_train": {}}
    for leg in runs:
        result["legs_train"][leg] = metrics(single(runs[leg]), train)
        print(f"train leg {leg:14s} {result['legs_train'][leg]}", flush=True)

    # title weight x keyword weight x rrf_k, top_k=100, fetch_k default 200; flat FTS5 for the left heatmap
    fused: dict[Any, dict[str, dict[str, float]]] = {}
    for w in KEYWORD_WEIGHTS:
        for k in RRF_KS:
            fused[("flat", w, k)] = fuse(runs, ["dense", "fts5_flat"], {"dense": 1.0, "fts5_flat": w}, k, 200)
            for tw in TITLE_WEIGHTS:
                leg = title_variant(tw)
                fused[(tw, w, k)] = fuse(runs, ["dense", leg], {"dense": 1.0, leg: w}, k, 200)
    scored = per_query_ndcg(fused, train)
    flat_grid = {f"{w}|{k}": round(statistics.fmean(v), 4) for (tw, w, k), v in scored.items() if tw == "flat"}
    per_query: dict[Config, list[float]] = {key: v for key, v in scored.items() if key[0] != "flat"}
    for w in KEYWORD_WEIGHTS:
        print(f"w_kw={w:<5} flat " + " ".join(f"k{k}={flat_grid[f'{w}|{k}']:.4f}" for k in RRF_KS), flush=True)
    best, chosen, within = one_se_choice(per_query)
    means = {c: round(statistics.fmean(v), 4) for c, v in per_query.items()}
    result["grid"] = {
        "title_weights": TITLE_WEIGHTS, "keyword_weights": KEYWORD_WEIGHTS, "rrf_ks": RRF_KS,
        "ndcg@10": {f"{tw}|{w}|{k}": m for (tw, w, k), m in means.items()},
        "ndcg@10_flat_fts5": flat_grid,
    }
    result["best"] = {"title_weight": best[0], "keyword_weight": best[1], "rrf_k": best[2], "ndcg@10": means[best]}
    result["within_one_se"] = [{"title_weight": c[0], "keyword_weight": c[1], "rrf_k": c[2], "ndcg@10": means[c]}
                               for c in within]
    result["chosen"] = {"title_weight": chosen[0], "keyword_weight": chosen[1], "rrf_k": chosen[2],
                        "ndcg@10": means[chosen]}
    print(f"train best {best} {means[best]}; within 1 SE: {within}; chosen {chosen} {means[chosen]}", flush=True)
    title_w, chosen_w, chosen_k = chosen

    # depth sweep at the chosen weights (top_k=10 vs 100 changes nothing above rank 10; depth does)
    depth_rows = {}
    for variant in ("fts5_flat", title_variant(title_w), "bm25s"):
        for depth in DEPTHS:
            m = metrics(fuse(runs, ["dense", variant], {"dense": 1.0, variant: chosen_w}, chosen_k, depth), train)
            depth_rows[f"{variant}|{depth}"] = m
        print(f"depth {variant:14s} " + " ".join(f"d{d}={depth_rows[f'{variant}|{d}']['ndcg@10']:.4f}" for d in DEPTHS))
    result["depth_train"] = depth_rows

    # ablation on train and on both test sets
    steps = ablation_steps(title_w, chosen_w, chosen_k)
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
        for leg in ("dense", "fts5_flat", title_variant(title_w), "bm25s"):
            rows.append({"step": f"{leg} alone", **metrics(single(r[leg]), b)})
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

    grid = result["grid"]
    ws, ks = grid["keyword_weights"], grid["rrf_ks"]
    title_w = result["chosen"]["title_weight"]
    panels = [
        ("flat FTS5 (no title field)", np.array([[grid["ndcg@10_flat_fts5"][f"{w}|{k}"] for k in ks] for w in ws])),
        (f"FTS5 with title field x{title_w:g} (default)",
         np.array([[grid["ndcg@10"][f"{title_w}|{w}|{k}"] for k in ks] for w in ws])),
    ]
    lo = min(z.min() for _, z in panels)
    hi = max(z.max() for _, z in panels)
    fig, axes = plt.subplots(1, 2, figsize=(14, 5), sharey=True)
    for ax, (title, z) in zip(axes, panels):
        im = ax.imshow(z, cmap="viridis", aspect="auto", origin="lower", vmin=lo, vmax=hi)
        ax.set_xticks(range(len(ks)), [str(k) for k in ks])
        ax.set_yticks(range(len(ws)), [str(w) for w in ws])
        ax.set_xlabel("rrf_k")
        ax.set_title(title)
        for i in range(len(ws)):
            for j in range(len(ks)):
                ax.text(j, i, f"{z[i, j]:.3f}", ha="center", va="center", fontsize=7,
                        color="white" if z[i, j] < (lo + hi) / 2 else "black")
    axes[0].set_ylabel("keyword weight (dense weight = 1.0)")
    chosen = result["chosen"]
    axes[1].scatter([ks.index(chosen["rrf_k"])], [ws.index(chosen["keyword_weight"])], s=400, facecolors="none",
                    edgecolors="red", linewidths=2)
    fig.suptitle("Hybrid nDCG@10 on SciFact TRAIN (dense MiniLM + FTS5, top_k=100, fetch_k=200); red: the default")
    fig.colorbar(im, ax=axes, label="nDCG@10")
    fig.savefig(RESULTS / "sweep_heatmap.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    variants = sorted({key.split("|")[0] for key in result["depth_train"]})
    for variant in variants:
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
