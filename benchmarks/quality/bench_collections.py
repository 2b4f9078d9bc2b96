"""Every system on every shared collection, and the hybrid defaults chosen by leave-one-collection-out (LOCO).

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections more   # warm the MiniLM vectors once (slow)
    .venv/bin/python benchmarks/quality/bench_collections.py          # legs + anchors + our API + grid + LOCO + tables
    .venv/bin/python benchmarks/quality/bench_collections.py --collections scifact arguana med cacm npl   # the five
    .venv/bin/python benchmarks/quality/bench_collections.py --analyze-only   # grid/LOCO from the cached runs

Collections: the ten of :data:`~benchmarks.common.beir.ALL_COLLECTIONS` by default (scifact, arguana, med, cacm,
npl, and adi, time, nfcorpus, lisa, cosqa rebuilt by ``build_collections.py``; ``../shared/data``), test qrels,
judged queries only (CACM: 52 of 64; TIME 82 of 83; NFCorpus 323 of 325, graded 1/2; CoSQA its 500 test queries). Texts only: each document is ``doc_text`` (title + "\\n" + text) as one string, nothing in the metadata;
where a collection has titles (scifact, arguana, cacm, lisa, adi) our retriever is also run with ``{"title": ...}`` in the
metadata. ArguAna: the query's own document is excluded inside our stores (``exclude_ids=[qid]``) and removed
from every anchor's list before scoring (BEIR ``ignore_identical_ids``). LangChain's rank_bm25 takes ~1 s per long
ArguAna query, so LangChain runs on ArguAna only on ``random.Random(0).sample(range(1406), 300)``; every other
system is scored on all 1,406 queries AND on that subset.

Phase 1 (cached in ``benchmarks/.cache/runs-<collection>-*.npz/json``):
* each leg once per query, depth 1000 (dense: QdrantEdgeDenseStore, exact, the ``from_texts`` default; FTS5;
  bm25s with a k1/b grid; query variants: each query term once, conversational stopwords dropped);
* anchors: LangChain EnsembleRetriever, LlamaIndex QueryFusionRetriever (``common/anchors.py``), Qdrant-style hybrid
  (Qdrant's server RRF formula ``1 / ((pos0 + 1) / w + k - 1)`` over dense + a BM25 leg in which each query term
  counts once, Snowball stems, Lucene IDF, as Qdrant's ``bm25`` sparse model with the IDF modifier) at k=2 and
  k=60, textbook RRF (dense + FTS5, ``weighted_rrf`` k=60, 1/1); all fetching 100 per leg;
* ours through the public API: ``EnsembleRRFRetriever.from_texts(texts, embedding, ids=ids)`` then
  ``invoke(q, top_k=100)``, defaults and a few variants.

Phase 2 (offline, seconds): fuse the cached legs for every setting (grid of rrf_k x keyword weight x fetch depth x
keyword leg x idea), per-query nDCG@10 at top_k=10, margins over the best anchor, LOCO, bootstrap CIs.
The offline fusion is checked against ``invoke()`` (same ids, same order) for the default setting.

Writes ``benchmarks/results/collections.json`` and ``benchmarks/results/loco.json``; prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import ALL_COLLECTIONS, Collection, load_collection
from benchmarks.common.collection_fusion import CONV_LARGE, CONV_SMALL, SNOWBALL, ident, q_conv, q_dedup, q_dedup_conv
from benchmarks.common.embedders import TableEmbedding
from benchmarks.common.paths import CACHE
from rrf_retriever import (
    Analyzer,
    BM25KeywordStore,
    EnsembleRRFRetriever,
    FTS5KeywordStore,
    Hit,
    QdrantEdgeDenseStore,
    as_embedding,
    weighted_rrf,
)

DEEP = 1000  # depth of every cached leg run
ANCHOR_DEPTH = 100
SUBSET_N = 300
RUNS_VERSION = "v3"

# ------------------------------------------------------------------------------------------------------ phase 1

BM25_GRID = [(k1, b) for k1 in (0.9, 1.2, 1.5, 2.0) for b in (0.4, 0.75, 0.9)]


def keyword_variants(c: Collection) -> dict[str, tuple[Callable[[], Any], bool, Callable[[str], str]]]:
    """name -> (store factory, titles in metadata?, query transform)."""
    v: dict[str, tuple[Callable[[], Any], bool, Callable[[str], str]]] = {
        "fts5": (FTS5KeywordStore, False, ident),
        "fts5_dedup": (FTS5KeywordStore, False, q_dedup),
        "fts5_conv": (FTS5KeywordStore, False, q_conv(CONV_SMALL)),
        "fts5_convL": (FTS5KeywordStore, False, q_conv(CONV_LARGE)),
        "fts5_dedup_conv": (FTS5KeywordStore, False, q_dedup_conv),
        "bm25s": (BM25KeywordStore, False, ident),
        "bm25s_snowball_dedup": (lambda: BM25KeywordStore(analyzer=SNOWBALL), False, q_dedup),  # Qdrant-style
        "bm25s_nostop_dedup": (lambda: BM25KeywordStore(analyzer=Analyzer(stopwords=())), False, q_dedup),
    }
    for k1, b in BM25_GRID:
        v[f"bm25s_k{k1:g}_b{b:g}_dedup"] = (lambda k1=k1, b=b: BM25KeywordStore(k1=k1, b=b), False, q_dedup)
    if c.has_titles:
        v["fts5_title"] = (FTS5KeywordStore, True, ident)
        v["fts5_title_dedup"] = (FTS5KeywordStore, True, q_dedup)
    return v


STORE_KEY = {"fts5_dedup_conv": "fts5", "fts5_title_dedup": "fts5_title", "bm25s_k1.2_b0.75_dedup": "bm25s"}


def leg_runs(c: Collection, emb: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """variant -> (doc index array [nq, DEEP] padded -1, score array [nq, DEEP])."""
    pos = {d: i for i, d in enumerate(c.doc_ids)}
    nq = len(c.query_ids)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def pack(lists: list[list[Hit]]) -> tuple[np.ndarray, np.ndarray]:
        idx = np.full((nq, DEEP), -1, dtype=np.int32)
        sc = np.zeros((nq, DEEP), dtype=np.float64)
        for qi, hits in enumerate(lists):
            idx[qi, : len(hits)] = [pos[h.id] for h in hits]
            sc[qi, : len(hits)] = [h.score for h in hits]
        return idx, sc

    t0 = time.perf_counter()
    dense = QdrantEdgeDenseStore(emb)
    dense.add(c.doc_ids, c.doc_texts, vectors=c.doc_vectors)
    out["dense"] = pack([dense.search(c.query_vectors[i], DEEP, exclude_ids=c.excl(q))
                         for i, q in enumerate(c.query_ids)])
    print(f"  {c.name} dense {time.perf_counter() - t0:.1f}s", flush=True)
    stores: dict[tuple[str, bool], Any] = {}
    for name, (factory, titled, transform) in keyword_variants(c).items():
        t0 = time.perf_counter()
        key = (STORE_KEY.get(name, name.removesuffix("_dedup").removesuffix("_conv").removesuffix("_convL")), titled)
        if key not in stores:
            store = factory()
            store.add(c.doc_ids, c.doc_texts, [{"title": t} for t in c.titles] if titled else None)
            stores[key] = store
        store = stores[key]
        out[name] = pack([store.search(transform(t), DEEP, exclude_ids=c.excl(q))
                          for q, t in zip(c.query_ids, c.query_texts)])
        print(f"  {c.name} {name} {time.perf_counter() - t0:.1f}s", flush=True)
    return out


def qdrant_rrf(lists: Sequence[Sequence[str]], k: float, weights: Sequence[float] | None = None,
               limit: int = 100) -> list[str]:
    """Qdrant's server/local RRF (qdrant_client.hybrid.fusion.reciprocal_rank_fusion):
    score = sum 1 / ((pos0 + 1) / w + k - 1); sorted by score, ties in insertion order."""
    scores: dict[str, float] = {}
    for li, lst in enumerate(lists):
        w = 1.0 if weights is None else weights[li]
        for p, d in enumerate(lst):
            scores[d] = scores.get(d, 0.0) + (0.0 if w <= 0 else 1.0 / ((p + 1.0) / w + k - 1.0))
    return [d for d, _ in sorted(scores.items(), key=lambda kv: kv[1], reverse=True)[:limit]]


def anchor_runs(c: Collection, emb: Any, legs: dict[str, tuple[np.ndarray, np.ndarray]],
                subset: list[int]) -> dict[str, dict[str, list[str]]]:
    """anchor name -> {qid: doc ids best first} (self-match removed)."""
    from benchmarks.common.anchors import LangChainAnchor, LlamaIndexAnchor

    ids = c.doc_ids

    def lst(variant: str, qi: int, depth: int) -> list[str]:
        row = legs[variant][0][qi, :depth]
        return [ids[j] for j in row if j >= 0]

    def clean(q: str, out: list[str]) -> list[str]:
        return [d for d in out if not (c.exclude_self and d == q)][:100]

    runs: dict[str, dict[str, list[str]]] = {}
    for k in (2, 60):
        runs[f"Qdrant-style hybrid k={k}"] = {
            q: qdrant_rrf([lst("dense", i, ANCHOR_DEPTH), lst("bm25s_snowball_dedup", i, ANCHOR_DEPTH)], k)
            for i, q in enumerate(c.query_ids)
        }
    runs["textbook RRF (dense + FTS5, k=60, 1/1)"] = {
        q: [h.id for h in weighted_rrf({"dense": _hits(lst("dense", i, ANCHOR_DEPTH)),
                                        "keyword": _hits(lst("fts5", i, ANCHOR_DEPTH))}, k=60, limit=100)]
        for i, q in enumerate(c.query_ids)
    }
    t0 = time.perf_counter()
    li = LlamaIndexAnchor(c.doc_ids, c.doc_texts, c.doc_vectors, emb, depth=ANCHOR_DEPTH)
    runs["LlamaIndex QueryFusionRetriever"] = {q: clean(q, li.search(t)) for q, t in zip(c.query_ids, c.query_texts)}
    runs["LlamaIndex BM25Retriever alone"] = {
        q: clean(q, [n.node.node_id for n in li.bm25.retrieve(t)]) for q, t in zip(c.query_ids, c.query_texts)
    }
    print(f"  {c.name} LlamaIndex {time.perf_counter() - t0:.1f}s", flush=True)
    t0 = time.perf_counter()
    lc = LangChainAnchor(c.doc_ids, c.doc_texts, emb, depth=ANCHOR_DEPTH)
    runs["LangChain EnsembleRetriever"] = {
        c.query_ids[i]: clean(c.query_ids[i], lc.search(c.query_texts[i])) for i in subset
    }
    print(f"  {c.name} LangChain {time.perf_counter() - t0:.1f}s", flush=True)
    return runs


def _hits(ids: Sequence[str]) -> list[Hit]:
    return [Hit(d) for d in ids]


OURS_API: list[tuple[str, bool, dict[str, Any]]] = [
    ("ours: shipped defaults (texts only)", False, {}),
    ("ours: shipped defaults, titles in metadata", True, {}),
    ("ours: rrf_k=60, 1/1", False, {"rrf_k": 60, "keyword_weight": 1.0}),
    ("ours: rrf_k=20, 1/1", False, {"rrf_k": 20, "keyword_weight": 1.0}),
    ("ours: fusion=dbsf", False, {"fusion": "dbsf"}),
]


def ours_api_runs(c: Collection, emb: Any, configs: list[tuple[str, bool, dict[str, Any]]]
                  ) -> dict[str, dict[str, list[str]]]:
    runs: dict[str, dict[str, list[str]]] = {}
    for name, titled, kwargs in configs:
        if titled and not c.has_titles:
            continue
        t0 = time.perf_counter()
        metas = [{"title": t} for t in c.titles] if titled else None
        r = EnsembleRRFRetriever.from_texts(c.doc_texts, emb, metas, ids=c.doc_ids, **kwargs)
        run = {}
        for q, t in zip(c.query_ids, c.query_texts):
            extra = {"exclude_ids": [q]} if c.exclude_self else {}
            run[q] = [d.id for d in r.invoke(t, top_k=100, **extra)]
        runs[name] = run
        print(f"  {c.name} {name} {time.perf_counter() - t0:.1f}s", flush=True)
    return runs


def phase1(c: Collection, refresh: bool) -> dict[str, Any]:
    base = CACHE / f"runs-{RUNS_VERSION}-{c.name}"
    if base.with_suffix(".json").is_file() and not refresh:
        meta = json.loads(base.with_suffix(".json").read_text())
        arrays = np.load(base.with_suffix(".npz"))
        legs = {k[:-4]: (arrays[k], arrays[k[:-4] + "_sc"]) for k in arrays.files if k.endswith("_idx")}
        return {"legs": legs, **meta}
    table = TableEmbedding(c.doc_texts, c.doc_vectors)
    table.add(c.query_texts, c.query_vectors)
    emb = as_embedding(table)
    everything = list(range(len(c.query_ids)))
    subset = sorted(random.Random(0).sample(everything, SUBSET_N)) if c.name == "arguana" else everything
    legs = leg_runs(c, emb)
    anchors = anchor_runs(c, emb, legs, subset)
    ours = ours_api_runs(c, emb, OURS_API)
    meta = {"anchors": anchors, "ours_api": ours, "subset": subset, "embed_misses": table.misses}
    base.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(base.with_suffix(".npz"),
                        **{f"{k}_idx": v[0] for k, v in legs.items()}, **{f"{k}_sc": v[1] for k, v in legs.items()})
    base.with_suffix(".json").write_text(json.dumps(meta))
    return {"legs": legs, **meta}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", nargs="+", default=list(ALL_COLLECTIONS), choices=ALL_COLLECTIONS)
    parser.add_argument("--refresh", action="store_true", help="recompute the cached leg/anchor/API runs")
    parser.add_argument("--analyze-only", action="store_true", help="fail if a collection's runs are not cached")
    args = parser.parse_args()

    from benchmarks.common.collections_report import analyze

    data: dict[str, Any] = {}
    for name in args.collections:
        t0 = time.perf_counter()
        c = load_collection(name)
        p1 = phase1(c, args.refresh and not args.analyze_only)
        data[name] = (c, p1)
        print(f"{name}: phase 1 ready ({time.perf_counter() - t0:.0f}s, embed misses {p1['embed_misses']})",
              flush=True)
    analyze(data)


if __name__ == "__main__":
    main()
