"""What a large persistent index costs: disk per document by component, opening it in a fresh process, a large
delete, and the RSS at each step, for the default stack at 100k and 1M documents.

Usage:
    .venv/bin/python benchmarks/scale/bench_scale_costs.py                          # 100k then 1M (~20 min at 1M)
    .venv/bin/python benchmarks/scale/bench_scale_costs.py --sizes 100000 --root /tmp/rrf_scale/costs
    .venv/bin/python benchmarks/scale/bench_scale_costs.py --sizes 1000000 --phases open   # reuse a built index

The stack is the default one (``EnsembleRRFRetriever.from_texts(texts, embedding, metadatas=[{"session_id": i %
100}], ids=ids, path=DIR)``: ``QdrantEdgeDenseStore`` (int8 scan, its HNSW graph from 100k) and
``QdrantEdgeKeywordStore``, persistent under ``DIR``), built as ``bench_scale_curve`` builds it (``from_texts`` on
the first 100k, ``add_texts`` for each further 100k) over its synthetic corpus (Zipf words, clustered vectors,
precomputed). Each phase runs in a fresh child process (``nice -n 5``), so its peak RSS is its own:

* ``build``: build time, RSS kept and peak over the RSS before (``/proc/self/clear_refs``), RSS after the build
  (absolute, anonymous / file-backed), then the index's disk by component;
* ``open``: LangChain's import, ours, ``EnsembleRRFRetriever.open(DIR, embedding)``, the first answered ``invoke``
  (wall seconds each, and from the child's start), ``ru_maxrss`` of the child, RSS after the first query and after 100 more; the fp32
  vectors' size on disk beside it says whether the open loaded them whole;
* ``delete``: ``delete`` of 10% of the ids (100k at 1M; the engine deletes in chunks of 10,000) on the reopened
  index: wall time, peak RSS growth over the RSS before the delete, a query after it (it answers, and no deleted id
  comes back), the disk after it.

Disk (``disk``): every file of ``DIR``, apparent size (``st_size``) and allocated blocks (``st_blocks``: Qdrant
preallocates and the two differ), per leg and component: fp32 vectors, int8 copy, graph links, payload storage,
payload indexes, id tracker, write-ahead log, the keyword shard's sparse vectors and inverted index, the journal,
meta files; each also split into optimized segments and appendable ones (a segment whose vector storage is
chunked / mutable). Per document = bytes / documents. Goals: <= 3 KB a document on disk; open and first
answer <= 5 s.

Writes ``benchmarks/results/scale_costs_<N>.json`` (one per size; the load average beside every figure).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

T_START = time.perf_counter()  # before the imports below: the open phase counts them
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS

CHUNK = 100_000
QUERIES = 100


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _rss() -> dict[str, float]:
    return {"rss_mb": round(_status_kb("VmRSS") / 1024, 1), "rss_anon_mb": round(_status_kb("RssAnon") / 1024, 1),
            "rss_file_mb": round(_status_kb("RssFile") / 1024, 1), "hwm_mb": round(_status_kb("VmHWM") / 1024, 1),
            "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the current RSS (Linux)
    except OSError:
        pass


# ---- disk -----------------------------------------------------------------------------------------------


def component(rel: Path) -> str:
    """The component a file of an index directory belongs to, from its path inside the directory."""
    parts = rel.parts
    name = rel.name
    if name == "journal.sqlite3" or name.startswith("journal.sqlite3"):
        return "journal"
    if "wal" in parts:
        return "wal"
    if "segments" not in parts:
        return "meta files"
    if any(p.startswith("vector_storage-") for p in parts):
        return "sparse vectors"
    if any(p.startswith("vector_index-") for p in parts):
        return "sparse inverted index"
    if "vector_index" in parts:
        return "graph links"
    if "vector_storage" in parts:
        if name.startswith("quantized"):
            return "int8 copy"
        if "deleted" in parts or name.startswith("deleted"):
            return "deletion flags"
        return "fp32 vectors"
    if "payload_index" in parts:
        return "payload indexes"
    if "payload_storage" in parts:
        return "payload storage"
    if "id_tracker" in name:
        return "id tracker"
    return "segment meta"


def appendable(segment: Path) -> bool:
    """A segment still written to (chunked dense storage or a mutable sparse index), from its ``segment.json``."""
    try:
        config = json.loads((segment / "segment.json").read_text())["config"]
    except (OSError, ValueError, KeyError):
        return False
    dense = config.get("vector_data") or {}
    sparse = config.get("sparse_vector_data") or {}
    return (any("Chunked" in str(v.get("storage_type")) for v in dense.values())
            or any("Mutable" in json.dumps(v.get("index", {})) for v in sparse.values()))


def disk(root: Path, docs: int) -> dict[str, Any]:
    """Bytes of every file under ``root``, apparent and allocated, per leg x component and per segment kind."""
    rows: dict[tuple[str, str, str], list[int]] = {}
    kinds: dict[Path, bool] = {}
    for f in root.rglob("*"):
        if not f.is_file():
            continue
        rel = f.relative_to(root)
        leg = "keyword" if rel.parts[0].startswith("keyword") else "dense" if rel.parts[0] != rel.name else "index"
        seg = "-"
        if "segments" in rel.parts:
            at = rel.parts.index("segments")
            segment = root.joinpath(*rel.parts[: at + 2])
            if segment not in kinds:
                kinds[segment] = appendable(segment)
            seg = "appendable" if kinds[segment] else "optimized"
        st = f.stat()
        row = rows.setdefault((leg, component(rel), seg), [0, 0])
        row[0] += st.st_size
        row[1] += st.st_blocks * 512
    table = [{"leg": leg, "component": comp, "segments": seg, "apparent_mb": round(a / 2**20, 1),
              "allocated_mb": round(b / 2**20, 1), "apparent_b_per_doc": round(a / docs, 1),
              "allocated_b_per_doc": round(b / docs, 1)} for (leg, comp, seg), (a, b) in sorted(rows.items())]
    total_a = sum(a for a, _ in rows.values())
    total_b = sum(b for _, b in rows.values())
    per_leg = {leg: {"apparent_mb": round(sum(a for (lg, _, _), (a, _) in rows.items() if lg == leg) / 2**20, 1),
                     "allocated_mb": round(sum(b for (lg, _, _), (_, b) in rows.items() if lg == leg) / 2**20, 1)}
               for leg in sorted({k[0] for k in rows})}
    segments = {"optimized": sum(1 for v in kinds.values() if not v), "appendable": sum(1 for v in kinds.values() if v)}
    return {"docs": docs, "apparent_mb": round(total_a / 2**20, 1), "allocated_mb": round(total_b / 2**20, 1),
            "apparent_kb_per_doc": round(total_a / docs / 1024, 2), "allocated_kb_per_doc": round(total_b / docs / 1024, 2),
            "legs": per_leg, "segments": segments, "components": table}


# ---- phases (each in its own child process) -------------------------------------------------------------


def corpus(n: int) -> dict[str, Any]:
    from benchmarks.scale.bench_scale_curve import synthetic_corpus

    return synthetic_corpus(n, QUERIES)


def phase_build(n: int, where: Path) -> dict[str, Any]:
    import numpy as np

    from benchmarks.common.embedders import PrecomputedEmbedding
    from benchmarks.scale.bench_scale_curve import build
    from benchmarks.speed.bench_public_path import describe, measured_build

    c = corpus(n)
    np.save(where.parent / f"queries_{n}.npy", c["q_vectors"])
    (where.parent / f"queries_{n}.json").write_text(json.dumps(c["queries"]))
    emb = PrecomputedEmbedding(c["texts"], c["vectors"])
    emb.add(c["queries"], c["q_vectors"])
    metas = [{"session_id": i % 100} for i in range(n)]
    rss_before = _rss()
    load_before = _load()
    adds: list[float] = []
    c0 = time.process_time()
    r, mem = measured_build(lambda c=c, emb=emb: build("default", c, emb, metas, adds, path=where))
    out: dict[str, Any] = {"load_before": load_before, "rss_before": rss_before, **mem,
                           "build_cpu_s": round(time.process_time() - c0, 1), "add_calls_s": adds, **describe(r),
                           "rss_after_build": _rss(), "load_after": _load()}
    del c, emb
    gc.collect()
    out["rss_after_build_corpus_freed"] = _rss()
    r.close()
    out["disk"] = disk(where, n)
    return out


def _query_embedding(n: int, root: Path) -> tuple[Any, list[str]]:
    import numpy as np

    from benchmarks.common.embedders import PrecomputedEmbedding

    queries = json.loads((root / f"queries_{n}.json").read_text())
    return PrecomputedEmbedding(queries, np.load(root / f"queries_{n}.npy")), queries


def phase_open(n: int, where: Path) -> dict[str, Any]:
    t_frameworks = time.perf_counter()
    import langchain_core.retrievers  # noqa: F401  (LangChain's own import, ~1 s: not the index's cost)

    t_import0 = time.perf_counter()
    from rrf_retriever import EnsembleRRFRetriever

    emb, queries = _query_embedding(n, where.parent)
    t_import = time.perf_counter()
    out: dict[str, Any] = {"load_before": _load(), "rss_before_open": _rss()}
    r = EnsembleRRFRetriever.open(where, emb)
    t_open = time.perf_counter()
    out["rss_after_open"] = _rss()
    got = r.invoke(queries[0], top_k=10)
    t_first = time.perf_counter()
    out["rss_after_first_query"] = _rss()
    out |= {"script_imports_s": round(t_frameworks - T_START, 3), "langchain_import_s": round(t_import0 - t_frameworks, 3),
            "import_s": round(t_import - t_import0, 3),
            "open_s": round(t_open - t_import, 3), "first_query_s": round(t_first - t_open, 3),
            "open_to_first_answer_s": round(t_first - t_import, 3),
            "start_to_first_answer_s": round(t_first - T_START, 3), "first_answer_hits": len(got)}
    times = []
    for q in queries[1:]:
        t0 = time.perf_counter()
        r.invoke(q, top_k=10)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    out["next_queries_p50_ms"] = round(times[len(times) // 2], 2)
    out["rss_after_100_queries"] = _rss()
    # The first query measures the engine's cosine background (engine/background.py), which lists ids through
    # ids_matching(None, limit=4096): timed again here, warm, as the part of the first answer that grows with N.
    dense = r.engine.legs["dense"].store
    t0 = time.perf_counter()
    dense.ids_matching(None, limit=4096)
    out["ids_matching_4096_s"] = round(time.perf_counter() - t0, 3)
    out["load_after"] = _load()
    r.close()
    return out


def phase_delete(n: int, where: Path) -> dict[str, Any]:
    from rrf_retriever import EnsembleRRFRetriever

    emb, queries = _query_embedding(n, where.parent)
    r = EnsembleRRFRetriever.open(where, emb)
    r.invoke(queries[0], top_k=10)
    gone = [f"d{i}" for i in range(0, n, 10)]  # every 10th id: spread over every segment
    gc.collect()
    out: dict[str, Any] = {"deleted": len(gone), "load_before": _load(), "rss_before_delete": _rss()}
    _reset_peak()
    rss0 = _status_kb("VmRSS")
    t0 = time.perf_counter()
    r.delete(gone)
    out["delete_s"] = round(time.perf_counter() - t0, 2)
    out["peak_growth_mb"] = round((_status_kb("VmHWM") - rss0) / 1024, 1)
    out["rss_after_delete"] = _rss()
    out["load_after_delete"] = _load()
    t0 = time.perf_counter()
    hits = r.invoke(queries[1], top_k=10)
    out["query_after_delete_s"] = round(time.perf_counter() - t0, 3)
    dropped = set(gone)
    out["query_after_delete_hits"] = len(hits)
    out["deleted_ids_returned"] = sum(1 for h in hits if h.id in dropped)
    r.close()
    out["disk_after_delete"] = disk(where, n - len(gone))
    return out


PHASES = {"build": phase_build, "open": phase_open, "delete": phase_delete}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--phases", default="build,open,delete", help="comma-separated: build, open, delete")
    parser.add_argument("--root", type=Path, default=Path("/tmp/rrf_scale/costs"))
    parser.add_argument("--child", nargs=2, metavar=("PHASE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    if args.child:
        phase, n = args.child[0], int(args.child[1])
        got = PHASES[phase](n, args.root / f"index_{n}")
        print("RESULT " + json.dumps(got), flush=True)
        return
    env = {**os.environ, "TQDM_DISABLE": "1"}
    for n in args.sizes:
        target = RESULTS / f"scale_costs_{n}.json"
        result: dict[str, Any] = json.loads(target.read_text()) if target.is_file() else {}
        result |= {"docs": n, "stack": "default (QdrantEdgeDenseStore + QdrantEdgeKeywordStore, persistent)",
                   "cpus": os.cpu_count(), "code": subprocess.run(
                       ["git", "-C", str(Path(__file__).parent), "log", "-1", "--format=%h %s"], capture_output=True,
                       text=True, check=False).stdout.strip()[:100]}
        for phase in args.phases.split(","):
            if phase == "build" and (args.root / f"index_{n}").exists():
                import shutil

                shutil.rmtree(args.root / f"index_{n}")
            cmd = ["nice", "-n", "5", sys.executable, __file__, "--root", str(args.root), "--child", phase, str(n)]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if proc.returncode or not lines:
                print(proc.stdout[-2000:], proc.stderr[-4000:], sep="\n")
                msg = f"{phase} at {n} failed (exit {proc.returncode})"
                raise SystemExit(msg)
            got = json.loads(lines[-1][len("RESULT "):])
            got["child_wall_s"] = round(wall, 2)
            got["command"] = " ".join(["python", *cmd[3:]])
            result[phase] = got
            print(f"[{n}] {phase}: {json.dumps(got)[:1500]}", flush=True)
            target.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
