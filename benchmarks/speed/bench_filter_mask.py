"""The filter step of the in-memory BM25 store at 100k documents: the scope mask per query, side by side.

Usage:
    .venv/bin/python benchmarks/speed/bench_filter_mask.py [--docs 100000] [--reps 200]

Compares, on the same metadata (``session_id = i % 100``, ``n = i % 1000``, ``tag`` on every 7th document):

* ``dict-masks``: the shorthand-only mask the store used before the full filter language (the positions of
  each ``(key, type, value)`` OR-ed per key, AND-ed across keys), re-implemented here as the baseline;
* ``ScopeIndex``: today's compiled mask (:class:`rrf_retriever.stores.bm25.scope.ScopeIndex`) for the same
  shorthand filter and for range / ``$not`` / ``$or`` / ``$exists`` filters the old form could not express;
* ``matches`` per document: the reference evaluator called once per document (what the mask avoids).

Prints the median ms per query and writes ``benchmarks/results/filter_mask.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.paths import RESULTS

FILTERS: dict[str, dict[str, Any]] = {
    "shorthand 3 sessions": {"session_id": [3, 17, 42]},
    "range": {"n": {"$gte": 100, "$lt": 350}},
    "not + in": {"session_id": {"$nin": [1, 2, 3]}, "tag": {"$exists": True}},
    "or of 3": {"$or": [{"session_id": 5}, {"n": {"$gt": 990}}, {"tag": "t3"}]},
}


def _median_ms(fn: Any, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(times), 3)


def main() -> None:
    import numpy as np

    from rrf_retriever.scope.parse import normalize_filter
    from rrf_retriever.scope.tree import matches, scope_key
    from rrf_retriever.stores.bm25.scope import ScopeIndex

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    n = args.docs
    metas = [{"session_id": i % 100, "n": i % 1000, **({"tag": f"t{i % 5}"} if i % 7 == 0 else {})} for i in range(n)]

    t0 = time.perf_counter()
    index = ScopeIndex(metas)
    build_ms = round((time.perf_counter() - t0) * 1000, 1)
    # The old per-(key, type, value) position lists, as the store built them.
    old: dict[tuple[str, str, Any], Any] = {}
    for pos, meta in enumerate(metas):
        for key, value in meta.items():
            tagged = scope_key(value)
            if tagged is not None:
                old.setdefault((key, *tagged), []).append(pos)
    old = {k: np.asarray(v, dtype=np.int64) for k, v in old.items()}

    def old_mask(flt: dict[str, tuple[Any, ...]]) -> Any:
        mask = np.ones(n, dtype=bool)
        for key, values in flt.items():
            key_mask = np.zeros(n, dtype=bool)
            for value in values:
                positions = old.get((key, *scope_key(value)))  # type: ignore[misc]
                if positions is not None:
                    key_mask[positions] = True
            mask &= key_mask
        return mask

    rows: list[dict[str, Any]] = []
    shorthand = {"session_id": (3, 17, 42)}
    base = _median_ms(lambda: old_mask(shorthand), args.reps)
    for name, flt in FILTERS.items():
        node = normalize_filter(flt)
        new = _median_ms(lambda node=node: index.mask(node), args.reps)
        ref = _median_ms(lambda node=node: [matches(m, node) for m in metas], max(3, args.reps // 50))
        assert index.mask(node).tolist() == [matches(m, node) for m in metas], name  # the compiled mask must equal the reference
        row = {"filter": name, "scopeindex_ms": new, "matches_per_doc_ms": ref,
               "dict_masks_ms": base if name.startswith("shorthand") else None}
        rows.append(row)
        print(f"{name:22s} ScopeIndex {new:8.3f} ms   matches() per doc {ref:9.1f} ms"
              + (f"   old dict masks {base:8.3f} ms" if row["dict_masks_ms"] is not None else ""))
    print(f"ScopeIndex build at {n} docs: {build_ms} ms")
    out = {"docs": n, "reps": args.reps, "scopeindex_build_ms": build_ms, "rows": rows}
    target = RESULTS / "filter_mask.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
