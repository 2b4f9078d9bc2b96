"""Long documents: multi-window dense vectors (MaxP) against one vector a document, on the five collections and on
a long-document set built from SciFact.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections             # once: the single-window MiniLM vectors (shared cache)
    nice .venv/bin/python benchmarks/quality/bench_multiwindow.py                 # everything -> results/multiwindow.json
    nice .venv/bin/python benchmarks/quality/bench_multiwindow.py --warm-only     # compute and cache the window vectors

What is compared (MiniLM all-MiniLM-L6-v2, 256 word pieces: 254 between [CLS] and [SEP]):
* ``single``: one vector a document (the model reads its first 254 word pieces; today's default);
* ``maxp-<w>``: ``MiniLMEmbedding.embed_windows`` windows of 254 pieces sharing ``--overlap`` (32), at most ``w``
  windows; a document scores as its best window (Qdrant's MAX_SIM with a one-row query). The first window IS the
  single vector, so short documents score the same.

Measured: the dense leg alone (exact cosine / MaxP in numpy over the cached vectors: the store's exact ranking,
ties by id; checked against ``QdrantEdgeDenseStore(max_windows=...)`` on a few queries) and the default hybrid
through the public API (``EnsembleRRFRetriever(dense=..., keyword=QdrantEdgeKeywordStore())``, what
``from_texts`` builds, ``invoke(q, top_k=10)``), nDCG@10 per query, paired bootstrap 95% intervals of MaxP -
single. Ingest: windows a document, the share of documents cut, passages/s end to end (``from_texts`` with the
real MiniLM on the first ``--ingest-docs`` SciFact documents, both layouts side by side) and the index size
(points, bytes of the edge shard directory).

The long-document set (``scifact-long4``): every SciFact document judged relevant for a test query, each
concatenated with three random unjudged documents (``random.Random(23)``) into one text of four, the judged one at
position ``group % 4`` (so three in four lie past the first window); a long text is relevant to a query with the
grade of the judged document it holds. Built here, deterministically.

Window vectors are cached under ``benchmarks/.cache/win-...npz`` (rows and counts, by a SHA-256 of the texts and
the settings); the single vectors come from ``common/beir.cached_vectors``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import MODEL_ID, Collection, cached_vectors, load_collection, minilm, read_beir
from benchmarks.common.paths import CACHE, RESULTS
from rrf_retriever import (
    EnsembleRRFRetriever,
    MiniLMEmbedding,
    QdrantEdgeDenseStore,
    QdrantEdgeKeywordStore,
)
from rrf_retriever.embeddings import BaseEmbeddingAdapter
from rrf_retriever.evaluation import doc_text
from rrf_retriever.tuning import metric_value
from rrf_retriever.tuning.statistics import paired_bootstrap_ci

CAP = 16  # windows cached per document at most; any smaller cap is a prefix of them
COLLECTIONS = ("scifact-long4", "scifact", "arguana", "med", "cacm", "npl")


# ---- window vectors, cached ----------------------------------------------------------------------------
def _win_key(texts: Sequence[str], overlap: int) -> Path:
    digest = hashlib.sha256()
    for text in texts:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return CACHE / f"win-{MODEL_ID}-{len(texts)}-{digest.hexdigest()[:24]}-cap{CAP}-ov{overlap}.npz"


def cached_tails(texts: Sequence[str], overlap: int) -> tuple[np.ndarray, np.ndarray]:
    """The windows after the first of every text (rows, float32) and how many each text has (counts)."""
    target = _win_key(texts, overlap)
    if target.is_file():
        data = np.load(target)
        return data["rows"], data["counts"]
    model: MiniLMEmbedding = minilm()
    rows: list[np.ndarray] = []
    counts: list[int] = []
    step = 2000
    for start in range(0, len(texts), step):
        for tails in model.embed_windows(list(texts[start : start + step]), max_windows=CAP, overlap=overlap,
                                         skip_first=True):
            rows.append(tails)
            counts.append(len(tails))
        print(f"  windows: {start + step}/{len(texts)} texts", flush=True)
    all_rows = np.concatenate(rows) if rows else np.zeros((0, 384), np.float32)
    tmp = target.with_suffix(".tmp.npz")
    np.savez(tmp, rows=all_rows.astype(np.float32), counts=np.asarray(counts, dtype=np.int32))
    tmp.replace(target)
    return all_rows, np.asarray(counts, dtype=np.int32)


# ---- the long-document set -------------------------------------------------------------------------------
def long4() -> Collection:
    """SciFact's judged documents, each inside a text of four (see the module docstring)."""
    ds = read_beir("scifact", split="test")
    query_ids = list(ds.queries)
    judged = sorted({d for q in query_ids for d, g in ds.qrels[q].items() if g > 0})
    judged_set = set(judged)
    others = sorted(d for d in ds.corpus if d not in judged_set)
    rng = random.Random(23)
    rng.shuffle(judged)
    fillers = rng.sample(others, 3 * len(judged))
    doc_ids, doc_texts, holds = [], [], {}
    for g, doc in enumerate(judged):
        parts = fillers[3 * g : 3 * g + 3]
        parts.insert(g % 4, doc)
        long_id = f"long-{g}"
        doc_ids.append(long_id)
        doc_texts.append("\n\n".join(doc_text(ds.corpus[p]) for p in parts))
        holds[doc] = long_id
    qrels = {q: {holds[d]: g for d, g in ds.qrels[q].items() if d in holds} for q in query_ids}
    query_texts = [ds.queries[q] for q in query_ids]
    return Collection("scifact-long4", doc_ids, doc_texts, [""] * len(doc_ids), cached_vectors(doc_texts),
                      query_ids, query_texts, cached_vectors(query_texts), qrels,
                      extra={"judged_position": {h: judged.index(d) % 4 for d, h in holds.items()}})


def load(name: str) -> Collection:
    return long4() if name == "scifact-long4" else load_collection(name)


# ---- the dense leg offline ---------------------------------------------------------------------------------
def owners(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(counts)), counts)


def dense_rankings(c: Collection, rows: np.ndarray, counts: np.ndarray, cap: int, depth: int = 100
                   ) -> list[list[str]]:
    """Each query's top ``depth`` ids: cosine of the single vectors, or their max with the first ``cap - 1``
    tail windows (ties by id, as the stores)."""
    keep = np.ones(len(rows), dtype=bool)
    if cap < CAP:
        within = np.concatenate([np.arange(n) for n in counts]) if len(rows) else np.zeros(0, int)
        keep = within < cap - 1
    tail_rows, tail_owner = rows[keep], owners(counts)[keep]
    ids = np.asarray(c.doc_ids)
    order_by_id = np.argsort(ids, kind="stable")
    rank_of_id = np.empty(len(ids), dtype=np.int64)
    rank_of_id[order_by_id] = np.arange(len(ids))
    out = []
    for qi, q in enumerate(c.query_vectors):
        scores = (c.doc_vectors @ q).astype(np.float32)
        if cap > 1 and len(tail_rows):
            np.maximum.at(scores, tail_owner, (tail_rows @ q).astype(np.float32))
        if c.exclude_self:
            scores[ids == c.query_ids[qi]] = -np.inf
        top = np.lexsort((rank_of_id, -scores))[:depth]
        out.append([str(ids[i]) for i in top])
    return out


def per_query_ndcg(c: Collection, ranked: list[list[str]]) -> list[float]:
    out = []
    for qid, lst in zip(c.query_ids, ranked):
        lst = [d for d in lst if not (c.exclude_self and d == qid)]
        out.append(metric_value("ndcg", lst, c.qrels[qid], 10))
    return out


def compare(a: list[float], b: list[float]) -> dict[str, Any]:
    diffs = [y - x for x, y in zip(a, b)]
    lo, hi = paired_bootstrap_ci(diffs, resamples=5000)
    return {"single": round(statistics.fmean(a), 4), "maxp": round(statistics.fmean(b), 4),
            "delta": round(statistics.fmean(diffs), 4), "ci95": [round(lo, 4), round(hi, 4)],
            "wins": sum(d > 0 for d in diffs), "losses": sum(d < 0 for d in diffs)}


# ---- through the public API --------------------------------------------------------------------------------
class CachedWindows(BaseEmbeddingAdapter):
    """The cached vectors as an embedding model: documents and queries by text, windows by text (an
    ``embed_windows`` as MiniLMEmbedding's, answering from the cache)."""

    model_id = MODEL_ID

    def __init__(self, c: Collection, rows: np.ndarray, counts: np.ndarray) -> None:
        super().__init__(batch_size=4096)
        self.dimension = 384
        self.vectors = {t: v for t, v in zip(c.doc_texts, c.doc_vectors)}
        self.vectors.update(zip(c.query_texts, c.query_vectors))
        starts = np.concatenate([[0], np.cumsum(counts)])
        self.tails = {t: rows[starts[i] : starts[i + 1]] for i, t in enumerate(c.doc_texts)}

    def _embed_batch(self, texts: list[str]) -> Any:
        return np.stack([self.vectors[t] for t in texts])

    def embed_windows(self, texts: Sequence[str], *, max_windows: int, overlap: int, skip_first: bool) -> list[Any]:
        assert skip_first and max_windows <= CAP
        return [self.tails[t][: max_windows - 1] for t in texts]


def hybrid_and_store_check(c: Collection, rows: np.ndarray, counts: np.ndarray, cap: int,
                           offline: list[list[str]]) -> dict[str, Any]:
    """The default hybrid with one vector a document and with ``cap`` windows (one keyword store for both);
    the MaxP store's dense ranking against the offline one; each store's size."""
    emb = CachedWindows(c, rows, counts)
    out: dict[str, Any] = {}
    root = Path(tempfile.mkdtemp(prefix="rrf-mw-"))
    try:
        keyword = QdrantEdgeKeywordStore(path=root / "kw")
        keyword.add(c.doc_ids, c.doc_texts)
        runs = {}
        for label, windows in (("single", None), ("maxp", cap)):
            dense = QdrantEdgeDenseStore(emb, root / label, max_windows=windows)
            t0 = time.perf_counter()
            dense.add(c.doc_ids, c.doc_texts, vectors=c.doc_vectors)
            dense.flush()
            out[f"{label}_write_s"] = round(time.perf_counter() - t0, 2)
            out[f"{label}_points"] = dense.count()
            files = [f for f in (root / label).rglob("*") if f.is_file()]
            out[f"{label}_bytes_allocated"] = sum(f.stat().st_blocks * 512 for f in files)  # files are sparse
            out[f"{label}_vectors"] = int(len(c.doc_ids) if windows is None else np.minimum(counts + 1, cap).sum())
            out[f"{label}_vector_mb"] = round(out[f"{label}_vectors"] * 384 * 4 / 1e6, 2)  # float32, before int8
            if label == "maxp":
                same = 0
                for qi in range(min(20, len(c.query_ids))):
                    excl = c.excl(c.query_ids[qi])
                    got = [h.id for h in dense.search(c.query_vectors[qi], 10, exclude_ids=excl)]
                    same += got == offline[qi][:10]
                out["store_equals_offline_top10"] = f"{same}/{min(20, len(c.query_ids))}"
            retriever = EnsembleRRFRetriever(dense=dense, keyword=keyword)
            t0 = time.perf_counter()
            run = []
            for qid, text in zip(c.query_ids, c.query_texts):
                extra = {"exclude_ids": [qid]} if c.exclude_self else {}
                run.append([d.id for d in retriever.invoke(text, top_k=10, **extra)])
            out[f"{label}_query_ms"] = round(1000 * (time.perf_counter() - t0) / len(c.query_ids), 2)
            runs[label] = per_query_ndcg(c, run)
            dense.close()
        keyword.close()
        out["hybrid"] = compare(runs["single"], runs["maxp"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def ingest_cost(n_docs: int, cap: int, overlap: int) -> dict[str, Any]:
    """``from_texts`` with the real MiniLM on the first ``n_docs`` SciFact documents, one vector a document vs
    ``cap`` windows, alternated twice; medians."""
    ds = read_beir("scifact", split="test")
    ids = list(ds.corpus)[:n_docs]
    texts = [doc_text(ds.corpus[i]) for i in ids]
    model = MiniLMEmbedding(precision="fp32")
    times: dict[str, list[float]] = {"single": [], "maxp": []}
    for _ in range(2):
        for label, windows in (("single", None), ("maxp", cap)):
            t0 = time.perf_counter()
            dense = QdrantEdgeDenseStore(model, max_windows=windows, window_overlap=overlap if windows else None)
            with EnsembleRRFRetriever.from_texts(texts, model, ids=ids, dense=dense):
                times[label].append(time.perf_counter() - t0)
    single, maxp = statistics.median(times["single"]), statistics.median(times["maxp"])
    return {"docs": n_docs, "single_passages_per_s": round(n_docs / single, 1),
            "maxp_passages_per_s": round(n_docs / maxp, 1), "maxp_time_ratio": round(maxp / single, 2),
            "runs_s": {k: [round(x, 1) for x in v] for k, v in times.items()}}


def tables(results: dict[str, Any], cap: int) -> str:
    """The Markdown tables of RESULTS.md from the results file."""
    rows = ["| collection | docs | cut | windows/doc | dense single | dense MaxP | delta [95% CI] | hybrid single "
            "| hybrid MaxP | delta [95% CI] | vectors (MB float32) | query ms single / MaxP |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in results["collections"].items():
        d, h = r["dense"][f"maxp-{cap}"], r["hybrid"]
        rows.append(
            f"| {key} | {r['docs']} | {r['docs_cut_pct']}% | {r['windows_per_doc_mean']} | {d['single']:.4f} | "
            f"{d['maxp']:.4f} | {d['delta']:+.4f} [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}] | {h['single']:.4f} | "
            f"{h['maxp']:.4f} | {h['delta']:+.4f} [{h['ci95'][0]:+.4f}, {h['ci95'][1]:+.4f}] | "
            f"{r['single_vector_mb']} -> {r['maxp_vector_mb']} | {r['single_query_ms']} / {r['maxp_query_ms']} |")
    caps = sorted({int(k.split("-")[1]) for r in results["collections"].values() for k in r["dense"]})
    rows += ["", "| collection | " + " | ".join(f"dense MaxP-{c} (delta)" for c in caps) + " |",
             "|---|" + "---|" * len(caps)]
    for key, r in results["collections"].items():
        cells = [f"{r['dense'][f'maxp-{c}']['maxp']:.4f} ({r['dense'][f'maxp-{c}']['delta']:+.4f})" for c in caps]
        rows.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", nargs="*", default=list(COLLECTIONS))
    parser.add_argument("--overlap", type=int, default=32)
    parser.add_argument("--caps", type=int, nargs="*", default=[2, 4, 8, 16])
    parser.add_argument("--cap", type=int, default=8, help="windows of the hybrid and the store check")
    parser.add_argument("--ingest-docs", type=int, default=200)
    parser.add_argument("--warm-only", action="store_true")
    parser.add_argument("--tables", action="store_true", help="print the tables of the results file and stop")
    parser.add_argument("--out", default="multiwindow.json")
    args = parser.parse_args()
    out_file = RESULTS / args.out
    results: dict[str, Any] = json.loads(out_file.read_text()) if out_file.is_file() else {}
    results.setdefault("collections", {})
    if args.tables:
        print(tables(results, args.cap))
        return
    for name in args.collections:
        c = load(name)
        t0 = time.perf_counter()
        rows, counts = cached_tails(c.doc_texts, args.overlap)
        print(name, f"windows ready in {time.perf_counter() - t0:.0f}s", flush=True)
        if args.warm_only:
            continue
        windows = np.minimum(counts + 1, args.cap)
        r: dict[str, Any] = {
            "docs": len(c.doc_ids), "queries": len(c.query_ids), "overlap": args.overlap,
            "docs_cut_pct": round(100 * float((counts > 0).mean()), 1),
            "windows_per_doc_mean": round(float(windows.mean()), 3),
            "windows_per_doc_max": int(windows.max()),
            "windows_per_doc_uncapped_mean": round(float((counts + 1).mean()), 3),
        }
        single_rank = dense_rankings(c, rows, counts, 1)
        single = per_query_ndcg(c, single_rank)
        r["dense"] = {}
        for cap in args.caps:
            ranked = dense_rankings(c, rows, counts, cap)
            r["dense"][f"maxp-{cap}"] = compare(single, per_query_ndcg(c, ranked))
            if cap == args.cap:
                offline = ranked
        r.update(hybrid_and_store_check(c, rows, counts, args.cap, offline))
        results["collections"][f"{name}@ov{args.overlap}"] = r
        print(name, json.dumps(r), flush=True)
        out_file.write_text(json.dumps(results, indent=2) + "\n")
    if not args.warm_only and args.ingest_docs:
        results["ingest"] = ingest_cost(args.ingest_docs, args.cap, args.overlap)
        print("ingest", json.dumps(results["ingest"]), flush=True)
    if not args.warm_only:
        results["load"] = Path("/proc/loadavg").read_text().split()[:3]
        out_file.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
