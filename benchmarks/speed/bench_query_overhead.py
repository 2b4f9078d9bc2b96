"""The query path's own cost on real stores, bare and with a wide filter: what validating once saves.

Usage:
    .venv/bin/python benchmarks/speed/bench_query_overhead.py [--code DIR] [--label NAME]

The default stack (both legs on qdrant-edge) over 2,000 short documents (few score ties), hashing embeddings (the model is not the
point), ``retriever.search(query, top_k=10, ...)`` through the public path: once bare, once with a filter of a
100-value ``$in`` and a 50-part ``$or`` (parsed once per query now; once per leg and once by the engine before).
``--code DIR`` runs another tree's package (e.g. ``git archive <commit> | tar -x -C DIR``) so two versions are
measured side by side in one sitting. Prints p50 / p95 in ms and writes benchmarks/results/query_overhead_<label>.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS
from benchmarks.common.paths import ROOT as REPO


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=REPO, help="the tree whose rrf_retriever to import")
    parser.add_argument("--label", default="current")
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    sys.path.insert(0, str(args.code))
    from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding

    rng = random.Random(5)
    # A 400-word vocabulary and lengths 6-14: scores rarely tie at the cut (bench_tie_cost.py measures ties).
    words = [f"w{i}" for i in range(400)] + "token deploy backup restore vector index session memory".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 14))) for _ in range(2000)]
    metas = [{"session_id": i % 50, "tag": f"t{i % 7}", "n": i} for i in range(2000)]
    retriever = EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(64), metadatas=metas,
                                                ids=[f"d{i}" for i in range(2000)])
    wide = {"session_id": {"$in": list(range(0, 100, 2))}, "n": {"$in": list(range(0, 2000, 20))},
            "$or": [{"tag": f"t{i % 7}", "n": {"$gte": i}} for i in range(50)]}
    figures: dict[str, object] = {"label": args.label, "code": str(args.code)}
    for name, kwargs in (("bare", {}), ("wide filter", {"filter": wide})):
        for _ in range(20):
            retriever.search("token deploy memory", top_k=10, **kwargs)
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            retriever.search("token deploy memory", top_k=10, **kwargs)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        p50, p95 = statistics.median(times), times[int(0.95 * len(times))]
        print(f"{args.label:10s} {name:12s} p50 {p50:7.3f} ms   p95 {p95:7.3f} ms")
        figures[name] = {"p50_ms": round(p50, 3), "p95_ms": round(p95, 3), "reps": args.reps}
    out = RESULTS / f"query_overhead_{args.label}.json"
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
