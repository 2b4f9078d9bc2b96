"""The five shared collections (scifact, arguana, med, cacm, npl) with cached MiniLM vectors, public names only.

Self-contained on purpose: it imports only top-level ``rrf_retriever`` names and ``rrf_retriever.evaluation``, so
a move of the package's internal modules does not break it. Vectors are computed once by ``MiniLMEmbedding`` and
kept under ``benchmarks/.cache/`` as ``coll-all-MiniLM-L6-v2-<n>-<sha256 of the texts>.npy``; every system of a
comparison reads the same vectors.

Texts: ``doc_text`` (title + "\\n" + text; just the text when there is no title). MED and NPL have no titles;
CACM has titles and ~half its documents are title-only; ArguAna's "titles" are debate topic words.

Warm the cache (one process; NPL's 11k + ArguAna's 8.7k documents take a while on 2 cores):
    .venv/bin/python benchmarks/_colldata.py
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# RRF_SRC=<dir holding rrf_retriever/>: run against that copy of the package (e.g. a `git archive HEAD` snapshot
# while the working tree is being restructured); default: the working tree.
_SRC = os.environ.get("RRF_SRC") or str(ROOT)
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import numpy as np

from rrf_retriever.evaluation import doc_text, load_beir

DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "results"
COLLECTIONS = ("scifact", "arguana", "med", "cacm", "npl")
MODEL_ID = "all-MiniLM-L6-v2"

_MODEL: Any = None


def minilm() -> Any:
    global _MODEL
    if _MODEL is None:
        from rrf_retriever import MiniLMEmbedding

        _MODEL = MiniLMEmbedding(show_progress=True, precision="fp32")
    return _MODEL


def _key(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return f"coll-{MODEL_ID}-{len(texts)}-{digest.hexdigest()[:24]}.npy"


def cached_vectors(texts: Sequence[str]) -> np.ndarray:
    """MiniLM vectors of ``texts`` (float32, unit length), computed once and cached by a SHA-256 of the texts."""
    target = CACHE / _key(texts)
    if target.is_file():
        return np.load(target)
    CACHE.mkdir(parents=True, exist_ok=True)
    model = minilm()
    vectors = np.asarray(model.embed_documents(list(texts)), dtype=np.float32)
    tmp = target.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(target)
    return vectors


@dataclass
class Collection:
    name: str
    doc_ids: list[str]
    doc_texts: list[str]  # title + text as one string
    titles: list[str]
    doc_vectors: np.ndarray
    query_ids: list[str]  # judged queries only (qrels of the test split)
    query_texts: list[str]
    query_vectors: np.ndarray
    qrels: dict[str, dict[str, int]]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def exclude_self(self) -> bool:
        """ArguAna: a query's own document is dropped (BEIR ``ignore_identical_ids``)."""
        return self.name == "arguana"

    @property
    def has_titles(self) -> bool:
        return any(t.strip() for t in self.titles)

    def excl(self, qid: str) -> list[str] | None:
        return [qid] if self.exclude_self else None


ARGUANA_SUBSET = 300


def load_collection(name: str, *, vectors: bool = True, arguana_subset: bool = True) -> Collection:
    ds = load_beir(DATA / name, split="test")
    doc_ids = list(ds.corpus)
    doc_texts = [doc_text(ds.corpus[i]) for i in doc_ids]
    titles = [str(ds.corpus[i].get("title") or "") for i in doc_ids]
    all_qids = list(ds.queries)
    query_ids = all_qids
    if name == "arguana" and arguana_subset:
        # LangChain's rank_bm25 (~1 s per long ArguAna query) and FTS5 over ~100-term OR queries make the full
        # 1,406 slow: every system is scored on the fixed subset bench_hybrid_quality.py uses for its anchors.
        import random

        query_ids = [query_ids[i] for i in sorted(random.Random(0).sample(range(len(query_ids)), ARGUANA_SUBSET))]
    query_texts = [ds.queries[q] for q in query_ids]
    qrels = {q: dict(ds.qrels[q]) for q in query_ids}
    if vectors:
        dv = cached_vectors(doc_texts)
        qv_all = cached_vectors([ds.queries[q] for q in all_qids])
        where = {q: i for i, q in enumerate(all_qids)}
        qv = qv_all[[where[q] for q in query_ids]]
    else:
        dv = qv = np.zeros((0, 384), dtype=np.float32)
    return Collection(name, doc_ids, doc_texts, titles, dv, query_ids, query_texts, qv, qrels)


class TableEmbedding:
    """An embedder that answers from the cached vectors (LangChain-Embeddings-like: embed_documents /
    embed_query), so no system re-embeds anything and all see the same vectors. Misses are counted and
    embedded by the real MiniLM."""

    model_id = MODEL_ID
    # It stands in for MiniLMEmbedding, so it declares what MiniLM declares (the weak-leg rule reads these).
    languages = frozenset({"english"})
    window_tokens = 256

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.dimension = int(vectors.shape[1])
        self.table: dict[str, np.ndarray] = {}
        self.misses = 0
        self.add(texts, vectors)

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for t, v in zip(texts, vectors):
            self.table.setdefault(t, v)

    def vector(self, text: str) -> np.ndarray:
        v = self.table.get(text)
        if v is None:
            self.misses += 1
            v = self.table[text] = np.asarray(minilm().embed_documents([text])[0], dtype=np.float32)
        return v

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


if __name__ == "__main__":
    # Smallest first, so partial progress is useful.
    for coll in ("med", "cacm", "scifact", "npl", "arguana"):
        c = load_collection(coll)
        print(coll, c.doc_vectors.shape, c.query_vectors.shape, flush=True)
