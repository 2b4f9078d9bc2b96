"""Hybrid speed side by side with LangChain and LlamaIndex: p50/p95 ms per query, build time, peak memory.

Usage:
    .venv/bin/python benchmarks/speed/bench_hybrid_speed.py                       # 100k synthetic + SciFact + ArguAna
    .venv/bin/python benchmarks/speed/bench_hybrid_speed.py --sizes 100000 --queries 200 --slow-queries 20

Every system is timed in ONE process, queries interleaved round-robin across systems after a warm-up, so machine
noise hits all of them alike; figures are medians (p50) and p95 of wall time per ``search`` call.
Query embedding is excluded: the dense leg gets the precomputed vector (``PrecomputedEmbedding``); MiniLM's own
ms/query is measured separately. Each query runs unfiltered and with a session filter (``session_id`` in 3 of
100 sessions, ~3% of the documents). Our hybrids ask ``top_k=10`` (``fetch_k`` default 20 per leg); the anchors
fetch 10 per member (their users' ``k``).

Synthetic corpus (``--sizes 100000``): Zipf-distributed words (20k-word vocabulary, exponent 1.1, 40-160 words
per document), random unit vectors of dimension 384; a query is 5 words of a random document and a random unit
vector. Data-set sizes use the real SciFact / ArguAna texts and cached MiniLM vectors (test queries).

Build time and peak memory (``ru_maxrss`` growth over the data already in memory) are measured for each system
in a fresh subprocess (``--memory-of NAME``).

Writes ``benchmarks/results/hybrid_speed.json`` and ``benchmarks/results/hybrid_speed.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import load_bundle, minilm
from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from rrf_retriever.engine import HeadStart, HybridEngine
from rrf_retriever.fusion import weighted_rrf
from rrf_retriever.types import Hit

TOP_K = 10
SESSIONS = 100
FILTER = [7, 42, 77]


# ---- corpora --------------------------------------------------------------------------------------------


def synthetic(n: int, n_queries: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = sorted({"".join(rng.choice(letters, rng.integers(3, 10))) for _ in range(22_000)})[:20_000]
    vocab_arr = np.array(vocab)
    ranks = np.arange(1, len(vocab) + 1)
    p = 1.0 / ranks**1.1
    p /= p.sum()
    perm = rng.permutation(len(vocab))  # frequency rank independent of alphabetical order
    lengths = rng.integers(40, 161, n)
    words = vocab_arr[perm[rng.choice(len(vocab), size=int(lengths.sum()), p=p)]]
    texts, start = [], 0
    for length in lengths:
        texts.append(" ".join(words[start : start + length]))
        start += length
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    q_texts = []
    for d in rng.integers(0, n, n_queries):
        toks = texts[d].split()
        q_texts.append(" ".join(rng.choice(toks, 5, replace=False)))
    q_vectors = rng.normal(size=(n_queries, 384)).astype(np.float32)
    q_vectors /= np.linalg.norm(q_vectors, axis=1, keepdims=True)
    return {"name": f"synthetic-{n // 1000}k", "ids": [f"d{i}" for i in range(n)], "texts": texts,
            "vectors": vectors, "q_texts": q_texts, "q_vectors": q_vectors}


def dataset(name: str, n_queries: int) -> dict[str, Any]:
    b = load_bundle(name, "test")
    return {"name": name, "ids": b.doc_ids, "texts": b.doc_texts, "vectors": b.doc_vectors,
            "q_texts": b.query_texts[:n_queries], "q_vectors": b.query_vectors[:n_queries]}


def corpus(size: str, n_queries: int) -> dict[str, Any]:
    return synthetic(int(size), n_queries) if size.isdigit() else dataset(size, n_queries)


# ---- systems --------------------------------------------------------------------------------------------

Search = Callable[[str, Any, "list[int] | None"], Any]  # (text, vector, sessions or None) -> results
SLOW = {"dense: qdrant-client local", "hybrid: FTS5 + qdrant-client local",
        "LangChain EnsembleRetriever", "LlamaIndex QueryFusionRetriever"}


_STORES: dict[str, Any] = {}  # leg stores shared by the legs-alone and the hybrid systems of one corpus


def build(name: str, c: dict[str, Any], tmp: Path) -> tuple[Search, Any]:
    """One system over corpus ``c``: returns (search, handle kept alive). Hybrids reuse the legs' stores."""
    from rrf_retriever.retriever import EnsembleRRFRetriever
    from rrf_retriever.stores.bm25.store import BM25KeywordStore
    from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

    ids, texts, vectors = c["ids"], c["texts"], c["vectors"]
    metas = [{"session_id": i % SESSIONS} for i in range(len(ids))]
    emb = PrecomputedEmbedding(texts, vectors)
    emb.add(c["q_texts"], c["q_vectors"])

    def flt(s: list[int] | None) -> dict[str, Any] | None:
        return None if s is None else {"session_id": s}

    def store(kind: str) -> Any:
        if kind in _STORES:
            return _STORES[kind]
        if kind == "fts5":
            st: Any = FTS5KeywordStore()
            for i in range(0, len(ids), 10_000):
                st.add(ids[i : i + 10_000], texts[i : i + 10_000], metas[i : i + 10_000])
            st.optimize()
        elif kind == "bm25s":
            st = BM25KeywordStore()
            st.add(ids, texts, metas)
            st.search("warm up the index", 1)  # bm25s indexes lazily on the first search
        elif kind == "edge":
            st = QdrantEdgeDenseStore(emb, path=Path(tempfile.mkdtemp(prefix="edge-", dir=tmp)))
            st.add(ids, texts, metas, vectors=vectors)
        elif kind == "edge-hnsw":
            st = QdrantEdgeDenseStore(emb, path=Path(tempfile.mkdtemp(prefix="edge-", dir=tmp)))
            st.add(ids, texts, metas, vectors=vectors)
            st.optimize()
        else:
            st = QdrantDenseStore(emb)
            st.add(ids, texts, metas, vectors=vectors)
        _STORES[kind] = st
        return st

    def keyword_leg(kind: str) -> tuple[Search, Any]:
        st = store(kind)
        return (lambda t, v, s: st.search(t, 2 * TOP_K, filter=flt(s))), st

    def dense_leg(kind: str) -> tuple[Search, Any]:
        st = store(kind)
        return (lambda t, v, s: st.search(v, 2 * TOP_K, filter=flt(s))), st

    def hybrid(dense: str, keyword: str, head_start: bool = True) -> tuple[Search, Any]:
        engine = HybridEngine({"dense": store(dense), "keyword": store(keyword)}, top_k=TOP_K,
                              head_start=HeadStart() if head_start else HeadStart.OFF)
        r = EnsembleRRFRetriever(engine=engine)
        return (lambda t, v, s: r.search(t, filter=flt(s))), r

    systems: dict[str, Callable[[], tuple[Search, Any]]] = {
        "keyword: FTS5": lambda: keyword_leg("fts5"),
        "keyword: bm25s": lambda: keyword_leg("bm25s"),
        "dense: qdrant-edge exact": lambda: dense_leg("edge"),
        "dense: qdrant-edge HNSW": lambda: dense_leg("edge-hnsw"),
        "dense: qdrant-client local": lambda: dense_leg("qdrant"),
        "hybrid: FTS5 + qdrant-edge exact (default stack)": lambda: hybrid("edge", "fts5"),
        "hybrid: FTS5 + qdrant-edge exact, no head start": lambda: hybrid("edge", "fts5", head_start=False),
        "hybrid: bm25s + qdrant-edge exact": lambda: hybrid("edge", "bm25s"),
        "hybrid: FTS5 + qdrant-edge HNSW": lambda: hybrid("edge-hnsw", "fts5"),
        "hybrid: FTS5 + qdrant-client local": lambda: hybrid("qdrant", "fts5"),
    }
    if name in systems:
        return systems[name]()
    if name == "LangChain EnsembleRetriever":
        from benchmarks.common.anchors import LangChainAnchor

        a = LangChainAnchor(ids, texts, emb, depth=TOP_K, metadatas=metas)
        return (lambda t, v, s: a.search(t, s)), a
    if name == "LlamaIndex QueryFusionRetriever":
        from benchmarks.common.anchors import LlamaIndexAnchor

        a = LlamaIndexAnchor(ids, texts, vectors, emb, depth=TOP_K, metadatas=metas)
        return (lambda t, v, s: a.search(t, s)), a
    msg = f"unknown system {name!r}"
    raise ValueError(msg)


# qdrant-edge HNSW ("dense: qdrant-edge HNSW", "hybrid: FTS5 + qdrant-edge HNSW") is opt-in (--systems): its
# optimize() at 100k ran past 15 minutes on this shared 2-core machine.
SYSTEMS = [
    "keyword: FTS5",
    "keyword: bm25s",
    "dense: qdrant-edge exact",
    "dense: qdrant-client local",
    "hybrid: FTS5 + qdrant-edge exact (default stack)",
    "hybrid: FTS5 + qdrant-edge exact, no head start",
    "hybrid: bm25s + qdrant-edge exact",
    "hybrid: FTS5 + qdrant-client local",
    "LangChain EnsembleRetriever",
    "LlamaIndex QueryFusionRetriever",
]


# ---- measurement ----------------------------------------------------------------------------------------


def pct(xs: list[float], q: float) -> float:
    return round(float(np.percentile(xs, q)), 3) if xs else float("nan")


def _peak_rss_kb() -> int:
    """Peak resident set size of this process image in kB (Linux ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # not Linux: the best there is


def memory_of(name: str, size: str) -> dict[str, float]:
    """Run in a fresh subprocess: build one system, report build seconds and memory growth.

    ``rss_mb``: resident memory after the build minus before it (what the index keeps). ``peak_mb``: growth of
    the process's peak RSS during the build, over the peak already reached while generating the corpus (0 when
    the build never rose above that; then ``rss_mb`` is the figure to read). The peak is ``VmHWM`` of
    ``/proc/self/status``, which starts afresh at exec; ``getrusage``'s ``ru_maxrss`` does not (Linux keeps it
    across execve), so it reported the PARENT benchmark's peak and hid every build's growth.
    """
    import psutil

    c = corpus(size, 5)
    gc.collect()
    proc = psutil.Process()
    rss_before = proc.memory_info().rss
    peak_before = _peak_rss_kb()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        _, handle = build(name, c, Path(tmp))
        build_s = time.perf_counter() - t0
        gc.collect()
        rss_after = proc.memory_info().rss
        peak = _peak_rss_kb()
        disk = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
        del handle
    return {"build_s": round(build_s, 2), "rss_mb": round((rss_after - rss_before) / 2**20, 1),
            "peak_mb": round((peak - peak_before) / 1024, 1), "disk_mb": round(disk / 2**20, 1)}


def measure_size(size: str, n_queries: int, n_slow: int, systems: list[str], memory: bool) -> dict[str, Any]:
    c = corpus(size, n_queries)
    out: dict[str, Any] = {"corpus": c["name"], "docs": len(c["ids"]), "queries": n_queries,
                           "slow_queries": n_slow, "systems": {}}
    handles: dict[str, tuple[Search, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in systems:
            t0 = time.perf_counter()
            handles[name] = build(name, c, Path(tmp))
            out["systems"][name] = {"build_s_in_process": round(time.perf_counter() - t0, 2)}
            print(f"[{c['name']}] built {name} in {out['systems'][name]['build_s_in_process']} s", flush=True)
        times: dict[tuple[str, bool], list[float]] = {(n, f): [] for n in systems for f in (False, True)}
        overhead: dict[str, list[float]] = {n: [] for n in systems if n.startswith("hybrid")}
        fusion_ms: dict[str, list[float]] = {n: [] for n in systems if n.startswith("hybrid")}
        warm = 5
        for qi in range(-warm, n_queries):
            i = qi % n_queries
            text, vec = c["q_texts"][i], c["q_vectors"][i]
            for filtered in (False, True):
                sessions = FILTER if filtered else None
                for name in systems:
                    if name in SLOW and qi >= n_slow:
                        continue
                    search, _ = handles[name]
                    t0 = time.perf_counter()
                    res = search(text, vec, sessions)
                    ms = (time.perf_counter() - t0) * 1000
                    if qi < 0:
                        continue
                    times[(name, filtered)].append(ms)
                    trace = getattr(res, "trace", None)
                    if trace is not None and not filtered:
                        legs = [leg.latency_ms for leg in trace.legs if leg.called and leg.latency_ms is not None]
                        overhead[name].append(trace.total_ms - max(legs))
                        fusion_ms[name].append(trace.fusion_ms)
        for name in systems:
            row = out["systems"][name]
            for filtered in (False, True):
                key = "filtered" if filtered else "unfiltered"
                xs = times[(name, filtered)]
                row[f"{key}_p50_ms"], row[f"{key}_p95_ms"], row[f"{key}_n"] = pct(xs, 50), pct(xs, 95), len(xs)
            if name in overhead:
                row["engine_overhead_p50_ms"] = pct(overhead[name], 50)
                row["trace_fusion_p50_ms"] = pct(fusion_ms[name], 50)
            print(f"[{c['name']}] {name:52s} p50 {row['unfiltered_p50_ms']:9.2f} ms  p95 {row['unfiltered_p95_ms']:9.2f}"
                  f" | filtered p50 {row['filtered_p50_ms']:9.2f} p95 {row['filtered_p95_ms']:9.2f}"
                  f"  (n={row['unfiltered_n']})", flush=True)
        handles.clear()
        _STORES.clear()
    if memory:
        for name in systems:
            out["systems"][name].update(measure_memory(name, size))
            print(f"[{c['name']}] {name:52s} build {out['systems'][name].get('build_s')} s, "
                  f"peak +{out['systems'][name].get('peak_mb')} MB", flush=True)
    return out


def measure_memory(name: str, size: str) -> dict[str, Any]:
    """Build time and memory of one system, in a fresh process."""
    proc = subprocess.run(
        [sys.executable, __file__, "--memory-of", name, "--sizes", size], capture_output=True, text=True, check=False
    )
    try:
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError):
        return {"memory_error": proc.stderr[-500:]}


def memory_update(sizes: list[str], systems: list[str]) -> None:
    """``--memory-only``: re-measure build time and memory into ``results/hybrid_speed.json``."""
    path = RESULTS / "hybrid_speed.json"
    result = json.loads(path.read_text())
    for r in result["sizes"]:
        size = str(r["docs"]) if r["corpus"].startswith("synthetic") else r["corpus"]
        if size not in sizes:
            continue
        for name in systems:
            if name in r["systems"]:
                r["systems"][name].update(measure_memory(name, size))
                print(f"[{r['corpus']}] {name:52s} {r['systems'][name]}", flush=True)
    path.write_text(json.dumps(result, indent=2))


def fusion_bench() -> dict[str, float]:
    """weighted_rrf over 2 x 100 hits (half overlapping), per call."""
    a = [Hit(f"a{i}", "", {}, 1.0 - i / 100) for i in range(100)]
    b = [Hit(f"a{i}" if i % 2 else f"b{i}", "", {}, 1.0 - i / 100) for i in range(100)]
    ranked = {"dense": a, "keyword": b}
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(500):
            weighted_rrf(ranked, None, k=60, limit=10)
        runs.append((time.perf_counter() - t0) * 1000 / 500)
    return {"weighted_rrf_2x100_ms_median": round(statistics.median(runs), 4), "runs": [round(x, 4) for x in runs]}


def minilm_bench(n: int = 50) -> dict[str, float]:
    from benchmarks.common.beir import read_beir

    queries = list(read_beir("scifact", "test").queries.values())  # the texts only: no corpus embedding
    model = minilm()
    for q in queries[:5]:
        model.embed_query(q)
    xs = []
    for q in queries[:n]:
        t0 = time.perf_counter()
        model.embed_query(q)
        xs.append((time.perf_counter() - t0) * 1000)
    return {"minilm_query_p50_ms": pct(xs, 50), "minilm_query_p95_ms": pct(xs, 95), "n": n}


def ratios(size_result: dict[str, Any]) -> dict[str, float]:
    s = size_result["systems"]
    out: dict[str, float] = {}

    def get(name: str, key: str) -> float | None:
        return s.get(name, {}).get(key)

    for hybrid, dense in (("hybrid: FTS5 + qdrant-edge exact (default stack)", "dense: qdrant-edge exact"),
                          ("hybrid: FTS5 + qdrant-edge exact, no head start", "dense: qdrant-edge exact"),
                          ("hybrid: bm25s + qdrant-edge exact", "dense: qdrant-edge exact"),
                          ("hybrid: FTS5 + qdrant-edge HNSW", "dense: qdrant-edge HNSW"),
                          ("hybrid: FTS5 + qdrant-client local", "dense: qdrant-client local")):
        kw = "keyword: bm25s" if "bm25s" in hybrid else "keyword: FTS5"
        for key in ("unfiltered", "filtered"):
            h, d, k = get(hybrid, f"{key}_p50_ms"), get(dense, f"{key}_p50_ms"), get(kw, f"{key}_p50_ms")
            if h and d and k:
                out[f"{hybrid} / slower leg ({key})"] = round(h / max(d, k), 2)
            for anchor in ("LangChain EnsembleRetriever", "LlamaIndex QueryFusionRetriever"):
                a = get(anchor, f"{key}_p50_ms")
                if h and a:
                    out[f"{hybrid} / {anchor} ({key})"] = round(h / a, 4)
    return out


def plot(result: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    big = [r for r in result["sizes"] if r["docs"] >= 50_000]
    if not big:
        return
    r = big[0]
    names = [n for n in SYSTEMS if n in r["systems"]]
    unf = [r["systems"][n]["unfiltered_p50_ms"] for n in names]
    fil = [r["systems"][n]["filtered_p50_ms"] for n in names]
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(10, 6))
    ax.barh(y - 0.2, unf, 0.4, label="unfiltered p50")
    ax.barh(y + 0.2, fil, 0.4, label="filtered p50 (3% of docs)")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(15, color="red", linestyle="--", linewidth=1, label="15 ms target")
    ax.set_xlabel("ms per query (log scale), query embedding excluded")
    ax.set_title(f"{r['corpus']}: {r['docs']:,} docs, top_k={TOP_K}, 2 cores, one process")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "hybrid_speed.png", dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["100000", "scifact", "arguana"])
    parser.add_argument("--queries", type=int, default=200, help="timed queries per fast system")
    parser.add_argument("--slow-queries", type=int, default=20, help="timed queries for the slow systems")
    parser.add_argument("--systems", nargs="+", default=SYSTEMS)
    parser.add_argument("--no-memory", action="store_true", help="skip the build/peak-memory subprocesses")
    parser.add_argument("--skip-minilm", action="store_true", help="keep the MiniLM figure of the previous run")
    parser.add_argument("--memory-of", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--memory-only", action="store_true",
                        help="only (re)measure build time and memory, into the existing results JSON")
    args = parser.parse_args()
    if args.memory_of:
        print(json.dumps(memory_of(args.memory_of, args.sizes[0])))
        return
    if args.memory_only:
        memory_update(args.sizes, args.systems)
        return
    result: dict[str, Any] = {"top_k": TOP_K, "filter": {"session_id": FILTER, "sessions": SESSIONS}, "sizes": []}
    previous = RESULTS / "hybrid_speed.json"
    if previous.exists():  # keep the sizes this run does not measure (e.g. --sizes scifact after a 100k run)
        old = json.loads(previous.read_text())
        result.update({k: v for k, v in old.items() if k not in ("sizes", "fusion")})
        result["sizes"] = old.get("sizes", [])
    result["fusion"] = fusion_bench()
    print(f"fusion: {result['fusion']}", flush=True)
    for size in args.sizes:
        r = measure_size(size, args.queries, args.slow_queries, args.systems,
                         memory=not args.no_memory and size.isdigit())
        r["ratios"] = ratios(r)
        for k, v in r["ratios"].items():
            print(f"[{r['corpus']}] {k}: {v}", flush=True)
        result["sizes"] = [old for old in result["sizes"] if old["corpus"] != r["corpus"]] + [r]
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "hybrid_speed.json").write_text(json.dumps(result, indent=2))
    try:
        result["minilm"] = minilm_bench() if not args.skip_minilm else result.get("minilm", {})
        print(f"MiniLM query embedding: {result['minilm']}", flush=True)
    except Exception as exc:
        result["minilm"] = {"error": str(exc)}
    (RESULTS / "hybrid_speed.json").write_text(json.dumps(result, indent=2))
    plot(result)
    print(f"wrote {RESULTS / 'hybrid_speed.json'}")


if __name__ == "__main__":
    main()
