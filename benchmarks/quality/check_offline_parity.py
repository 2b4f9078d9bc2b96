"""Offline fusion == invoke(): the legs fetched at the engine's own fetch_k (2 * top_k = 200) through the public
stores, fused with the public weighted_rrf (k=2, dense 1, keyword 1.25, limit 100), vs
EnsembleRRFRetriever.from_texts(texts, embedding, ids=ids).invoke(q, top_k=100): same ids, same order?

    .venv/bin/python benchmarks/quality/check_offline_parity.py [collections...]   # stdout only
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.beir import load_collection
from benchmarks.common.embedders import TableEmbedding
from rrf_retriever import EnsembleRRFRetriever, FTS5KeywordStore, QdrantEdgeDenseStore, as_embedding, weighted_rrf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collections", nargs="*", default=["scifact", "med", "cacm", "npl", "arguana"])
    args = parser.parse_args()
    for name in args.collections:
        c = load_collection(name)
        table = TableEmbedding(c.doc_texts, c.doc_vectors)
        table.add(c.query_texts, c.query_vectors)
        emb = as_embedding(table)
        dense = QdrantEdgeDenseStore(emb)
        dense.add(c.doc_ids, c.doc_texts, vectors=c.doc_vectors)
        kw = FTS5KeywordStore()
        kw.add(c.doc_ids, c.doc_texts)
        r = EnsembleRRFRetriever.from_texts(c.doc_texts, emb, ids=c.doc_ids)
        same = 0
        for i, (q, t) in enumerate(zip(c.query_ids, c.query_texts)):
            ex = c.excl(q)
            legs = {"dense": dense.search(c.query_vectors[i], 200, exclude_ids=ex), "keyword": kw.search(t, 200, exclude_ids=ex)}
            off = [h.id for h in weighted_rrf(legs, {"dense": 1.0, "keyword": 1.25}, k=2, limit=100)]
            api = [d.id for d in r.invoke(t, top_k=100, **({"exclude_ids": ex} if ex else {}))]
            same += off == api
        print(f"{name}: offline weighted_rrf == invoke() on {same}/{len(c.query_ids)} queries", flush=True)


if __name__ == "__main__":
    main()
