"""What a date range and a substring filter cost next to an equality filter, in every store kind.

Usage:
    .venv/bin/python benchmarks/speed/bench_filter_resolve.py               # 10k documents (about a minute)
    .venv/bin/python benchmarks/speed/bench_filter_resolve.py --docs 2000

One corpus (random words, a ``session`` int of 100, a ``created_at`` datetime over two years, a ``title`` string)
in FTS5, BM25 (bm25s), qdrant-edge dense and Qdrant local-mode dense stores; per store, the p50 of a top-10 search
(warm, back to back) unfiltered, with ``{"session": [3, 4, 5]}`` (3%), ``{"created_at": {"$gte": ..., "$lt": ...}}``
(about 3%) and ``{"title": {"$icontains": ...}}`` (about 3%). Qdrant resolves the last two to point ids first (a
scroll over the points holding the key: :mod:`rrf_retriever.stores.qdrant.resolve`); FTS5 reads its date rows and
``instr`` over the key's strings; BM25 bisects its sorted instants and tests each distinct string.

Writes ``benchmarks/results/filter_resolve.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

WORDS = [f"w{i}" for i in range(2000)]
START = datetime(2023, 1, 1)
REPEATS = 30


def corpus(n: int, rng: random.Random) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    ids = [f"d{i}" for i in range(n)]
    texts = [" ".join(rng.choices(WORDS, k=12)) for _ in ids]
    metas = [{"session": rng.randrange(100), "created_at": START + timedelta(minutes=rng.randrange(2 * 525_600)),
              "title": f"Report {rng.randrange(100):02d} on {rng.choice(WORDS)}"} for _ in ids]
    return ids, texts, metas


FILTERS = {
    "none": None,
    "equality 3%": {"session": [3, 4, 5]},
    "date range ~3%": {"created_at": {"$gte": START + timedelta(days=100), "$lt": START + timedelta(days=122)}},
    # One title number is 1% of the documents: three of them, each its own substring leaf on one key.
    "icontains ~3%": {"$or": [{"title": {"$icontains": f"REPORT {n:02d} "}} for n in (7, 8, 9)]},
}


def p50(search: Any) -> float:
    search()  # warm: payload indexes, caches
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        search()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=10_000)
    args = parser.parse_args()
    ids, texts, metas = corpus(args.docs, random.Random(7))
    embedding = HashingEmbedding(dim=64)
    query_vector = embedding.embed_query("w1 w2 w3")
    stores: dict[str, Any] = {
        "fts5": FTS5KeywordStore(":memory:"),
        "bm25": BM25KeywordStore(),
        "qdrant-edge dense": QdrantEdgeDenseStore(embedding),
        "qdrant local dense": QdrantDenseStore(embedding),
    }
    results: dict[str, dict[str, float]] = {}
    for name, store in stores.items():
        store.add(ids, texts, metas)
        is_dense = "dense" in name
        results[name] = {}
        for label, flt in FILTERS.items():
            if is_dense:
                hits = store.search(query_vector, 10, filter=flt)
                ms = p50(lambda s=store, f=flt: s.search(query_vector, 10, filter=f))
            else:
                hits = store.search("w1 w2 w3", 10, filter=flt)
                ms = p50(lambda s=store, f=flt: s.search("w1 w2 w3", 10, filter=f))
            results[name][label] = round(ms, 3)
            print(f"{name:20s} {label:16s} p50 {ms:8.2f} ms  ({len(hits)} hits)")
        store.close()
    out = {"docs": args.docs, "repeats": REPEATS, "p50_ms": results}
    path = RESULTS / "filter_resolve.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
