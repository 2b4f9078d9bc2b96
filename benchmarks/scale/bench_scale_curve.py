"""The cost curve from 10k to 1M documents: latency, build time, memory, disk and dense recall per corpus size, for
the default stack and the FTS5 stack, beside LangChain and LlamaIndex where they finish.

Usage:
    .venv/bin/python benchmarks/scale/bench_scale_curve.py                     # 10k 100k 300k 1M, both corpora
    .venv/bin/python benchmarks/scale/bench_scale_curve.py --sizes 10000 100000 --corpora synthetic   # a part
    .venv/bin/python benchmarks/scale/bench_scale_curve.py --plot-only         # merge the cached points, fit, plot

Each (corpus, size) point runs in a fresh child process (``nice``; its peak RSS is its own) and is cached as
``benchmarks/results/scale_curve/<corpus>-<size>.json``; a later run reuses the cached points unless ``--force``
(the 1M point takes the longest: run it once). From ``--separate-from`` (1M) on, each stack gets its own child
process (two 1M stacks do not fit in 24 GB together) and the parts are merged into the point (its queries are then
not interleaved across stacks: ``"separate_processes": true``). The parent merges the points into
``benchmarks/results/scale_curve.json``, fits the growth of each p50 in N (a power law ``a * N^b`` over the sizes
measured) and draws ``benchmarks/results/scale_curve.png`` (latency and memory vs N).

Stacks, built as users build them (``EnsembleRRFRetriever.from_texts(texts, embedding, metadatas=[{"session_id":
i % 100}], ids=ids, ...)``: the first 100k through ``from_texts``, the rest through ``add_texts`` in batches of
100k): ``default`` (no store argument: whatever the library builds at that size), ``fts5`` (``keyword="fts5"``,
dense as the default; from ``--scan-from`` (100k: where the default grows its graph) on, its dense store is
``QdrantEdgeDenseStore(emb, graph_points=None)``: the int8 scan without the graph, so its dense leg alone is the
scan beside the default's graph; the FTS5 stack's time is its keyword leg's at those sizes either way). Each
is timed through LangChain's ``invoke(q, top_k=10)`` and ``invoke(q, top_k=10, filter={"session_id": [7, 42,
77]})`` (3 of 100 sessions), the query embedding excluded (precomputed vectors), the queries interleaved
round-robin across stacks (each query follows another stack's). A stack whose warm-up queries take > 150 ms gets
only ``--slow-queries`` timed queries. Anchors (LangChain ``EnsembleRetriever``, LlamaIndex
``QueryFusionRetriever``, depth 40 per member) up to ``--anchors-max`` documents.

Corpora:

* ``synthetic``: Zipf(1.1) words over a 20k vocabulary, 40-160 words a document (``bench_hybrid_speed.synthetic``'s
  recipe, drawn in chunks of 100k so 1M fits in memory), queries of 3-6 words drawn from the corpus's word
  frequencies (``bench_public_path``'s *frequent words*). Vectors: a mixture of 1,000 Gaussian clusters in 384
  dimensions (unit length), not uniform random: an int8 or exact scan costs the same on any vectors, but an HNSW
  graph on uniform random 384-d vectors is the worst case no embedding model produces (recall 0.16 at 100k).
* ``arguana``: the real ArguAna corpus repeated to N documents (each copy its own id), the real test queries (a
  whole argument each, ~160 words: ArguAna-length queries) with their MiniLM vectors. Document vectors: the REAL
  cached MiniLM vectors (``benchmarks/.cache``, via ``common/beir.py``) when present, each copy after the first jittered
  (``v + 0.3 g / sqrt(384)``, renormalized: cosine ~0.96 to the original) so copies are not exact ties; without
  the cache, one random vector per original document (noted in the JSON as ``vectors``).

Per stack: ``build_s`` (wall) and ``build_cpu_s``, ``rss_mb`` (kept) and ``peak_mb`` over the RSS before the build
(``/proc/self/clear_refs``), the stores' folders on disk, the dense index, p50/p95 wall and p50 CPU ms per query
unfiltered and filtered, each leg alone at depth 40, and the dense leg's recall@10 against its own exact search
(unfiltered and filtered). The load average is recorded with every point.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from benchmarks.common.scaled import jittered_copies
from benchmarks.speed.bench_public_path import (
    DEPTH,
    FILTER,
    SESSIONS,
    TOP_K,
    arguana_corpus,
    build_anchor,
    describe,
    measured_build,
    pct,
    stores_of,
)
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

SIZES = (10_000, 100_000, 300_000, 1_000_000)
CHUNK = 100_000
POINTS = RESULTS / "scale_curve"
ANCHORS = ("LangChain EnsembleRetriever", "LlamaIndex QueryFusionRetriever")
SLOW_MS = 150.0
#: From ``--scan-from`` documents on, the FTS5 stack's dense leg keeps the int8 scan (``graph_points=None``): its
#: time is the keyword leg's anyway, and its dense leg alone is the int8 scan at that size, beside the default's graph.
SCAN_FTS5 = "fts5 (dense: int8 scan, no graph)"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---- corpora --------------------------------------------------------------------------------------------


def clustered_vectors(n: int, rng: np.random.Generator, clusters: int = 1000, spread: float = 0.8) -> np.ndarray:
    """Unit vectors from a mixture of Gaussian clusters (float32), drawn in chunks."""
    centers = np.random.default_rng(99).normal(size=(clusters, 384)).astype(np.float32)
    out = np.empty((n, 384), dtype=np.float32)
    for i in range(0, n, CHUNK):
        m = min(CHUNK, n - i)
        block = centers[rng.integers(0, clusters, m)] + spread * rng.normal(size=(m, 384)).astype(np.float32)
        out[i : i + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def synthetic_corpus(n: int, n_queries: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(sorted({"".join(rng.choice(letters, rng.integers(3, 10))) for _ in range(22_000)})[:20_000])
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    p /= p.sum()
    vocab = vocab[rng.permutation(len(vocab))]  # frequency rank independent of alphabetical order
    texts: list[str] = []
    for i in range(0, n, CHUNK):
        lengths = rng.integers(40, 161, min(CHUNK, n - i))
        words = vocab[rng.choice(len(vocab), size=int(lengths.sum()), p=p)].tolist()
        start = 0
        for length in lengths:
            texts.append(" ".join(words[start : start + length]))
            start += length
    queries = [" ".join(rng.choice(vocab, size=int(rng.integers(3, 7)), p=p)) for _ in range(n_queries)]
    vectors = clustered_vectors(n, rng)
    q_vectors = clustered_vectors(n_queries, np.random.default_rng(5))
    return {"name": "synthetic", "ids": [f"d{i}" for i in range(n)], "texts": texts, "vectors": vectors,
            "queries": queries, "q_vectors": q_vectors, "vectors_kind": "clustered (1,000 Gaussian clusters)"}


def arguana_scaled(n: int, n_queries: int) -> dict[str, Any]:
    base = arguana_corpus(n_queries, copies=1)
    copies = -(-n // len(base["ids"]))
    kind = "random, shared by copies"
    vectors = base["vectors"]
    q_vectors = base["q_vectors"]
    try:
        from benchmarks.common.beir import cached_vectors, minilm

        vectors = cached_vectors(base["texts"]) if _cache_ready(base["texts"]) else None
        if vectors is not None:
            q_vectors = np.asarray(minilm().embed_documents(base["queries"]["arguana queries"]), dtype=np.float32)
            kind = "real MiniLM (copies jittered, cosine ~0.96)"
        else:
            vectors = base["vectors"]
    except Exception as exc:  # no model or no cache: the random vectors of bench_public_path
        print(f"arguana: real vectors unavailable ({type(exc).__name__}: {exc}); random vectors", flush=True)
        vectors = base["vectors"]
    all_vectors = jittered_copies(vectors, n, np.random.default_rng(3))
    ids = [f"{i}~{k}" for k in range(copies) for i in base["ids"]][:n]
    texts = (base["texts"] * copies)[:n]
    return {"name": "arguana", "ids": ids, "texts": texts, "vectors": np.ascontiguousarray(all_vectors),
            "queries": base["queries"]["arguana queries"], "q_vectors": q_vectors, "vectors_kind": kind,
            "copies": copies}


def _cache_ready(texts: list[str]) -> bool:
    from benchmarks.common.paths import CACHE

    return any(CACHE.glob(f"coll-all-MiniLM-L6-v2-{len(texts)}-*.npy"))


# ---- stacks ---------------------------------------------------------------------------------------------


def stack_kwargs(name: str, emb: Any) -> dict[str, Any]:
    if name == "default":
        return {}
    if name == "fts5":
        return {"keyword": "fts5"}
    if name == SCAN_FTS5:
        return {"keyword": "fts5", "dense": QdrantEdgeDenseStore(emb, graph_points=None)}
    msg = f"unknown stack {name!r}"
    raise SystemExit(msg)


def allocated_mb(r: Any) -> dict[str, float]:
    """The blocks each store's folder holds on disk (Qdrant preallocates sparse files: their size says more)."""
    out: dict[str, float] = {}
    for leg, store in zip(("keyword", "dense"), stores_of(r)):
        path = store.path if isinstance(store.path, Path) else None
        if path is not None and path.exists():
            files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
            out[f"{leg}_allocated_mb"] = round(sum(f.stat().st_blocks * 512 for f in files) / 2**20, 1)
    return out


def build(name: str, c: dict[str, Any], emb: Any, metas: list[dict[str, Any]], adds: list[float],
          path: Path | None = None) -> Any:
    """The stack as a user builds it: from_texts on the first 100k, add_texts for each further 100k (``adds``
    receives each call's seconds: the call that crosses the graph threshold carries the graph's build); ``path``:
    a persistent index directory (``from_texts(..., path=path)``), else in memory."""
    kwargs = stack_kwargs(name, emb) | ({"path": path} if path is not None else {})
    texts, ids = c["texts"], c["ids"]
    t0 = time.perf_counter()
    r = EnsembleRRFRetriever.from_texts(texts[:CHUNK], emb, metadatas=metas[:CHUNK], ids=ids[:CHUNK], **kwargs)
    adds.append(round(time.perf_counter() - t0, 1))
    for i in range(CHUNK, len(texts), CHUNK):
        t0 = time.perf_counter()
        r.add_texts(texts[i : i + CHUNK], metadatas=metas[i : i + CHUNK], ids=ids[i : i + CHUNK])
        adds.append(round(time.perf_counter() - t0, 1))
    return r


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000


def interleaved(systems: dict[str, Callable[[str, bool], Any]], queries: list[str], n_slow: int,
                warm: int = 3) -> dict[str, dict[str, Any]]:
    wall: dict[tuple[str, bool], list[float]] = {(n, f): [] for n in systems for f in (False, True)}
    cpu: dict[tuple[str, bool], list[float]] = {(n, f): [] for n in systems for f in (False, True)}
    warm_ms: dict[str, list[float]] = {n: [] for n in systems}
    slow: set[str] = set()
    for qi in range(-warm, len(queries)):
        if qi == 0:
            slow = {n for n, xs in warm_ms.items() if float(np.median(xs)) > SLOW_MS}
        q = queries[qi % len(queries)]
        for filtered in (False, True):
            for name, search in systems.items():
                if name in slow and qi >= n_slow:
                    continue
                ms, cms = timed(lambda search=search, q=q, filtered=filtered: search(q, filtered))
                if qi < 0:
                    warm_ms[name].append(ms)
                else:
                    wall[(name, filtered)].append(ms)
                    cpu[(name, filtered)].append(cms)
    out: dict[str, dict[str, Any]] = {}
    for name in systems:
        row: dict[str, Any] = {}
        for filtered in (False, True):
            key = "filtered" if filtered else "unfiltered"
            xs = wall[(name, filtered)]
            row[f"{key}_p50_ms"], row[f"{key}_p95_ms"], row[f"{key}_n"] = pct(xs, 50), pct(xs, 95), len(xs)
            row[f"{key}_cpu_p50_ms"] = pct(cpu[(name, filtered)], 50)
        out[name] = row
    return out


def legs_alone(r: Any, queries: list[str], emb: PrecomputedEmbedding) -> dict[str, Any]:
    kw, dense = stores_of(r)
    vecs = [emb.embed_query(q) for q in queries]
    out: dict[str, Any] = {}
    for filtered in (False, True):
        flt = FILTER if filtered else None
        key = "filtered" if filtered else "unfiltered"
        k_ms = [timed(lambda q=q, flt=flt: kw.search(q, DEPTH, filter=flt))[0] for q in queries]
        d_ms = [timed(lambda v=v, flt=flt: dense.search(v, DEPTH, filter=flt))[0] for v in vecs]
        out[f"keyword_{key}_p50_ms"], out[f"dense_{key}_p50_ms"] = pct(k_ms, 50), pct(d_ms, 50)
    return out


def recall(dense: Any, q_vectors: np.ndarray) -> dict[str, Any]:
    if not isinstance(dense, QdrantEdgeDenseStore):
        return {}
    out: dict[str, Any] = {}
    for key, flt in (("unfiltered", None), ("filtered", FILTER)):
        got = [[h.id for h in dense.search(v, TOP_K, filter=flt)] for v in q_vectors]
        dense.exact = True
        try:
            t0 = time.perf_counter()
            truth = [[h.id for h in dense.search(v, TOP_K, filter=flt)] for v in q_vectors]
            exact_ms = (time.perf_counter() - t0) * 1000 / max(1, len(q_vectors))
        finally:
            dense.exact = False
        out[f"dense_recall@10_{key}"] = round(float(np.mean([len(set(a) & set(b)) / TOP_K
                                                             for a, b in zip(got, truth)])), 4)
        out[f"dense_exact_{key}_mean_ms"] = round(exact_ms, 2)
    return out


# ---- one point (child process) --------------------------------------------------------------------------


def run_point(corpus: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    c = synthetic_corpus(n, args.queries) if corpus == "synthetic" else arguana_scaled(n, args.queries)
    metas = [{"session_id": i % SESSIONS} for i in range(n)]
    emb = PrecomputedEmbedding(c["texts"], c["vectors"])
    emb.add(c["queries"], c["q_vectors"][: len(c["queries"])])
    point: dict[str, Any] = {"corpus": corpus, "docs": n, "vectors": c["vectors_kind"], "load_at_start": _load(),
                             "stacks": {}}
    stacks = [SCAN_FTS5 if s == "fts5" and n >= args.scan_from else s for s in args.stacks]
    built: dict[str, Any] = {}
    for name in stacks:
        print(f"[{corpus} {n}] building {name} (load {_load()}) ...", flush=True)
        c0, adds = time.process_time(), []
        r, mem = measured_build(lambda name=name, adds=adds: build(name, c, emb, metas, adds))
        built[name] = r
        point["stacks"][name] = {**mem, "build_cpu_s": round(time.process_time() - c0, 1), "add_calls_s": adds,
                                 **describe(r),
                                 **allocated_mb(r), "load_after_build": _load()}
        print(f"[{corpus} {n}] {name}: {point['stacks'][name]}", flush=True)
    anchors: dict[str, Any] = {}
    if n <= args.anchors_max and not args.no_anchors:
        for name in ANCHORS:
            print(f"[{corpus} {n}] building {name} ...", flush=True)
            a, mem = measured_build(lambda name=name: build_anchor(name, c, emb, metas))
            anchors[name] = a
            point["stacks"][name] = mem
    systems: dict[str, Callable[[str, bool], Any]] = {
        name: (lambda q, f, r=r: r.invoke(q, top_k=TOP_K, filter=FILTER if f else None)) for name, r in built.items()}
    systems |= {name: (lambda q, f, a=a: a.search(q, FILTER["session_id"] if f else None))
                for name, a in anchors.items()}
    point["load_before_queries"] = _load()
    res = interleaved(systems, c["queries"][: args.queries], args.slow_queries)
    for name, row in res.items():
        point["stacks"][name].update(row)
        print(f"[{corpus} {n}] {name:32s} p50 {row['unfiltered_p50_ms']} p95 {row['unfiltered_p95_ms']} cpu "
              f"{row['unfiltered_cpu_p50_ms']} | filtered p50 {row['filtered_p50_ms']} p95 {row['filtered_p95_ms']} "
              f"cpu {row['filtered_cpu_p50_ms']} (n={row['unfiltered_n']})", flush=True)
    point["load_after_queries"] = _load()
    for name, r in built.items():
        qs = c["queries"][: min(args.queries, 50)]
        point["stacks"][name].update(legs_alone(r, qs, emb))
        point["stacks"][name].update(recall(stores_of(r)[1], c["q_vectors"][: min(args.queries, 50)]))
        print(f"[{corpus} {n}] {name}: {point['stacks'][name]}", flush=True)
        r.close()
    point["load_at_end"] = _load()
    point["wall_s"] = round(time.perf_counter() - t_start, 1)
    return point


# ---- the curve (parent) ---------------------------------------------------------------------------------


def fit(points: list[dict[str, Any]], stack: str, key: str) -> dict[str, Any] | None:
    xs, ys = [], []
    for p in points:
        v = p["stacks"].get(stack, {}).get(key)
        if v:
            xs.append(p["docs"])
            ys.append(v)
    if len(xs) < 2:
        return None
    b, log_a = np.polyfit(np.log(xs), np.log(ys), 1)
    return {"exponent": round(float(b), 2), "a": float(np.exp(log_a)), "sizes": xs}


def plot(curve: dict[str, Any], out: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no plot"
    fig, axes = plt.subplots(1, 4, figsize=(21, 5.6))
    # One colour per stack (both FTS5 variants are one line), dashed for ArguAna: the same in every panel.
    stacks = sorted({"fts5" if s.startswith("fts5") else s for ps in curve["points"].values() for p in ps
                     for s in p["stacks"]})
    colours = {name: f"C{i}" for i, name in enumerate(stacks)}
    for corpus, points in curve["points"].items():
        for name in stacks:
            rows = [(p["docs"], row) for p in points for s, row in p["stacks"].items()
                    if ("fts5" if s.startswith("fts5") else s) == name]
            if not rows:
                continue
            style = "--" if corpus == "arguana" else "-"
            label = f"{name} ({corpus})"
            ns = [n for n, _ in rows]
            for ax, key in ((axes[0], "unfiltered_p50_ms"), (axes[1], "filtered_p50_ms")):
                vals = [row.get(key) for _, row in rows]
                if any(vals):
                    ax.plot(ns, vals, style, marker="o", color=colours[name], label=label)
            peaks = [row.get("rss_mb") for _, row in rows]
            if any(peaks) and name not in ANCHORS:
                axes[2].plot(ns, peaks, style, marker="o", color=colours[name], label=label)
    titles = ("p50 ms through invoke(), unfiltered (lines: 5 and 20 ms)", "p50 ms, filtered (3 of 100 sessions)",
              "RSS kept by the stack, MB (ours; fts5 from 100k: int8 scan)")
    for ax, title in zip(axes, titles):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("documents")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].axhline(5, color="grey", lw=0.8)
    axes[0].axhline(20, color="grey", lw=0.8)
    axes[1].axhline(5, color="grey", lw=0.8)
    recall_panel(axes[3])
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("rrf-retriever on one machine (2 shared cores; loads in scale_curve.json)", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out, dpi=110)
    return str(out.relative_to(RESULTS.parent))


def recall_panel(ax: Any) -> None:
    """Filtered recall@10 vs selectivity per size, from ``bench_filtered_recall``'s JSONs (the dense store): the
    default path (solid) and Qdrant's own plan (``graph``, dotted), the worse of the ``clus`` and ``rand`` scopes."""
    files = sorted(RESULTS.glob("filtered_recall_*_[0-9]*0.json"), key=lambda f: (f.stem.split("_")[2], int(
        f.stem.split("_")[3])))
    for i, f in enumerate(files):
        got = json.loads(f.read_text())
        label = f"{got['vectors']} {got['docs'] // 1000}k"
        for path, style in (("default", "-"), ("graph", ":")):
            xs, ys = [], []
            for p in got["selectivities"]:
                t = f"{p * 100:g}".replace(".", "_")
                cells = [got["results"].get(f"{kind}_{t}", {}).get(path) for kind in ("clus", "rand")]
                if all(cells):
                    xs.append(p * 100)
                    ys.append(min(c["recall_mean"] for c in cells))
            if xs:
                ax.plot(xs, ys, style, marker="o" if path == "default" else ".", color=f"C{i}",
                        label=f"{label} {path}" if path == "default" else f"{label} Qdrant's plan")
    ax.set_xscale("log")
    ax.set_ylim(0.5, 1.02)
    ax.set_xlabel("% of documents in the filter's scope")
    ax.set_title("filtered recall@10 of the dense leg, worse of clus / rand\n(solid: default; dotted: Qdrant's plan)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--corpora", nargs="+", default=["synthetic", "arguana"], choices=["synthetic", "arguana"])
    parser.add_argument("--stacks", nargs="+", default=["default", "fts5"])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--slow-queries", type=int, default=15, help="timed queries for a stack slower than 150 ms")
    parser.add_argument("--anchors-max", type=int, default=100_000)
    parser.add_argument("--no-anchors", action="store_true")
    parser.add_argument("--scan-from", type=int, default=100_000,
                        help="from this size on, the FTS5 stack's dense leg is the int8 scan without the graph")
    parser.add_argument("--force", action="store_true", help="re-run points already cached")
    parser.add_argument("--separate-from", type=int, default=1_000_000,
                        help="from this size on, each stack is built and timed in its own child process (two 1M "
                             "stacks do not fit in 24 GB together); the parts are merged into the point")
    parser.add_argument("--point-file", help=argparse.SUPPRESS)
    parser.add_argument("--plot-only", action="store_true")
    parser.add_argument("--one", nargs=2, metavar=("CORPUS", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    POINTS.mkdir(parents=True, exist_ok=True)
    if args.one:
        corpus, size = args.one[0], int(args.one[1])
        point = run_point(corpus, size, args)
        point["command"] = " ".join([Path(sys.executable).name, *sys.argv])
        target = Path(args.point_file) if args.point_file else POINTS / f"{corpus}-{size}.json"
        target.write_text(json.dumps(point, indent=2))
        return
    if not args.plot_only:
        for size in args.sizes:
            for corpus in args.corpora:
                target = POINTS / f"{corpus}-{size}.json"
                if target.is_file() and not args.force:
                    print(f"{target.name}: cached", flush=True)
                    continue
                child = ["nice", "-n", "5", sys.executable, __file__, "--one", corpus, str(size),
                         "--queries", str(args.queries), "--slow-queries", str(args.slow_queries),
                         "--anchors-max", str(args.anchors_max), "--scan-from", str(args.scan_from),
                         *(["--no-anchors"] if args.no_anchors else [])]
                env = {**os.environ, "TQDM_DISABLE": "1"}
                if size < args.separate_from:
                    subprocess.run([*child, "--stacks", *args.stacks], check=False, env=env)
                    continue
                parts = []
                for i, stack in enumerate(args.stacks):
                    part = POINTS / f"{corpus}-{size}.part{i}.tmp"
                    subprocess.run([*child, "--stacks", stack, "--point-file", str(part), *(
                        ["--no-anchors"] if i else [])], check=False, env=env)
                    if part.is_file():
                        parts.append(json.loads(part.read_text()))
                        part.unlink()
                if parts:
                    merged = {**parts[0], "separate_processes": True, "parts": [
                        {k: v for k, v in q.items() if k != "stacks"} for q in parts]}
                    merged["stacks"] = {name: row for q in parts for name, row in q["stacks"].items()}
                    target.write_text(json.dumps(merged, indent=2))
    curve: dict[str, Any] = {"top_k": TOP_K, "depth": DEPTH, "filter": FILTER, "points": {}, "fits": {}}
    for f in sorted(POINTS.glob("*.json"), key=lambda p: (p.stem.split("-")[0], int(p.stem.split("-")[1]))):
        point = json.loads(f.read_text())
        curve["points"].setdefault(point["corpus"], []).append(point)
    for corpus, points in curve["points"].items():
        names = sorted({s for p in points for s in p["stacks"]})
        for name in names:
            for key in ("unfiltered_p50_ms", "filtered_p50_ms", "unfiltered_cpu_p50_ms", "dense_unfiltered_p50_ms",
                        "keyword_unfiltered_p50_ms", "rss_mb", "build_s"):
                got = fit(points, name, key)
                if got:
                    curve["fits"][f"{corpus} | {name} | {key}"] = got
    curve["plot"] = plot(curve, RESULTS / "scale_curve.png")
    (RESULTS / "scale_curve.json").write_text(json.dumps(curve, indent=2))
    for key, got in curve["fits"].items():
        print(f"{key}: ~N^{got['exponent']} over {got['sizes']}")
    print(f"wrote {RESULTS / 'scale_curve.json'} and {curve['plot']}")


if __name__ == "__main__":
    main()
