"""The path users take: ``from_texts`` then ``invoke``, per stack, beside LangChain and LlamaIndex; why it was
slower than the harness; what one exact scan costs here.

Usage:
    .venv/bin/python benchmarks/speed/bench_public_path.py            # 100k synthetic + ArguAna x12 (the full run)
    .venv/bin/python benchmarks/speed/bench_public_path.py --quick    # 10k smoke run (~2 min on an idle machine)
    .venv/bin/python benchmarks/speed/bench_public_path.py --hnsw     # also the HNSW stack (its build takes minutes)
    .venv/bin/python benchmarks/speed/bench_public_path.py --sizes 1000000 --corpora synthetic --stacks default \\
        --no-anchors --no-diagnosis   # 1M: the default stack only, built as a user would (from_texts + add_texts)
    .venv/bin/python benchmarks/speed/bench_public_path.py ... --wide   # also a 35% filter (35 of 100 sessions)

Every stack is built exactly as a user builds it: ``EnsembleRRFRetriever.from_texts(texts, embedding,
metadatas=metadatas, ids=ids, keyword=..., dense=...)`` (``metadatas``: ``{"session_id": i % 100}``), then timed
through ``retriever.invoke(q, top_k=10)`` (LangChain's side: callbacks, ``Document`` objects) and
``invoke(q, top_k=10, filter={"session_id": [7, 42, 77]})`` (3% of the documents). The query embedding is excluded
(``PrecomputedEmbedding`` answers from a table); MiniLM's own ``embed_query`` is timed apart on real queries.
Queries are interleaved round-robin across stacks after a warm-up, so machine noise hits all alike; p50 and p95 of
wall time. The anchors (LangChain ``EnsembleRetriever``, LlamaIndex ``QueryFusionRetriever``, from
``benchmarks/common/anchors.py``) fetch 40 per member: the depth our legs fetch at ``top_k=10`` (``fetch_k`` default
``max(2 * top_k, 40)``).

Corpora:

* ``synthetic``: ``bench_hybrid_speed.synthetic`` (Zipf(1.1) words over a 20k vocabulary, 40-160 words a document,
  random unit vectors of dimension 384) with two query sets: ``doc words`` (5 words of a random document: the
  harness's queries) and ``frequent words`` (3-6 words drawn from the corpus's own word frequencies, as
  ``bench_keyword_speed.py`` draws them: the issue's queries, dominated by the most common words).
* ``arguana-x12``: the real ArguAna corpus twelve times (8,674 x 12 = 104,088 documents, each copy its own id) with
  the real ArguAna test queries (long: a whole argument each), a random unit vector per original document shared
  by its copies (the dense cost of an exact or int8 scan does not depend on the vectors' content). Real text gives
  real term statistics; x12 keeps every IDF as in ArguAna while the posting lists grow twelvefold, as they would in
  a 100k-document collection of such text.

Build time and memory per stack come from the same process: ``build_s`` is the ``from_texts`` wall time; before it
the process's peak RSS is reset (``/proc/self/clear_refs``), so ``peak_mb`` is the build's own peak over the RSS
before it and ``rss_mb`` what the stack keeps.

Diagnosis (the previous default stack, FTS5 + qdrant-edge exact, ``frequent words`` queries): each candidate cause
of the gap between ``invoke`` and the harness's figures measured on its own: LangChain's ``invoke`` vs the engine's
``search``; each leg alone at depth 20 and 40; fetch depth 20 vs 40 through the engine; the GIL head start off;
the trace's leg latencies vs the legs alone; FTS5 ``optimize()`` after ``from_texts``; zero-IDF skipping off; a
cProfile of the slowest query. Writes ``benchmarks/results/public_path.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import read_beir
from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from benchmarks.speed.bench_hybrid_speed import synthetic
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.engine import HeadStart, HybridEngine
from rrf_retriever.evaluation import doc_text
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

TOP_K = 10
DEPTH = 40  # what our legs fetch at top_k=10 (max(2 * top_k, 40)); the anchors fetch as much per member
SESSIONS = 100
FILTER = {"session_id": [7, 42, 77]}
#: ``--wide``: a tenant holding 35% of the documents (35 of the 100 sessions), the issue's second selectivity.
WIDE_FILTER = {"session_id": list(range(35))}
ARGUANA_COPIES = 12


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def pct(xs: list[float], q: float) -> float | None:
    return round(float(np.percentile(xs, q)), 3) if xs else None


# ---- corpora --------------------------------------------------------------------------------------------


def synthetic_corpus(n: int, n_queries: int) -> dict[str, Any]:
    c = synthetic(n, n_queries)
    rng = np.random.default_rng(11)
    sample = " ".join(c["texts"][: min(n, 20_000)]).split()
    words, counts = np.unique(np.array(sample), return_counts=True)
    p = counts / counts.sum()
    frequent = [" ".join(rng.choice(words, size=int(rng.integers(3, 7)), p=p)) for _ in range(n_queries)]
    return {"name": f"synthetic-{n // 1000}k", "ids": c["ids"], "texts": c["texts"], "vectors": c["vectors"],
            "queries": {"frequent words": frequent, "doc words": c["q_texts"]}, "q_vectors": c["q_vectors"]}


def arguana_corpus(n_queries: int, copies: int = ARGUANA_COPIES) -> dict[str, Any]:
    ds = read_beir("arguana", "test")
    base_ids = list(ds.corpus)
    base_texts = [doc_text(ds.corpus[i]) for i in base_ids]
    ids = [f"{i}~{k}" for k in range(copies) for i in base_ids]
    texts = base_texts * copies
    rng = np.random.default_rng(12)
    # One random vector per original document, shared by its copies: the precomputed-vector embedding answers by
    # text, so copies get one vector whatever we pass. Exactly tied dense scores then come in twelves (a recall
    # against exact search below 1.0 on this corpus is the order of ties, not quantization error).
    base = rng.normal(size=(len(base_ids), 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    vectors = np.tile(base, (copies, 1))
    queries = list(ds.queries.values())[:n_queries]
    q_vectors = rng.normal(size=(len(queries), 384)).astype(np.float32)
    q_vectors /= np.linalg.norm(q_vectors, axis=1, keepdims=True)
    return {"name": f"arguana-x{copies}", "ids": ids, "texts": texts, "vectors": vectors,
            "queries": {"arguana queries": queries}, "q_vectors": q_vectors}


# ---- stacks ---------------------------------------------------------------------------------------------

# name -> (keyword, dense kind): dense kind "default" = from_texts's own; "exact" = an unoptimized shard searched
# exactly (the previous default); "int8" / "hnsw" = QdrantEdgeDenseStore(index=...) optimized after the bulk add.
STACKS: dict[str, tuple[str | None, str]] = {
    "default stack (from_texts defaults)": (None, "default"),
    "fts5 + qdrant-edge exact (previous default)": ("fts5", "exact"),
    "fts5 + qdrant-edge int8": ("fts5", "int8"),
    "qdrant-edge sparse + qdrant-edge exact": ("qdrant-edge", "exact"),
    "qdrant-edge sparse + qdrant-edge int8": ("qdrant-edge", "int8"),
    "bm25 + qdrant-edge exact": ("bm25", "exact"),
}
HNSW_STACK = "qdrant-edge sparse + qdrant-edge HNSW"
PREVIOUS = "fts5 + qdrant-edge exact (previous default)"
ANCHORS = ("LangChain EnsembleRetriever", "LlamaIndex QueryFusionRetriever")


def dense_store(kind: str, emb: Any) -> Any:
    if kind == "default":
        return None
    if kind == "exact":
        return QdrantEdgeDenseStore(emb, index="plain", auto_optimize=False)
    return QdrantEdgeDenseStore(emb, index=kind, auto_optimize=1)  # optimize right after the bulk add


def _peak_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def rss_kb(field: str = "VmRSS") -> int:
    """A ``/proc/self/status`` memory field in kB: ``VmRSS``, or its parts ``RssAnon`` (heap) and ``RssFile``
    (pages of memory-mapped files, which the kernel can drop and re-read)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux)
    except OSError:
        pass


def measured_build(build: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    gc.collect()
    _reset_peak()
    rss0, anon0, file0, t0 = rss_kb(), rss_kb("RssAnon"), rss_kb("RssFile"), time.perf_counter()
    handle = build()
    seconds = time.perf_counter() - t0
    gc.collect()
    return handle, {"build_s": round(seconds, 2), "rss_mb": round((rss_kb() - rss0) / 1024, 1),
                    "peak_mb": round((_peak_kb() - rss0) / 1024, 1),
                    "rss_anon_mb": round((rss_kb("RssAnon") - anon0) / 1024, 1),
                    "rss_file_mb": round((rss_kb("RssFile") - file0) / 1024, 1)}


def build_stack(name: str, c: dict[str, Any], emb: Any, metas: list[dict[str, Any]], batch: int | None) -> Any:
    keyword, dense_kind = STACKS.get(name, ("qdrant-edge", "hnsw"))
    kwargs: dict[str, Any] = {}
    if keyword is not None:
        kwargs["keyword"] = keyword
    dense = dense_store(dense_kind, emb)
    if dense is not None:
        kwargs["dense"] = dense
    texts, ids = c["texts"], c["ids"]
    if batch is None or batch >= len(texts):
        return EnsembleRRFRetriever.from_texts(texts, emb, metadatas=metas, ids=ids, **kwargs)
    # Past what one call should hold in memory (the vectors become Python floats): the first batch through
    # from_texts, the rest through add_texts, as a user indexing 1M documents would.
    r = EnsembleRRFRetriever.from_texts(texts[:batch], emb, metadatas=metas[:batch], ids=ids[:batch], **kwargs)
    for i in range(batch, len(texts), batch):
        r.add_texts(texts[i : i + batch], metadatas=metas[i : i + batch], ids=ids[i : i + batch])
    return r


def build_anchor(name: str, c: dict[str, Any], emb: Any, metas: list[dict[str, Any]]) -> Any:
    if name == ANCHORS[0]:
        from benchmarks.common.anchors import LangChainAnchor

        return LangChainAnchor(c["ids"], c["texts"], emb, depth=DEPTH, metadatas=metas)
    from benchmarks.common.anchors import LlamaIndexAnchor

    return LlamaIndexAnchor(c["ids"], c["texts"], c["vectors"], emb, depth=DEPTH, metadatas=metas)


def stores_of(r: Any) -> tuple[Any, Any]:
    legs = r.engine.legs
    return legs["keyword"].store, legs["dense"].store


def describe(r: Any) -> dict[str, Any]:
    kw, dense = stores_of(r)
    out = {"keyword_store": type(kw).__name__, "dense_store": type(dense).__name__}
    if isinstance(dense, QdrantEdgeDenseStore):
        out["dense_index"] = dense.index
        out["dense_unoptimized_points"] = dense.unoptimized_points()
        path = Path(dense.path)
        out["dense_disk_mb"] = round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)
    kw_path = getattr(kw, "path", None)
    if isinstance(kw_path, Path) and kw_path.is_dir():
        out["keyword_disk_mb"] = round(sum(f.stat().st_size for f in kw_path.rglob("*") if f.is_file()) / 2**20, 1)
    return out


# ---- timing ---------------------------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def interleaved(systems: dict[str, Callable[[str, Any], Any]], queries: list[str], slow: set[str], n_slow: int,
                warm: int = 5, filters: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """p50/p95 ms per system and filter (``filters``: name -> filter, default unfiltered and :data:`FILTER`),
    queries interleaved round-robin across systems.

    Beside wall time, the process's CPU time per query (every thread: the legs', Qdrant's search threads'): on a
    loaded machine it stays near the idle cost, and for a stack whose legs cannot overlap (both hold the GIL) it
    is what the query costs on an idle one.
    """
    filters = {"unfiltered": None, "filtered": FILTER} if filters is None else filters
    times: dict[tuple[str, str], list[float]] = {(n, f): [] for n in systems for f in filters}
    cpu: dict[tuple[str, str], list[float]] = {(n, f): [] for n in systems for f in filters}
    for qi in range(-warm, len(queries)):
        q = queries[qi % len(queries)]
        for key, flt in filters.items():
            for name, search in systems.items():
                if name in slow and qi >= n_slow:
                    continue
                c0 = time.process_time()
                ms = timed(lambda search=search, q=q, flt=flt: search(q, flt))
                if qi >= 0:
                    times[(name, key)].append(ms)
                    cpu[(name, key)].append((time.process_time() - c0) * 1000)
    out: dict[str, dict[str, Any]] = {}
    for name in systems:
        row: dict[str, Any] = {}
        for key in filters:
            xs = times[(name, key)]
            row[f"{key}_p50_ms"], row[f"{key}_p95_ms"], row[f"{key}_n"] = pct(xs, 50), pct(xs, 95), len(xs)
            row[f"{key}_cpu_p50_ms"] = pct(cpu[(name, key)], 50)
        out[name] = row
    return out


def invoke_fn(r: Any) -> Callable[[str, Any], Any]:
    return lambda q, flt: r.invoke(q, top_k=TOP_K, filter=flt)


def anchor_fn(a: Any) -> Callable[[str, Any], Any]:
    return lambda q, flt: a.search(q, flt["session_id"] if flt else None)


def legs_alone(r: Any, queries: list[str], emb: PrecomputedEmbedding, depth: int) -> dict[str, Any]:
    kw, dense = stores_of(r)
    vecs = [emb.embed_query(q) for q in queries]
    out: dict[str, Any] = {}
    for filtered in (False, True):
        flt = FILTER if filtered else None
        k_ms = [timed(lambda q=q, flt=flt: kw.search(q, depth, filter=flt)) for q in queries]
        d_ms = [timed(lambda v=v, flt=flt: dense.search(v, depth, filter=flt)) for v in vecs]
        key = "filtered" if filtered else "unfiltered"
        out[f"keyword_{key}_p50_ms"], out[f"dense_{key}_p50_ms"] = pct(k_ms, 50), pct(d_ms, 50)
    return out


def trace_legs(r: Any, queries: list[str]) -> dict[str, Any]:
    legs: dict[str, list[float]] = {}
    totals, overhead = [], []
    for q in queries:
        res = r.search(q, top_k=TOP_K)
        lat = []
        for leg in res.trace.legs:
            if leg.called and leg.latency_ms is not None:
                legs.setdefault(leg.name, []).append(leg.latency_ms)
                lat.append(leg.latency_ms)
        totals.append(res.trace.total_ms)
        if lat:
            overhead.append(res.trace.total_ms - max(lat))
    return {**{f"trace_{k}_p50_ms": pct(v, 50) for k, v in legs.items()}, "trace_total_p50_ms": pct(totals, 50),
            "trace_total_minus_slowest_leg_p50_ms": pct(overhead, 50), "fetch_k": res.trace.fetch_k}


def recall_vs_exact(dense: Any, q_vectors: np.ndarray) -> float | None:
    if not isinstance(dense, QdrantEdgeDenseStore):
        return None
    got = [[h.id for h in dense.search(v, TOP_K)] for v in q_vectors]
    dense.exact = True
    try:
        truth = [[h.id for h in dense.search(v, TOP_K)] for v in q_vectors]
    finally:
        dense.exact = False
    return round(float(np.mean([len(set(a) & set(b)) / TOP_K for a, b in zip(got, truth)])), 4)


# ---- the diagnosis --------------------------------------------------------------------------------------


def diagnose(r: Any, queries: list[str], emb: PrecomputedEmbedding, n: int) -> dict[str, Any]:
    """Each candidate cause of invoke() being slower than the harness's figures, measured on the same stores."""
    kw, dense = stores_of(r)
    qs = queries[:n]
    variants = {
        "invoke (LangChain)": lambda q: r.invoke(q, top_k=TOP_K),
        "engine search (no LangChain)": lambda q: r.search(q, top_k=TOP_K),
        "engine search, fetch_k=20 (the harness's depth)": (
            lambda q, e=EnsembleRRFRetriever(engine=HybridEngine({"dense": dense, "keyword": kw}, fetch_k=20)):
            e.search(q, top_k=TOP_K)),
        "engine search, no GIL head start": (
            lambda q, e=EnsembleRRFRetriever(engine=HybridEngine({"dense": dense, "keyword": kw},
                                                                 head_start=HeadStart.OFF)):
            e.search(q, top_k=TOP_K)),
    }
    vecs = {q: emb.embed_query(q) for q in qs}
    variants["keyword leg alone, depth 40"] = lambda q: kw.search(q, 40)
    variants["keyword leg alone, depth 20"] = lambda q: kw.search(q, 20)
    variants["dense leg alone, depth 40"] = lambda q: dense.search(vecs[q], 40)
    variants["dense leg alone, depth 20"] = lambda q: dense.search(vecs[q], 20)
    times: dict[str, list[float]] = {k: [] for k in variants}
    for qi in range(-3, len(qs)):
        q = qs[qi % len(qs)]
        for name, fn in variants.items():
            ms = timed(lambda fn=fn, q=q: fn(q))
            if qi >= 0:
                times[name].append(ms)
    out: dict[str, Any] = {"p50_ms": {k: pct(v, 50) for k, v in times.items()}}
    out["trace"] = trace_legs(r, qs)
    slowest = qs[int(np.argmax(times["invoke (LangChain)"]))]
    prof = cProfile.Profile()
    prof.enable()
    r.invoke(slowest, top_k=TOP_K)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(14)
    out["slowest_query"] = slowest
    out["slowest_query_profile"] = buf.getvalue()[-6000:]
    if hasattr(kw, "skip_common_terms"):  # FTS5: zero-IDF skipping off (10 queries: ~6x slower)
        kw.skip_common_terms = False
        try:
            out["p50_ms"]["keyword leg alone, zero-IDF skip off"] = pct([timed(lambda q=q: kw.search(q, 40))
                                                                         for q in qs[:10]], 50)
        finally:
            kw.skip_common_terms = True
    if hasattr(kw, "optimize") and type(kw).__name__ == "FTS5KeywordStore":
        t0 = time.perf_counter()
        kw.optimize()
        out["fts5_optimize_s"] = round(time.perf_counter() - t0, 2)
        after = {"invoke after FTS5 optimize()": lambda q: r.invoke(q, top_k=TOP_K),
                 "keyword leg alone after optimize(), depth 40": lambda q: kw.search(q, 40)}
        for name, fn in after.items():
            out["p50_ms"][name] = pct([timed(lambda q=q, fn=fn: fn(q)) for q in qs], 50)
    return out


# ---- floors and MiniLM ----------------------------------------------------------------------------------

_FLOOR = """
import time, numpy as np
rng = np.random.default_rng(0)
m = rng.normal(size=({n}, 384)).astype(np.float32); q = rng.normal(size=384).astype(np.float32)
def run(f):
    xs = []
    for _ in range(60):
        t = time.perf_counter(); f(); xs.append((time.perf_counter() - t) * 1000)
    xs = xs[10:]
    return round(float(np.median(xs)), 3), round(min(xs), 3)
a = run(lambda: m @ q)
b = run(lambda: np.argpartition(-(m @ q), 40)[:40])
print(a[0], a[1], b[0], b[1])
"""


def physical_floor(n: int) -> dict[str, Any]:
    """One exact scan of n x 384 float32 with numpy on one core (BLAS threads = 1), in a fresh process."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _FLOOR.format(n=n)], capture_output=True, text=True, env=env,
                          check=False)
    try:
        p50, best, p50_top, best_top = (float(x) for x in proc.stdout.split())
    except ValueError:
        return {"error": proc.stderr[-400:]}
    return {"docs": n, "bytes_mb": round(n * 384 * 4 / 2**20, 1), "matvec_p50_ms": p50, "matvec_min_ms": best,
            "matvec_top40_p50_ms": p50_top, "matvec_top40_min_ms": best_top}


def minilm_queries(n: int) -> dict[str, Any]:
    from benchmarks.common.beir import minilm

    model = minilm()
    out: dict[str, Any] = {}
    for name in ("scifact", "arguana"):
        queries = list(read_beir(name, "test").queries.values())[:n]
        for q in queries[:3]:
            model.embed_query(q)
        xs = [timed(lambda q=q: model.embed_query(q)) for q in queries]
        out[name] = {"p50_ms": pct(xs, 50), "p95_ms": pct(xs, 95), "n": len(xs),
                     "mean_words": round(statistics.mean(len(q.split()) for q in queries), 1)}
    return out


# ---- one corpus -----------------------------------------------------------------------------------------


def run_corpus(c: dict[str, Any], args: argparse.Namespace, stacks: list[str]) -> dict[str, Any]:
    n = len(c["ids"])
    metas = [{"session_id": i % SESSIONS} for i in range(n)]
    emb = PrecomputedEmbedding(c["texts"], c["vectors"])
    first_set = next(iter(c["queries"]))
    for qset in c["queries"].values():
        emb.add(qset, c["q_vectors"][: len(qset)])
    out: dict[str, Any] = {"corpus": c["name"], "docs": n, "load_at_start": _load(), "stacks": {}}
    built: dict[str, Any] = {}
    for name in stacks:
        print(f"[{c['name']}] building {name} ...", flush=True)
        r, mem = measured_build(lambda name=name: build_stack(name, c, emb, metas, args.batch))
        built[name] = r
        out["stacks"][name] = {**mem, **describe(r)}
        print(f"[{c['name']}] {name}: {out['stacks'][name]}", flush=True)
    anchors: dict[str, Any] = {}
    if not args.no_anchors:
        for name in ANCHORS:
            print(f"[{c['name']}] building {name} ...", flush=True)
            a, mem = measured_build(lambda name=name: build_anchor(name, c, emb, metas))
            anchors[name] = a
            out["stacks"][name] = mem
            print(f"[{c['name']}] {name}: {mem}", flush=True)
    systems = {name: invoke_fn(r) for name, r in built.items()} | {name: anchor_fn(a) for name, a in anchors.items()}
    out["queries"] = {}
    for qset, queries in c["queries"].items():
        qs = queries[: args.queries]
        filters = {"unfiltered": None, "filtered": FILTER} | ({"filtered_35": WIDE_FILTER} if args.wide else {})
        res = interleaved(systems, qs, set(anchors), args.slow_queries, filters=filters)
        out["queries"][qset] = res
        for name, row in res.items():
            cells = " | ".join(f"{key} p50 {row[f'{key}_p50_ms']:9.2f} p95 {row[f'{key}_p95_ms']:9.2f} cpu "
                               f"{row[f'{key}_cpu_p50_ms']:8.2f}" for key in filters)
            print(f"[{c['name']} / {qset}] {name:48s} {cells} (n={row['unfiltered_n']})", flush=True)
    for name, r in built.items():
        row = out["stacks"][name]
        qs = c["queries"][first_set][: min(args.queries, 100)]
        row.update(legs_alone(r, qs, emb, DEPTH))
        row.update(trace_legs(r, qs))
        row["dense_recall@10_vs_exact"] = recall_vs_exact(stores_of(r)[1], c["q_vectors"][: min(len(qs), 100)])
        print(f"[{c['name']}] {name}: legs {row}", flush=True)
    if not args.no_diagnosis and PREVIOUS in built:
        qset = "frequent words" if "frequent words" in c["queries"] else first_set
        out["diagnosis"] = diagnose(built[PREVIOUS], c["queries"][qset][: args.queries], emb,
                                    min(args.queries, 100))
        out["diagnosis"]["queries"] = qset
        print(f"[{c['name']}] diagnosis: {json.dumps(out['diagnosis']['p50_ms'])}", flush=True)
        print(out["diagnosis"]["slowest_query_profile"][:3000], flush=True)
    out["ratios"] = ratios(out)
    for r in built.values():
        r.close()
    built.clear()
    anchors.clear()
    gc.collect()
    out["load_at_end"] = _load()
    return out


def ratios(out: dict[str, Any]) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for qset, rows in out["queries"].items():
        for name, row in rows.items():
            if name in ANCHORS:
                continue
            for anchor in ANCHORS:
                a = rows.get(anchor)
                if not a:
                    continue
                for key in ("unfiltered", "filtered"):
                    mine, theirs = row[f"{key}_p50_ms"], a[f"{key}_p50_ms"]
                    if mine and theirs:
                        res[f"{qset} | {anchor} / {name} ({key})"] = round(theirs / mine, 1)
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k synthetic, 40 queries, 4 slow: a smoke run")
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000])
    parser.add_argument("--corpora", nargs="+", default=["synthetic", "arguana"], choices=["synthetic", "arguana"])
    parser.add_argument("--queries", type=int, default=200, help="timed queries per query set")
    parser.add_argument("--slow-queries", type=int, default=10, help="timed queries for the anchors")
    parser.add_argument("--stacks", nargs="+", default=None, help="stack names (or 'default')")
    parser.add_argument("--hnsw", action="store_true", help=f"add '{HNSW_STACK}' (its build takes minutes)")
    parser.add_argument("--no-anchors", action="store_true")
    parser.add_argument("--wide", action="store_true", help="also a filter holding 35%% of the documents")
    parser.add_argument("--no-diagnosis", action="store_true")
    parser.add_argument("--batch", type=int, default=None,
                        help="documents per from_texts / add_texts call (default: one call up to 200k, else 100k)")
    parser.add_argument("--out", default="public_path.json")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.queries, args.slow_queries = [10_000], 40, 4
        args.corpora = ["synthetic"]
    stacks = list(STACKS) if args.stacks is None else [
        "default stack (from_texts defaults)" if s == "default" else s for s in args.stacks]
    if args.hnsw:
        stacks.append(HNSW_STACK)
    started = time.perf_counter()
    result: dict[str, Any] = {"top_k": TOP_K, "depth": DEPTH, "filter": FILTER, "load_at_start": _load(),
                              "command": " ".join([Path(sys.executable).name, *sys.argv]), "corpora": []}
    out_file = RESULTS / args.out
    for size in args.sizes:
        if args.batch is None:
            args.batch = None if size <= 200_000 else 100_000
        if "synthetic" in args.corpora:
            result["corpora"].append(run_corpus(synthetic_corpus(size, args.queries), args, stacks))
            out_file.write_text(json.dumps(result, indent=2))
    if "arguana" in args.corpora:
        result["corpora"].append(run_corpus(arguana_corpus(args.queries), args, stacks))
        out_file.write_text(json.dumps(result, indent=2))
    result["physical_floor"] = [physical_floor(n) for n in sorted({10_000, 100_000, *args.sizes}) if n <= 1_000_000]
    print(f"physical floor: {result['physical_floor']}", flush=True)
    try:
        result["minilm_embed_query"] = minilm_queries(30 if args.quick else 100)
        print(f"MiniLM embed_query: {result['minilm_embed_query']}", flush=True)
    except Exception as exc:  # the model is optional for the timings above
        result["minilm_embed_query"] = {"error": f"{type(exc).__name__}: {exc}"}
    result["load_at_end"] = _load()
    result["wall_s"] = round(time.perf_counter() - started, 1)
    out_file.write_text(json.dumps(result, indent=2))
    print(f"wrote {out_file} in {result['wall_s']} s; load {result['load_at_start']} -> {result['load_at_end']}")


if __name__ == "__main__":
    main()
