"""What the write-ahead journal costs: batched adds into FTS5 (file) + qdrant-edge, with and without a journal.

Run: .venv/bin/python benchmarks/speed/bench_journal.py [--docs 10000] [--batch 100]

Vectors come from the hashing embedder (embedding cost is not what is measured). Both configurations write the same
batches into fresh stores in a temporary folder, alternating, three rounds each; prints median documents/s and the
ratio, writes benchmarks/results/journal_cost.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore


def run(docs: list[str], batch: int, journal: bool) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="journal-bench-"))
    engine = HybridEngine(
        {"dense": QdrantEdgeDenseStore(HashingEmbedding(64), path=tmp / "edge"),
         "keyword": FTS5KeywordStore(tmp / "keyword.sqlite3")},
        journal=tmp / "journal.sqlite3" if journal else None,
    )
    started = time.perf_counter()
    for i in range(0, len(docs), batch):
        ids = [f"d{j}" for j in range(i, min(i + batch, len(docs)))]
        engine.add(ids, docs[i : i + batch], [{"session_id": j % 10} for j in range(len(ids))])
    elapsed = time.perf_counter() - started
    for leg in engine.legs.values():
        leg.store.close()  # type: ignore[attr-defined]
    return len(docs) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    docs = [" ".join(rng.choices(words, k=50)) for _ in range(args.docs)]
    rates: dict[str, list[float]] = {"no journal": [], "journal": []}
    for _ in range(3):
        rates["no journal"].append(run(docs, args.batch, journal=False))
        rates["journal"].append(run(docs, args.batch, journal=True))
    result = {k: round(statistics.median(v), 1) for k, v in rates.items()}
    result["journal / no journal"] = round(result["journal"] / result["no journal"], 3)
    print(f"{args.docs} docs in batches of {args.batch}, docs/s (median of 3): {json.dumps(result)}")
    out = RESULTS / "journal_cost.json"
    out.write_text(json.dumps({"docs": args.docs, "batch": args.batch, **result}, indent=2))


if __name__ == "__main__":
    main()
