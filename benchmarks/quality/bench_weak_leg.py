"""Never worse than the better leg: the weak-leg rule on the five collections and on collections with one weak leg.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections          # the five collections' MiniLM vectors (cached once)
    nice .venv/bin/python benchmarks/quality/bench_weak_leg.py   # legs once (cached), then every system offline, tables

Collections (built deterministically, public names only):

* the five public ones (``../shared/data``: scifact arguana med cacm npl), judged test queries (ArguAna: the fixed
  300-query subset, the query's own document excluded), texts only;
* long documents: ``<name>-long<k>``: the collection's documents shuffled (``random.Random(0)``) into groups of
  ``k``, each group ONE document (the members' texts joined by a blank line), a member relevant to some query placed
  LAST, so its text starts past MiniLM's 256-word-piece window; a long document is relevant to a query with the
  best grade of its members. scifact-long2 (2,592 documents: the relevant text starts near the window's end),
  scifact-long4 (1,296), med-long4 (259). New MiniLM vectors of the long texts, cached as ``common/beir.py`` does.
  ``<name>-long4-first``: the same groups with the relevant member FIRST (the model reads it: where the rule's
  long-document input is wrong);
* ``xquad-<lang>``: XQuAD (Artetxe et al., ACL 2020; CC BY-SA 4.0) as a paragraph retrieval set in English
  (the control), German, Russian, Arabic and Chinese: 240 paragraphs, 300 of the 1,190 questions (one relevant
  paragraph each); the corpus language is the language (MiniLM speaks only English);
* ``multilingual``: the hand-built set of ``benchmarks/data/multilingual`` (90 documents in 7 languages, 49 queries,
  graded): ``multilingual`` is the mixed index (the default analyzer); ``multilingual-<lang>`` for de, fr, es, zh,
  ja, ko holds that language's documents only, searched with that language's queries (Snowball analyzer for de, fr,
  es): a corpus in one language MiniLM (English) does not speak.

Legs, each once per query at depth 100: dense = exact cosine over the cached MiniLM vectors (numpy; what
qdrant-edge's exact search returns, up to ties), keyword = ``QdrantEdgeKeywordStore`` (the default keyword store).
Systems at top_k=10, each leg cut to the default fetch depth (40): dense alone, keyword alone, the default hybrid
(weighted RRF, k=60, keyword 1.25), the hybrid with the weak-leg rule (``weak_leg_weights``, what the engine
does), DBSF and calibrated fusion (options). nDCG@10 with linear gains (ranx's ``ndcg``).

Writes ``benchmarks/results/weak_leg.json``; prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import COLLECTIONS, cached_vectors, load_collection, read_beir
from benchmarks.common.paths import CACHE, LOCAL_DATA, RESULTS, ROOT
from rrf_retriever import (
    Analyzer,
    Hit,
    QdrantEdgeKeywordStore,
    calibrated_score_fusion,
    distribution_based_score_fusion,
    weighted_rrf,
)
from rrf_retriever.engine import weak_legs
from rrf_retriever.engine.weak_legs import LegView, weak_leg_weights
from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.evaluation import doc_text

DEEP = 100
FETCH = 40
TOP = 10
RUNS_VERSION = "v1"
MULTI = LOCAL_DATA / "multilingual"
LONG = (("scifact", 2), ("scifact", 4), ("med", 4))
#: The same long documents with the relevant member FIRST: the model reads the relevant text (the rule's failure
#: case: documents whose beginning says what they are about).
LONG_FIRST = (("scifact", 4), ("med", 4))
#: XQuAD as a judged retrieval set per language (240 paragraphs, the questions asked of them; CC BY-SA 4.0), in
#: ``benchmarks/data/xquad`` (the corpus-language work adds it; ``XQUAD_DIR`` points elsewhere).
XQUAD = Path(os.environ.get("XQUAD_DIR") or LOCAL_DATA / "xquad")
XQUAD_LANGS = {"en": "english", "de": "german", "ru": "russian", "ar": "arabic", "zh": "chinese"}
XQUAD_QUERIES = 300  # of 1,190 per language, random.Random(0): the vectors of the rest cost CPU, not insight
LANG_NAMES = {"de": "german", "fr": "french", "es": "spanish", "zh": None, "ja": None, "ko": None}


@dataclass
class Data:
    """One collection as the legs see it."""

    name: str
    doc_ids: list[str]
    doc_texts: list[str]
    doc_vectors: np.ndarray
    query_ids: list[str]
    query_texts: list[str]
    query_vectors: np.ndarray
    qrels: dict[str, dict[str, int]]
    language: str | None = None  # the corpus language (None: English), as the keyword analyzer holds it
    exclude_self: bool = False
    kind: str = "public"


def public(name: str) -> Data:
    c = load_collection(name)
    return Data(name, c.doc_ids, c.doc_texts, c.doc_vectors, c.query_ids, c.query_texts, c.query_vectors, c.qrels,
                exclude_self=c.exclude_self)


def long_docs(name: str, k: int, first: bool = False) -> Data:
    """Groups of ``k`` documents as one, a relevant member last (``first``: first) (module doc)."""
    c = load_collection(name)
    relevant = {d for judged in c.qrels.values() for d, g in judged.items() if g > 0}
    order = list(range(len(c.doc_ids)))
    random.Random(0).shuffle(order)
    groups = [order[i : i + k] for i in range(0, len(order), k)]
    ids: list[str] = []
    texts: list[str] = []
    owner: dict[str, str] = {}
    for gi, members in enumerate(groups):
        members = sorted(members, key=lambda m: (c.doc_ids[m] in relevant) != first)  # stable: relevant last/first
        gid = f"L{gi}"
        ids.append(gid)
        texts.append("\n\n".join(c.doc_texts[m] for m in members))
        for m in members:
            owner[c.doc_ids[m]] = gid
    qrels: dict[str, dict[str, int]] = {}
    for q, judged in c.qrels.items():
        out: dict[str, int] = {}
        for d, g in judged.items():
            out[owner[d]] = max(out.get(owner[d], 0), g)
        qrels[q] = out
    return Data(f"{name}-long{k}" + ("-first" if first else ""), ids, texts, cached_vectors(texts), c.query_ids, c.query_texts, c.query_vectors,
                qrels, kind="long")


def multilingual() -> list[Data]:
    ds = read_beir(MULTI)
    ids = list(ds.corpus)
    texts = [doc_text(ds.corpus[i]) for i in ids]
    dv = cached_vectors(texts)
    qids = list(ds.queries)
    qtexts = [ds.queries[q] for q in qids]
    qv = cached_vectors(qtexts)
    doc_lang = {i: ds.corpus[i]["metadata"]["lang"] for i in ids}
    raw = [json.loads(line) for line in (MULTI / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    q_lang = {q["_id"]: q["metadata"]["lang"] for q in raw}
    out = [Data("multilingual", ids, texts, dv, qids, qtexts, qv, dict(ds.qrels), kind="multilingual")]
    for lang, language in LANG_NAMES.items():
        d_keep = [j for j, i in enumerate(ids) if doc_lang[i] == lang]
        q_keep = [j for j, q in enumerate(qids) if q_lang[q] == lang and q in ds.qrels]
        out.append(Data(f"multilingual-{lang}", [ids[j] for j in d_keep], [texts[j] for j in d_keep], dv[d_keep],
                        [qids[j] for j in q_keep], [qtexts[j] for j in q_keep], qv[q_keep],
                        {qids[j]: ds.qrels[qids[j]] for j in q_keep}, language=language or lang,
                        kind="multilingual"))
    return out


def xquad(lang: str) -> Data:
    """XQuAD in one language: its 240 paragraphs, :data:`XQUAD_QUERIES` of its questions, one relevant each."""
    docs = [json.loads(line) for line in (XQUAD / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in (XQUAD / f"queries.{lang}.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [queries[i] for i in sorted(random.Random(0).sample(range(len(queries)), XQUAD_QUERIES))]
    qrels: dict[str, dict[str, int]] = {}
    for line in (XQUAD / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = int(g)
    ids, texts = [d["_id"] for d in docs], [d["text"] for d in docs]
    qids, qtexts = [q["_id"] for q in queries], [q["text"] for q in queries]
    language = XQUAD_LANGS[lang]
    return Data(f"xquad-{lang}", ids, texts, cached_vectors(texts), qids, qtexts, cached_vectors(qtexts),
                {q: qrels[q] for q in qids}, language=None if language == "english" else language, kind="xquad")


# ------------------------------------------------------------------------------------------------------ legs


def leg_runs(d: Data) -> dict[str, list[list[Hit]]]:
    """``{"dense": [hits per query], "keyword": [...]}`` at depth :data:`DEEP`, cached."""
    key = CACHE / f"weakleg-{RUNS_VERSION}-{d.name}-{len(d.doc_ids)}-{len(d.query_ids)}.json"
    if key.is_file():
        raw = json.loads(key.read_text())
        return {leg: [[Hit(i, score=s) for i, s in q] for q in per] for leg, per in raw.items()}
    sims = d.query_vectors @ d.doc_vectors.T
    dense: list[list[Hit]] = []
    for qi, q in enumerate(d.query_ids):
        row = sims[qi].astype(np.float64)
        if d.exclude_self and q in d.doc_ids:
            row[d.doc_ids.index(q)] = -np.inf
        top = np.lexsort((np.array(d.doc_ids), -row))[:DEEP]
        dense.append([Hit(d.doc_ids[j], score=float(row[j])) for j in top if np.isfinite(row[j])])
    try:
        analyzer = Analyzer(language=d.language) if d.language else Analyzer()
    except RRFRetrieverError:  # chinese, japanese, korean: the default analyzer cuts CJK text into bigrams
        analyzer = Analyzer()
    store = QdrantEdgeKeywordStore(analyzer=analyzer)
    try:
        store.add(d.doc_ids, d.doc_texts)
        keyword = [store.search(t, DEEP, exclude_ids=[q] if d.exclude_self else None)
                   for q, t in zip(d.query_ids, d.query_texts)]
    finally:
        store.close()
    keyword = [sorted(hits, key=lambda h: (-h.score, h.id)) for hits in keyword]
    runs = {"dense": dense, "keyword": keyword}
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(json.dumps({leg: [[[h.id, h.score] for h in q] for q in per] for leg, per in runs.items()}))
    return runs


def ndcg10(ranked: Sequence[str], judged: Mapping[str, int]) -> float:
    gains = [judged.get(i, 0) for i in ranked[:TOP]]
    dcg = sum(g / np.log2(r + 2) for r, g in enumerate(gains))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:TOP]
    idcg = sum(g / np.log2(r + 2) for r, g in enumerate(ideal))
    return float(dcg / idcg) if idcg > 0 else 0.0


def builders() -> dict[str, Callable[[], Data]]:
    """Every collection by name, built when asked (the five need their cached vectors)."""
    out: dict[str, Callable[[], Data]] = {name: (lambda name=name: public(name)) for name in COLLECTIONS}
    for name, k in LONG:
        out[f"{name}-long{k}"] = lambda name=name, k=k: long_docs(name, k)
    for name, k in LONG_FIRST:
        out[f"{name}-long{k}-first"] = lambda name=name, k=k: long_docs(name, k, first=True)
    for lang in ("", *LANG_NAMES):
        out[f"multilingual-{lang}".rstrip("-")] = lambda lang=lang: next(
            d for d in multilingual() if d.name == f"multilingual-{lang}".rstrip("-"))
    if (XQUAD / "qrels.tsv").is_file():
        for lang in XQUAD_LANGS:
            out[f"xquad-{lang}"] = lambda lang=lang: xquad(lang)
    return out


WEIGHTS = {"dense": 1.0, "keyword": 1.25}  # the defaults (DEFAULT_LEG_WEIGHTS)
WINDOW = 256  # MiniLMEmbedding.window_tokens
FACTORS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.25)
COVERAGES = (0.3, 0.4, 0.5, 0.6, 0.7)


@dataclass
class Prepared:
    """One collection's legs at the default fetch depth, with texts (what the engine's hits carry)."""

    data: Data
    legs: list[dict[str, list[Hit]]]  # per query: {"dense": hits, "keyword": hits}
    views: dict[str, LegView]

    def judged(self, qi: int) -> dict[str, int]:
        return self.data.qrels[self.data.query_ids[qi]]


def prepare(d: Data) -> Prepared:
    runs = leg_runs(d)
    text = dict(zip(d.doc_ids, d.doc_texts))
    legs = [{leg: [Hit(h.id, text=text[h.id], score=h.score) for h in runs[leg][qi][:FETCH]] for leg in runs}
            for qi in range(len(d.query_ids))]
    language = d.language or "english"
    views = {"dense": LegView("dense", speaks_corpus=language == "english", language=language, window_tokens=WINDOW),
             "keyword": LegView("keyword", language=language)}
    return Prepared(d, legs, views)


def rule_weights(p: Prepared, qi: int, factor: float | None = None, min_coverage: float | None = None
                 ) -> tuple[dict[str, float], dict[str, str]]:
    """The engine's decision (``weak_leg_weights``), optionally at other constants (the LOCO grid)."""
    saved = weak_legs.WEAK_FACTOR, weak_legs.MIN_COVERAGE
    try:
        if factor is not None:
            weak_legs.WEAK_FACTOR = factor
        if min_coverage is not None:
            weak_legs.MIN_COVERAGE = min_coverage
        ranked = {k: v for k, v in p.legs[qi].items() if v}
        decision = weak_leg_weights(ranked, {k: WEIGHTS[k] for k in ranked}, p.views)
    finally:
        weak_legs.WEAK_FACTOR, weak_legs.MIN_COVERAGE = saved
    return decision.weights, decision.notes


def fused(p: Prepared, qi: int, weights: dict[str, float], how: str = "rrf") -> list[str]:
    ranked = {k: v for k, v in p.legs[qi].items() if v and weights.get(k, 0) > 0}
    if not ranked:
        return []
    used = {k: weights[k] for k in ranked}
    if how == "rrf":
        return [h.id for h in weighted_rrf(ranked, used, k=60, limit=TOP)]
    fuse = distribution_based_score_fusion if how == "dbsf" else calibrated_score_fusion
    return [h.id for h in fuse(ranked, used, limit=TOP)]


def per_query(p: Prepared) -> dict[str, list[float]]:
    """nDCG@10 per query of every system."""
    out: dict[str, list[float]] = {}
    for qi in range(len(p.data.query_ids)):
        judged = p.judged(qi)
        rule, _ = rule_weights(p, qi)
        rows = {
            "dense alone": [h.id for h in p.legs[qi]["dense"][:TOP]],
            "keyword alone": [h.id for h in p.legs[qi]["keyword"][:TOP]],
            "hybrid (default RRF)": fused(p, qi, WEIGHTS),
            "hybrid + weak-leg rule": fused(p, qi, rule),
            "dbsf": fused(p, qi, WEIGHTS, "dbsf"),
            "calibrated": fused(p, qi, WEIGHTS, "calibrated"),
            "calibrated + weak-leg rule": fused(p, qi, rule, "calibrated"),
        }
        for name, ranked in rows.items():
            out.setdefault(name, []).append(ndcg10(ranked, judged))
    return out


def signals(p: Prepared) -> list[dict[str, float]]:
    """Per query: what each candidate input says, and the legs' nDCG@10 (which inputs carry signal)."""
    n_docs = len(p.data.doc_ids)
    rows = []
    for qi in range(len(p.data.query_ids)):
        dense, keyword = p.legs[qi]["dense"], p.legs[qi]["keyword"]
        top_d, top_k = {h.id for h in dense[:TOP]}, {h.id for h in keyword[:TOP]}
        chance = len(top_d) * len(top_k) / max(n_docs, 1)
        scores = [h.score for h in dense[:TOP]]
        mean = float(np.mean(scores)) if scores else 0.0
        sd = float(np.std(scores)) if scores else 0.0
        share = weak_legs.coverage(list({h.id: h for h in dense[:TOP] + keyword[:TOP]}.values()), WINDOW)
        judged = p.judged(qi)
        rows.append({
            "overlap": len(top_d & top_k), "chance": chance,
            "dense_z": (scores[0] - mean) / sd if sd > 0 else 0.0,
            "coverage": 1.0 if share is None else share,
            "keyword_hits": len(keyword), "foreign": not p.views["dense"].speaks_corpus,
            "dense": ndcg10([h.id for h in dense[:TOP]], judged),
            "keyword": ndcg10([h.id for h in keyword[:TOP]], judged),
            "hybrid": ndcg10(fused(p, qi, WEIGHTS), judged),
        })
    return rows


def bootstrap_ci(diffs: Sequence[float], n: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    arr = np.asarray(diffs)
    means = arr[rng.integers(0, len(arr), size=(n, len(arr)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def loco(prepared: list[Prepared]) -> list[dict[str, Any]]:
    """The rule's two constants chosen leave-one-collection-out: pick the (factor, coverage) with the best worst
    margin over the OTHER collections (margin = rule minus the better of keyword alone, dense alone and the default
    hybrid), report the left-out collection's margin at that pick."""
    grid: dict[tuple[float, float], dict[str, float]] = {}
    ref: dict[str, float] = {}
    for p in prepared:
        q = range(len(p.data.query_ids))
        best = max(
            float(np.mean([ndcg10([h.id for h in p.legs[i]["dense"][:TOP]], p.judged(i)) for i in q])),
            float(np.mean([ndcg10([h.id for h in p.legs[i]["keyword"][:TOP]], p.judged(i)) for i in q])),
            float(np.mean([ndcg10(fused(p, i, WEIGHTS), p.judged(i)) for i in q])),
        )
        ref[p.data.name] = best
        for f in FACTORS:
            for c in COVERAGES:
                score = float(np.mean([ndcg10(fused(p, i, rule_weights(p, i, f, c)[0]), p.judged(i)) for i in q]))
                grid.setdefault((f, c), {})[p.data.name] = score - best
    out = []
    names = [p.data.name for p in prepared]
    for left in names:
        pick = max(grid, key=lambda s: (min(v for n, v in grid[s].items() if n != left),
                                        float(np.mean([v for n, v in grid[s].items() if n != left]))))
        out.append({"left_out": left, "factor": pick[0], "min_coverage": pick[1],
                    "worst_margin_others": round(min(v for n, v in grid[pick].items() if n != left), 4),
                    "left_out_margin": round(grid[pick][left], 4),
                    "shipped_margin": round(grid[(weak_legs.WEAK_FACTOR, weak_legs.MIN_COVERAGE)][left], 4)})
    return out


class DeclaredEmbedding:
    """Answers from the cached vectors (documents by position, queries given as vectors) and declares what
    MiniLMEmbedding declares: English, a 256-token window. Only ``query_vector=`` searches reach it."""

    languages = ("english",)
    window_tokens = WINDOW

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("documents come with their vectors")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("queries come with their vectors")


def engine_check(p: Prepared) -> dict[str, Any]:
    """The same rule through the engine (``HybridEngine`` over qdrant-edge exact dense + the default keyword store,
    every default): the ids equal the offline "hybrid + weak-leg rule", and the trace says how often it fired."""
    from rrf_retriever import QdrantEdgeDenseStore, as_embedding
    from rrf_retriever.engine import HybridEngine

    d = p.data
    try:
        analyzer = Analyzer(language=d.language) if d.language else Analyzer()
    except RRFRetrieverError:
        analyzer = Analyzer()
    dense = QdrantEdgeDenseStore(as_embedding(DeclaredEmbedding(int(d.doc_vectors.shape[1]))), exact=True)
    engine = HybridEngine({"dense": dense, "keyword": QdrantEdgeKeywordStore(analyzer=analyzer)})
    same = noted = 0
    try:
        engine.add(d.doc_ids, d.doc_texts, vectors=d.doc_vectors.tolist())
        for qi, (q, text) in enumerate(zip(d.query_ids, d.query_texts)):
            result = engine.search(text, query_vector=d.query_vectors[qi].tolist(),
                                   exclude_ids=[q] if d.exclude_self else None)
            same += result.ids == fused(p, qi, rule_weights(p, qi)[0])
            noted += bool(result.trace.stage_counts.get("weak_legs"))
    finally:
        engine.close()
    return {"queries": len(d.query_ids), "same_ids_as_offline": same, "trace_says_weighted_down": noted}


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def group(name: str) -> str:
    """The kind of collection, for the signal table."""
    if name in COLLECTIONS:
        return "public"
    if "-long" in name:
        return "long, relevant first" if name.endswith("-first") else "long, relevant last"
    if name.startswith("xquad"):
        return "xquad English" if name == "xquad-en" else "xquad non-English"
    return "multilingual (hand-built)"


GROUPS = ("public", "long, relevant last", "long, relevant first", "xquad non-English", "xquad English",
          "multilingual (hand-built)")


def signal_table(all_signals: dict[str, list[dict[str, float]]]) -> list[list[Any]]:
    """Each candidate input, per kind of collection: on how many queries it fires, and keyword alone minus the
    default hybrid on those queries (an input worth using fires where that is > 0, and rarely where it is < 0)."""
    tests: dict[str, Callable[[dict[str, float]], bool]] = {
        "top-10 overlap 0 (no agreement)": lambda r: r["overlap"] == 0,
        "top-10 overlap <= 2x chance": lambda r: r["overlap"] <= max(2 * r["chance"], 0.5),
        "dense top-1 z < 1.5 (flat-ish)": lambda r: r["dense_z"] < 1.5,
        "dense top-1 z < 1.0": lambda r: r["dense_z"] < 1.0,
        f"coverage < {weak_legs.MIN_COVERAGE} (long documents)": lambda r: r["coverage"] < weak_legs.MIN_COVERAGE,
        "corpus language not English": lambda r: bool(r["foreign"]),
    }
    rows = []
    for label, test in tests.items():
        cells: list[Any] = [label]
        for g in GROUPS:
            pool = [r for name, rs in all_signals.items() if group(name) == g for r in rs]
            if not pool:
                cells.append("-")
                continue
            fired = [r for r in pool if test(r)]
            loss = np.mean([r["keyword"] - r["hybrid"] for r in fired]) if fired else float("nan")
            cells.append(f"{len(fired)}/{len(pool)}: {loss:+.3f}" if fired else f"0/{len(pool)}")
        rows.append(cells)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="collection names (default: all)")
    parser.add_argument("--legs-only", action="store_true", help="compute and cache the legs, nothing else")
    parser.add_argument("--engine-check", nargs="*", default=["med", "med-long4", "xquad-de"],
                        help="collections also run through HybridEngine (same ids as offline?)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    prepared: list[Prepared] = []
    for name, build in builders().items():
        if args.only and name not in args.only:
            continue
        d = build()
        leg_runs(d)
        print(f"{d.name}: {len(d.doc_ids)} docs, {len(d.query_ids)} queries, legs {time.perf_counter() - t0:.0f}s",
              flush=True)
        if not args.legs_only:
            prepared.append(prepare(d))
    if args.legs_only:
        return
    results: dict[str, Any] = {"collections": {}, "constants": {"WEAK_FACTOR": weak_legs.WEAK_FACTOR,
                                                                 "MIN_COVERAGE": weak_legs.MIN_COVERAGE}}
    rows = []
    all_signals: dict[str, list[dict[str, float]]] = {}
    for p in prepared:
        pq = per_query(p)
        means = {k: float(np.mean(v)) for k, v in pq.items()}
        better = max(means["dense alone"], means["keyword alone"])
        better_name = "dense alone" if means["dense alone"] >= means["keyword alone"] else "keyword alone"
        diffs = [a - b for a, b in zip(pq["hybrid + weak-leg rule"], pq[better_name])]
        fired = sum(1 for qi in range(len(p.data.query_ids)) if rule_weights(p, qi)[1])
        lo, hi = bootstrap_ci(diffs)
        results["collections"][p.data.name] = {
            "kind": p.data.kind, "documents": len(p.data.doc_ids), "queries": len(p.data.query_ids),
            "ndcg@10": {k: round(v, 4) for k, v in means.items()}, "rule_fired": fired,
            "rule_minus_better_leg": round(means["hybrid + weak-leg rule"] - better, 4),
            "rule_minus_better_leg_ci95": [round(lo, 4), round(hi, 4)],
            "rule_minus_default": round(means["hybrid + weak-leg rule"] - means["hybrid (default RRF)"], 4),
        }
        rows.append([p.data.name, len(p.data.doc_ids), len(p.data.query_ids),
                     *(f"{means[k]:.4f}" for k in pq), f"{fired}/{len(p.data.query_ids)}",
                     f"{means['hybrid + weak-leg rule'] - better:+.4f} [{lo:+.3f}, {hi:+.3f}]"])
        all_signals[p.data.name] = signals(p)
        print(f"  {p.data.name} done {time.perf_counter() - t0:.0f}s", flush=True)
    systems = list(per_query(prepared[0]))
    print(md_table(["collection", "docs", "queries", *systems, "rule fired", "rule - better leg [95% CI]"], rows))
    sig_rows = signal_table(all_signals)
    print()
    print(md_table(["input fires when", *GROUPS], sig_rows))
    results["signals"] = sig_rows
    if len(prepared) > 2:
        lo_rows = loco(prepared)
        results["loco"] = lo_rows
        print()
        print(md_table(["left out", "factor", "min coverage", "worst margin on the others", "left-out margin",
                        "shipped constants: left-out margin"],
                       [[r["left_out"], r["factor"], r["min_coverage"], f"{r['worst_margin_others']:+.4f}",
                         f"{r['left_out_margin']:+.4f}", f"{r['shipped_margin']:+.4f}"] for r in lo_rows]))
    checks = {p.data.name: engine_check(p) for p in prepared if p.data.name in (args.engine_check or [])}
    results["engine_check"] = checks
    for name, check in checks.items():
        print(f"engine check {name}: {check}")
    results["seconds"] = round(time.perf_counter() - t0, 1)
    out = RESULTS / "weak_leg.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
