"""The engine's per-call depths: ``fetch_k`` as a search option is each leg's depth for that call (and the pool MMR
re-orders), ``chunk_size`` on ``add`` bounds each all-or-nothing write of that call (never above the unit's
chunk). Properties over real stores (FTS5, qdrant-edge) with the hashing embedder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

N = 70
DOCS = [f"shared words and note {i}" for i in range(N)]


@pytest.fixture(scope="module")
def engine() -> Iterator[HybridEngine]:
    e = HybridEngine({"dense": QdrantEdgeDenseStore(HashingEmbedding(16)), "keyword": FTS5KeywordStore()})
    e.add([f"d{i}" for i in range(N)], DOCS)
    yield e
    e.close()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 120), st.integers(1, 10))
def test_each_leg_fetches_the_calls_fetch_k(engine: HybridEngine, fetch_k: int, top_k: int) -> None:
    if fetch_k < top_k:
        with pytest.raises(InvalidArgumentError, match="fetch_k"):
            engine.search("shared words", top_k=top_k, fetch_k=fetch_k)
        return
    result = engine.search("shared words", top_k=top_k, fetch_k=fetch_k)
    assert result.trace.fetch_k == fetch_k
    assert {leg.name: leg.hits for leg in result.trace.legs} == {"dense": min(fetch_k, N), "keyword": min(fetch_k, N)}
    assert len(result.hits) == top_k
    mmr = engine.search("shared words", top_k=top_k, fetch_k=fetch_k, diversity=0.5)
    assert mmr.trace.stage_counts["diversity_pool"] == min(fetch_k, N)  # MMR chooses from fetch_k candidates
    assert engine.settings.fetch_k is None  # a call's depth, not a setting


def test_a_calls_fetch_k_below_the_settings_top_k_is_raised_to_it(engine: HybridEngine) -> None:
    before = engine.settings
    try:
        engine.update_settings(top_k=12)
        assert engine.search("shared words", fetch_k=5).trace.fetch_k == 12  # as the setting's fetch_k would be
        assert engine.search("shared words", fetch_k=50).trace.fetch_k == 50
    finally:
        engine.update_settings(top_k=before.top_k)


class _Recording(HashingEmbedding):
    """The hashing embedder, recording the size of each batch it embeds."""

    sizes: list[int]

    def embed_documents(self, texts: list[str]) -> Any:
        self.sizes.append(len(texts))
        return super().embed_documents(texts)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 40), st.one_of(st.none(), st.integers(1, 50)))
def test_add_writes_in_chunks_of_the_calls_chunk_size(total: int, chunk_size: int | None) -> None:
    model = _Recording(16)
    with HybridEngine({"dense": QdrantEdgeDenseStore(model), "keyword": FTS5KeywordStore()}) as e:
        model.sizes = []
        ids = [f"x{i}" for i in range(total)]
        assert e.add(ids, [f"text {i}" for i in range(total)], chunk_size=chunk_size) == ids
        size = total if chunk_size is None else chunk_size
        assert model.sizes == [min(size, total - start) for start in range(0, total, size)]
        assert e.count() == {"dense": total, "keyword": total}


@pytest.mark.parametrize(("value", "error"), [(0, InvalidArgumentError), ("3", InvalidTypeError),
                                               (True, InvalidTypeError)])
def test_a_bad_chunk_size_is_refused_before_anything_is_written(value: Any, error: type[Exception]) -> None:
    with HybridEngine({"keyword": FTS5KeywordStore()}) as e:
        with pytest.raises(error, match="chunk_size"):
            e.add(["a", "b"], ["one", "two"], chunk_size=value)
        assert e.count() == {"keyword": 0}
