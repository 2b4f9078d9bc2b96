"""Corpus-language detection: is the language right, and does the analyzer it picks find more?

Run: nice .venv/bin/python benchmarks/quality/bench_language_detection.py [--stores qdrant-edge fts5] [--xquad-dir DIR]

1. **Detection accuracy** (:func:`rrf_retriever.analysis.detect.detect_language` on each corpus, its default
   sample of 500 texts): the five English collections (``../shared/data``: scifact arguana med cacm npl: must be
   English), each language of the hand-built multilingual set (``benchmarks/data/multilingual``), the whole mixed
   multilingual set (no language holds a majority: the default analyzer), and XQuAD in nine languages
   (``benchmarks/data/xquad``, CC BY-SA 4.0, see its SOURCE.md; ``--xquad-dir`` with a checkout of
   github.com/deepmind/xquad adds Hindi, Thai and Vietnamese).
2. **Keyword-leg nDCG@10, detection vs forced English**, through the public path: ``EnsembleRRFRetriever.
   from_texts(texts, HashingEmbedding(8), ids=ids, keyword=STORE, weights={"dense": 0})`` (the analyzer the
   detection picks) against the same with ``analyzer="english"``; ``search(q, top_k=10)``. Each language is its
   own corpus (XQuAD: its 240 paragraphs and 1,190 questions; multilingual set: that language's documents and
   queries). Paired bootstrap 95% interval of the per-query difference (2,000 resamples, seed 0). On the whole
   mixed multilingual set it also scores the "language-neutral" alternative to the English fallback (no stemming,
   no stopwords) against the English default.

Writes benchmarks/results/language_detection.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.beir import read_beir
from benchmarks.common.paths import LOCAL_DATA, RESULTS
from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.analysis.detect import detect_language
from rrf_retriever.evaluation import doc_text, evaluate
from rrf_retriever.tuning.statistics import paired_bootstrap_ci

MULTI = LOCAL_DATA / "multilingual"
XQUAD = LOCAL_DATA / "xquad"
OUT = RESULTS / "language_detection.json"
COLLECTIONS = ("scifact", "arguana", "med", "cacm", "npl")
XQUAD_LANGS = {"ar": "arabic", "de": "german", "el": "greek", "en": "english", "es": "spanish", "ro": "romanian",
               "ru": "russian", "tr": "turkish", "zh": "chinese"}  # fmt: skip
XQUAD_EXTRA = {"hi": "hindi", "th": None, "vi": None}  # None: no analyzer language (expected: the default)
MULTI_LANGS = {"zh": "chinese", "ja": "japanese", "ko": "korean", "de": "german", "fr": "french",
               "es": "spanish", "en": "english"}  # fmt: skip


def ndcg10(ranked: list[str], rels: dict[str, int]) -> float:
    """nDCG@10 with linear gains (ranx's default), one query."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(rels.values(), reverse=True)[:10]))
    return dcg / ideal if ideal else 0.0


def keyword_run(texts: list[str], ids: list[str], queries: dict[str, str], store: str, analyzer: Any) -> tuple:
    """Rankings of the keyword leg alone through from_texts, and the language its analyzer has."""
    with EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(8), ids=ids, keyword=store, analyzer=analyzer,
                                         weights={"dense": 0}) as retriever:
        run = {q: retriever.search(text, top_k=10).ids for q, text in queries.items()}
        return run, retriever.corpus_language


def compare(texts: list[str], ids: list[str], queries: dict[str, str], qrels: dict[str, dict[str, int]],
            store: str, other: Any = "english", base: Any = None) -> dict[str, Any]:
    """``base`` (None: detection) against ``other`` (default: forced English) on one corpus."""
    runs = {}
    languages = {}
    for name, analyzer in (("base", base), ("other", other)):
        runs[name], languages[name] = keyword_run(texts, ids, queries, store, analyzer)
    per_query = {name: [ndcg10(run.get(q, []), qrels[q]) for q in qrels] for name, run in runs.items()}
    means = {name: evaluate({q: {d: -i for i, d in enumerate(r)} for q, r in run.items()}, qrels, ("ndcg@10",))
             ["ndcg@10"] for name, run in runs.items()}  # fmt: skip
    diff = [a - b for a, b in zip(per_query["base"], per_query["other"])]
    lo, hi = paired_bootstrap_ci(diff)
    return {"analyzer": languages["base"], "ndcg@10": round(means["base"], 4),
            "other_analyzer": languages["other"], "other_ndcg@10": round(means["other"], 4),
            "delta": round(sum(diff) / len(diff), 4), "ci95": [round(lo, 4), round(hi, 4)], "queries": len(qrels)}


def detection_row(texts: list[str], expected: str | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    found = detect_language(texts)
    seconds = time.perf_counter() - t0
    ok = found.language == (expected or "english") and (found.detected or expected is None)
    return {**found.as_dict(), "expected": expected, "correct": ok, "texts": len(texts), "seconds": round(seconds, 3)}


def load_xquad(folder: Path, lang: str) -> tuple[list[str], list[str], dict[str, str], dict[str, dict[str, int]]]:
    if (folder / f"{lang}.jsonl").exists():
        docs = [json.loads(x) for x in (folder / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines() if x]
        rows = [json.loads(x) for x in (folder / f"queries.{lang}.jsonl").read_text(encoding="utf-8").splitlines()]
        queries = {r["_id"]: r["text"] for r in rows}
    else:  # a checkout of github.com/deepmind/xquad: the same conversion as benchmarks/data/xquad/convert.py
        data = json.loads((folder / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
        docs, queries = [], {}
        for a, article in enumerate(data):
            for p, paragraph in enumerate(article["paragraphs"]):
                docs.append({"_id": f"a{a}-p{p}", "text": paragraph["context"]})
                queries.update({qa["id"]: qa["question"] for qa in paragraph["qas"]})
    qrels: dict[str, dict[str, int]] = {}
    for line in (XQUAD / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = int(g)
    return [d["text"] for d in docs], [d["_id"] for d in docs], queries, {q: qrels[q] for q in queries}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", default=["qdrant-edge", "fts5"])
    parser.add_argument("--xquad-dir", type=Path, default=None, help="a checkout of github.com/deepmind/xquad")
    args = parser.parse_args()
    t0 = time.perf_counter()
    detection: dict[str, Any] = {"english_collections": {}, "multilingual": {}, "xquad": {}}
    for name in COLLECTIONS:
        ds = read_beir(name)
        detection["english_collections"][name] = detection_row([doc_text(d) for d in ds.corpus.values()], "english")
    multi = read_beir(MULTI)
    raw_queries = [json.loads(x) for x in (MULTI / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    lang_of_query = {q["_id"]: q["metadata"]["lang"] for q in raw_queries}
    by_lang: dict[str, list[str]] = {}
    for doc_id, doc in multi.corpus.items():
        by_lang.setdefault(doc["metadata"]["lang"], []).append(doc_id)
    for lang, expected in MULTI_LANGS.items():
        detection["multilingual"][lang] = detection_row([doc_text(multi.corpus[i]) for i in by_lang[lang]], expected)
    all_texts = [doc_text(d) for d in multi.corpus.values()]
    detection["multilingual"]["all (mixed)"] = detection_row(all_texts, None)
    xquad_sets = {lang: (XQUAD, expected) for lang, expected in XQUAD_LANGS.items()}
    if args.xquad_dir is not None:
        xquad_sets.update({lang: (args.xquad_dir, expected) for lang, expected in XQUAD_EXTRA.items()})
    loaded = {lang: load_xquad(folder, lang) for lang, (folder, _) in xquad_sets.items()}
    for lang, (_, expected) in xquad_sets.items():
        detection["xquad"][lang] = detection_row(loaded[lang][0], expected)

    quality: dict[str, Any] = {}
    for store in args.stores:
        rows: dict[str, Any] = {"xquad": {}, "multilingual": {}}
        for lang, (texts, ids, queries, qrels) in loaded.items():
            rows["xquad"][lang] = compare(texts, ids, queries, qrels, store)
            print(store, "xquad", lang, rows["xquad"][lang], flush=True)
        for lang in MULTI_LANGS:
            ids = by_lang[lang]
            queries = {q: t for q, t in multi.queries.items() if lang_of_query[q] == lang}
            qrels = {q: multi.qrels[q] for q in queries}
            rows["multilingual"][lang] = compare([doc_text(multi.corpus[i]) for i in ids], ids, queries, qrels, store)
            print(store, "multilingual", lang, rows["multilingual"][lang], flush=True)
        ids = list(multi.corpus)
        neutral = compare(all_texts, ids, multi.queries, multi.qrels, store, base=Analyzer(stem=None, stopwords=()))
        rows["multilingual"]["all (mixed): neutral vs english"] = {**neutral, "analyzer": "no stemming, no stopwords"}
        quality[store] = rows
    elapsed = time.perf_counter() - t0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "about": "corpus-language detection: accuracy, and keyword-leg nDCG@10 with the detected analyzer vs "
                 "forced English (from_texts, weights={'dense': 0}); delta = detected - english, paired bootstrap",
        "detection": detection, "keyword_ndcg@10": quality, "seconds": round(elapsed, 1),
        "python": platform.python_version(), "load": os.getloadavg(),
    }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for group, per in detection.items():
        for name, row in per.items():
            print(f"detect {group:20} {name:12} {row['language']:10} detected={row['detected']!s:5} "
                  f"correct={row['correct']!s:5} {row['seconds']:.2f}s  {row['reason']}")
    print(f"wrote {OUT.relative_to(ROOT)} ({elapsed:.0f} s)")


if __name__ == "__main__":
    main()
