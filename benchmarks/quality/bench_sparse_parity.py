"""BM25 as Qdrant sparse vectors vs exact BM25: top-10 agreement with bm25s and nDCG@10 beside FTS5 and bm25s.

Run: .venv/bin/python benchmarks/quality/bench_sparse_parity.py [--datasets scifact med cacm npl arguana] [--local med scifact]

Every keyword store uses the same analyzer (Lucene stopwords, Porter stems, conversational words dropped from
queries). Per collection (title + text as one string, each store fetches 100, ArguAna's query document excluded
inside the store):

* ``fts5``, ``bm25s``: the reference stores (FTS5KeywordStore, BM25KeywordStore);
* ``edge``: QdrantEdgeKeywordStore, the corpus written in one ``add`` (avgdl = the corpus mean: exact BM25 up to
  hashed term ids and float32 values);
* ``edge 100/add``: written 100 documents per ``add`` in corpus order (the incremental case): avgdl starts at the
  mean of the first 100 documents and is re-frozen as the documents written double (``auto_reweight``, default);
  ``edge 100/add frozen``: the same with ``auto_reweight=False``, avgdl stays the first 100 documents' mean;
* ``edge avgdl x0.5`` / ``x2``: a deliberately wrong avgdl (half / twice the corpus mean);
* ``local``: QdrantKeywordStore on qdrant-client local mode (``--local`` collections only: it scores sparse vectors
  in Python, ~300 ms a query at 5k documents).

Reports nDCG@10, Recall@100, the mean top-10 overlap with bm25s (|A ∩ B| / max(|A|, |B|), 1 when both are empty),
the share of queries whose top-10 list is identical, ms per query, and the hash collisions in the vocabulary.
Two more measurements on SciFact: the IDF of live points vs Qdrant's index statistics after deleting 30 % of the
corpus, and whether an edge search lets another thread run (GIL). Writes benchmarks/results/sparse_parity.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import random
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.beir import read_beir
from benchmarks.common.paths import RESULTS
from rrf_retriever.analysis.analyzer import default_analyzer
from rrf_retriever.evaluation import doc_text, evaluate
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore, QdrantKeywordStore
from rrf_retriever.stores.qdrant.sparse_values import term_id

OUT = RESULTS / "sparse_parity.json"
DATASETS = ["scifact", "med", "cacm", "npl", "arguana"]
FETCH = 100


def add_all(store: Any, ids: list[str], texts: list[str], batch: int | None = None) -> float:
    t0 = time.perf_counter()
    step = batch or len(ids)
    for start in range(0, len(ids), step):
        store.add(ids[start : start + step], texts[start : start + step])
    if isinstance(store, FTS5KeywordStore):
        store.optimize()
    return time.perf_counter() - t0


def run_queries(store: Any, queries: dict[str, str], exclude_self: bool) -> tuple[dict[str, list[str]], float]:
    ranked: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    for qid, text in queries.items():
        hits = store.search(text, FETCH, exclude_ids=[qid] if exclude_self else None)
        ranked[qid] = [h.id for h in hits]
    return ranked, (time.perf_counter() - t0) * 1000 / max(1, len(queries))


def overlap_at_10(a: list[str], b: list[str]) -> float:
    top_a, top_b = set(a[:10]), set(b[:10])
    if not top_a and not top_b:
        return 1.0
    return len(top_a & top_b) / max(len(top_a), len(top_b))


def collisions(ids_terms: set[str]) -> dict[str, int]:
    by_id: dict[int, int] = defaultdict(int)
    for term in ids_terms:
        by_id[term_id(term)] += 1
    return {"vocabulary": len(ids_terms), "colliding_ids": sum(1 for n in by_id.values() if n > 1),
            "expected_pairs": round(len(ids_terms) ** 2 / 2**32, 2)}


def one_dataset(name: str, with_local: bool) -> dict[str, Any]:
    ds = read_beir(name)
    ids = list(ds.corpus)
    texts = [doc_text(ds.corpus[i]) for i in ids]
    exclude_self = name == "arguana"
    analyzer = default_analyzer()
    vocabulary = {t for text in texts for t in analyzer.analyze(text)}
    vocabulary |= {t for q in ds.queries.values() for t in analyzer.analyze_query(q)}
    mean_len = sum(len(analyzer.analyze(t)) for t in texts) / len(texts)
    first_100 = sum(len(analyzer.analyze(t)) for t in texts[:100]) / min(100, len(texts))

    systems: dict[str, tuple[Any, int | None]] = {
        "fts5": (FTS5KeywordStore(), None),
        "bm25s": (BM25KeywordStore(), None),
        "edge": (QdrantEdgeKeywordStore(), None),
        "edge 100/add": (QdrantEdgeKeywordStore(), 100),
        "edge 100/add frozen": (QdrantEdgeKeywordStore(auto_reweight=False), 100),
        "edge avgdl x0.5": (QdrantEdgeKeywordStore(avgdl=mean_len * 0.5), None),
        "edge avgdl x2": (QdrantEdgeKeywordStore(avgdl=mean_len * 2), None),
    }
    if with_local:
        systems["local"] = (QdrantKeywordStore(), None)
    rows: dict[str, dict[str, Any]] = {}
    ranked_by: dict[str, dict[str, list[str]]] = {}
    for label, (store, batch) in systems.items():
        build_s = add_all(store, ids, texts, batch)
        ranked, ms = run_queries(store, ds.queries, exclude_self)
        ranked_by[label] = ranked
        run = {qid: {d: float(FETCH - r) for r, d in enumerate(docs)} for qid, docs in ranked.items()}
        metrics = evaluate(run, ds.qrels, ("ndcg@10", "recall@100"))
        rows[label] = {"ndcg@10": round(metrics["ndcg@10"], 4), "recall@100": round(metrics["recall@100"], 4),
                       "build_s": round(build_s, 2), "ms_per_query": round(ms, 3)}
        if hasattr(store, "avgdl"):
            rows[label]["avgdl"] = round(store.avgdl, 2)
        store.close()
        print(f"  {name:8s} {label:16s} nDCG@10 {rows[label]['ndcg@10']:.4f}  {ms:8.2f} ms/q", flush=True)
    reference = ranked_by["bm25s"]
    for label, ranked in ranked_by.items():
        overlaps = [overlap_at_10(ranked[q], reference[q]) for q in ds.queries]
        identical = [ranked[q][:10] == reference[q][:10] for q in ds.queries]
        rows[label]["overlap@10_vs_bm25s"] = round(sum(overlaps) / len(overlaps), 4)
        rows[label]["identical_top10"] = round(sum(identical) / len(identical), 4)
        rows[label]["ndcg@10_minus_fts5"] = round(rows[label]["ndcg@10"] - rows["fts5"]["ndcg@10"], 4)
    return {"documents": len(ids), "queries": len(ds.queries), "mean_length": round(mean_len, 2),
            "first_100_mean_length": round(first_100, 2), "collisions": collisions(vocabulary), "systems": rows}


def deletes_experiment() -> dict[str, Any]:
    """Delete 30 % of SciFact: top-10 overlap with bm25s over the rest, IDF of live points vs index statistics."""
    ds = read_beir("scifact")
    ids = list(ds.corpus)
    texts = [doc_text(ds.corpus[i]) for i in ids]
    gone = set(random.Random(0).sample(ids, k=int(0.3 * len(ids))))
    kept = [(i, t) for i, t in zip(ids, texts) if i not in gone]
    analyzer = default_analyzer()
    kept_avgdl = sum(len(analyzer.analyze(t)) for _, t in kept) / len(kept)
    reference = BM25KeywordStore()
    reference.add([i for i, _ in kept], [t for _, t in kept])
    ref_ranked, _ = run_queries(reference, ds.queries, False)
    out: dict[str, Any] = {"deleted": len(gone), "kept": len(kept)}
    for label, live in (("live_idf", True), ("index_idf (live_idf=False)", False)):
        store = QdrantEdgeKeywordStore(avgdl=kept_avgdl, live_idf=live)  # same avgdl as bm25s: only IDF differs
        store.add(ids, texts)
        store.delete(sorted(gone))
        ranked, ms = run_queries(store, ds.queries, False)
        overlaps = [overlap_at_10(ranked[q], ref_ranked[q]) for q in ds.queries]
        identical = [ranked[q][:10] == ref_ranked[q][:10] for q in ds.queries]
        out[label] = {"overlap@10_vs_bm25s": round(sum(overlaps) / len(overlaps), 4),
                      "identical_top10": round(sum(identical) / len(identical), 4), "ms_per_query": round(ms, 3)}
        store.close()
        print(f"  deletes  {label:28s} overlap@10 {out[label]['overlap@10_vs_bm25s']:.4f}", flush=True)
    return out


def gil_experiment() -> dict[str, Any]:
    """Edge sparse searches alone, SHA-256 hashing of 1 MB blocks alone (hashlib releases the GIL; sized to take as
    long), and both in two threads (as benchmarks/speed/bench_leg_overlap.py does for the dense edge store). Overlap 1:
    the search lets the other thread run; 0: it keeps the GIL. Median of 3."""
    ds = read_beir("scifact")
    ids = list(ds.corpus)
    store = QdrantEdgeKeywordStore()
    store.add(ids, [doc_text(ds.corpus[i]) for i in ids])
    # The backend's search primitive: the engine call with only its request built around it (no scope, no hits).
    from rrf_retriever.stores.qdrant.backend import SparseQuery
    from rrf_retriever.stores.qdrant.sparse_values import query_vector

    backend = store.backend
    requests = []
    for q in ds.queries.values():
        indices, values = query_vector(store.analyzer.analyze_query(q))
        if indices:
            requests.append(SparseQuery(indices, values, FETCH, live_idf=False))

    def timed(fn: Any) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def search() -> None:
        for request in requests:
            backend.search(None, request)

    block = b"x" * 1_000_000
    per_hash = timed(lambda: [hashlib.sha256(block).digest() for _ in range(50)]) / 50
    n_hashes = max(10, int(timed(search) / per_hash))

    def hashing() -> None:
        for _ in range(n_hashes):
            hashlib.sha256(block).digest()

    def both() -> None:
        thread = threading.Thread(target=search)
        thread.start()
        hashing()
        thread.join()

    reps = []
    for _ in range(3):
        alone, other, together = timed(search), timed(hashing), timed(both)
        reps.append({"search_s": round(alone, 3), "hashing_s": round(other, 3), "together_s": round(together, 3),
                     "overlap": round((alone + other - together) / min(alone, other), 2)})
    store.close()
    result = sorted(reps, key=lambda r: r["overlap"])[1] | {"searches": len(requests)}
    print(f"  GIL: {result}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--local", nargs="*", default=["med", "cacm"],
                        help="collections also run on qdrant-client local mode (slow: ~300 ms a query at 5k documents)")
    parser.add_argument("--skip-extra", action="store_true", help="skip the deletes and GIL measurements")
    args = parser.parse_args()
    t0 = time.perf_counter()
    results: dict[str, Any] = {"machine": {"python": platform.python_version(), "platform": platform.platform()},
                               "datasets": {}}
    for name in args.datasets:
        results["datasets"][name] = one_dataset(name, name in args.local)
    if not args.skip_extra:
        results["deletes_scifact"] = deletes_experiment()
        results["gil_edge_scifact"] = gil_experiment()
    results["total_s"] = round(time.perf_counter() - t0, 1)

    labels: list[str] = []
    for data in results["datasets"].values():
        labels += [label for label in data["systems"] if label not in labels]
    print(f"\n{'nDCG@10 (overlap@10 vs bm25s)':32s}" + "".join(f"{n:>20s}" for n in results["datasets"]))
    for label in labels:
        cells = []
        for data in results["datasets"].values():
            row = data["systems"].get(label)
            cells.append(f"{row['ndcg@10']:.4f} ({row['overlap@10_vs_bm25s']:.3f})" if row else "-")
        print(f"{label:32s}" + "".join(f"{c:>20s}" for c in cells))
    print(f"{'hash collisions / vocabulary':32s}" + "".join(
        f"{d['collisions']['colliding_ids']:>9d} / {d['collisions']['vocabulary']:<8d}"
        for d in results["datasets"].values()))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    if OUT.exists() and set(args.datasets) != set(DATASETS):  # a partial run keeps the other collections
        previous = json.loads(OUT.read_text())
        results["datasets"] = {**previous.get("datasets", {}), **results["datasets"]}
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {OUT.relative_to(ROOT)} in {results['total_s']} s")


if __name__ == "__main__":
    main()
