"""A query_vector of the wrong dimension is bad input, refused at the door (DimensionMismatchError) before any leg
runs, not a dense-leg failure degraded into a 200. An empty dense store has no dimension yet: the vector is taken
as given and the dense leg finds nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rrf_retriever import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import DimensionMismatchError
from rrf_retriever.index.directory import create_index
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore

DIM = 16
TEXTS = ["rocket fuel and orbit", "engines of the rocket", "a note on orbit"]


def _default_stack(tmp_path: Path) -> HybridEngine:
    engine = create_index(tmp_path / "idx", embedder=f"hashing:{DIM}")  # qdrant-edge: dense + BM25, one shard
    engine.add([f"d{i}" for i in range(len(TEXTS))], TEXTS)
    return engine


def _separate_stores() -> HybridEngine:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(DIM)), "keyword": FTS5KeywordStore()})
    engine.add([f"d{i}" for i in range(len(TEXTS))], TEXTS)
    return engine


@pytest.mark.parametrize("build", ["default", "separate"])
@pytest.mark.parametrize("length", [DIM - 1, DIM + 1, 1])
def test_a_wrong_dimension_query_vector_is_refused_before_any_leg_runs(
    tmp_path: Path, build: str, length: int
) -> None:
    engine = _default_stack(tmp_path) if build == "default" else _separate_stores()
    calls: list[str] = []
    for leg in engine.legs.values():
        store = leg.store  # type: ignore[attr-defined]  # our stores' legs hold them
        for method in ("search", "asearch", "search_request", "asearch_request", "search_batch", "asearch_batch"):
            if hasattr(store, method):
                original = getattr(store, method)
                setattr(store, method, lambda *a, _o=original, _m=method, **k: calls.append(_m) or _o(*a, **k))
    with engine:
        with pytest.raises(DimensionMismatchError, match=f"dimension {length}.*{DIM}"):
            engine.search("rocket", query_vector=[0.1] * length)
        with pytest.raises(DimensionMismatchError, match=f"dimension {length}"):
            asyncio.run(engine.asearch("rocket", query_vector=[0.1] * length))
        assert calls == []
        assert engine.search("rocket", query_vector=[0.1] * DIM).ids  # the right dimension still works
        assert calls  # ... and reaches the stores: the count above was live


def test_a_wrong_dimension_is_refused_even_with_the_dense_leg_at_weight_zero(tmp_path: Path) -> None:
    # The vector is wrong for this engine whatever the weights: a mistake, said at once.
    with _default_stack(tmp_path) as engine, pytest.raises(DimensionMismatchError):
        engine.search("rocket", query_vector=[0.1] * 3, weights={"dense": 0.0})


def test_an_empty_dense_store_has_no_dimension_yet_and_takes_any_vector() -> None:
    with HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(DIM)), "keyword": FTS5KeywordStore()}) as engine:
        result = engine.search("rocket", query_vector=[0.1] * 3)
        assert result.ids == [] and not result.trace.degraded
