"""Keyword-store speed on a synthetic Zipf corpus: build time, p50/p95 ms per query, peak memory.

Usage:
    .venv/bin/python benchmarks/speed/bench_keyword_speed.py                      # 10k and 100k, every store
    .venv/bin/python benchmarks/speed/bench_keyword_speed.py --sizes 100000 --stores fts5 fts5-no-idf-skip

Corpus: documents of 40-160 words drawn from a Zipf(1.1) distribution over a 50k-word vocabulary (so the most
frequent words are in nearly every document, as in real text once stopwords are gone); ``session_id`` is
``i % 100``. Queries: 3-6 words drawn from the same Zipf distribution (so they include frequent words), OR
semantics, top 20. "filtered": ``filter={"session_id": [3 sessions of 100]}``. Each (store, size) runs in its own
process, so "peak MB" is that process's peak RSS minus the RSS after building the corpus strings.
Results go to ``benchmarks/results/keyword_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.paths import RESULTS

STORES = ["fts5", "fts5-flat", "fts5-no-idf-skip", "fts5-no-optimize", "bm25s", "rank_bm25"]
N_QUERIES = 200


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def make_corpus(n_docs: int, seed: int = 7) -> tuple[list[str], list[str], list[dict[str, Any]], list[str]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab_size = 50_000
    vocab: list[str] = []
    seen: set[str] = set()
    while len(vocab) < vocab_size:
        word = "".join(rng.choice(letters, size=int(rng.integers(4, 10))))
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    ranks = np.arange(1, vocab_size + 1)
    p = 1.0 / ranks**1.1
    p /= p.sum()
    lengths = rng.integers(40, 161, size=n_docs)
    draws = rng.choice(vocab_size, size=int(lengths.sum()), p=p)
    texts, start = [], 0
    for length in lengths.tolist():
        texts.append(" ".join(vocab[w] for w in draws[start : start + length].tolist()))
        start += length
    ids = [f"doc{i}" for i in range(n_docs)]
    metas = [{"session_id": i % 100} for i in range(n_docs)]
    qrng = np.random.default_rng(seed + 1)
    queries = [
        " ".join(vocab[w] for w in qrng.choice(vocab_size, size=int(qrng.integers(3, 7)), p=p).tolist())
        for _ in range(N_QUERIES)
    ]
    return ids, texts, metas, queries


def run_one(store_name: str, n_docs: int) -> dict[str, Any]:
    import numpy as np

    from rrf_retriever.stores.bm25.store import BM25KeywordStore
    from rrf_retriever.stores.fts5.store import FTS5KeywordStore

    ids, texts, metas, queries = make_corpus(n_docs)
    base_rss = _rss_mb()
    tmp = tempfile.mkdtemp(prefix="kwbench-")
    if store_name.startswith("fts5"):
        # fts5-flat: the text alone (the default schema has an empty title field beside it on this corpus);
        # fts5-no-idf-skip: never leave a common term out (the plain OR query)
        fields = ("text",) if store_name == "fts5-flat" else None
        store: Any = FTS5KeywordStore(Path(tmp) / "kw.sqlite", fields=fields,
                                      skip_common_terms=store_name != "fts5-no-idf-skip")
    elif store_name == "bm25s":
        store = BM25KeywordStore()
    else:
        store = BM25KeywordStore(engine="rank_bm25")
    t0 = time.perf_counter()
    for start in range(0, n_docs, 5000):
        store.add(ids[start : start + 5000], texts[start : start + 5000], metas[start : start + 5000])
    if isinstance(store, FTS5KeywordStore) and store_name != "fts5-no-optimize":
        store.optimize()
    store.search("warmup", 1)  # the in-memory stores build their index lazily, on the first search
    build_s = time.perf_counter() - t0
    rng = np.random.default_rng(3)
    # rank_bm25 scores every document in Python: fewer queries keep the run short.
    qs = queries if store_name != "rank_bm25" else queries[:40]
    out: dict[str, Any] = {"store": store_name, "docs": n_docs, "build_s": round(build_s, 2)}
    for label, scoped in (("unfiltered", False), ("filtered", True)):
        times = []
        for q in qs:
            flt = {"session_id": rng.choice(100, size=3, replace=False).tolist()} if scoped else None
            t = time.perf_counter()
            store.search(q, 20, filter=flt)
            times.append(1000 * (time.perf_counter() - t))
        out[f"{label}_p50_ms"] = round(statistics.median(times), 2)
        out[f"{label}_p95_ms"] = round(float(np.percentile(times, 95)), 2)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["peak_mb"] = round(peak - base_rss, 1)
    if isinstance(store, FTS5KeywordStore):
        out["file_mb"] = round(sum(f.stat().st_size for f in Path(tmp).iterdir()) / 2**20, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--stores", nargs="+", default=STORES, choices=STORES)
    parser.add_argument("--one", nargs=2, metavar=("STORE", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--out", default="keyword_speed.json", help="file name under benchmarks/results/")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]))))
        return
    rows = []
    for size in args.sizes:
        for name in args.stores:
            proc = subprocess.run(
                [sys.executable, __file__, "--one", name, str(size)], capture_output=True, text=True, check=False
            )
            if proc.returncode != 0:
                print(f"{name} @ {size}: failed\n{proc.stderr[-2000:]}")
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(
                f"{size:>7} {name:18s} build {row['build_s']:7.2f}s  "
                f"p50/p95 {row['unfiltered_p50_ms']:7.2f}/{row['unfiltered_p95_ms']:7.2f} ms  "
                f"filtered {row['filtered_p50_ms']:7.2f}/{row['filtered_p95_ms']:7.2f} ms  "
                f"peak {row['peak_mb']:7.1f} MB" + (f"  file {row['file_mb']} MB" if "file_mb" in row else ""),
                flush=True,
            )
    out = RESULTS / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
