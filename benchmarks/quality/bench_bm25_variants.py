"""The keyword leg: query-term saturation (k3) and an exact BM25 in the sparse leg, against FTS5 and bm25s.

Usage:
    .venv/bin/python benchmarks/quality/bench_bm25_variants.py              # all five (dense runs need the MiniLM cache)
    .venv/bin/python benchmarks/quality/bench_bm25_variants.py --refresh    # recompute the cached real-store runs

Phase 1 (cached in ``benchmarks/.cache/bm25var-<version>-<collection>.npz``): the real stores, each query once,
depth 100, texts only (title + text as one string): ``FTS5KeywordStore()`` with the queries as given and with each
query term once (what FTS5's SQL allows of k3: repeated terms are repeated phrases, so a raw count, or dedup), the
same FTS5 store over our analyzer's own terms (``Analyzer(stem=<Porter callable>)``: our stems, lengths without
stopwords), ``BM25KeywordStore()`` (bm25s), ``QdrantEdgeKeywordStore()`` (the default sparse leg), and the dense leg
(exact dot product of the cached unit MiniLM vectors, numpy).

Phase 2 (offline, seconds): ``common/bm25_offline.OfflineBM25`` scores every variant (each factor separately: IDF
formula, lengths with/without stopwords, k1/b, a wrong avgdl, hashed term ids, k3 and "once for short queries");
its sparse-leg variant is checked against the real sparse store and its FTS5-over-our-terms variant against the
real FTS5 store of our terms (same top 10). Each keyword leg alone (nDCG@10) and fused with the dense leg at the
shipped settings (weighted RRF, rrf_k 60, keyword weight 1.25, each leg fetching 40, top 10). Paired bootstrap 95%
intervals (10,000 resamples of the queries). Leave-one-collection-out over the k3 family (and over it with lengths
counted with stopwords): pick on four (best worst margin over the best anchor hybrid for the hybrid, over FTS5 alone
for the keyword leg; ties within 1e-4 go to the best mean margin, then to the least change from today), report the left-out margin.

Writes ``benchmarks/results/bm25_variants.json``; prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import COLLECTIONS, Collection, load_collection
from benchmarks.common.bm25_offline import INF, OfflineBM25, Variant
from benchmarks.common.collection_fusion import Scorer, bootstrap_ci
from benchmarks.common.paths import CACHE, RESULTS
from rrf_retriever import Analyzer, BM25KeywordStore, FTS5KeywordStore, Hit, QdrantEdgeKeywordStore, weighted_rrf
from rrf_retriever.analysis.languages import stemmer

VERSION = "v1"
DEPTH = 100
FETCH, RRF_K, KW_WEIGHT, TOP = 40, 60.0, 1.25, 10
ANALYZER = Analyzer()

BASE = Variant()  # the sparse leg as shipped: Lucene IDF, analyzed lengths, raw query counts
K3S = [INF, 100.0, 20.0, 8.0, 5.0, 3.0, 2.0, 1.5, 1.0, 0.5, 0.0]  # least change from today first (LOCO ties)
SHORT = [3, 5, 8, 10, 15, 20, 30]
PER_TERM = [0.1, 0.25, 0.5, 1.0]
RM3 = [(10, 10, 0.3), (10, 20, 0.5), (5, 10, 0.3), (10, 20, 0.3)]  # (feedback docs, terms, lambda)


def dedup_query(text: str) -> str:
    """Each query term once (by stem), first appearance kept: what FTS5's SQL allows of k3 = 0."""
    seen: set[str] = set()
    out = []
    for term in ANALYZER.query_terms(text):
        stem = ANALYZER.analyze(term)
        key = stem[0] if stem else term
        if key not in seen:
            seen.add(key)
            out.append(term)
    return " ".join(out)


#: The rows of the compact tables RESULTS.md shows (every row is in the full tables of the JSON).
SUMMARY_ROWS = [
    "fts5", "bm25s", "sparse", "IDF as FTS5", "lengths with stopwords", "IDF as FTS5 + lengths with stopwords",
    "hashed term ids", "fts5 our terms", "k3=0", "k3=1", "k3=1.5", "k3=3", "k3=8", "once if <= 10 terms",
    "once if <= 15 terms", "once if <= 20 terms", "once if <= 30 terms", "k3=0.1 x distinct terms",
    "once if <= 20 terms + lengths with stopwords", "fts5 dedup", "fts5 once if <= 20 terms",
    "RM3 10 docs, 20 terms, lambda 0.3",
]


def factor_variants() -> dict[str, Variant]:
    """name -> variant: the sparse leg, each factor changed alone, and the FTS5-like combinations."""
    v = {
        "sparse (offline)": BASE,
        "IDF as FTS5": BASE.but(idf="fts5"),
        "lengths with stopwords": BASE.but(length="tokens"),
        "IDF as FTS5 + lengths with stopwords": BASE.but(idf="fts5", length="tokens"),
        "hashed term ids": BASE.but(collide=True),
        "avgdl x0.8": BASE.but(avgdl_scale=0.8),
        "avgdl x1.25": BASE.but(avgdl_scale=1.25),
    }
    for k1, b in ((0.9, 0.4), (0.9, 0.75), (1.2, 0.4), (1.2, 0.9), (1.5, 0.75), (2.0, 0.75)):
        v[f"k1={k1:g} b={b:g}"] = BASE.but(k1=k1, b=b)
    return v


def k3_variants() -> dict[str, Variant]:
    v = {f"k3={k:g}": BASE.but(k3=k) for k in K3S}
    for n in SHORT:
        v[f"once if <= {n} terms"] = BASE.but(short_once=n)
        v[f"once if <= {n} terms, else k3=5"] = BASE.but(short_once=n, k3=5.0)
    for c in PER_TERM:
        v[f"k3={c:g} x distinct terms"] = BASE.but(k3_per_term=c)
    return v


def combo_variants() -> dict[str, Variant]:
    """The k3 family over lengths counted with stopwords (the other shippable factor)."""
    return {f"{name} + lengths with stopwords": v.but(length="tokens") for name, v in k3_variants().items()}


# ------------------------------------------------------------------------------------------------------ phase 1


def _pack(c: Collection, lists: list[list[Hit]]) -> tuple[np.ndarray, np.ndarray]:
    pos = {d: i for i, d in enumerate(c.doc_ids)}
    idx = np.full((len(lists), DEPTH), -1, dtype=np.int32)
    sc = np.zeros((len(lists), DEPTH), dtype=np.float64)
    for qi, hits in enumerate(lists):
        idx[qi, : len(hits)] = [pos[h.id] for h in hits]
        sc[qi, : len(hits)] = [h.score for h in hits]
    return idx, sc


def real_runs(c: Collection, refresh: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The real stores' runs (and the dense leg), cached per collection."""
    path = CACHE / f"bm25var-{VERSION}-{c.name}.npz"
    runs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if path.is_file() and not refresh:
        arrays = np.load(path)
        runs = {k[:-4]: (arrays[k], arrays[k[:-4] + "_sc"]) for k in arrays.files if k.endswith("_idx")}
    queries = list(zip(c.query_ids, c.query_texts))

    def run(name: str, store: Any, transform: Any = None) -> None:
        if name in runs:
            return
        t0 = time.perf_counter()
        runs[name] = _pack(c, [store.search(transform(t) if transform else t, DEPTH, exclude_ids=c.excl(q))
                               for q, t in queries])
        print(f"  {c.name} {name} {time.perf_counter() - t0:.1f}s", flush=True)

    need = {"fts5", "fts5 dedup", "fts5 our terms", "bm25s", "sparse"} - set(runs)
    if need & {"fts5", "fts5 dedup"}:
        fts = FTS5KeywordStore()
        fts.add(c.doc_ids, c.doc_texts)
        run("fts5", fts)
        run("fts5 dedup", fts, dedup_query)
    if "fts5 our terms" in need:
        ours = FTS5KeywordStore(analyzer=Analyzer(stem=stemmer("porter")))
        ours.add(c.doc_ids, c.doc_texts)
        run("fts5 our terms", ours)
    if "bm25s" in need:
        bm = BM25KeywordStore()
        bm.add(c.doc_ids, c.doc_texts)
        run("bm25s", bm)
    if "sparse" in need:
        sp = QdrantEdgeKeywordStore()
        sp.add(c.doc_ids, c.doc_texts)
        run("sparse", sp)
        print(f"  {c.name} sparse avgdl {sp.avgdl}", flush=True)
    if "dense" not in runs and c.doc_vectors.shape[0]:
        scores = c.query_vectors.astype(np.float64) @ c.doc_vectors.astype(np.float64).T
        for qi, q in enumerate(c.query_ids):
            if c.exclude_self and q in c.doc_ids:
                scores[qi, c.doc_ids.index(q)] = -np.inf
        order = np.argsort(-scores, axis=1, kind="stable")[:, :DEPTH]
        runs["dense"] = (order.astype(np.int32), np.take_along_axis(scores, order, axis=1))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **{f"{k}_idx": v[0] for k, v in runs.items()},
                        **{f"{k}_sc": v[1] for k, v in runs.items()})
    return runs


# ------------------------------------------------------------------------------------------------------ phase 2


def hybrid(dense: np.ndarray, keyword: np.ndarray) -> list[list[int]]:
    """The shipped fusion over each query's two lists (weighted_rrf, k 60, keyword 1.25, fetch 40, top 10)."""
    out = []
    for d_row, k_row in zip(dense, keyword):
        legs = {"dense": [Hit(str(d)) for d in d_row[:FETCH] if d >= 0],
                "keyword": [Hit(str(d)) for d in k_row[:FETCH] if d >= 0]}
        out.append([int(h.id) for h in weighted_rrf(legs, {"dense": 1.0, "keyword": KW_WEIGHT}, k=RRF_K, limit=TOP)])
    return out


def per_query(scorer: Scorer, ranked: Any) -> np.ndarray:
    return np.array([scorer.ndcg10(qi, [d for d in row if d >= 0]) for qi, row in enumerate(ranked)])


def evaluate_collection(c: Collection, runs: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    scorer = Scorer(c)
    off = OfflineBM25(c.doc_texts, c.query_texts)
    exclude = [c.doc_ids.index(q) if c.exclude_self and q in c.doc_ids else None for q in c.query_ids]
    kw: dict[str, np.ndarray] = {name: idx for name, (idx, _sc) in runs.items() if name != "dense"}
    variants = {**factor_variants(), **k3_variants(), **combo_variants()}
    for name, v in variants.items():
        kw[name] = off.search(v, DEPTH, exclude)[0]
    for fb_docs, fb_terms, lam in RM3:
        kw[f"RM3 {fb_docs} docs, {fb_terms} terms, lambda {lam:g}"] = off.search_rm3(
            BASE, DEPTH, exclude, fb_docs, fb_terms, lam)[0]
    distinct = np.array([len(set(t)) for t in off.queries])
    for n in SHORT:  # what FTS5's SQL allows of "once for short queries": the deduplicated query where short
        kw[f"fts5 once if <= {n} terms"] = np.where((distinct <= n)[:, None], kw["fts5 dedup"], kw["fts5"])
    res: dict[str, Any] = {"keyword": {}, "hybrid": {}, "collisions": off.collisions,
                           "mean_terms": float(off.lengths["terms"].mean()),
                           "mean_tokens": float(off.lengths["tokens"].mean())}
    for name, idx in kw.items():
        res["keyword"][name] = per_query(scorer, idx)
        if "dense" in runs:
            res["hybrid"][name] = per_query(scorer, hybrid(runs["dense"][0], idx))
    res["checks"] = {
        "offline sparse == real sparse (top 10 identical)": float(np.mean(
            [list(a[:10]) == list(b[:10]) for a, b in zip(kw["sparse (offline)"], kw["sparse"])])),
        "offline FTS5-over-our-terms == real (top 10 identical)": float(np.mean(
            [list(a[:10]) == list(b[:10]) for a, b in zip(
                off.search(BASE.but(idf="fts5"), DEPTH, exclude)[0], kw["fts5 our terms"])])),
    }
    return res


def diff_cell(a: np.ndarray, b: np.ndarray) -> str:
    lo, hi = bootstrap_ci(a - b)
    star = "**" if lo > 0 or hi < 0 else ""
    return f"{star}{(a - b).mean():+.4f} [{lo:+.3f}, {hi:+.3f}]{star}"


def table(rows: list[str], per: dict[str, dict[str, Any]], leg: str, ref: str) -> str:
    names = list(per)
    out = [f"| {leg}: variant | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for row in rows:
        cells = []
        for n in names:
            scores = per[n][leg]
            if row not in scores:
                cells.append("-")
            elif row == ref:
                cells.append(f"{scores[row].mean():.4f}")
            else:
                cells.append(f"{scores[row].mean():.4f} ({diff_cell(scores[row], scores[ref])})")
        out.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def loco(per: dict[str, dict[str, Any]], leg: str, family: list[str], anchor: dict[str, float | np.ndarray],
         ref: str) -> tuple[str, list[dict[str, Any]]]:
    """Leave one collection out: pick the family member with the best worst margin over ``anchor`` on the other
    four; report its left-out margin and its difference from ``ref`` (paired CI)."""
    names = [n for n in per if per[n][leg]]

    def margin(n: str, v: str) -> float:
        a = anchor[n]
        return float(per[n][leg][v].mean() - (a.mean() if isinstance(a, np.ndarray) else a))

    rows = ["| left out | picked on the other four | their worst margin | left-out margin | vs today's sparse [95% CI] |",
            "|---|---|---|---|---|"]
    out = []
    for held in names:
        others = [n for n in names if n != held]
        # best worst margin (to 1e-4: closer is a tie), then the best mean margin, then today's setting
        pick = max(family, key=lambda v: (round(min(margin(n, v) for n in others), 4),
                                          round(float(np.mean([margin(n, v) for n in others])), 4), v == ref))
        worst = min(margin(n, pick) for n in others)
        d = diff_cell(per[held][leg][pick], per[held][leg][ref])
        rows.append(f"| {held} | {pick} | {worst:+.4f} | {margin(held, pick):+.4f} | {d} |")
        out.append({"left_out": held, "pick": pick, "others_worst": worst, "left_out_margin": margin(held, pick)})
    return "\n".join(rows), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument("--refresh", action="store_true")
    parser.add_argument("--no-dense", action="store_true", help="keyword legs only (no MiniLM vectors needed)")
    args = parser.parse_args()
    best = json.loads((RESULTS / "collections.json").read_text())["collections"]
    per: dict[str, dict[str, Any]] = {}
    for name in args.collections:
        c = load_collection(name, vectors=not args.no_dense)
        per[name] = evaluate_collection(c, real_runs(c, args.refresh))
        per[name]["best_anchor"] = best[name]["best_anchor_ndcg@10"]
        print(name, json.dumps(per[name]["checks"]), "collisions", per[name]["collisions"], flush=True)
    legs = ["keyword"] + (["hybrid"] if all(per[n]["hybrid"] for n in per) else [])
    rm3_rows = [f"RM3 {d} docs, {t} terms, lambda {lam:g}" for d, t, lam in RM3]
    factor_rows = ["fts5", "fts5 our terms", "bm25s", "sparse", *factor_variants(), *rm3_rows]
    k3_rows = ["fts5", "fts5 dedup", *[f"fts5 once if <= {n} terms" for n in SHORT], *k3_variants(),
               *combo_variants()]
    md: dict[str, str] = {}
    picks: dict[str, Any] = {}
    for leg in legs:
        md[f"factors_{leg}"] = table(factor_rows, per, leg, "sparse (offline)")
        md[f"k3_{leg}"] = table(k3_rows, per, leg, "k3=inf")
        md[f"summary_{leg}"] = table(SUMMARY_ROWS, per, leg, "sparse")
        anchor = ({n: per[n]["best_anchor"] for n in per} if leg == "hybrid"
                  else {n: per[n]["keyword"]["fts5"] for n in per})
        if len(per) < 3:
            continue
        md[f"loco_{leg}"], picks[leg] = loco(per, leg, list(k3_variants()), anchor, "k3=inf")
        family = [*k3_variants(), *combo_variants()]
        md[f"loco_{leg}_with_lengths"], picks[f"{leg}_with_lengths"] = loco(per, leg, family, anchor, "k3=inf")
    for key, text in md.items():
        print(f"\n### {key}\n\n{text}")
    out = {
        "settings": {"depth": DEPTH, "fetch": FETCH, "rrf_k": RRF_K, "keyword_weight": KW_WEIGHT, "top": TOP},
        "collections": {n: {"checks": r["checks"], "collisions": r["collisions"], "best_anchor": r["best_anchor"],
                            "mean_terms": r["mean_terms"], "mean_tokens": r["mean_tokens"],
                            **{leg: {v: round(float(s.mean()), 4) for v, s in r[leg].items()} for leg in legs}}
                        for n, r in per.items()},
        "loco": picks, "tables_md": md,
    }
    (RESULTS / "bm25_variants.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
