"""The five shared collections with int8 MiniLM vectors (the library's default model), for bench_relevance.py.

Vectors are computed once by :func:`rrf_retriever.embeddings.cached_embed_documents` with ``MiniLMEmbedding()``
(int8, the default precision) and kept under ``benchmarks/.cache/``. Queries: the judged test queries, at most
:data:`QUERIES_PER_COLLECTION` per collection (a fixed random sample, seed 0), so the five fit in minutes.

Warm the cache: ``python benchmarks/_relevance_data.py``.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np

from rrf_retriever import MiniLMEmbedding
from rrf_retriever.embeddings import cached_embed_documents
from rrf_retriever.evaluation import doc_text, load_beir

DATA = ROOT.parent / "shared" / "data"
if not DATA.is_dir():  # a worktree sits two levels below /work
    DATA = Path("/work/shared/data")
CACHE = ROOT / "benchmarks" / ".cache"
COLLECTIONS = ("med", "cacm", "scifact", "arguana", "npl")
QUERIES_PER_COLLECTION = 200

_MODEL: MiniLMEmbedding | None = None


def minilm() -> MiniLMEmbedding:
    global _MODEL
    if _MODEL is None:
        _MODEL = MiniLMEmbedding(show_progress=False)
    return _MODEL


@dataclass
class Coll:
    name: str
    doc_ids: list[str]
    doc_texts: list[str]
    doc_vectors: np.ndarray
    query_ids: list[str]
    query_texts: list[str]
    query_vectors: np.ndarray
    qrels: dict[str, dict[str, int]]


def load(name: str) -> Coll:
    ds = load_beir(DATA / name, split="test")
    doc_ids = list(ds.corpus)
    doc_texts = [doc_text(ds.corpus[i]) for i in doc_ids]
    qids = [q for q in ds.queries if ds.qrels.get(q)]
    if len(qids) > QUERIES_PER_COLLECTION:
        qids = [qids[i] for i in sorted(random.Random(0).sample(range(len(qids)), QUERIES_PER_COLLECTION))]
    query_texts = [ds.queries[q] for q in qids]
    dv = cached_embed_documents(minilm(), doc_texts, CACHE)
    qv = cached_embed_documents(minilm(), query_texts, CACHE)
    return Coll(name, doc_ids, doc_texts, dv, qids, query_texts, qv, {q: dict(ds.qrels[q]) for q in qids})


if __name__ == "__main__":
    for coll in COLLECTIONS:
        c = load(coll)
        print(coll, c.doc_vectors.shape, c.query_vectors.shape, flush=True)
