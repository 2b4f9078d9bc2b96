"""The legs measured at build time, through the public API: what the engine's own estimate finds, what it costs,
and what it does to nDCG@10 with an embedder that declares nothing and with MiniLM's declarations.

Usage:
    nice -n 5 .venv/bin/python benchmarks/quality/bench_leg_probe.py                 # every collection below
    nice -n 5 .venv/bin/python benchmarks/quality/bench_leg_probe.py --only med xquad-ar
    nice -n 5 .venv/bin/python benchmarks/quality/bench_leg_probe.py --real-build med cacm   # the cost, for real
    .venv/bin/python benchmarks/quality/bench_leg_probe.py --analyze leg_probe.json      # the threshold, LOCO

Each collection (``bench_weak_leg.py``'s: the public ones the loader knows, long documents, XQuAD, the hand-built
multilingual sets) is built with ``EnsembleRRFRetriever.from_texts(texts, embedder, ids=ids)``, texts only, the
cached MiniLM vectors behind the embedder. ``undeclared``: an embedder that declares nothing (what a user of an
OpenAI, Cohere or Ollama model has); ``declared``: MiniLM's declarations (English, a 256-token window). The build
measures the legs (``rrf_retriever.engine.leg_probe``); ``retriever.explain_weights()`` and
``retriever.engine.leg_probe.measured`` say what it found. Then every judged query through ``invoke(top_k=10)``:
nDCG@10 with the rule (the shipped defaults) and, on the same index, with ``update_settings(weak_legs=False)``
(no rule at all), and with each leg's weight times 0.05 by hand (``dense_down``, ``keyword_down``: what the rule
does when it fires, so that any threshold can be judged offline); for ``declared`` also the declared rule alone, as shipped before the measurement (the index
built again, its measurement replaced by an empty one). Paired bootstrap 95% intervals over the queries.

The estimate is compared with ``results/leg_strength.json`` (``bench_leg_strength.py``'s offline estimate over the
whole corpus with the default sparse keyword leg: "ratio at budget"). The engine draws its pseudo-queries from the
dense store's order of at most 10,000 documents and ranks them with its own BM25, so the two differ a little.

Cost: the measurement's seconds (its own clock, ``measured.seconds``; the pseudo-queries the table does not hold
are embedded by the real fp32 MiniLM, so the embedding is real) beside the build's. With ``--real-build``, the
named collections are also built with the real int8 ``MiniLMEmbedding`` (the default embedder): the build's
seconds with the measurement and the measurement's share of them.

Writes ``benchmarks/results/leg_probe.json``; prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import MORE_COLLECTIONS
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import RESULTS
from benchmarks.quality.bench_weak_leg import Data, bootstrap_ci, builders, md_table, ndcg10, public
from rrf_retriever import EnsembleRRFRetriever, MiniLMEmbedding
from rrf_retriever.engine.leg_strength import EPS, MIN_PSEUDO
from rrf_retriever.engine.weak_legs import WEAK_FACTOR

DEFAULT_SET = ("scifact", "arguana", "med", "cacm", "npl", "nfcorpus", "time", "lisa", "adi", "cosqa",
               "med-long4", "med-long4-first", "scifact-long4", "scifact-long4-first",
               "xquad-en", "xquad-de", "xquad-ru", "xquad-ar", "xquad-zh", "multilingual")


class Undeclared(TableEmbedding):
    """The same vectors behind an embedder that declares nothing."""

    languages = None  # type: ignore[assignment]
    window_tokens = None  # type: ignore[assignment]


def run(d: Data, embedder: TableEmbedding, with_rule_off: bool = True) -> dict[str, Any]:
    t0 = time.perf_counter()
    with EnsembleRRFRetriever.from_texts(d.doc_texts, embedder, ids=d.doc_ids) as r:
        build_s = time.perf_counter() - t0
        measured = r.engine.leg_probe.measured
        out: dict[str, Any] = {"build_s": round(build_s, 2), "measured": None if measured is None else
                               measured.as_dict(), "explain": str(r.explain_weights())}
        if measured is not None and measured.strength is not None:
            out["ratios"] = measured.strength.ratios()
            out["fired"] = sorted(measured.reasons())
        base = dict(r.settings.weights)
        passes: list[tuple[str, bool, dict[str, float]]] = [("rule", True, base)]
        if with_rule_off:  # no rule; each leg weighted down by hand (what the rule would do if it fired)
            passes += [("off", False, base), ("dense_down", False, {**base, "dense": base["dense"] * WEAK_FACTOR}),
                       ("keyword_down", False, {**base, "keyword": base["keyword"] * WEAK_FACTOR})]
        for label, on, weights in passes:
            r.update_settings(weak_legs=on, weights=weights)
            scores = []
            for qid, text in zip(d.query_ids, d.query_texts):
                extra = {"exclude_ids": [qid]} if d.exclude_self else {}
                scores.append(ndcg10([doc.id for doc in r.invoke(text, top_k=10, **extra)], d.qrels[qid]))
            out[f"ndcg_{label}"] = scores
    return out


def declared_only(d: Data, embedder: TableEmbedding) -> list[float]:
    """nDCG@10 per query with the declared rule alone (before the measurement): the estimate restored empty."""
    with EnsembleRRFRetriever.from_texts(d.doc_texts, embedder, ids=d.doc_ids) as r:
        r.engine.leg_probe.restore({"doc_count": 10**12, "sample_docs": 0, "seconds": 0, "reason": "off", "n": None})
        scores = []
        for qid, text in zip(d.query_ids, d.query_texts):
            extra = {"exclude_ids": [qid]} if d.exclude_self else {}
            scores.append(ndcg10([doc.id for doc in r.invoke(text, top_k=10, **extra)], d.qrels[qid]))
    return scores


def real_build(d: Data) -> dict[str, Any]:
    """The default int8 MiniLM, for real: the build's seconds and the measurement's share of them."""
    model = MiniLMEmbedding(show_progress=False)
    t0 = time.perf_counter()
    with EnsembleRRFRetriever.from_texts(d.doc_texts, model, ids=d.doc_ids) as r:
        build_s = time.perf_counter() - t0
        measured = r.engine.leg_probe.measured
        probe_s = measured.seconds if measured is not None else 0.0
    return {"build_s": round(build_s, 2), "probe_s": round(probe_s, 2), "share": round(probe_s / build_s, 4),
            "measured": None if measured is None else measured.as_dict()}


def interval(a: Sequence[float], b: Sequence[float]) -> str:
    diffs = [x - y for x, y in zip(a, b)]
    if not any(diffs):
        return "0"
    lo, hi = bootstrap_ci(diffs)
    return f"{np.mean(diffs):+.3f} [{lo:+.3f}, {hi:+.3f}]"


def offline_ratios() -> Mapping[str, Any]:
    path = RESULTS / "leg_strength.json"
    if not path.is_file():
        return {}
    return {n: c.get("estimate_budget", {}).get("ratio") for n, c in json.loads(path.read_text())["collections"].items()
            if isinstance(c, dict)}


GRID = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
TOLERANCE = 0.005


def outcome(entry: Mapping[str, Any], threshold: float) -> list[float]:
    """The undeclared per-query nDCG@10 the rule would give at ``threshold`` (module doc: the weaker leg's ratio
    to the strongest below it: that leg weighted down)."""
    und = entry["undeclared"]
    m = und.get("measured") or {}
    mrr = m.get("mrr") or {}
    if not mrr or (m.get("n") or 0) < MIN_PSEUDO:
        return list(und["ndcg_off"])
    best = max(mrr.values())
    weak = [leg for leg, v in mrr.items() if (v + EPS) / (best + EPS) < threshold]
    return list(und[f"ndcg_{weak[0]}_down"]) if weak else list(und["ndcg_off"])


def loco(collections: Mapping[str, Any]) -> list[list[Any]]:
    """The threshold chosen leave-one-collection-out (on the others: the best mean gain over no rule among the
    thresholds that lose at most TOLERANCE on every one; a plateau of equal gains: its middle), every fold."""
    names = [n for n, e in collections.items() if "ndcg_dense_down" in e["undeclared"]]
    gain = {(t, n): float(np.mean(outcome(collections[n], t)) - np.mean(collections[n]["undeclared"]["ndcg_off"]))
            for t in GRID for n in names}
    rows = []
    for left in names:
        others = [n for n in names if n != left]
        safe = [t for t in GRID if all(gain[t, n] >= -TOLERANCE for n in others)] or list(GRID)
        top = max(np.mean([gain[t, n] for n in others]) for t in safe)
        plateau = [t for t in safe if np.mean([gain[t, n] for n in others]) >= top - 1e-9]
        pick = plateau[len(plateau) // 2]
        off = collections[left]["undeclared"]["ndcg_off"]
        got = outcome(collections[left], pick)
        rows.append([left, pick, f"{np.mean(off):.4f}", f"{np.mean(got):.4f}", interval(got, off)])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="these collections only")
    parser.add_argument("--real-build", nargs="*", default=[], help="also build these with the real int8 MiniLM")
    parser.add_argument("--out", default="leg_probe.json")
    parser.add_argument("--analyze", nargs="+", metavar="JSON", help="only the leave-one-collection-out choice of "
                        "the threshold, from these results files (of this script)")
    args = parser.parse_args()
    if args.analyze:
        merged: dict[str, Any] = {}
        for f in args.analyze:
            merged.update(json.loads((RESULTS / f).read_text())["collections"])
        print(md_table(["left out", "threshold picked", "undeclared: no rule", "undeclared: rule", "difference"],
                       loco(merged)))
        return
    known = builders()
    for more in MORE_COLLECTIONS:  # the judged collections the loader knows besides bench_weak_leg's five
        known.setdefault(more, partial(public, more))
    names = [n for n in (args.only or DEFAULT_SET) if n in known]
    skipped = [n for n in (args.only or DEFAULT_SET) if n not in known]
    offline = offline_ratios()
    results: dict[str, Any] = {"skipped": skipped, "collections": {}}
    rows, cost_rows = [], []
    for name in names:
        d = known[name]()
        texts = list(d.doc_texts) + list(d.query_texts)
        vectors = np.vstack([d.doc_vectors, d.query_vectors])
        und = run(d, Undeclared(texts, vectors))
        dec = run(d, TableEmbedding(texts, vectors), with_rule_off=False)
        before = declared_only(d, TableEmbedding(texts, vectors))
        entry = {"undeclared": und, "declared": dec, "declared_before": before, "queries": len(d.query_ids),
                 "docs": len(d.doc_ids), "offline_ratio": offline.get(name)}
        results["collections"][name] = entry
        m = und["measured"] or {}
        mrr = m.get("mrr") or {}
        ratio = (f"{(mrr['dense'] + EPS) / (mrr['keyword'] + EPS):.3f} ({mrr['dense']:.3f} / {mrr['keyword']:.3f})"
                 if mrr else "-")
        rows.append([name, len(d.doc_ids), m.get("n"), ratio, offline.get(name, "-"), ", ".join(und.get("fired", [])) or "-",
                     f"{np.mean(und['ndcg_off']):.4f}", f"{np.mean(und['ndcg_rule']):.4f}",
                     interval(und["ndcg_rule"], und["ndcg_off"]),
                     f"{np.mean(before):.4f}", f"{np.mean(dec['ndcg_rule']):.4f}", interval(dec["ndcg_rule"], before)])
        cost_rows.append([name, len(d.doc_ids), m.get("sample_docs"), m.get("n"), m.get("seconds"), und["build_s"]])
        print(name, rows[-1], flush=True)
    for name in args.real_build:
        if name in known:
            results.setdefault("real_build", {})[name] = rb = real_build(known[name]())
            print("real build", name, rb, flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps(results, indent=1))
    print(md_table(["collection", "docs", "pseudo-queries", "dense / keyword: ratio (pseudo MRR@10), engine", "ratio, offline",
                    "weighted down", "undeclared: no rule", "undeclared: shipped", "difference [95% CI]",
                    "declared: before", "declared: shipped", "difference [95% CI]"], rows))
    if sum("ndcg_dense_down" in e["undeclared"] for e in results["collections"].values()) > 1:
        print(md_table(["left out", "threshold picked", "undeclared: no rule", "undeclared: rule", "difference"],
                       loco(results["collections"])))
    print(md_table(["collection", "docs", "sample docs", "pseudo-queries", "measurement s", "build s (cached vectors)"],
                   cost_rows))
    for name, rb in results.get("real_build", {}).items():
        print(f"real build {name}: {rb['build_s']} s, measurement {rb['probe_s']} s ({rb['share']:.1%})")


if __name__ == "__main__":
    main()
