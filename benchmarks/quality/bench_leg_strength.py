"""Legs measured on the corpus, not declared: a label-free estimate of each leg's strength, against the legs' real nDCG.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections          # the five collections' MiniLM vectors
    nice -n 5 .venv/bin/python benchmarks/quality/bench_leg_strength.py      # estimates, real legs, rules, LOCO
    nice -n 5 .venv/bin/python benchmarks/quality/bench_leg_strength.py --only med cacm xquad-ar

The estimate (label-free, one per corpus): pseudo-queries drawn from the corpus
(``rrf_retriever.engine.leg_strength.pseudo_queries``: a bounded sample of 200 documents, ``random.Random(0)``, from
each one sentence held out at random as the query); the document's remainder replaces the document in the index
(its own MiniLM vector, its own keyword entry), so no leg can match the query's exact text. Each leg searches every pseudo-query at depth 100; per
leg: MRR@10 of the source document and success@10; the legs' top-10 overlap; and the pseudo MRR@10 of the default
fusion and of each leg weighted down (the pseudo-tuned rule). Cost, as the model's work: the MiniLM tokens (capped at
256, the model's window) of the sample's remainders and queries over those of the corpus (the build embeds the
corpus once): ``cost_share``; ``budget_n``: the largest sample that stays under 10% of it (at least
:data:`MIN_PSEUDO`), every figure also at that sample (the first ``budget_n`` of the same draw).

The real legs: ``bench_weak_leg.py``'s collections and legs (the five public sets with their rules: ArguAna's
self-match excluded, CACM's judged 52 queries; ``med-long4``, ``scifact-long4`` and their ``-first``; XQuAD en/de/ru/ar/zh; the
hand-built multilingual sets), its default hybrid and its declared weak-leg rule (MiniLM declares English and a
256-token window), and the same legs with an undeclared embedder (the same vectors, nothing declared: the rule
never fires, the default hybrid).

The rules (corpus-level weight multipliers from the estimate, ``ratio = (MRR_dense + 0.01) / (MRR_keyword + 0.01)``;
on top of the declared rule a leg's weight is the smaller of the two, never compounded):

* ``threshold X``: the weaker leg's weight times 0.05 (``WEAK_FACTOR``) when its ratio to the other is below X;
* ``power a``: the weaker leg's weight times ``ratio ** a`` (the weaker leg's ratio, < 1);
* ``pseudo-tuned m``: of (default, dense x0.05, keyword x0.05), the weights with the best pseudo MRR@10 of the
  fusion, when it beats the default's by more than m.

Each rule's constant is chosen leave-one-collection-out (on the others, declared and undeclared together: the best
mean gain over the shipped hybrid among the constants that lose at most :data:`TOLERANCE` on every other
collection; else the smallest worst loss), every fold reported: the left-out collection's hybrid nDCG@10 with the
shipped defaults vs with the rule, declared and undeclared, paired bootstrap 95% intervals of the per-query
differences. The decision's stability: the ratio, and the share of 1,000 bootstrap resamples of the pseudo-queries on
which the rule fires, at 30, 60, 100 and 200 pseudo-queries. Spearman rank correlation across collections between the pseudo log-ratio and the real
``log(nDCG_dense / nDCG_keyword)``.

Writes ``benchmarks/results/leg_strength.json``; prints Markdown tables.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import cached_vectors, minilm
from benchmarks.common.paths import CACHE, RESULTS, ROOT
from benchmarks.quality.bench_weak_leg import (
    TOP,
    WEIGHTS,
    Data,
    Prepared,
    bootstrap_ci,
    builders,
    fused,
    md_table,
    ndcg10,
    prepare,
    rule_weights,
)
from rrf_retriever import Analyzer, Hit, QdrantEdgeKeywordStore, weighted_rrf
from rrf_retriever.engine.leg_strength import (
    MIN_PSEUDO,
    MIN_RATIO,
    SAMPLE,
    LegStrength,
    PseudoQuery,
    leg_strength,
    pseudo_queries,
    reciprocal_rank,
    strength_weights,
    within_budget,
)
from rrf_retriever.engine.weak_legs import WEAK_FACTOR, LegView, weak_leg_weights
from rrf_retriever.errors import RRFRetrieverError

DEPTH = 100
FETCH = 40
BOOT = 1000
STABILITY_N = (30, 60, 100, 200)  # the estimate at these sample sizes (the first k of the same draw)
TOLERANCE = 0.005
EPS = 0.01
PSEUDO_VERSION = "v1"
DEFAULT_SET = ("med", "cacm", "scifact", "npl", "arguana", "med-long4", "med-long4-first", "scifact-long4",
               "scifact-long4-first",
               "xquad-en", "xquad-de", "xquad-ru", "xquad-ar", "xquad-zh", "multilingual")


def draw(d: Data, n: int = SAMPLE, seed: int = 0) -> list[PseudoQuery]:
    """Up to ``n`` pseudo-queries of the collection (``rrf_retriever.engine.leg_strength.pseudo_queries``)."""
    return pseudo_queries(d.doc_texts, n, seed)


def _analyzer(d: Data) -> Analyzer:
    try:
        return Analyzer(language=d.language) if d.language else Analyzer()
    except RRFRetrieverError:  # chinese, japanese, korean: the default analyzer cuts CJK text into bigrams
        return Analyzer()


def pseudo_runs(d: Data, items: Sequence[PseudoQuery]) -> dict[str, Any]:
    """Each leg's hits (ids, scores) per pseudo-query at :data:`DEPTH`, the remainders in place; cached."""
    digest = hashlib.sha256("\x00".join(f"{p.index}\x01{p.query}" for p in items).encode("utf-8")).hexdigest()[:16]
    key = CACHE / f"legstrength-{PSEUDO_VERSION}-{d.name}-{len(d.doc_ids)}-{digest}.json"
    if key.is_file():
        return dict(json.loads(key.read_text()))
    if not items:  # no document of two sentences (the hand-built sets' one-line documents): no estimate
        return {"dense": [], "keyword": [], "seconds": {}}
    t0 = time.perf_counter()
    qv = cached_vectors([p.query for p in items])
    rv = cached_vectors([p.remainder for p in items])
    t_embed = time.perf_counter() - t0
    dv = d.doc_vectors.copy()
    texts = list(d.doc_texts)
    for i, p in enumerate(items):
        dv[p.index] = rv[i]
        texts[p.index] = p.remainder
    sims = (qv @ dv.T).astype(np.float64)
    ids = np.array(d.doc_ids)
    dense = []
    for i in range(len(items)):
        top = np.lexsort((ids, -sims[i]))[:DEPTH]
        dense.append([[d.doc_ids[j], float(sims[i, j])] for j in top])
    store = QdrantEdgeKeywordStore(analyzer=_analyzer(d))
    try:
        t1 = time.perf_counter()
        store.add(d.doc_ids, texts)
        t_add = time.perf_counter() - t1
        t2 = time.perf_counter()
        keyword = [[[h.id, h.score] for h in sorted(store.search(p.query, DEPTH), key=lambda h: (-h.score, h.id))]
                   for p in items]
        t_search = time.perf_counter() - t2
    finally:
        store.close()
    out = {"dense": dense, "keyword": keyword, "seconds": {"embed_if_uncached": round(t_embed, 2),
                                                         "keyword_add_corpus": round(t_add, 2),
                                                         "keyword_search": round(t_search, 3)}}
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(json.dumps(out))
    return out


CANDIDATES: dict[str, dict[str, float]] = {
    "default": dict(WEIGHTS),
    "dense down": {"dense": WEIGHTS["dense"] * WEAK_FACTOR, "keyword": WEIGHTS["keyword"]},
    "keyword down": {"dense": WEIGHTS["dense"], "keyword": WEIGHTS["keyword"] * WEAK_FACTOR},
}


def estimate(d: Data, items: Sequence[PseudoQuery], runs: Mapping[str, Any], n: int) -> dict[str, Any]:
    """The estimate from the first ``n`` pseudo-queries (module doc)."""
    rr: dict[str, list[float]] = {"dense": [], "keyword": []}
    fused_rr: dict[str, list[float]] = {c: [] for c in CANDIDATES}
    overlap = []
    for i, p in enumerate(items[:n]):
        target = d.doc_ids[p.index]
        legs = {leg: [Hit(h[0], score=h[1]) for h in runs[leg][i][:FETCH]] for leg in ("dense", "keyword")}
        for leg, hits in legs.items():
            rr[leg].append(reciprocal_rank([h.id for h in hits], target))
        overlap.append(len({h.id for h in legs["dense"][:TOP]} & {h.id for h in legs["keyword"][:TOP]}) / TOP)
        live = {k: v for k, v in legs.items() if v}
        for c, w in CANDIDATES.items():
            ranked = [h.id for h in weighted_rrf(live, {k: w[k] for k in live}, k=60, limit=TOP)] if live else []
            fused_rr[c].append(reciprocal_rank(ranked, target))
    ids = {leg: [[h[0] for h in runs[leg][i][:FETCH]] for i in range(len(items[:n]))] for leg in rr}
    strength = leg_strength(ids, [d.doc_ids[p.index] for p in items[:n]])  # the module's own figures
    m = strength.mrr
    if any(abs(m[leg] - (float(np.mean(v)) if v else 0.0)) > 1e-9 for leg, v in rr.items()):
        raise RuntimeError("leg_strength disagrees with the benchmark's own MRR")
    # how stable is the decision: the share of bootstrap resamples of the pseudo-queries on which it fires
    fires = 0
    if rr["dense"]:
        rng = np.random.default_rng(0)
        a, b = np.asarray(rr["dense"]), np.asarray(rr["keyword"])
        for _ in range(BOOT):
            pick = rng.integers(0, len(a), len(a))
            ma, mb = float(a[pick].mean()), float(b[pick].mean())
            r = (min(ma, mb) + EPS) / (max(ma, mb) + EPS)
            fires += len(a) >= MIN_PSEUDO and r < MIN_RATIO
    return {
        "n": strength.n, "fire_share": round(fires / BOOT, 3),
        "mrr_dense": round(m["dense"], 4), "mrr_keyword": round(m["keyword"], 4),
        "success10_dense": round(float(np.mean([v > 0 for v in rr["dense"]])) if rr["dense"] else 0.0, 4),
        "success10_keyword": round(float(np.mean([v > 0 for v in rr["keyword"]])) if rr["keyword"] else 0.0, 4),
        "ratio": round((m["dense"] + EPS) / (m["keyword"] + EPS), 4),
        "overlap10": round(float(np.mean(overlap)) if overlap else 0.0, 4),
        "fused_mrr": {c: round(float(np.mean(v)) if v else 0.0, 4) for c, v in fused_rr.items()},
    }


def cost(d: Data, items: Sequence[PseudoQuery]) -> dict[str, Any]:
    """The estimate's embedding work over the build's, in MiniLM tokens (capped at the model's window)."""
    tok = minilm().tokenizer

    def tokens(texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in tok.encode_batch(list(texts))] if texts else []

    corpus = sum(tokens(d.doc_texts))
    per_item = [a + b for a, b in zip(tokens([p.remainder for p in items]), tokens([p.query for p in items]))]
    n = within_budget(per_item, corpus)
    return {"corpus_tokens": corpus, "sample_tokens": int(sum(per_item)),
            "cost_share": round(sum(per_item) / max(corpus, 1), 4),
            "budget_n": n, "budget_share": round(sum(per_item[:n]) / max(corpus, 1), 4)}


# ---------------------------------------------------------------------------------------------------- rules

THRESHOLDS = (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7)
Rule = Callable[[Mapping[str, Any]], dict[str, float]]  # an estimate -> {leg: weight multiplier}


def threshold(x: float, factor: float = WEAK_FACTOR) -> Rule:
    def rule(e: Mapping[str, Any]) -> dict[str, float]:
        r = float(e["ratio"])
        if e["n"] < MIN_PSEUDO:
            return {"dense": 1.0, "keyword": 1.0}
        return {"dense": factor if r < x else 1.0, "keyword": factor if 1.0 / r < x else 1.0}
    return rule


def scaled(x: float) -> Rule:
    """Below the threshold, the weaker leg's weight times ``WEAK_FACTOR * ratio / x`` (weaker still, the weaker)."""
    def rule(e: Mapping[str, Any]) -> dict[str, float]:
        r = float(e["ratio"])
        if e["n"] < MIN_PSEUDO:
            return {"dense": 1.0, "keyword": 1.0}
        return {"dense": WEAK_FACTOR * r / x if r < x else 1.0,
                "keyword": WEAK_FACTOR / r / x if 1.0 / r < x else 1.0}
    return rule


def power(a: float) -> Rule:
    def rule(e: Mapping[str, Any]) -> dict[str, float]:
        r = float(e["ratio"])
        if e["n"] < MIN_PSEUDO:
            return {"dense": 1.0, "keyword": 1.0}
        return {"dense": min(1.0, r) ** a, "keyword": min(1.0, 1.0 / r) ** a}
    return rule


def tuned(margin: float) -> Rule:
    def rule(e: Mapping[str, Any]) -> dict[str, float]:
        f = e["fused_mrr"]
        if e["n"] < MIN_PSEUDO:
            return {"dense": 1.0, "keyword": 1.0}
        best = max(CANDIDATES, key=lambda c: (f[c], c == "default"))
        if best == "default" or f[best] - f["default"] <= margin:
            return {"dense": 1.0, "keyword": 1.0}
        return {k: CANDIDATES[best][k] / WEIGHTS[k] for k in WEIGHTS}
    return rule


def shipped_rule(e: Mapping[str, Any]) -> dict[str, float]:
    """``strength_weights`` itself (MIN_RATIO, WEAK_FACTOR) over the estimate: what the module would do."""
    strength = LegStrength(int(e["n"]), {"dense": float(e["mrr_dense"]), "keyword": float(e["mrr_keyword"])}, {})
    weights, _ = strength_weights(strength, WEIGHTS)
    return {k: weights[k] / WEIGHTS[k] for k in WEIGHTS}


FAMILIES: dict[str, dict[float, Rule]] = {
    f"strength_weights (MIN_RATIO {MIN_RATIO})": {MIN_RATIO: shipped_rule},
    "threshold": {x: threshold(x) for x in THRESHOLDS},
    "threshold, x0.01": {x: threshold(x, 0.01) for x in THRESHOLDS},
    "threshold, weight 0": {x: threshold(x, 0.0) for x in THRESHOLDS},
    "threshold, scaled": {x: scaled(x) for x in THRESHOLDS},
    "power": {a: power(a) for a in (0.5, 1.0, 2.0, 3.0, 4.0)},
    "pseudo-tuned": {m: tuned(m) for m in (0.0, 0.01, 0.02, 0.05, 0.1)},
}
UNDECLARED = {"dense": LegView("dense"), "keyword": LegView("keyword")}


def shipped(p: Prepared, qi: int, declared: bool) -> dict[str, float]:
    """Today's weights for one query: the declared rule (MiniLM's declarations), or the undeclared embedder's."""
    if declared:
        return rule_weights(p, qi)[0]
    ranked = {k: v for k, v in p.legs[qi].items() if v}
    return weak_leg_weights(ranked, {k: WEIGHTS[k] for k in ranked}, UNDECLARED).weights


def scores(p: Prepared, declared: bool, mult: Mapping[str, float] | None = None) -> list[float]:
    """nDCG@10 per query of the hybrid: shipped weights, capped by ``WEIGHTS * mult`` when given."""
    out = []
    for qi in range(len(p.data.query_ids)):
        w = shipped(p, qi, declared)
        if mult is not None:
            w = {k: min(v, WEIGHTS[k] * mult.get(k, 1.0)) for k, v in w.items()}
        out.append(ndcg10(fused(p, qi, w), p.judged(qi)))
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    ra, rb = (np.argsort(np.argsort(np.asarray(x))).astype(float) for x in (a, b))
    return float(np.corrcoef(ra, rb)[0, 1]) if len(a) > 2 else float("nan")


def loco(names: Sequence[str], gains: Mapping[tuple[float, str, bool], float]) -> dict[str, float]:
    """{left-out: constant}: the constant picked on the other collections (module doc)."""
    consts = sorted({c for c, _, _ in gains})
    picks = {}
    for left in names:
        def key(c: float, left: str = left) -> tuple[int, float]:
            g = [v for (cc, n, _), v in gains.items() if cc == c and n != left]
            return (1, round(float(np.mean(g)), 6)) if min(g) >= -TOLERANCE else (0, round(min(g), 6))
        best = max(key(c) for c in consts)
        tied = [c for c in consts if key(c) == best]
        picks[left] = tied[(len(tied) - 1) // 2]  # the middle of a plateau of equal constants: the widest margin
    return picks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help=f"collection names (default: {' '.join(DEFAULT_SET)})")
    parser.add_argument("--sample", type=int, default=SAMPLE, help="pseudo-queries per collection")
    args = parser.parse_args()
    t0 = time.perf_counter()
    table = builders()
    names = [n for n in (args.only or DEFAULT_SET) if n in table]
    info: dict[str, dict[str, Any]] = {}
    prepared: dict[str, Prepared] = {}
    for name in names:
        d = table[name]()
        items = draw(d, args.sample)
        runs = pseudo_runs(d, items)
        c = cost(d, items)
        p = prepare(d)
        q = range(len(d.query_ids))
        legs = {leg: [ndcg10([h.id for h in p.legs[i][leg][:TOP]], p.judged(i)) for i in q]
                for leg in ("dense", "keyword")}
        info[name] = {"documents": len(d.doc_ids), "queries": len(d.query_ids), **c,
                      "seconds": runs["seconds"],
                      "estimate": estimate(d, items, runs, len(items)),
                      "estimate_budget": estimate(d, items, runs, c["budget_n"]),
                      "stability": {str(k): {f: estimate(d, items, runs, k)[f] for f in ("ratio", "fire_share")}
                                    for k in STABILITY_N if k <= len(items)},
                      "real": {"dense": round(float(np.mean(legs["dense"])), 4),
                               "keyword": round(float(np.mean(legs["keyword"])), 4)}}
        prepared[name] = p
        print(f"{name}: {len(d.doc_ids)} docs, {len(items)} pseudo, {time.perf_counter() - t0:.0f}s", flush=True)
    base = {(n, dec): scores(prepared[n], dec) for n in names for dec in (True, False)}
    for n in names:
        info[n]["real"]["hybrid_declared"] = round(float(np.mean(base[(n, True)])), 4)
        info[n]["real"]["hybrid_undeclared"] = round(float(np.mean(base[(n, False)])), 4)
    # prediction: does the pseudo ratio order the collections as the real leg ratio does?
    real_lr = [math.log((info[n]["real"]["dense"] + EPS) / (info[n]["real"]["keyword"] + EPS)) for n in names]
    rows = [[n, info[n]["documents"], info[n]["queries"], info[n]["real"]["dense"], info[n]["real"]["keyword"],
             info[n]["real"]["hybrid_declared"], info[n]["real"]["hybrid_undeclared"],
             f"{info[n]['estimate']['mrr_dense']:.3f} / {info[n]['estimate']['mrr_keyword']:.3f}",
             f"{info[n]['estimate']['ratio']:.3f}",
             f"{info[n]['estimate_budget']['ratio']:.3f} (n={info[n]['estimate_budget']['n']}, "
             f"{info[n]['budget_share']:.1%})",
             f"{info[n]['estimate_budget']['fire_share']:.0%}",
             f"{info[n]['estimate']['overlap10']:.2f}", f"{info[n]['cost_share']:.1%}"] for n in names]
    print(md_table(["collection", "docs", "queries", "dense nDCG", "keyword nDCG", "hybrid declared",
                    "hybrid undeclared", "pseudo MRR d / k", "pseudo ratio", "ratio at budget (n, cost)", f"fires < {MIN_RATIO} (bootstrap)", "overlap@10",
                    "cost (n=200)"], rows))
    corr = {which: round(spearman([math.log(info[n][which]["ratio"]) for n in names], real_lr), 3)
            for which in ("estimate", "estimate_budget")}
    print()
    print(md_table(["collection", *(f"ratio / fires at n={k}" for k in STABILITY_N)],
                   [[n, *(f"{info[n]['stability'][str(k)]['ratio']:.3f} / {info[n]['stability'][str(k)]['fire_share']:.0%}"
                          if str(k) in info[n]["stability"] else "-" for k in STABILITY_N)] for n in names]))
    print(f"\nSpearman(pseudo log-ratio, real log nDCG ratio) over {len(names)} collections: {corr}")
    results: dict[str, Any] = {"collections": info, "spearman": corr, "families": {}}
    for which in ("estimate_budget", "estimate"):
        for fam, rules in FAMILIES.items():
            gains: dict[tuple[float, str, bool], float] = {}
            per: dict[tuple[float, str, bool], list[float]] = {}
            for c, rule in rules.items():
                for n in names:
                    mult = rule(info[n][which])
                    for dec in (True, False):
                        s = scores(prepared[n], dec, mult)
                        per[(c, n, dec)] = s
                        gains[(c, n, dec)] = float(np.mean(s) - np.mean(base[(n, dec)]))
            picks = loco(names, gains)
            fold_rows, folds = [], []
            for n in names:
                c = picks[n]
                row: dict[str, Any] = {"left_out": n, "constant": c,
                                       "multipliers": {k: round(v, 4) for k, v in rules[c](info[n][which]).items()}}
                cells: list[Any] = [n, c, row["multipliers"]["dense"], row["multipliers"]["keyword"]]
                for dec, label in ((True, "declared"), (False, "undeclared")):
                    diffs = [a - b for a, b in zip(per[(c, n, dec)], base[(n, dec)])]
                    lo, hi = bootstrap_ci(diffs)
                    sh, ru = float(np.mean(base[(n, dec)])), float(np.mean(per[(c, n, dec)]))
                    row[label] = {"shipped": round(sh, 4), "rule": round(ru, 4), "diff": round(ru - sh, 4),
                                  "ci95": [round(lo, 4), round(hi, 4)]}
                    cells += [f"{sh:.4f}", f"{ru:.4f}", f"{ru - sh:+.4f} [{lo:+.3f}, {hi:+.3f}]"]
                folds.append(row)
                fold_rows.append(cells)
            results["families"][f"{fam} ({which})"] = {
                "folds": folds, "grid": {f"{c}|{n}|{'declared' if dec else 'undeclared'}": round(g, 4)
                                          for (c, n, dec), g in gains.items()}}
            print(f"\n### {fam}, {which} (constant chosen leave-one-collection-out)\n")
            print(md_table(["left out", "constant", "dense x", "keyword x", "declared shipped", "declared rule",
                            "declared diff [95% CI]", "undeclared shipped", "undeclared rule",
                            "undeclared diff [95% CI]"], fold_rows))
    results["seconds"] = round(time.perf_counter() - t0, 1)
    out = RESULTS / "leg_strength.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
