"""What ordering ties by id costs one Qdrant store search: a corpus where BM25 ties everywhere.

Usage:
    .venv/bin/python benchmarks/speed/bench_tie_cost.py [--code DIR] [--label NAME]

2,000 unique texts of 10 words over a 12-word vocabulary (plus one id word each), both edge stores, one search at
limit 40 (the default fetch depth): median of 300 in ms. ``--code DIR`` imports another tree's package (e.g. the
code before tie order: ``git archive <commit> | tar -x -C DIR``) so two versions run side by side in one sitting.
Writes benchmarks/results/tie_cost_<label>.json.
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
from benchmarks.common.paths import ROOT as REPO


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=REPO)
    parser.add_argument("--label", default="current")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code))
    from rrf_retriever import HashingEmbedding, QdrantEdgeDenseStore, QdrantEdgeKeywordStore

    rng = random.Random(5)
    words = "token deploy backup restore vector index session memory note agent cache queue".split()
    texts = [" ".join(rng.choice(words) for _ in range(8)) + f" w{i} x{i % 97}" for i in range(2000)]
    ids = [f"d{i}" for i in range(2000)]
    root = Path(tempfile.mkdtemp())
    embedding = HashingEmbedding(64)
    keyword = QdrantEdgeKeywordStore(root / "k")
    keyword.add(ids, texts)
    dense = QdrantEdgeDenseStore(embedding, path=root / "d")
    dense.add(ids, texts)
    vector = embedding.embed_query("token deploy memory")
    figures: dict[str, object] = {"label": args.label}
    for name, search in (("edge sparse", lambda: keyword.search("token deploy memory", 40)),
                         ("edge dense", lambda: dense.search(vector, 40))):
        for _ in range(20):
            search()
        times = []
        for _ in range(300):
            t0 = time.perf_counter()
            search()
            times.append((time.perf_counter() - t0) * 1000)
        figures[name] = round(statistics.median(times), 3)
        print(f"{args.label:8s} {name:12s} p50 {figures[name]:.3f} ms")
    (RESULTS / f"tie_cost_{args.label}.json").write_text(json.dumps(figures) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
