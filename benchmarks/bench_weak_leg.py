"""Never worse than the better leg: the weak-leg rule on the five collections and on collections with one weak leg.

Usage:
    .venv/bin/python benchmarks/_colldata.py          # the five collections' MiniLM vectors (cached once)
    nice .venv/bin/python benchmarks/bench_weak_leg.py   # legs once (cached), then every system offline, tables

Collections (built deterministically, public names only):

* the five public ones (``../shared/data``: scifact arguana med cacm npl), judged test queries (ArguAna: the fixed
  300-query subset, the query's own document excluded), texts only;
* long documents: ``<name>-long<k>``: the collection's documents shuffled (``random.Random(0)``) into groups of
  ``k``, each group ONE document (the members' texts joined by a blank line), a member relevant to some query placed
  LAST, so its text starts past MiniLM's 256-word-piece window; a long document is relevant to a query with the
  best grade of its members. scifact-long2 (2,592 documents: the relevant text starts near the window's end),
  scifact-long4 (1,296), med-long4 (259). New MiniLM vectors of the long texts, cached as ``_colldata`` does;
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
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _colldata import CACHE, COLLECTIONS, RESULTS, ROOT, cached_vectors, load_collection

from rrf_retriever import Analyzer, Hit, QdrantEdgeKeywordStore
from rrf_retriever.evaluation import doc_text, evaluate, load_beir

DEEP = 100
FETCH = 40
TOP = 10
RUNS_VERSION = "v1"
MULTI = ROOT / "benchmarks" / "data" / "multilingual"
LONG = (("scifact", 2), ("scifact", 4), ("med", 4))
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


def long_docs(name: str, k: int) -> Data:
    """Groups of ``k`` documents as one, a relevant member last (module doc)."""
    c = load_collection(name)
    relevant = {d for judged in c.qrels.values() for d, g in judged.items() if g > 0}
    order = list(range(len(c.doc_ids)))
    random.Random(0).shuffle(order)
    groups = [order[i : i + k] for i in range(0, len(order), k)]
    ids: list[str] = []
    texts: list[str] = []
    owner: dict[str, str] = {}
    for gi, members in enumerate(groups):
        members = sorted(members, key=lambda m: c.doc_ids[m] in relevant)  # stable: relevant ones last
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
    return Data(f"{name}-long{k}", ids, texts, cached_vectors(texts), c.query_ids, c.query_texts, c.query_vectors,
                qrels, kind="long")


def multilingual() -> list[Data]:
    ds = load_beir(MULTI)
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
    analyzer = Analyzer(language=d.language) if d.language in ("german", "french", "spanish") else Analyzer()
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
    for lang in ("", *LANG_NAMES):
        out[f"multilingual-{lang}".rstrip("-")] = lambda lang=lang: next(
            d for d in multilingual() if d.name == f"multilingual-{lang}".rstrip("-"))
    return out


System = Callable[[Data, int, dict[str, list[Hit]]], list[str]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="collection names (default: all)")
    parser.add_argument("--legs-only", action="store_true", help="compute and cache the legs, nothing else")
    args = parser.parse_args()
    t0 = time.perf_counter()
    for name, build in builders().items():
        if args.only and name not in args.only:
            continue
        d = build()
        runs = leg_runs(d)
        print(f"{d.name}: {len(d.doc_ids)} docs, {len(d.query_ids)} queries, legs {time.perf_counter() - t0:.0f}s",
              flush=True)
        if args.legs_only:
            continue
        _ = evaluate, runs, Any  # the analysis follows


if __name__ == "__main__":
    main()
