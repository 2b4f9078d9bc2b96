"""What a hostile filter costs a Qdrant edge store: the 2000-integer ``$in`` past 2**62, and the index budget after
searches on keys no document holds.

Usage:
    .venv/bin/python benchmarks/reliability/bench_filter_cost.py [--docs 30000] [--reps 50] [--label after] [--code DIR]

Two figures, on qdrant-edge:

* ``in_2000_ms``: one ``ids_matching({"n": {"$in": [2**62 + i for i in range(2000)]}})`` on a keyword store of
  ``--small`` documents holding integers around 2**62 (the filter's compile dominates);
* ``session_p50_ms``: on a dense store of ``--docs`` documents holding ``session_id`` (300 sessions), one search
  naming 8 keys no document holds, then the median of ``--reps`` searches scoped to one ``session_id``; and
  whether ``session_id`` got its payload index.

``--code DIR`` imports rrf_retriever from another checkout (e.g. the code before a fix); ``--label`` names the
run in ``benchmarks/results/filter_cost.json`` (runs under other labels are kept).
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS as RESULTS_DIR
from benchmarks.common.paths import ROOT

RESULTS = RESULTS_DIR / "filter_cost.json"
BASE = 2**62


def _in_2000_ms(small: int) -> float:
    from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore

    with tempfile.TemporaryDirectory() as tmp, QdrantEdgeKeywordStore(path=tmp) as store:
        rng = random.Random(0)
        store.add([f"d{i}" for i in range(small)], ["alpha"] * small,
                  [{"n": BASE + rng.randrange(-4000, 4000)} for _ in range(small)])
        flt = {"n": {"$in": [BASE + i for i in range(2000)]}}
        start = time.perf_counter()
        store.ids_matching(flt)
        return (time.perf_counter() - start) * 1000


def _session_p50_ms(docs: int, reps: int) -> tuple[float, bool]:
    from rrf_retriever.embeddings import HashingEmbedding
    from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

    dim = 32
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp, QdrantEdgeDenseStore(HashingEmbedding(dim=dim), path=tmp) as store:
        for start in range(0, docs, 5000):
            ids = [f"d{i}" for i in range(start, min(docs, start + 5000))]
            vectors = [[rng.gauss(0, 1) for _ in range(dim)] for _ in ids]
            store.add(ids, ["text"] * len(ids), [{"session_id": f"s{int(i[1:]) % 300}"} for i in ids], vectors)
        query = [rng.gauss(0, 1) for _ in range(dim)]
        store.search(query, 10, filter={f"junk{n}": 1 for n in range(8)})
        times = []
        for rep in range(reps):
            begin = time.perf_counter()
            store.search(query, 10, filter={"session_id": f"s{rep % 300}"})
            times.append((time.perf_counter() - begin) * 1000)
        return statistics.median(times), any(key == "session_id" for key, _ in store.indexed_keys)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=30_000)
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--label", default="after")
    parser.add_argument("--code", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.code.resolve()))
    in_ms = _in_2000_ms(args.small)
    p50, indexed = _session_p50_ms(args.docs, args.reps)
    import rrf_retriever

    run = {"in_2000_ms": round(in_ms, 1), "session_p50_ms": round(p50, 2), "session_id_indexed": indexed,
           "docs": args.docs, "reps": args.reps,
           "code": str(Path(rrf_retriever.__file__).parents[1])}
    print(json.dumps({args.label: run}, indent=2))
    results = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}
    results[args.label] = run
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return run


if __name__ == "__main__":
    main()
