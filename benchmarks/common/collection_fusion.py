"""The offline half of ``quality/bench_collections.py``: query variants, per-query scoring, offline fusion of the
cached legs for any setting, the settings grid and bootstrap intervals (also used by ``quality/bench_bm25_variants.py``
and ``quality/bench_int8_intervals.py``).

Example:
    >>> setting_name({"mode": "rrf", "kw": "fts5", "k": 2, "w": 1.25, "mult": 2})
    'rrf|fts5|k2|w1.25|x2'
    >>> q_conv(CONV_SMALL)("how do cells divide")
    'cells divide'
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks.common.beir import Collection
from rrf_retriever import Analyzer, Hit, distribution_based_score_fusion, relative_score_fusion
from rrf_retriever.evaluation import evaluate

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


# ------------------------------------------------------------------------------------------------------ scoring


class Scorer:
    """Per-query nDCG@10 / MRR@10 / R@100, checked against ranx for the headline rows. Graded qrels (NFCorpus: 1
    and 2) count with ranx's linear gain (the grade); binary ones as 1. MRR and recall count any grade > 0."""

    def __init__(self, c: Collection) -> None:
        self.c = c
        pos = {d: i for i, d in enumerate(c.doc_ids)}
        self.rel: list[set[int]] = []
        self.gain: list[dict[int, float]] = []
        self.nrel: list[int] = []
        self.idcg: list[float] = []
        for q in c.query_ids:
            rels = {d: s for d, s in c.qrels[q].items() if s > 0}
            self.nrel.append(len(rels))
            gain = {pos[d]: float(s) for d, s in rels.items() if d in pos and not (c.exclude_self and d == q)}
            self.gain.append(gain)
            self.rel.append(set(gain))
            ideal = sorted((float(s) for s in rels.values()), reverse=True)[:10]
            self.idcg.append(sum(g / math.log2(r + 2) for r, g in enumerate(ideal)))

    def ndcg10(self, qi: int, ranked: Sequence[int]) -> float:
        gain = self.gain[qi]
        dcg = sum(gain[d] / math.log2(r + 2) for r, d in enumerate(ranked[:10]) if d in gain)
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
