"""Keyword leg on a small hand-built multilingual set: CJK bigrams on/off, English vs language-aware analyzers.

Run: .venv/bin/python benchmarks/quality/bench_multilingual.py [--stores fts5 bm25 edge]

The set (``benchmarks/data/multilingual/``, BEIR layout) was written by hand for this benchmark: 90 short documents
(Chinese 14, Japanese 14, Korean 12, German 14, French 14, Spanish 12, English 10) and 49 queries with graded
judgments, each query tagged with what it tests (a CJK word inside a longer run, a German umlaut plural, a French
irregular plural, an accent-less query, ...). Two known misses are in it on purpose: a one-character Chinese
query (a bigram index holds no unigram of a longer run) and a German word inside a compound (no decompounding).
It is SMALL: one query moves a language's mean by 1/6 to 1/9; read the table as "found / not found", not as
a benchmark of retrieval quality.

Every store holds all 90 documents; each language's queries are scored over that one mixed index. Analyzers:

* ``no-cjk``: ``Analyzer(cjk_bigrams=False)``: the default analyzer before this change (a CJK run is one token);
* ``default``: ``Analyzer()``: English Porter stemming and stopwords, CJK runs as overlapping bigrams;
* ``language``: ``Analyzer(language=L)`` for German, French and Spanish (Snowball stemmer, shipped stopwords,
  bigrams on); for Chinese, Japanese, Korean and English it is the default analyzer (no row).

Stores: FTS5KeywordStore (``fts5``), BM25KeywordStore with bm25s (``bm25``), QdrantEdgeKeywordStore (``edge``).
Reports nDCG@10 and Recall@10 per language; writes benchmarks/results/multilingual.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.beir import read_beir
from benchmarks.common.paths import LOCAL_DATA, RESULTS
from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.evaluation import doc_text, evaluate
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore

DATA = LOCAL_DATA / "multilingual"
OUT = RESULTS / "multilingual.json"
LANGS = {"zh": None, "ja": None, "ko": None, "de": "german", "fr": "french", "es": "spanish", "en": None}
STORES = {
    "fts5": lambda a: FTS5KeywordStore(analyzer=a),
    "bm25": lambda a: BM25KeywordStore(analyzer=a),
    "edge": lambda a: QdrantEdgeKeywordStore(analyzer=a),
}
METRICS = ("ndcg@10", "recall@10")


def run_store(make: Any, analyzer: Analyzer, ids: list[str], texts: list[str], queries: dict[str, str]) -> dict:
    store = make(analyzer)
    try:
        store.add(ids, texts)
        return {qid: {h.id: h.score for h in store.search(text, 10)} for qid, text in queries.items()}
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", default=list(STORES), choices=list(STORES))
    args = parser.parse_args()
    data = read_beir(DATA)
    ids = list(data.corpus)
    texts = [doc_text(data.corpus[i]) for i in ids]
    raw_queries = [json.loads(line) for line in (DATA / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    lang_of = {q["_id"]: q["metadata"]["lang"] for q in raw_queries}
    analyzers: dict[str, Analyzer] = {"no-cjk": Analyzer(cjk_bigrams=False), "default": Analyzer()}
    analyzers.update({name: Analyzer(language=name) for name in LANGS.values() if name})
    results: dict[str, Any] = {}
    t0 = time.perf_counter()
    for store_name in args.stores:
        runs = {name: run_store(STORES[store_name], a, ids, texts, data.queries) for name, a in analyzers.items()}
        for lang, language in LANGS.items():
            qrels = {q: r for q, r in data.qrels.items() if lang_of[q] == lang}
            variants = ["no-cjk", "default"] + ([language] if language else [])
            for variant in variants:
                run = {q: hits for q, hits in runs[variant].items() if q in qrels}
                scores = evaluate(run, qrels, METRICS)
                missed = sorted(q for q in qrels if not set(run.get(q, {})) & set(qrels[q]))
                label = "language" if variant == language else variant
                results.setdefault(store_name, {}).setdefault(lang, {})[label] = {
                    **{m: round(v, 4) for m, v in scores.items()}, "queries": len(qrels), "no_relevant_found": missed,
                }
    elapsed = time.perf_counter() - t0

    print(f"{'store':6} {'lang':4} {'analyzer':9} {'nDCG@10':>8} {'R@10':>6}  queries with nothing relevant found")
    for store_name, per_lang in results.items():
        for lang, per_variant in per_lang.items():
            for variant, row in per_variant.items():
                missed = ", ".join(row["no_relevant_found"]) or "-"
                print(f"{store_name:6} {lang:4} {variant:9} {row['ndcg@10']:8.3f} {row['recall@10']:6.3f}  {missed}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "about": "hand-built multilingual set (benchmarks/data/multilingual): 90 documents, 49 queries; small",
        "documents": len(ids), "queries": len(data.queries), "metrics": list(METRICS),
        "analyzers": {name: a.config() | {"stopwords": len(a.stopwords)} for name, a in analyzers.items()},
        "results": results, "seconds": round(elapsed, 2), "python": platform.python_version(),
    }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
