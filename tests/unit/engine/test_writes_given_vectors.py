"""Vectors embedded by the caller (a LlamaIndex ``embed_model``): ``engine.add(..., vectors=...)`` writes them to the
dense store without calling its model, and a query given as a vector alone (empty text) runs the dense legs."""

from __future__ import annotations

import pytest

from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore


def _engine(calls: list[list[str]]) -> HybridEngine:
    def model(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return [[1.0, 0.0] for _ in texts]

    return HybridEngine({"dense": QdrantDenseStore(model), "keyword": FTS5KeywordStore()})


def test_given_vectors_are_written_without_calling_the_model() -> None:
    calls: list[list[str]] = []
    engine = _engine(calls)
    engine.add(["a", "b"], ["rocket fuel", "orbit notes"], vectors=[[0.0, 1.0], [1.0, 0.0]])
    assert calls == []
    assert engine.search("", query_vector=[0.0, 1.0], top_k=1).ids == ["a"]  # a vector alone: the dense leg
    assert engine.search("").ids == []  # no text, no vector: nothing to search
    with pytest.raises(InvalidArgumentError, match="one vector per text"):
        engine.add(["c"], ["x"], vectors=[])
