"""Does a similarity cutoff mean something? Unrelated queries kept vs relevant top-1s dropped, leave-one-collection-out.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py int8   # int8 MiniLM vectors of the five collections (once)
    nice .venv/bin/python benchmarks/quality/bench_relevance.py

For each of the five public collections (``../shared/data``: scifact arguana med cacm npl) an index is built through
LlamaIndex's vector store (``RRFVectorStore.add`` of ``TextNode`` s with their MiniLM vectors: int8, the library's
default) and searched through the engine it wraps (``store.client.search``, the call ``RRFVectorStore.query`` makes:
its ``similarities`` are ``hit.relevance``; the engine's ``exclude_ids`` drops an ArguAna query's own document, as
BEIR does), top_k=10, in three modes: ``default`` (dense only: ``as_retriever()``), ``hybrid`` (both legs, the
default weights: LangChain's ``RRFVectorStore`` and LlamaIndex's ``hybrid``) and ``text_search`` (BM25 only, with
the query vector given: a ``VectorStoreQuery`` with its ``query_embedding``; the level then reads the hits' stored
vectors. LlamaIndex's own retriever sends no embedding in keyword modes: there the score stays ``before``).

Queries: the collection's judged test queries (at most 200, a fixed sample) and the UNRELATED ones: at most 50 of
each other collection's (a fixed sample), searched on this collection. A query's top-1 is "relevant" when the qrels
judge it so (own queries whose top-1 is not relevant are left out of both rates).

Scores compared: ``before`` = ``normalized_score`` (``rrf_score_normalized``: what every framework surface gave
until now; rank-based), ``after`` = ``relevance`` (``rrf_relevance``: level x normalized). For each held-out
collection the cutoff is chosen on the other four (the one minimising their mean of unrelated-kept + relevant-
dropped), then both rates are reported on the held-out one; also the rates at the fixed cutoffs 0.5 and 0.7
(the library's level constants were chosen on all five: see ``rrf_retriever/relevance.py``).

A second embedder: ``MiniLM-anisotropic``, every vector (documents and queries) moved towards one fixed random
direction (``normalize(v + 1.2 u)``): cosines then sit between about 0.6 and 0.95, as some models' do, and the
level must still separate (it reads the top cosine against the corpus's own random-pair cosines).

Writes ``benchmarks/results/relevance.json``; prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np
from llama_index.core.schema import TextNode

from benchmarks.common.beir import INT8_COLLECTIONS as COLLECTIONS
from benchmarks.common.beir import Collection, load_int8_sample
from benchmarks.common.paths import RESULTS
from rrf_retriever.llama_index import RRFVectorStore

UNRELATED_PER_COLLECTION = 50
TOP_K = 10
MODES = {"default": {"keyword": 0.0}, "hybrid": None, "text_search": {"dense": 0.0}}
FIXED_CUTOFFS = (0.5, 0.7)


def anisotropic(vectors: np.ndarray, direction: np.ndarray) -> np.ndarray:
    moved = vectors + 1.2 * direction
    return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)


def run_collection(c: Collection, queries: list[tuple[str, str, str, np.ndarray]], doc_vectors: np.ndarray) -> list[dict]:
    """Top-1 of every query in every mode: (source collection, relevant?, before, after)."""
    store = RRFVectorStore()
    nodes = [TextNode(id_=i, text=t, embedding=v.tolist()) for i, t, v in zip(c.doc_ids, c.doc_texts, doc_vectors)]
    for start in range(0, len(nodes), 2000):
        store.add(nodes[start : start + 2000])
    rows = []
    for src, qid, text, vector in queries:
        own = src == c.name
        excl = [qid] if own and c.name == "arguana" else []
        row: dict = {"src": src, "qid": qid, "own": own}
        for mode, weights in MODES.items():
            hits = store.client.search(text, query_vector=vector.tolist(), top_k=TOP_K, weights=weights,
                                       exclude_ids=excl).hits
            top = hits[0] if hits else None
            row[mode] = {
                "relevant": bool(own and top is not None and c.qrels[qid].get(top.id, 0) > 0),
                "before": top.normalized_score if top else 0.0,
                "after": top.relevance if top else 0.0,
                "monotone": all(a.relevance >= b.relevance for a, b in pairwise(hits)),
            }
        rows.append(row)
    store.close()
    return rows


def rates(rows: list[dict], mode: str, score: str, cutoff: float) -> tuple[float, float, int, int]:
    unrelated = [r[mode][score] for r in rows if not r["own"]]
    relevant = [r[mode][score] for r in rows if r["own"] and r[mode]["relevant"]]
    kept = sum(s >= cutoff for s in unrelated) / len(unrelated) if unrelated else 0.0
    dropped = sum(s < cutoff for s in relevant) / len(relevant) if relevant else 0.0
    return kept, dropped, len(unrelated), len(relevant)


def choose_cutoff(by_coll: dict[str, list[dict]], names: list[str], mode: str, score: str) -> float:
    candidates = sorted({r[mode][score] for n in names for r in by_coll[n]} | {0.0, 1.0 + 1e-9})
    best = (float("inf"), 0.0)
    for cutoff in candidates:
        error = float(np.mean([sum(rates(by_coll[n], mode, score, cutoff)[:2]) for n in names]))
        if error < best[0] - 1e-12:
            best = (error, cutoff)
    return best[1]


def report(by_coll: dict[str, list[dict]], label: str) -> dict:
    out: dict = {}
    for mode in MODES:
        print(f"\n### {label}, mode `{mode}` (top-1 of each query; LOO: cutoff chosen on the other four)\n")
        print("| held out | unrelated / relevant top-1 | before: cutoff | kept | dropped | after: cutoff | kept | "
              "dropped | after @0.5 kept/dropped | after @0.7 kept/dropped |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        out[mode] = {}
        for held in COLLECTIONS:
            others = [n for n in COLLECTIONS if n != held]
            line: dict = {}
            for score in ("before", "after"):
                cutoff = choose_cutoff(by_coll, others, mode, score)
                kept, dropped, n_unrel, n_rel = rates(by_coll[held], mode, score, cutoff)
                line[score] = {"cutoff": cutoff, "unrelated_kept": kept, "relevant_dropped": dropped}
                line["n_unrelated"], line["n_relevant"] = n_unrel, n_rel
            for fixed in FIXED_CUTOFFS:
                kept, dropped, _, _ = rates(by_coll[held], mode, "after", fixed)
                line[f"after_at_{fixed}"] = {"unrelated_kept": kept, "relevant_dropped": dropped}
            line["monotone"] = all(r[mode]["monotone"] for r in by_coll[held])
            out[mode][held] = line
            b, a = line["before"], line["after"]
            f5, f7 = line["after_at_0.5"], line["after_at_0.7"]
            print(f"| {held} | {line['n_unrelated']} / {line['n_relevant']} | {b['cutoff']:.3f} | "
                  f"{b['unrelated_kept']:.2f} | {b['relevant_dropped']:.2f} | {a['cutoff']:.3f} | "
                  f"{a['unrelated_kept']:.2f} | {a['relevant_dropped']:.2f} | "
                  f"{f5['unrelated_kept']:.2f} / {f5['relevant_dropped']:.2f} | "
                  f"{f7['unrelated_kept']:.2f} / {f7['relevant_dropped']:.2f} |")
        mean = {s: float(np.mean([(v[s]["unrelated_kept"] + v[s]["relevant_dropped"]) / 2
                                  for v in out[mode].values()])) for s in ("before", "after")}
        print(f"\nmean of (kept + dropped) / 2 over the held-out collections: before {mean['before']:.3f}, "
              f"after {mean['after']:.3f}; relevance non-increasing along every result list: "
              f"{all(v['monotone'] for v in out[mode].values())}")
        out[mode]["mean_error"] = mean
    return out


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help; no options
    t0 = time.time()
    colls = {name: load_int8_sample(name) for name in COLLECTIONS}
    unrelated: dict[str, list[tuple[str, str, str, int]]] = {}
    for name, c in colls.items():
        picks = list(range(len(c.query_ids)))
        if len(picks) > UNRELATED_PER_COLLECTION:
            picks = sorted(random.Random(1).sample(picks, UNRELATED_PER_COLLECTION))
        unrelated[name] = [(name, c.query_ids[i], c.query_texts[i], i) for i in picks]
    direction = np.random.default_rng(7).normal(size=colls["med"].doc_vectors.shape[1])
    direction /= np.linalg.norm(direction)
    results: dict = {"queries_per_collection": "judged test queries, at most 200; unrelated: at most "
                     f"{UNRELATED_PER_COLLECTION} of each other collection", "top_k": TOP_K}
    for label, transform in (("MiniLM int8", None), ("MiniLM-anisotropic", direction)):
        by_coll: dict[str, list[dict]] = {}
        def vec(src: str, i: int, transform: np.ndarray | None = transform) -> np.ndarray:
            v = colls[src].query_vectors[i]
            return v if transform is None else anisotropic(v[None, :], transform)[0]

        for name, c in colls.items():
            queries = [(name, q, t, vec(name, i)) for i, (q, t) in enumerate(zip(c.query_ids, c.query_texts))]
            queries += [(src, q, t, vec(src, i)) for other in COLLECTIONS if other != name
                        for src, q, t, i in unrelated[other]]
            docs = c.doc_vectors if transform is None else anisotropic(c.doc_vectors, transform)
            by_coll[name] = run_collection(c, queries, docs)
            print(f"{label} {name}: {len(queries)} queries, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        if transform is not None:
            sample = anisotropic(colls["scifact"].doc_vectors[:200], transform)
            pairs = (sample @ sample.T)[np.triu_indices(200, 1)]
            print(f"\n{label}: random-pair cosine on scifact: mean {pairs.mean():.2f}, sd {pairs.std():.3f}")
        results[label] = report(by_coll, label)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "relevance.json").write_text(json.dumps(results, indent=1))
    print(f"\nwrote {RESULTS / 'relevance.json'} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
