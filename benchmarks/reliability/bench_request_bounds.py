"""What requests that pass every limit cost ("Trust, round 4"): seconds per attack, and what came back.

Usage:
    .venv/bin/python benchmarks/reliability/bench_request_bounds.py [--label after] [--code DIR] [--reps 3] [--only NAME ...]

Attacks (each through the public API, on a small index; the hashing embedder unless said):

* ``vectors_10001``: ``engine.add`` of 10,001 documents with given vectors, the last of another dimension:
  documents written before the error, and the error's class;
* ``dense_paths_5000``: one query with 5,000 ``dense_paths`` (each ``None``);
* ``filter_ints_<stack>``: one query with 8 keys x 10,000 small integers (``{"k0": [0..9999], ...}``) on a
  50-document index, on the FTS5 stack (FTS5 + qdrant-edge dense) and on the default stack (qdrant-edge both);
  ``filter_ints1_<stack>``: one key x 10,000 integers (still within every limit after the fix), also on the
  default stack without payload indexes (``edge_noindex``: the compile's tree of ranges);
* ``filter_strs1_<stack>``: the same with 10,000 strings (one ``MatchAny``), for scale;
* ``plain_query``: an ordinary query on the same kind of index, for scale;
* ``filter_ints<n>_100k_noindex``: one key x n integers on a 100,000-point qdrant-edge dense store without payload
  indexes (slow to build: run it with ``--reps 1``; it takes the median of 3 searches itself);
* ``links_70000``: a query whose page holds a document whose ``links`` hold 70,000 ids (written to the stores
  directly, as an index written before the cap would hold it), ``links_key="links"``;
* ``query_<size>``: one query of that many characters with MiniLM (int8) on the dense leg, FTS5 keyword leg.

Each attack runs ``--reps`` times on a fresh index; the figure is the median of its seconds. ``--code DIR`` imports rrf_retriever from another checkout (the code before a fix); ``--label`` names the run in
``benchmarks/results/request_bounds.json`` (runs under other labels are kept).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS as RESULTS_DIR

RESULTS = RESULTS_DIR / "request_bounds.json"


def _timed(run: Callable[[], Any]) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        out = run()
        outcome = "ok" if out is None else str(out)
    except Exception as exc:  # the figure is what came back, an error included
        outcome = f"{type(exc).__name__}: {str(exc)[:120]}"
    return {"seconds": round(time.perf_counter() - start, 3), "outcome": outcome}


def _engine(stack: str, tmp: str, *, links: bool = False, embedding: Any = None) -> Any:
    from rrf_retriever import (
        FTS5KeywordStore,
        HashingEmbedding,
        HybridEngine,
        QdrantEdgeDenseStore,
        QdrantEdgeKeywordStore,
    )

    embedding = embedding or HashingEmbedding(dim=32)
    indexes = {"max_auto_indexes": 0} if stack == "edge-noindex" else {}  # every filter scans payloads
    dense = QdrantEdgeDenseStore(embedding, path=f"{tmp}/dense", **indexes)
    keyword = FTS5KeywordStore() if stack == "fts5" else QdrantEdgeKeywordStore(path=f"{tmp}/keyword", **indexes)
    return HybridEngine({"dense": dense, "keyword": keyword}, links_key="links" if links else None)


def vectors_10001() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine("fts5", tmp)
        n = 10_001
        vectors = [[1.0] + [0.0] * 31 for _ in range(n - 1)] + [[1.0] * 33]
        out = _timed(lambda: engine.add([f"d{i}" for i in range(n)], [f"note {i}" for i in range(n)],
                                        vectors=vectors))
        out["written"] = engine.count()
        engine.close()
        return out


def dense_paths_5000() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine("fts5", tmp)
        engine.add([f"d{i}" for i in range(50)], [f"note {i} about rockets" for i in range(50)])
        paths = {f"p{i}": None for i in range(5000)}
        out = _timed(lambda: len(engine.search("rockets", dense_paths=paths).hits))
        engine.close()
        return out


def filter_ints(stack: str, keys: int, kind: type = int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine(stack, tmp)
        engine.add([f"d{i}" for i in range(50)], [f"note {i} about rockets" for i in range(50)],
                   [{f"k{j}": kind(i) for j in range(8)} for i in range(50)])
        flt = {f"k{j}": [kind(i) for i in range(10_000)] for j in range(keys)}
        engine.search("rockets", filter={"k0": kind(1)})  # warm: payload indexes built
        out = _timed(lambda: len(engine.search("rockets", filter=flt).hits))
        engine.close()
        return out


def filter_ints_scale(n_ints: int, docs: int = 100_000) -> dict[str, Any]:
    """One key x ``n_ints`` integers over ``docs`` points of a qdrant-edge dense store without payload indexes (the
    tree of ranges checked on every payload): the median of 3 searches on one index."""
    import random

    from rrf_retriever import HashingEmbedding, QdrantEdgeDenseStore

    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = QdrantEdgeDenseStore(HashingEmbedding(dim=8), path=tmp, max_auto_indexes=0)
        for start in range(0, docs, 10_000):
            ids = [f"d{i}" for i in range(start, min(docs, start + 10_000))]
            store.add(ids, ["alpha"] * len(ids), [{"k0": rng.randrange(100_000)} for _ in ids],
                      [[rng.gauss(0, 1) for _ in range(8)] for _ in ids])
        flt = {"k0": list(range(0, 100_000, 100_000 // n_ints))}
        store.search([1.0] * 8, 10, flt)
        runs = [_timed(lambda: len(store.search([1.0] * 8, 10, flt))) for _ in range(3)]
        store.close()
        return {**runs[-1], "seconds": statistics.median(r["seconds"] for r in runs)}


def plain_query() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine("fts5", tmp, links=True)
        engine.add([f"d{i}" for i in range(50)], [f"note {i} about rockets" for i in range(50)])
        engine.search("note 0 rockets")
        out = _timed(lambda: len(engine.search("note 0 rockets").hits))
        engine.close()
        return out


def links_70000() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine("fts5", tmp, links=True)
        ids = [f"d{i}" for i in range(50)]
        texts = [f"note {i} about rockets" for i in range(50)]
        metas: list[dict[str, Any]] = [{} for _ in ids]
        metas[0] = {"links": [f"x{i}" for i in range(70_000)]}
        for leg in engine.legs.values():  # the stores directly: an index written before the write cap
            leg.add(ids, texts, metas, None)
        engine.search("note 0 rockets")
        out = _timed(lambda: len(engine.search("note 0 rockets").hits))
        engine.close()
        return out


def query_chars(size: int) -> dict[str, Any]:
    from rrf_retriever import MiniLMEmbedding

    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine("fts5", tmp, embedding=MiniLMEmbedding())
        engine.add([f"d{i}" for i in range(50)], [f"note {i} about rockets" for i in range(50)])
        engine.search("warm up")
        words = "rockets orbit fuel launch pad engine thrust nozzle "
        text = (words * (size // len(words) + 1))[:size]
        out = _timed(lambda: len(engine.search(text).hits))
        engine.close()
        return out


ATTACKS: dict[str, Callable[[], dict[str, Any]]] = {
    "vectors_10001": vectors_10001,
    "dense_paths_5000": dense_paths_5000,
    "filter_ints_fts5": lambda: filter_ints("fts5", 8),
    "filter_ints_edge": lambda: filter_ints("edge", 8),
    "filter_ints1_fts5": lambda: filter_ints("fts5", 1),
    "filter_ints1_edge": lambda: filter_ints("edge", 1),
    "filter_ints1_edge_noindex": lambda: filter_ints("edge-noindex", 1),
    "filter_strs1_edge": lambda: filter_ints("edge", 1, str),
    "filter_strs1_edge_noindex": lambda: filter_ints("edge-noindex", 1, str),
    "plain_query": plain_query,
    "filter_ints1000_100k_noindex": lambda: filter_ints_scale(1_000),
    "filter_ints10000_100k_noindex": lambda: filter_ints_scale(10_000),
    "links_70000": links_70000,
    "query_100k": lambda: query_chars(100_000),
    "query_1m": lambda: query_chars(1_000_000),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--code", type=Path, help="import rrf_retriever from this checkout")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=sorted(ATTACKS))
    args = parser.parse_args()
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
    import rrf_retriever

    print(f"rrf_retriever from {Path(rrf_retriever.__file__).parent}")
    figures: dict[str, Any] = {}
    for name in args.only or [a for a in ATTACKS if "100k" not in a]:
        runs_of = [ATTACKS[name]() for _ in range(args.reps)]
        figures[name] = {**runs_of[-1], "seconds": statistics.median(r["seconds"] for r in runs_of),
                         "runs": [r["seconds"] for r in runs_of]}
        print(f"{args.label:>8} {name:<18} {figures[name]}", flush=True)
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    runs[args.label] = {**runs.get(args.label, {}), **figures}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(runs, indent=2) + "\n")


if __name__ == "__main__":
    main()
