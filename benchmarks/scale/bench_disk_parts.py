"""Where the default stack's bytes go on disk: each qdrant-edge shard (dense and keyword) broken down by part (the
write-ahead log, float vectors, the int8 copy, the HNSW graph, the sparse index, payload pages, payload indexes,
id trackers), in bytes per document, apparent (``st_size``) and allocated (``st_blocks``: Qdrant preallocates
sparse files, so the two differ).

Usage:
    .venv/bin/python benchmarks/scale/bench_disk_parts.py --docs 200000            # build, break down, reopen
    .venv/bin/python benchmarks/scale/bench_disk_parts.py --existing DIR [DIR ...]  # break down stores as they are
    .venv/bin/python benchmarks/scale/bench_disk_parts.py --docs 200000 --label before --out F

The build is the default stack as users build it (``bench_scale_curve.py``'s synthetic corpus: Zipf words, 40-160 a
document, clustered 384-d vectors, ``{"session_id": i % 100}``): ``EnsembleRRFRetriever.from_texts`` on the first
``--chunk`` documents, ``add_texts`` for each further chunk, the two default stores given a folder each so they are
measured after ``close`` and again after a reopen. Writes ``benchmarks/results/disk_parts.json`` (one entry per
``--label``, merged into the file).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import CACHE, RESULTS
from benchmarks.scale.bench_scale_curve import synthetic_corpus
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeHybridStore, QdrantEdgeKeywordStore
from rrf_retriever.stores.qdrant.edge_index import GRAPH_KIND, index_config, quantization_params

OUT = RESULTS / "disk_parts.json"
SESSIONS = 100
TOP = 10


def part_of(rel: Path) -> str:
    """The part a file of a store folder belongs to (``rel``: its path inside the folder)."""
    parts = rel.parts
    if "wal" in parts:
        return "wal"
    if "segments" not in parts and "temp_segments" not in parts:
        return "meta"
    if "temp_segments" in parts:
        return "temp_segments"
    name = rel.name
    inside = parts[parts.index("segments") + 2:] if len(parts) > parts.index("segments") + 2 else ()
    top = inside[0] if inside else name
    if top.startswith(("vector_storage-bm25", "vector_index-bm25")):
        return "sparse_vectors" if top.startswith("vector_storage") else "sparse_index"
    if top.startswith("vector_storage"):
        return "int8_copy" if name.startswith("quantized") else "float_vectors"
    if top.startswith("vector_index"):
        return "hnsw_graph"
    if top.startswith("payload_storage"):
        return "payload_storage"
    if top.startswith("payload_index"):
        return "payload_index"
    if "id_tracker" in top:
        return "id_tracker"
    return "segment_meta"


def breakdown(folder: Path, docs: int) -> dict[str, Any]:
    """Bytes per document of each part of the store folder, apparent and allocated, and its segments."""
    apparent: dict[str, int] = defaultdict(int)
    allocated: dict[str, int] = defaultdict(int)
    for f in folder.rglob("*"):
        if f.is_file():
            st = f.stat()
            part = part_of(f.relative_to(folder))
            apparent[part] += st.st_size
            allocated[part] += st.st_blocks * 512
    segments = []
    seg_root = folder / "shard" / "segments"
    for seg in sorted(seg_root.iterdir()) if seg_root.is_dir() else ():
        cfg = json.loads((seg / "segment.json").read_text()) if (seg / "segment.json").is_file() else {}
        data = cfg.get("config", {}).get("vector_data", {})
        kinds = sorted({str(v.get("index", {}).get("type")) for v in data.values()}) or ["sparse-only"]
        size = sum(f.stat().st_blocks * 512 for f in seg.rglob("*") if f.is_file())
        segments.append({"index": kinds, "version": cfg.get("version"), "allocated_mb": round(size / 2**20, 1)})
    per = max(1, docs)
    return {
        "total_apparent_b_per_doc": round(sum(apparent.values()) / per, 1),
        "total_allocated_b_per_doc": round(sum(allocated.values()) / per, 1),
        "apparent_b_per_doc": {k: round(v / per, 1) for k, v in sorted(apparent.items())},
        "allocated_b_per_doc": {k: round(v / per, 1) for k, v in sorted(allocated.items())},
        "segments": segments,
    }


def show(label: str, name: str, b: dict[str, Any]) -> None:
    print(f"[{label}] {name}: {b['total_apparent_b_per_doc']:,.0f} B/doc apparent, "
          f"{b['total_allocated_b_per_doc']:,.0f} allocated; {len(b['segments'])} segments", flush=True)
    for k in b["allocated_b_per_doc"]:
        print(f"    {k:>16} {b['apparent_b_per_doc'][k]:>9,.1f} {b['allocated_b_per_doc'][k]:>9,.1f}")


def build(root: Path, docs: int, chunk: int, joint: bool = False) -> dict[str, Any]:
    """The default stack's two stores in ``root`` (``joint``: one ``QdrantEdgeHybridStore`` holding both legs, the
    text once), built through the public API; the build's seconds, the parts while still open."""
    c = synthetic_corpus(docs, 5)
    emb = PrecomputedEmbedding(c["texts"], c["vectors"])
    metas = [{"session_id": i % SESSIONS} for i in range(docs)]
    texts, ids = c["texts"], c["ids"]
    t0 = time.perf_counter()
    hybrid = QdrantEdgeHybridStore(emb, path=root / "joint") if joint else None
    dense: Any = hybrid.dense if hybrid else QdrantEdgeDenseStore(emb, path=root / "dense")
    keyword: Any = hybrid.keyword if hybrid else QdrantEdgeKeywordStore(path=root / "keyword")
    r = EnsembleRRFRetriever.from_texts(texts[:chunk], emb, metadatas=metas[:chunk], ids=ids[:chunk],
                                        dense=dense, keyword=keyword)
    for i in range(chunk, docs, chunk):
        r.add_texts(texts[i:i + chunk], metadatas=metas[i:i + chunk], ids=ids[i:i + chunk])
    index = getattr(dense, "index", None)
    while_open = {name: breakdown(root / name, docs) for name in folders(joint)}
    r.close()
    if hybrid is not None:
        hybrid.close()
    seconds = round(time.perf_counter() - t0, 1)
    text_bytes = sum(len(t.encode()) for t in texts)
    return {"build_s": seconds, "dense_index": index, "while_open": while_open,
            "text_b_per_doc": round(text_bytes / docs, 1), "emb": emb, "probe": (ids[docs // 2], texts[docs // 2])}


def folders(joint: bool) -> tuple[str, ...]:
    """The store folders a build writes."""
    return ("joint",) if joint else ("dense", "keyword")


def reopen_check(root: Path, built: dict[str, Any], joint: bool) -> dict[str, Any]:
    """Reopen the stores (as a new process would), read one document back, count."""
    pid, text = built["probe"]
    if joint:
        with QdrantEdgeHybridStore(built["emb"], path=root / "joint") as hybrid:
            got = hybrid.dense.get([pid])
            return {"count": hybrid.dense.count(), "text_reads_back": bool(got) and got[0].text == text}
    with QdrantEdgeDenseStore(built["emb"], path=root / "dense") as dense, \
            QdrantEdgeKeywordStore(path=root / "keyword") as keyword:
        got = dense.get([pid])
        return {"dense_count": dense.count(), "keyword_count": keyword.count(),
                "text_reads_back": bool(got) and got[0].text == text}


def raw_shard(folder: Path, vectors: np.ndarray, kind: str, datatype: str) -> Any:
    """A qdrant-edge shard of ``vectors`` with the store's settings of index ``kind`` (its int8 copy, rescoring)
    and float vectors stored as ``datatype`` (``Float32``, the store's, or ``Float16``), optimized."""
    import qdrant_edge as qe

    params = qe.EdgeVectorParams(size=vectors.shape[1], distance=qe.Distance.Cosine,
                                 datatype=getattr(qe.VectorStorageDatatype, datatype))
    shard = qe.EdgeShard.create(str(folder), qe.EdgeConfig(vectors=params, **index_config(qe, kind)))
    for i in range(0, len(vectors), 1024):
        shard.update(qe.UpdateOperation.upsert_points(
            [qe.Point(i + j + 1, v.tolist(), {}) for j, v in enumerate(vectors[i:i + 1024])]))
    shard.optimize()
    shard.flush()
    return shard


def float16_recall(vectors: np.ndarray, queries: np.ndarray, kind: str, name: str) -> dict[str, Any]:
    """recall@10 against the exact float32 top 10 of the store's default search (int8 scan or graph walk,
    rescored with the float vectors) on float32 and on float16 vectors; the float vectors' bytes on disk."""
    import qdrant_edge as qe

    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :TOP]
    out: dict[str, Any] = {"vectors": name, "docs": len(vectors), "queries": len(queries), "index": kind}
    for datatype in ("Float32", "Float16"):
        folder = Path(tempfile.mkdtemp(prefix="disk-parts-f16-"))
        try:
            shard = raw_shard(folder / "shard", vectors, kind, datatype)
            params = qe.SearchParams(quantization=quantization_params(qe, kind, False))
            recalls, exact_recalls = [], []
            for q, true in zip(queries, truth):
                for search_params, into in ((params, recalls), (qe.SearchParams(exact=True), exact_recalls)):
                    hits = shard.query(qe.QueryRequest(limit=TOP, query=qe.Query.Nearest(q.tolist()),
                                                       params=search_params))
                    into.append(len({int(h.id) - 1 for h in hits} & set(true.tolist())) / TOP)
            shard.close()
            floats = breakdown(folder, len(vectors))["allocated_b_per_doc"].get("float_vectors", 0.0)
            out[datatype] = {"recall@10": round(float(np.mean(recalls)), 4),
                             "recall@10_p5": round(float(np.percentile(recalls, 5)), 3),
                             "exact_recall@10": round(float(np.mean(exact_recalls)), 4),
                             "float_vectors_allocated_b_per_doc": floats}
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"[float16] {name} {kind} {datatype}: {out[datatype]}", flush=True)
    return out


def minilm_sets(cache: Path) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The cached real MiniLM vectors of CACM (3,204 documents, 52 queries) and MED (1,033, 30), where cached."""
    sets = []
    for name, docs, queries in (("cacm", 3204, 52), ("med", 1033, 30)):
        d = sorted(cache.glob(f"coll-all-MiniLM-L6-v2-{docs}-*.npy"))
        q = sorted(cache.glob(f"coll-all-MiniLM-L6-v2-{queries}-*.npy"))
        if d and q:
            sets.append((f"MiniLM {name}", np.load(d[0]), np.load(q[0])))
    return sets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--chunk", type=int, default=100_000, help="documents per from_texts / add_texts call")
    ap.add_argument("--existing", nargs="*", type=Path, help="break down these store folders instead of building")
    ap.add_argument("--label", default="current")
    ap.add_argument("--keep", type=Path, help="build here and keep the folders (default: a temporary folder)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--float16", action="store_true",
                    help="recall@10 of float16 float vectors against float32 (synthetic --docs, cached MiniLM)")
    ap.add_argument("--joint", action="store_true", help="both legs in one QdrantEdgeHybridStore (the text once)")
    ap.add_argument("--minilm-cache", type=Path, default=CACHE, help="the folder of the cached MiniLM vectors")
    args = ap.parse_args()
    entry: dict[str, Any] = {"docs": args.docs}
    if args.float16:
        c = synthetic_corpus(args.docs, 200)
        sets = [("synthetic clustered", c["vectors"], c["q_vectors"]), *minilm_sets(args.minilm_cache)]
        entry["float16"] = [float16_recall(v, q, kind, name) for name, v, q in sets for kind in ("int8", GRAPH_KIND)]
    elif args.existing:
        for folder in args.existing:
            count = _count(folder)
            entry[str(folder)] = {"docs": count, **breakdown(folder, count)}
            show(args.label, str(folder), entry[str(folder)])
    else:
        root = args.keep or Path(tempfile.mkdtemp(prefix="disk-parts-"))
        try:
            built = build(root, args.docs, args.chunk, args.joint)
            entry.update({k: v for k, v in built.items() if k not in ("emb", "probe")})
            entry["chunk"] = args.chunk
            names = folders(args.joint)
            for name in names:
                show(args.label, f"{name} (open, after the last add)", entry["while_open"][name])
                entry[name] = breakdown(root / name, args.docs)
                show(args.label, f"{name} (closed)", entry[name])
            entry["reopen"] = reopen_check(root, built, args.joint)
            for name in names:
                entry[f"{name}_after_reopen"] = breakdown(root / name, args.docs)
            both = sum(entry[f"{n}_after_reopen"]["total_allocated_b_per_doc"] for n in names)
            entry["both_allocated_b_per_doc_after_reopen"] = round(both, 1)
            print(f"[{args.label}] reopen {entry['reopen']}; both legs {both:,.0f} B/doc allocated", flush=True)
        finally:
            if args.keep is None:
                shutil.rmtree(root, ignore_errors=True)
    results = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results[args.label] = entry
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")


def _count(folder: Path) -> int:
    """The points of a store folder (opened read-only through qdrant-edge itself)."""
    import qdrant_edge as qe

    shard = qe.EdgeShard.load(str(folder / "shard"))
    try:
        return int(shard.count(qe.CountRequest(exact=True)))
    finally:
        shard.close()


if __name__ == "__main__":
    main()
