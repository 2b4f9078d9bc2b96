"""The shipped defaults through the public API, one table per embedder: each collection's legs alone, the anchors, ours.

Usage:
    nice -n 5 .venv/bin/python benchmarks/quality/warm_vectors.py collections more   # once: the MiniLM vectors
    nice -n 5 .venv/bin/python benchmarks/quality/bench_defaults_api.py --embedder declared     # MiniLM's declarations
    nice -n 5 .venv/bin/python benchmarks/quality/bench_defaults_api.py --embedder undeclared   # an embedder declaring nothing
    .venv/bin/python benchmarks/quality/bench_defaults_api.py --collections public   # the ten only (no weak-leg sets)
    .venv/bin/python benchmarks/quality/bench_defaults_api.py --keyword fts5 --out defaults_api_fts5.json   # a keyword leg
    .venv/bin/python benchmarks/quality/bench_defaults_api.py --top-k-100   # also the hybrid at top_k=100 (R@100)

What a new user does: ``EnsembleRRFRetriever.from_texts(texts, embedding, ids=ids)`` (texts only: title + text as
one string, nothing in the metadata), then ``search(query, top_k=10)`` (what ``invoke`` runs; it also gives the
trace, so the table says on how many queries the weak-leg rule weighted a leg down). The legs alone go through the
same retriever and the same call with ``weights={"dense": 1, "keyword": 0}`` (and the reverse): a leg of weight 0 is
not queried, and a per-call ``weights=`` turns the weak-leg rule off for that call.

The embedder answers from the cached MiniLM vectors (:class:`~benchmarks.common.embedders.TableEmbedding`):

* ``declared``: as ``TableEmbedding`` is, declaring what ``MiniLMEmbedding`` declares (``languages`` English,
  ``window_tokens`` 256), which the engine's weak-leg rule reads;
* ``undeclared``: the same vectors behind an embedder that declares nothing (as an OpenAI or Ollama model wrapped
  for LangChain does): the rule takes it to speak the corpus and to read all of every document.

Collections: every one the loader knows (``benchmarks.common.beir.ALL_COLLECTIONS``; ArguAna: the fixed 300-query
subset, the query's own document excluded) and the weak-leg sets of ``bench_weak_leg.py`` (long documents, XQuAD in
five languages, the hand-built multilingual set), where an embedder's declarations matter. ``--collections public``
(the ten), ``weak`` (the weak-leg sets) or names.

Anchors (LangChain EnsembleRetriever, LlamaIndex QueryFusionRetriever, textbook RRF, Qdrant-style RRF k=2 and
k=60; each on the same vectors, fetching 100 per leg): the runs ``bench_collections.py`` caches
(``benchmarks/.cache/runs-<version>-<name>.json``) where they exist; otherwise computed once here with the same code
(``bench_collections.anchor_runs`` over the three legs they use, at depth 100) and cached
(``defaults-api-anchors-*.json``). They do not depend on what the embedder declares.

nDCG@10 with linear gains (ranx's; ``--ranx-check`` checks each hybrid's mean against ``evaluation.evaluate``),
per query kept in the JSON; margins (ours minus the better leg alone, ours minus the best anchor) with paired
bootstrap 95% intervals (10,000 resamples, seed 0; ``benchmarks.common.collection_fusion.bootstrap_ci``). Targets
per row: ours >= the better leg - 0.005 and >= the best anchor - 0.005; over the ten: mean margin over the best
anchor >= +0.01; SciFact >= 0.727 with MiniLM.

Writes ``benchmarks/results/defaults_api_<embedder>.json`` (``--merge``: into it, keeping the rows not rerun; the
commands and run times are in ``runs``); prints the Markdown table. Rerun cost: with the vectors and anchors cached,
only our retriever is built and queried.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import ALL_COLLECTIONS, Collection, load_collection
from benchmarks.common.collection_fusion import ANCHOR_HYBRIDS, bootstrap_ci
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import CACHE, RESULTS
from benchmarks.quality.bench_weak_leg import ndcg10  # linear gains, like ranx
from rrf_retriever import EnsembleRRFRetriever, Hit, QdrantEdgeDenseStore, as_embedding
from rrf_retriever.evaluation import evaluate

TOP_K = 10
TOLERANCE = 0.005
MEAN_TARGET = 0.01
SCIFACT_TARGET = 0.727
ANCHORS_VERSION = "v1"
#: The anchors' short names, in the table's column order.
ANCHOR_COLUMNS = {
    "LangChain EnsembleRetriever": "LangChain",
    "LlamaIndex QueryFusionRetriever": "LlamaIndex",
    "textbook RRF (dense + FTS5, k=60, 1/1)": "textbook RRF",
    "Qdrant-style hybrid k=2": "Qdrant k=2",
    "Qdrant-style hybrid k=60": "Qdrant k=60",
}
assert set(ANCHOR_COLUMNS) == set(ANCHOR_HYBRIDS)
LEGS = {"dense alone": {"dense": 1.0, "keyword": 0.0}, "keyword alone": {"dense": 0.0, "keyword": 1.0}}


class UndeclaredTableEmbedding(TableEmbedding):
    """The same cached vectors behind an embedder that declares neither its languages nor its window."""

    languages = None  # type: ignore[assignment]
    window_tokens = None  # type: ignore[assignment]


EMBEDDERS: dict[str, type[TableEmbedding]] = {"declared": TableEmbedding, "undeclared": UndeclaredTableEmbedding}


# --------------------------------------------------------------------------------------------------- collections


def weak_leg_sets() -> dict[str, Callable[[], Collection]]:
    """The sets ``bench_weak_leg.py`` adds to the public ones (long documents, XQuAD, multilingual), as Collections."""
    from benchmarks.quality.bench_weak_leg import builders

    def convert(build: Callable[[], Any]) -> Collection:
        d = build()
        return Collection(d.name, d.doc_ids, d.doc_texts, [""] * len(d.doc_ids), d.doc_vectors, d.query_ids,
                          d.query_texts, d.query_vectors, d.qrels, extra={"kind": d.kind})

    return {name: partial(convert, build) for name, build in builders().items() if name not in ALL_COLLECTIONS}


def chosen(names: Sequence[str] | None) -> dict[str, Callable[[], Collection]]:
    weak = weak_leg_sets()
    every: dict[str, Callable[[], Collection]] = {n: partial(load_collection, n) for n in ALL_COLLECTIONS}
    every.update(weak)
    if not names:
        return every
    out: dict[str, Callable[[], Collection]] = {}
    for name in names:
        group = list(ALL_COLLECTIONS) if name == "public" else list(weak) if name == "weak" else [name]
        for n in group:
            if n not in every:
                msg = f"unknown collection {n!r}; known: {', '.join(every)}"
                raise SystemExit(msg)
            out[n] = every[n]
    return out


def kind(c: Collection) -> str:
    return str(c.extra.get("kind", "public"))


# -------------------------------------------------------------------------------------------------------- anchors


def anchor_lists(c: Collection) -> dict[str, dict[str, list[str]]]:
    """anchor -> {qid: ids best first}: bench_collections' cached runs, else this script's cache, else computed."""
    from benchmarks.quality.bench_collections import RUNS_VERSION

    theirs = CACHE / f"runs-{RUNS_VERSION}-{c.name}.json"
    if theirs.is_file():
        anchors = json.loads(theirs.read_text())["anchors"]
        if all(a in anchors and set(anchors[a]) == set(c.query_ids) for a in ANCHOR_HYBRIDS):
            return {a: anchors[a] for a in ANCHOR_HYBRIDS}
    mine = CACHE / f"defaults-api-anchors-{ANCHORS_VERSION}-{c.name}-{len(c.doc_ids)}-{len(c.query_ids)}.json"
    if mine.is_file():
        return dict(json.loads(mine.read_text()))
    runs = compute_anchors(c)
    CACHE.mkdir(parents=True, exist_ok=True)
    mine.write_text(json.dumps(runs))
    return runs


def compute_anchors(c: Collection) -> dict[str, dict[str, list[str]]]:
    """The five anchor hybrids by ``bench_collections.anchor_runs``, over the three legs it reads (depth 100)."""
    from benchmarks.quality.bench_collections import ANCHOR_DEPTH, anchor_runs, keyword_variants

    table = TableEmbedding(c.doc_texts, c.doc_vectors)
    table.add(c.query_texts, c.query_vectors)
    emb = as_embedding(table)
    pos = {d: i for i, d in enumerate(c.doc_ids)}
    lists: dict[str, list[list[Hit]]] = {}
    dense = QdrantEdgeDenseStore(emb)
    dense.add(c.doc_ids, c.doc_texts, vectors=c.doc_vectors)
    lists["dense"] = [dense.search(c.query_vectors[i], ANCHOR_DEPTH, exclude_ids=c.excl(q))
                      for i, q in enumerate(c.query_ids)]
    variants = keyword_variants(c)
    for name in ("fts5", "bm25s_snowball_dedup"):
        factory, _titled, transform = variants[name]
        store = factory()
        store.add(c.doc_ids, c.doc_texts)
        lists[name] = [store.search(transform(t), ANCHOR_DEPTH, exclude_ids=c.excl(q))
                       for q, t in zip(c.query_ids, c.query_texts)]
    legs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, per_query in lists.items():
        idx = np.full((len(c.query_ids), ANCHOR_DEPTH), -1, dtype=np.int32)
        sc = np.zeros((len(c.query_ids), ANCHOR_DEPTH), dtype=np.float64)
        for qi, hits in enumerate(per_query):
            idx[qi, : len(hits)] = [pos[h.id] for h in hits]
            sc[qi, : len(hits)] = [h.score for h in hits]
        legs[name] = (idx, sc)
    runs = anchor_runs(c, emb, legs, list(range(len(c.query_ids))))
    if table.misses > 1:  # langchain-qdrant embeds one "dummy_text" to check its collection
        msg = f"{c.name}: {table.misses} texts were embedded anew (the cached vectors should hold every one)"
        raise RuntimeError(msg)
    return {a: runs[a] for a in ANCHOR_HYBRIDS}


# ------------------------------------------------------------------------------------------------------ ours (API)


def api_runs(c: Collection, embedder: type[TableEmbedding], keyword: str | None, deep: bool = False
             ) -> dict[str, Any]:
    """The shipped hybrid and each leg alone through ``from_texts`` + ``search(top_k=10)``: ids per query
    (``deep``: the hybrid at ``top_k=100`` too, as ``"ours top_k=100"``)."""
    table = embedder(c.doc_texts, c.doc_vectors)
    table.add(c.query_texts, c.query_vectors)
    kwargs: dict[str, Any] = {} if keyword is None else {"keyword": keyword}
    t0 = time.perf_counter()
    out: dict[str, Any] = {"runs": {}}
    with EnsembleRRFRetriever.from_texts(c.doc_texts, table, ids=c.doc_ids, **kwargs) as retriever:
        out["build_s"] = round(time.perf_counter() - t0, 2)
        out["keyword_store"] = type(retriever.engine.legs["keyword"].store).__name__
        out["corpus_language"] = retriever.corpus_language
        t0 = time.perf_counter()
        fired = 0
        plan = [("ours", None, TOP_K), *((s, w, TOP_K) for s, w in LEGS.items())]
        for system, weights, top_k in plan + ([("ours top_k=100", None, 100)] if deep else []):
            run: dict[str, list[str]] = {}
            for qid, text in zip(c.query_ids, c.query_texts):
                extra: dict[str, Any] = {"exclude_ids": [qid]} if c.exclude_self else {}
                if weights is not None:
                    extra["weights"] = weights
                result = retriever.search(text, top_k=top_k, **extra)
                run[qid] = result.ids
                if system == "ours":
                    fired += bool(result.trace.stage_counts.get("weak_legs"))
            out["runs"][system] = run
        out["query_s"] = round(time.perf_counter() - t0, 2)
    out["weak_legs_fired"] = fired
    out["embed_misses"] = table.misses
    return out


# ---------------------------------------------------------------------------------------------------------- scores


def margin(ours: Sequence[float], ref: Sequence[float]) -> dict[str, Any]:
    diffs = [a - b for a, b in zip(ours, ref)]
    lo, hi = bootstrap_ci(diffs)
    return {"margin": round(statistics.fmean(diffs), 4), "ci95": [round(lo, 4), round(hi, 4)]}


def score(c: Collection, systems: dict[str, dict[str, list[str]]], ranx_check: bool = False) -> dict[str, Any]:
    """Per-query and mean nDCG@10 of every system, the better leg, the best anchor, the margins and the targets."""
    per_query = {s: [round(ndcg10(run[q], c.qrels[q]), 6) for q in c.query_ids] for s, run in systems.items()}
    means = {s: round(statistics.fmean(v), 4) for s, v in per_query.items()}
    if ranx_check:  # ranx's numba compiles for ~30 s first: only when asked
        run = {q: {d: float(TOP_K - r) for r, d in enumerate(systems["ours"][q])} for q in c.query_ids}
        ranx = evaluate(run, c.qrels, ("ndcg@10",), ignore_identical_ids=c.exclude_self)["ndcg@10"]
        assert abs(ranx - statistics.fmean(per_query["ours"])) < 1e-4, (c.name, ranx, means["ours"])
    better = max(LEGS, key=lambda s: statistics.fmean(per_query[s]))
    best = max(ANCHOR_HYBRIDS, key=lambda s: statistics.fmean(per_query[s]))
    vs_leg, vs_anchor = margin(per_query["ours"], per_query[better]), margin(per_query["ours"], per_query[best])
    missed = [what for what, m in (("leg", vs_leg), ("anchor", vs_anchor)) if m["margin"] < -TOLERANCE]
    return {"ndcg@10": means, "better_leg": better, "best_anchor": best, "vs_better_leg": vs_leg,
            "vs_best_anchor": vs_anchor, "target_met": not missed, "missed": missed, "per_query": per_query,
            "query_ids": list(c.query_ids)}


def run_one(c: Collection, embedder: type[TableEmbedding], keyword: str | None, ranx_check: bool = False,
            deep: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    anchors = anchor_lists(c)
    anchor_s = time.perf_counter() - t0
    api = api_runs(c, embedder, keyword, deep)
    systems = {**api.pop("runs"), **anchors}
    out = {"kind": kind(c), "documents": len(c.doc_ids), "queries": len(c.query_ids), **api,
           "anchor_s": round(anchor_s, 1)}
    if deep:  # the other protocol: the hybrid at top_k=100, nDCG@10 and R@100 of it
        run = systems.pop("ours top_k=100")
        recall = [len({d for d, g in c.qrels[q].items() if g > 0} & set(run[q]))
                  / max(1, sum(g > 0 for g in c.qrels[q].values())) for q in c.query_ids]
        out["top_k=100"] = {"ndcg@10": round(statistics.fmean(ndcg10(run[q], c.qrels[q]) for q in c.query_ids), 4),
                            "recall@100": round(statistics.fmean(recall), 4)}
    return {**out, **score(c, systems, ranx_check)}


# ---------------------------------------------------------------------------------------------------------- tables


def ci(m: dict[str, Any]) -> str:
    return f"{m['margin']:+.4f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]"


def table(results: dict[str, dict[str, Any]]) -> str:
    header = ["collection", "queries", "dense alone", "keyword alone", *ANCHOR_COLUMNS.values(), "ours",
              "rule fired", "vs better leg [95% CI]", "vs best anchor [95% CI]", "target"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in results.items():
        nd = r["ndcg@10"]

        def cell(s: str, nd: dict[str, float] = nd, r: dict[str, Any] = r) -> str:
            v = f"{nd[s]:.4f}"
            return f"**{v}**" if s in (r["better_leg"], r["best_anchor"]) else v

        target = "met" if r["target_met"] else "missed (" + ", ".join(r["missed"]) + ")"
        lines.append("| " + " | ".join([
            name, str(r["queries"]), *(cell(s) for s in (*LEGS, *ANCHOR_COLUMNS)), f"{nd['ours']:.4f}",
            f"{r['weak_legs_fired']}/{r['queries']}", ci(r["vs_better_leg"]), ci(r["vs_best_anchor"]), target]) + " |")
    return "\n".join(lines)


def summary(results: dict[str, dict[str, Any]], embedder: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group in ("public", "weak-leg sets"):
        rows = {n: r for n, r in results.items() if (r["kind"] == "public") == (group == "public")}
        if not rows:
            continue
        anchor_m = [r["vs_best_anchor"]["margin"] for r in rows.values()]
        leg_m = [r["vs_better_leg"]["margin"] for r in rows.values()]
        out[group] = {"collections": len(rows), "met": sum(r["target_met"] for r in rows.values()),
                      "mean_margin_vs_best_anchor": round(statistics.fmean(anchor_m), 4),
                      "mean_margin_vs_better_leg": round(statistics.fmean(leg_m), 4)}
        if group == "public":
            out[group]["mean_target_met"] = statistics.fmean(anchor_m) >= MEAN_TARGET
    if "scifact" in results:
        got = results["scifact"]["ndcg@10"]["ours"]
        out["scifact"] = {"ndcg@10": got, "target": SCIFACT_TARGET,
                          "met": got >= SCIFACT_TARGET if embedder == "declared" else None}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=tuple(EMBEDDERS), default="declared",
                        help="declared: MiniLM's languages and window; undeclared: the same vectors, nothing declared")
    parser.add_argument("--collections", nargs="+", default=None,
                        help="names, or 'public' (the loader's ten) / 'weak' (the weak-leg sets); default: both")
    parser.add_argument("--keyword", default=None, help="keyword store kind (default: from_texts's own)")
    parser.add_argument("--top-k-100", action="store_true", help="the hybrid at top_k=100 too (nDCG@10, R@100)")
    parser.add_argument("--ranx-check", action="store_true", help="check each hybrid's mean nDCG@10 against ranx")
    parser.add_argument("--merge", action="store_true",
                        help="keep the output file's rows of the collections not run now (each run's command listed)")
    parser.add_argument("--out", default=None, help="file under benchmarks/results (default: defaults_api_<embedder>.json)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    for name, build in chosen(args.collections).items():
        c = build()
        results[name] = run_one(c, EMBEDDERS[args.embedder], args.keyword, args.ranx_check, args.top_k_100)
        r = results[name]
        print(f"{name}: ours {r['ndcg@10']['ours']:.4f}, vs better leg {ci(r['vs_better_leg'])}, vs best anchor "
              f"{ci(r['vs_best_anchor'])} ({r['best_anchor']}), rule fired {r['weak_legs_fired']}/{r['queries']}, "
              f"build {r['build_s']}s, queries {r['query_s']}s, {time.perf_counter() - t0:.0f}s", flush=True)
    seconds = round(time.perf_counter() - t0, 1)
    out = RESULTS / (args.out or f"defaults_api_{args.embedder}.json")
    runs = [{"command": " ".join(["benchmarks/quality/bench_defaults_api.py", *sys.argv[1:]]), "seconds": seconds,
             "collections": list(results)}]
    if args.merge and out.is_file():  # the rows of an earlier run that this one did not redo
        before = json.loads(out.read_text())
        runs = before["runs"] + runs
        results = {**before["results"], **results}
        order = list(chosen(None))
        results = dict(sorted(results.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    md = table(results)
    totals = summary(results, args.embedder)
    print(md)
    print(json.dumps(totals, indent=1))
    out.write_text(json.dumps({"embedder": args.embedder, "top_k": TOP_K, "summary": totals, "runs": runs,
                               "table": md, "results": results}, indent=1) + "\n")
    print(f"wrote {out} in {seconds}s")


if __name__ == "__main__":
    main()
