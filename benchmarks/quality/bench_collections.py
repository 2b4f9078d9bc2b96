"""Every system on every shared collection, and the hybrid defaults chosen by leave-one-collection-out (LOCO).

Usage:
    .venv/bin/python benchmarks/_colldata.py            # warm the MiniLM vector cache once (slow on 2 cores)
    .venv/bin/python benchmarks/bench_collections.py       # legs + anchors + our API + grid + LOCO + tables
    .venv/bin/python benchmarks/bench_collections.py --analyze-only   # re-run grid/LOCO from the cached runs

Collections: scifact, arguana, med, cacm, npl (``../shared/data``), test qrels, judged queries only (CACM: 52 of
64). Texts only: each document is ``doc_text`` (title + "\\n" + text) as one string, nothing in the metadata;
where a collection has titles (scifact, arguana, cacm) our retriever is also run with ``{"title": ...}`` in the
metadata. ArguAna: the query's own document is excluded inside our stores (``exclude_ids=[qid]``) and removed
from every anchor's list before scoring (BEIR ``ignore_identical_ids``). LangChain's rank_bm25 takes ~1 s per long
ArguAna query, so LangChain runs on ArguAna only on ``random.Random(0).sample(range(1406), 300)``; every other
system is scored on all 1,406 queries AND on that subset.

Phase 1 (cached in ``benchmarks/.cache/runs-<collection>-*.npz/json``):
* each leg once per query, depth 1000 (dense: QdrantEdgeDenseStore, exact, the ``from_texts`` default; FTS5;
  bm25s with a k1/b grid; query variants: each query term once, conversational stopwords dropped);
* anchors: LangChain EnsembleRetriever, LlamaIndex QueryFusionRetriever (``_anchors.py``), Qdrant-style hybrid
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
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _colldata import CACHE, COLLECTIONS, Collection, TableEmbedding, load_collection

from rrf_retriever import (
    Analyzer,
    BM25KeywordStore,
    EnsembleRRFRetriever,
    FTS5KeywordStore,
    Hit,
    QdrantEdgeDenseStore,
    as_embedding,
    distribution_based_score_fusion,
    relative_score_fusion,
    weighted_rrf,
)
from rrf_retriever.evaluation import evaluate

DEEP = 1000  # depth of every cached leg run
ANCHOR_DEPTH = 100
SUBSET_N = 300
RUNS_VERSION = "v3"

RRF_KS = [1, 2, 5, 10, 20, 40, 60, 100]
KW_WEIGHTS = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
MULTS = [1, 2, 4]
TOP_K = 10

# Query-time conversational function words (on top of the index's Lucene stopwords). The seed examples need
# how / do; the small set is interrogatives, auxiliaries and pronouns a question is wrapped in.
CONV_SMALL = frozenset(
    "how do does did what which who whom whose when where why can could would should shall may might must "
    "i me my we our you your".split()
)
CONV_LARGE = CONV_SMALL | frozenset(
    "am been being have has had he she him her his its them us ours yours hers theirs myself yourself "
    "about any some so than too very just also only from up out all more most other own same both each few "
    "what's how's i'm i've i'd don't doesn't didn't here".replace("'", " ").split()
)

ANALYZER = Analyzer()
SNOWBALL = Analyzer(stem="english")


# ----------------------------------------------------------------------------------------------- query variants


def q_dedup(text: str) -> str:
    """Each query term once (by stem), order of first appearance: what Qdrant's BM25 query vector holds."""
    seen: set[str] = set()
    out = []
    for term, stem in zip(ANALYZER.terms(text), ANALYZER.analyze(text)):
        if stem not in seen:
            seen.add(stem)
            out.append(term)
    return " ".join(out)


def q_conv(words: frozenset[str]) -> Callable[[str], str]:
    def run(text: str) -> str:
        return " ".join(t for t in ANALYZER.terms(text) if t not in words)

    return run


def q_dedup_conv(text: str) -> str:
    return q_dedup(q_conv(CONV_SMALL)(text))


def ident(text: str) -> str:
    return text


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
    from _anchors import LangChainAnchor, LlamaIndexAnchor

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


# ------------------------------------------------------------------------------------------------------ scoring


class Scorer:
    """Per-query nDCG@10 / MRR@10 / R@100 for binary qrels (all five collections are binary), checked against
    ranx for the headline rows."""

    def __init__(self, c: Collection) -> None:
        self.c = c
        pos = {d: i for i, d in enumerate(c.doc_ids)}
        self.rel: list[set[int]] = []
        self.nrel: list[int] = []
        for q in c.query_ids:
            rels = {d for d, s in c.qrels[q].items() if s > 0}
            self.nrel.append(len(rels))
            self.rel.append({pos[d] for d in rels if d in pos and not (c.exclude_self and d == q)})
        self.idcg = [sum(1.0 / math.log2(r + 2) for r in range(min(10, n))) for n in self.nrel]

    def ndcg10(self, qi: int, ranked: Sequence[int]) -> float:
        rel = self.rel[qi]
        dcg = sum(1.0 / math.log2(r + 2) for r, d in enumerate(ranked[:10]) if d in rel)
        return dcg / self.idcg[qi] if self.idcg[qi] else 0.0

    def mrr10(self, qi: int, ranked: Sequence[int]) -> float:
        for r, d in enumerate(ranked[:10]):
            if d in self.rel[qi]:
                return 1.0 / (r + 1)
        return 0.0

    def recall100(self, qi: int, ranked: Sequence[int]) -> float:
        n = self.nrel[qi]
        return len(self.rel[qi] & set(ranked[:100])) / n if n else 0.0


def ranx_metrics(c: Collection, run_ids: dict[str, list[str]], queries: Sequence[str]) -> dict[str, float]:
    run = {q: {d: float(len(run_ids[q]) - r) for r, d in enumerate(run_ids[q])} for q in queries}
    qrels = {q: c.qrels[q] for q in queries}
    # ignore_identical_ids only where the rule belongs (ArguAna): MED/CACM/NPL query ids "1".."93" are also doc ids
    return {k: round(v, 4) for k, v in evaluate(run, qrels, ignore_identical_ids=c.exclude_self).items()}


# ------------------------------------------------------------------------------------------------- offline fusion


class Offline:
    """One collection's cached legs, fused offline for any setting. Documents are corpus positions."""

    def __init__(self, c: Collection, legs: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        self.c = c
        self.legs = legs
        self.ids = c.doc_ids
        self.lists: dict[str, list[list[int]]] = {}
        self.scores: dict[str, list[list[float]]] = {}
        for name, (idx, sc) in legs.items():
            n = (idx >= 0).sum(axis=1)
            self.lists[name] = [idx[q, : n[q]].tolist() for q in range(idx.shape[0])]
            self.scores[name] = [sc[q, : n[q]].tolist() for q in range(idx.shape[0])]
        self._rankmaps: dict[str, list[dict[int, int]]] = {}

    def rankmap(self, leg: str) -> list[dict[int, int]]:
        if leg not in self._rankmaps:
            self._rankmaps[leg] = [{d: r for r, d in enumerate(lst, 1)} for lst in self.lists[leg]]
        return self._rankmaps[leg]

    def rrf(self, qi: int, legs: Sequence[tuple[str, float, int]], k: float, top: int) -> list[int]:
        """weighted_rrf over (leg, weight, depth) with the library's order: score desc, best rank asc, id asc.
        Legs are summed in sorted name order, as weighted_rrf does ("dense" < "keyword")."""
        score: dict[int, float] = {}
        best: dict[int, int] = {}
        for leg, w, depth in legs:
            if w == 0.0:
                continue
            for r, d in enumerate(self.lists[leg][qi][:depth], 1):
                v = w * (1.0 / (k + r))  # the library computes weight * (1 / (k + rank))
                if d in score:
                    score[d] += v
                    if r < best[d]:
                        best[d] = r
                else:
                    score[d] = v
                    best[d] = r
        ids = self.ids
        return sorted(score, key=lambda d: (-score[d], best[d], ids[d]))[:top]

    def rrf_crossleg(self, qi: int, legs: Sequence[tuple[str, float, int]], k: float, top: int) -> list[int]:
        """Like rrf, but a document found by one leg (within its depth) gets its TRUE rank (to DEEP) on the other
        leg too: the other leg scores it instead of counting it absent."""
        cand: set[int] = set()
        for leg, w, depth in legs:
            if w:
                cand.update(self.lists[leg][qi][:depth])
        score: dict[int, float] = dict.fromkeys(cand, 0.0)
        best: dict[int, int] = dict.fromkeys(cand, 10**9)
        for leg, w, _depth in legs:
            if w == 0.0:
                continue
            rm = self.rankmap(leg)[qi]
            for d in cand:
                r = rm.get(d)
                if r is not None:
                    score[d] += w * (1.0 / (k + r))
                    if r < best[d]:
                        best[d] = r
        ids = self.ids
        return sorted(cand, key=lambda d: (-score[d], best[d], ids[d]))[:top]

    def score_fusion(self, qi: int, legs: Sequence[tuple[str, float, int]], kind: str, top: int) -> list[int]:
        ranked = {name: [Hit(str(d), score=s) for d, s in zip(self.lists[leg][qi][:depth],
                                                              self.scores[leg][qi][:depth])]
                  for name, (leg, _w, depth) in zip(("dense", "keyword"), legs)}
        weights = {name: w for name, (_leg, w, _depth) in zip(("dense", "keyword"), legs)}
        fn = distribution_based_score_fusion if kind == "dbsf" else relative_score_fusion
        return [int(h.id) for h in fn(ranked, weights, limit=top)]

    def qdw_weights(self, qi: int, kw_leg: str, depth: int, alpha: float) -> float:
        """Query-dependent keyword weight factor from the legs' own score distributions: the z-score of each leg's
        top hit within its top-``depth`` scores; factor = (z_kw / z_dense) ** alpha, clipped to [0.25, 4]."""

        def z(scores: list[float]) -> float | None:
            if len(scores) < 3:
                return None
            m = statistics.fmean(scores)
            sd = statistics.pstdev(scores)
            return (scores[0] - m) / sd if sd > 0 else None

        zk = z(self.scores[kw_leg][qi][:depth])
        zd = z(self.scores["dense"][qi][:depth])
        if zk is None or zd is None or zd <= 0:
            return 1.0
        return min(4.0, max(0.25, (zk / zd) ** alpha))

    def sparse_lite(self, qi: int, kw_leg: str, depth: int) -> list[int]:
        """The dense leg's first ``depth`` candidates re-ranked by their BM25 score (true score to DEEP; a candidate
        the keyword leg does not hold scores 0). Order: BM25 desc, dense rank asc."""
        rm = self.rankmap(kw_leg)[qi]
        sc = self.scores[kw_leg][qi]
        cands = self.lists["dense"][qi][:depth]
        keyed = [(-(sc[rm[d] - 1] if d in rm else 0.0), r, d) for r, d in enumerate(cands)]
        return [d for _s, _r, d in sorted(keyed) if -_s > 0]


# -------------------------------------------------------------------------------------------------- settings


def setting_name(s: dict[str, Any]) -> str:
    parts = [s["mode"], s["kw"]]
    if "k" in s:
        parts.append(f"k{s['k']:g}")
    parts.append(f"w{s['w']:g}")
    parts.append(f"x{s['mult']}")
    if s.get("alpha"):
        parts.append(f"a{s['alpha']:g}")
    if s.get("wsl") is not None:
        parts.append(f"sl{s['wsl']:g}")
    return "|".join(parts)


def all_settings(kw_variants: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    grid = [(k, w, m) for k in RRF_KS for w in KW_WEIGHTS for m in MULTS]
    for kw in kw_variants:
        for k, w, m in grid:
            out.append({"mode": "rrf", "kw": kw, "k": k, "w": w, "mult": m})
    for kw in ("fts5", "fts5_dedup", "bm25s_k1.2_b0.75_dedup"):
        for k, w, m in grid:
            out.append({"mode": "crossleg", "kw": kw, "k": k, "w": w, "mult": m})
    for kw in ("fts5", "fts5_dedup"):
        for alpha in (0.5, 1.0):
            for k, w, m in grid:
                out.append({"mode": "qdw", "kw": kw, "k": k, "w": w, "mult": m, "alpha": alpha})
    for kw in ("fts5_dedup",):
        for k, w, m in grid:
            out.append({"mode": "sparselite2", "kw": kw, "k": k, "w": w, "mult": m})  # dense + rescored dense
            for wsl in (0.5, 1.0):
                out.append({"mode": "sparselite3", "kw": kw, "k": k, "w": w, "mult": m, "wsl": wsl})
    for kw in ("fts5", "fts5_dedup"):
        for fusion in ("dbsf", "relative"):
            for w in KW_WEIGHTS:
                for m in MULTS:
                    out.append({"mode": fusion, "kw": kw, "w": w, "mult": m})
    return out


def run_setting(off: Offline, s: dict[str, Any], qi: int, top: int) -> list[int]:
    depth = s["mult"] * top
    kw = s["kw"]
    mode = s["mode"]
    if mode == "rrf":
        return off.rrf(qi, [("dense", 1.0, depth), (kw, s["w"], depth)], s["k"], top)
    if mode == "crossleg":
        return off.rrf_crossleg(qi, [("dense", 1.0, depth), (kw, s["w"], depth)], s["k"], top)
    if mode == "qdw":
        f = off.qdw_weights(qi, kw, depth, s["alpha"])
        return off.rrf(qi, [("dense", 1.0, depth), (kw, s["w"] * f, depth)], s["k"], top)
    if mode in ("sparselite2", "sparselite3"):
        sl = off.sparse_lite(qi, kw, depth)
        key = "__sl"
        off.lists.setdefault(key, [[] for _ in off.c.query_ids])[qi] = sl
        legs = [("dense", 1.0, depth), (key, s["w"], depth)]
        if mode == "sparselite3":
            legs = [("dense", 1.0, depth), (kw, s["w"], depth), (key, s["wsl"], depth)]
        return off.rrf(qi, legs, s["k"], top)
    if mode in ("dbsf", "relative"):
        return off.score_fusion(qi, [("dense", 1.0, depth), (kw, s["w"], depth)], mode, top)
    raise ValueError(mode)


# ------------------------------------------------------------------------------------------------------ stats


def bootstrap_ci(diffs: Sequence[float], n: int = 10000, seed: int = 0) -> tuple[float, float]:
    arr = np.asarray(diffs, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, len(arr), size=(n, len(arr)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


ANCHOR_HYBRIDS = [
    "LlamaIndex QueryFusionRetriever",
    "LangChain EnsembleRetriever",
    "Qdrant-style hybrid k=2",
    "Qdrant-style hybrid k=60",
    "textbook RRF (dense + FTS5, k=60, 1/1)",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument("--refresh", action="store_true", help="recompute the cached leg/anchor/API runs")
    parser.add_argument("--analyze-only", action="store_true", help="fail if a collection's runs are not cached")
    args = parser.parse_args()

    from _colldata_report import analyze

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
