"""Hybrid quality side by side with LangChain and LlamaIndex: nDCG@10, Recall@100, MRR@10 (ranx), BEIR test split.

Usage:
    .venv/bin/python benchmarks/quality/bench_hybrid_quality.py                      # SciFact + ArguAna, every system
    .venv/bin/python benchmarks/quality/bench_hybrid_quality.py --datasets scifact --anchor-queries 0   # all queries

Systems, all over the SAME cached MiniLM vectors (``benchmarks/common/beir.py``):

* dense only (our QdrantDenseStore, qdrant-client ``:memory:``), FTS5 alone (default: title field; and flat),
  bm25s alone;
* our hybrid with its DEFAULT settings: ``EnsembleRRFRetriever.from_texts(texts, embedding, metadatas=[{"title":
  ...}], ids=ids)`` (FTS5 + qdrant-edge; each text is title + body, as every system gets it, and the title is also
  in the metadata, as a LangChain ``Document`` from most loaders has it), asked ``top_k=100`` so Recall@100 is
  defined (``fetch_k`` default = ``2 * top_k``); the same without titles in the metadata, with
  ``keyword="bm25"``, and with the previous defaults (flat FTS5, weights 1/1, ``rrf_k=60``);
* the LangChain and LlamaIndex anchors of ``benchmarks/common/anchors.py`` (each member fetching 100).

ArguAna: our stores drop the query's own document inside the store (``exclude_ids=[query_id]``); the anchors
cannot, so their self-match is removed before scoring (BEIR ``ignore_identical_ids``; ranx evaluation does it for
every system). LangChain's rank_bm25 takes ~1 s per long ArguAna query, so on ArguAna every system is ALSO scored
on a fixed subset (``--anchor-queries``, default 300, sampled with seed 0, same subset for every system) and the
anchors only there; ``--anchor-queries 0`` runs the anchors on every query.

Writes ``benchmarks/results/hybrid_quality.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.beir import Bundle, load_bundle
from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from rrf_retriever.evaluation import evaluate
from rrf_retriever.retriever import EnsembleRRFRetriever
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore

DEPTH = 100
Search = Callable[[str, str, Any], list[str]]  # (query id, text, vector) -> doc ids, best first


OURS_DEFAULT = "ours: hybrid defaults (FTS5 + qdrant-edge)"


def build_systems(b: Bundle, emb: PrecomputedEmbedding, with_anchors: bool) -> dict[str, tuple[Search, float]]:
    """name -> (search function, build seconds)."""
    excl: Callable[[str], list[str] | None] = (lambda q: [q]) if b.exclude_self else (lambda q: None)
    systems: dict[str, tuple[Search, float]] = {}

    t0 = time.perf_counter()
    dense = QdrantDenseStore(emb)
    dense.add(b.doc_ids, b.doc_texts, vectors=b.doc_vectors)
    systems["dense only (MiniLM, Qdrant)"] = (
        lambda q, t, v: [h.id for h in dense.search(v, DEPTH, exclude_ids=excl(q))], time.perf_counter() - t0
    )
    titles = [{"title": b.ds.corpus[i]["title"]} for i in b.doc_ids]
    keyword_alone: list[tuple[str, Callable[[], Any]]] = [
        ("FTS5 alone (default: title field x2)", FTS5KeywordStore),
        ("FTS5 alone, flat (no title field)", lambda: FTS5KeywordStore(fields=("text",))),
        ("bm25s alone", BM25KeywordStore),
    ]
    for name, factory in keyword_alone:
        t0 = time.perf_counter()
        store = factory()
        store.add(b.doc_ids, b.doc_texts, titles)
        systems[name] = (
            lambda q, t, v, s=store: [h.id for h in s.search(t, DEPTH, exclude_ids=excl(q))],
            time.perf_counter() - t0,
        )
    ours: list[tuple[str, list[dict[str, Any]] | None, dict[str, Any]]] = [
        (OURS_DEFAULT, titles, {}),
        ("ours: hybrid defaults, no titles in the metadata", None, {}),
        ("ours: hybrid, keyword=bm25", titles, {"keyword": "bm25"}),
        ("ours: previous defaults (flat FTS5, weights 1/1, rrf_k=60)", None,
         {"keyword": FTS5KeywordStore(fields=("text",)), "keyword_weight": 1.0, "rrf_k": 60}),
    ]
    for name, metas, options in ours:
        t0 = time.perf_counter()
        retriever = EnsembleRRFRetriever.from_texts(b.doc_texts, emb, metas, ids=b.doc_ids, **options)
        systems[name] = (
            lambda q, t, v, r=retriever: [h.id for h in r.search(t, top_k=DEPTH, exclude_ids=excl(q)).hits],
            time.perf_counter() - t0,
        )
    if with_anchors:
        from benchmarks.common.anchors import LangChainAnchor, LlamaIndexAnchor

        t0 = time.perf_counter()
        lc = LangChainAnchor(b.doc_ids, b.doc_texts, emb, depth=DEPTH)
        systems["LangChain EnsembleRetriever (BM25Retriever + Qdrant, 0.5/0.5)"] = (
            lambda q, t, v: lc.search(t)[:DEPTH], time.perf_counter() - t0
        )
        t0 = time.perf_counter()
        li = LlamaIndexAnchor(b.doc_ids, b.doc_texts, b.doc_vectors, emb, depth=DEPTH)
        systems["LlamaIndex QueryFusionRetriever (BM25 + vector, RRF)"] = (
            lambda q, t, v: li.search(t)[:DEPTH], time.perf_counter() - t0
        )
    return systems


def score(search: Search, b: Bundle, indices: list[int]) -> tuple[dict[str, float], float]:
    run: dict[str, dict[str, float]] = {}
    t0 = time.perf_counter()
    for i in indices:
        qid = b.query_ids[i]
        ids = search(qid, b.query_texts[i], b.query_vectors[i])
        run[qid] = {d: float(len(ids) - r) for r, d in enumerate(ids)}
    ms = 1000 * (time.perf_counter() - t0) / max(1, len(indices))
    qrels = {b.query_ids[i]: b.ds.qrels[b.query_ids[i]] for i in indices}
    return {k: round(v, 4) for k, v in evaluate(run, qrels, ignore_identical_ids=True).items()}, round(ms, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["scifact", "arguana"])
    parser.add_argument("--anchor-queries", type=int, default=300,
                        help="ArguAna: anchors on this fixed random subset (seed 0); 0 = every query")
    parser.add_argument("--no-anchors", action="store_true")
    args = parser.parse_args()
    out: dict[str, Any] = {"depth": DEPTH, "datasets": {}}
    for name in args.datasets:
        b = load_bundle(name, "test")
        emb = PrecomputedEmbedding(b.doc_texts, b.doc_vectors)
        emb.add(b.query_texts, b.query_vectors)
        everything = list(range(len(b.query_ids)))
        subset = everything
        if name == "arguana" and 0 < args.anchor_queries < len(everything):
            subset = sorted(random.Random(0).sample(everything, args.anchor_queries))
        systems = build_systems(b, emb, not args.no_anchors)
        rows = []
        for sys_name, (search, build_s) in systems.items():
            anchor = sys_name.startswith(("LangChain", "LlamaIndex"))
            row: dict[str, Any] = {"system": sys_name, "build_s": round(build_s, 2)}
            if subset is not everything:
                row["subset"], row["subset_ms_per_query"] = score(search, b, subset)
            if not anchor or subset is everything:
                row["all"], row["ms_per_query"] = score(search, b, everything)
            rows.append(row)
            full = row.get("all") or {}
            sub = row.get("subset") or {}
            print(f"{name:8s} {sys_name:62s} all: " + " ".join(f"{k}={v:.4f}" for k, v in full.items())
                  + ("  subset: " + " ".join(f"{k}={v:.4f}" for k, v in sub.items()) if sub else "")
                  + f"  build {build_s:.1f}s", flush=True)
        out["datasets"][name] = {
            "queries": len(everything),
            "subset_queries": len(subset),
            "subset": "all" if subset is everything else f"random.Random(0).sample(range({len(everything)}), {len(subset)})",
            "rows": rows,
        }
    RESULTS.mkdir(parents=True, exist_ok=True)
    target = RESULTS / "hybrid_quality.json"
    if target.exists() and args.datasets != ["scifact", "arguana"]:
        previous = json.loads(target.read_text())
        previous.setdefault("datasets", {}).update(out["datasets"])
        out = previous
    target.write_text(json.dumps(out, indent=2))
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
