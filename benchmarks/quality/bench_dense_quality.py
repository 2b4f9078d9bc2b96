"""Dense-only retrieval quality with MiniLM on SciFact and ArguAna, through both Qdrant stores.

Reproduces the published all-MiniLM-L6-v2 figures (nDCG@10 0.6451 SciFact, 0.5017 ArguAna; MTEB) to prove
the embedder and the stores. Documents are ``title + "\\n" + text`` (:func:`rrf_retriever.evaluation.doc_text`);
ArguAna drops a retrieved document whose id equals the query id (as every published figure does).
Vectors are cached in ``benchmarks/.cache/`` (keyed by model and content).

Usage::

    .venv/bin/python benchmarks/quality/bench_dense_quality.py [--datasets scifact arguana] [--stores edge qdrant]

Writes ``benchmarks/results/dense_quality.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.beir import read_beir
from benchmarks.common.paths import CACHE, RESULTS
from rrf_retriever.embeddings import HashingEmbedding, MiniLMEmbedding, cached_embed_documents
from rrf_retriever.evaluation import doc_text, evaluate
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

PUBLISHED = {"scifact": {"ndcg@10": 0.6451, "recall@100": 0.925}, "arguana": {"ndcg@10": 0.5017, "recall@100": 0.9772}}
DEPTH = 100


def run_dataset(name: str, stores: list[str], model: MiniLMEmbedding) -> dict[str, object]:
    ds = read_beir(name)
    doc_ids = list(ds.corpus)
    t0 = time.perf_counter()
    doc_vectors = cached_embed_documents(model, [doc_text(ds.corpus[d]) for d in doc_ids], CACHE)
    query_ids = list(ds.queries)
    query_vectors = cached_embed_documents(model, [ds.queries[q] for q in query_ids], CACHE)
    embed_seconds = time.perf_counter() - t0
    out: dict[str, object] = {"docs": len(doc_ids), "queries": len(query_ids), "embed_or_load_s": round(embed_seconds, 1)}
    for kind in stores:
        # The vectors are given, so the store's own embedding is never called: a light placeholder will do.
        placeholder = HashingEmbedding(dim=doc_vectors.shape[1])
        with tempfile.TemporaryDirectory() as tmp:
            store = (
                QdrantEdgeDenseStore(placeholder, path=Path(tmp) / "edge", exact=True)
                if kind == "edge"
                else QdrantDenseStore(placeholder)
            )
            texts = [""] * len(doc_ids)  # text is not needed for ranking; keeps the payload small
            store.add(doc_ids, texts, vectors=doc_vectors)
            depth = DEPTH + 1  # ArguAna: one slot may go to the query itself
            t1 = time.perf_counter()
            run = {
                qid: {h.id: h.score for h in store.search(vec, depth)}
                for qid, vec in zip(query_ids, query_vectors.tolist())
            }
            search_seconds = time.perf_counter() - t1
            store.close()
        metrics = evaluate(run, ds.qrels, ("ndcg@10", "recall@100", "mrr@10"), ignore_identical_ids=True)
        out[kind] = {
            **{k: round(float(v), 4) for k, v in metrics.items()},
            "ms_per_query": round(1000 * search_seconds / len(query_ids), 2),
        }
        ndcg = float(metrics["ndcg@10"])
        delta = ndcg - PUBLISHED[name]["ndcg@10"]
        print(f"{name:8s} {kind:7s} nDCG@10 {ndcg:.4f} (published {PUBLISHED[name]['ndcg@10']:.4f}, "
              f"delta {delta:+.4f})  R@100 {float(metrics['recall@100']):.4f}  MRR@10 {float(metrics['mrr@10']):.4f}")
    out["published"] = PUBLISHED[name]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["scifact", "arguana"])
    parser.add_argument("--stores", nargs="+", default=["edge", "qdrant"], choices=["edge", "qdrant"])
    args = parser.parse_args()
    model = MiniLMEmbedding(show_progress=True, precision="fp32")
    target = RESULTS / "dense_quality.json"
    results = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else {}  # keep other datasets
    for name in args.datasets:
        results[name] = run_dataset(name, args.stores, model)
        RESULTS.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
