"""Shared helpers of the hybrid benchmarks: BEIR data, cached MiniLM vectors, a precomputed-vector embedder.

Every system in ``bench_hybrid_quality.py`` / ``bench_sweep.py`` / ``bench_hybrid_speed.py`` sees the SAME MiniLM
vectors: corpus and query vectors are computed once by :func:`rrf_retriever.embeddings.cached_embed_documents`
(keyed by model and a SHA-256 of the texts) and kept under ``benchmarks/.cache/``.

Example:
    >>> bundle = load_bundle("scifact", split="test")  # doctest: +SKIP
    >>> bundle.doc_vectors.shape  # doctest: +SKIP
    (5183, 384)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np

from rrf_retriever.embeddings import BaseEmbeddingAdapter, MiniLMEmbedding, cached_embed_documents
from rrf_retriever.evaluation import BeirDataset, doc_text, load_beir

DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "results"

_MODEL: MiniLMEmbedding | None = None


def minilm() -> MiniLMEmbedding:
    """One MiniLM per process."""
    global _MODEL
    if _MODEL is None:
        _MODEL = MiniLMEmbedding(show_progress=True, precision="fp32")
    return _MODEL


@dataclass
class Bundle:
    """A data set with its texts and the cached MiniLM vectors of its corpus and queries."""

    name: str
    ds: BeirDataset
    doc_ids: list[str]
    doc_texts: list[str]
    doc_vectors: np.ndarray
    query_ids: list[str]
    query_texts: list[str]
    query_vectors: np.ndarray

    @property
    def exclude_self(self) -> bool:
        """ArguAna: a query's own document is dropped (BEIR ``ignore_identical_ids``)."""
        return self.name == "arguana"


def load_bundle(name: str, split: str = "test") -> Bundle:
    """Load ``../shared/data/<name>`` and its cached MiniLM vectors (computed on first use)."""
    ds = load_beir(DATA / name, split=split)
    doc_ids = list(ds.corpus)
    doc_texts = [doc_text(ds.corpus[i]) for i in doc_ids]
    query_ids = list(ds.queries)
    query_texts = [ds.queries[q] for q in query_ids]
    doc_vectors = cached_embed_documents(minilm(), doc_texts, CACHE)
    query_vectors = cached_embed_documents(minilm(), query_texts, CACHE)
    return Bundle(name, ds, doc_ids, doc_texts, doc_vectors, query_ids, query_texts, query_vectors)


class PrecomputedEmbedding(BaseEmbeddingAdapter):
    """An embedder that answers from a table ``text -> vector`` (the cached MiniLM vectors).

    So every system sees the same vectors and query-embedding time is excluded from retrieval timings.
    An unknown text (langchain-qdrant embeds ``"dummy_text"`` to check the collection) is embedded by the real
    MiniLM and counted in ``misses``, so a benchmark can show that no corpus text or query was re-embedded.
    """

    model_id = "all-MiniLM-L6-v2"

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        super().__init__(batch_size=4096)
        self.dimension = int(vectors.shape[1])
        self._table: dict[str, np.ndarray] = {}
        self.misses = 0
        for text, vec in zip(texts, vectors):
            self._table.setdefault(text, vec)

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vec in zip(texts, vectors):
            self._table.setdefault(text, vec)

    def _vector(self, text: str) -> np.ndarray:
        vec = self._table.get(text)
        if vec is None:
            self.misses += 1
            vec = self._table[text] = minilm().embed_array([text])[0]
        return vec

    def _embed_batch(self, texts: list[str]) -> Any:
        return np.stack([self._vector(t) for t in texts])

    def _embed_one_query(self, text: str) -> Any:
        return self._vector(text)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors as one float32 array, as ``MiniLMEmbedding.embed_array`` gives them to the writes."""
        return np.stack([self._vector(t) for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> list[float]:
        # Skip the per-float validation of the base class: it costs ~0.1 ms and is not part of retrieval.
        return self._vector(text).tolist()


def all_query_bundle_texts(name: str) -> list[str]:
    """Every query of a data set (all splits), for caching."""
    import json

    with (DATA / name / "queries.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


if __name__ == "__main__":
    # Warm the cache: python benchmarks/_data.py
    # ArguAna first: bench_dense_quality.py (same cache keys) may be embedding SciFact at the same time.
    for dataset, splits in (("arguana", ("test",)), ("scifact", ("train", "test"))):
        for split in splits:
            b = load_bundle(dataset, split)
            print(dataset, split, b.doc_vectors.shape, b.query_vectors.shape, flush=True)
