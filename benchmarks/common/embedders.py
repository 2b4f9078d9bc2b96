"""Embedders that answer from the cached MiniLM vectors, so every system of a comparison sees the same vectors.

* :class:`PrecomputedEmbedding`: a library embedder (``BaseEmbeddingAdapter``) over a ``text -> vector`` table;
  query embedding is excluded from retrieval timings (the hybrid and speed benchmarks);
* :class:`TableEmbedding`: a LangChain-Embeddings-like object (``embed_documents`` / ``embed_query``) over the same
  kind of table (the five-collection benchmarks; ``as_embedding`` wraps it).

A text missing from the table is embedded by the real fp32 MiniLM and counted in ``misses``, so a benchmark can
show that no corpus text or query was re-embedded.

Example:
    >>> import numpy as np
    >>> emb = TableEmbedding(["a"], np.ones((1, 384), dtype=np.float32))
    >>> emb.embed_query("a")[:2], emb.misses
    ([1.0, 1.0], 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.common.beir import MODEL_ID, cached_vectors, minilm
from rrf_retriever.embeddings import BaseEmbeddingAdapter


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
        missing = list(dict.fromkeys(t for t in texts if t not in self.table))
        if missing:  # one batch, cached on disk (the legs' measurement asks the same pseudo-queries every run)
            self.misses += len(missing)
            self.add(missing, cached_vectors(missing))
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)
