"""HybridEngine.get_where: the stored documents a filter matches, sorted by id, the first ``limit``: exactly what
our filter semantics (``scope.tree.matches``) keep of the inserted set, in every store kind; the listing the
framework doors (LlamaIndex ``get_nodes(filters=...)``, LangChain ``get_by_filter``) are built on.

Real stores: SQLite FTS5, BM25, qdrant-client local mode, qdrant-edge; the hashing embedder.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import EngineClosedError, InvalidArgumentError, InvalidFilterError, InvalidTypeError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

IDS = [f"d{i:02d}" for i in range(30)]
METAS: list[dict[str, Any]] = [{"team": ["core", "web", "ops"][i % 3], "n": i % 7, **({"lang": "en"} if i % 4 else {})}
                               for i in range(30)]
TEXTS = [f"document {i}" for i in range(30)]


def _stack(kind: str) -> HybridEngine:
    if kind == "qdrant+fts5":
        sources: dict[str, Any] = {"dense": QdrantDenseStore(HashingEmbedding(16), client=QdrantClient(":memory:")),
                                   "keyword": FTS5KeywordStore()}
    elif kind == "edge+bm25":
        sources = {"dense": QdrantEdgeDenseStore(HashingEmbedding(16)), "keyword": BM25KeywordStore()}
    else:
        sources = {"keyword": FTS5KeywordStore()}
    return HybridEngine(sources)


@pytest.fixture(scope="module", params=["qdrant+fts5", "edge+bm25", "fts5"])
def engine(request: pytest.FixtureRequest) -> Iterator[HybridEngine]:
    e = _stack(request.param)
    e.add(list(reversed(IDS)), list(reversed(TEXTS)), list(reversed(METAS)))  # inserted out of order
    yield e
    e.close()


def reference(flt: Any, limit: int) -> list[str]:
    node = normalize_filter(flt)
    return sorted(i for i, m in zip(IDS, METAS) if node is None or matches(m, node))[:limit]


leaf = st.one_of(
    st.builds(lambda v: {"team": v}, st.sampled_from(["core", "web", "ops", "x"])),
    st.builds(lambda lo, hi: {"n": {"$gte": lo, "$lt": hi}}, st.integers(-1, 7), st.integers(0, 8)),
    st.builds(lambda vs: {"n": {"$in": vs}}, st.lists(st.integers(0, 7), min_size=1, max_size=3)),
    st.builds(lambda b: {"lang": {"$exists": b}}, st.booleans()),
    st.builds(lambda v: {"lang": {"$ne": v}}, st.sampled_from(["en", "de"])),
)
filters = st.one_of(st.none(), leaf, st.builds(lambda a, b: {"$or": [a, b]}, leaf, leaf),
                    st.builds(lambda a, b: {"$and": [a, {"$not": b}]}, leaf, leaf))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=filters, limit=st.integers(0, 35))
def test_lists_exactly_the_matching_documents_sorted_by_id(engine: HybridEngine, flt: Any, limit: int) -> None:
    got = engine.get_where(flt, limit=limit)
    assert [r.id for r in got] == reference(flt, limit)
    by_id = dict(zip(IDS, zip(TEXTS, METAS)))
    assert all((r.text, dict(r.metadata)) == by_id[r.id] for r in got)


def test_a_document_in_one_store_only_is_listed_too() -> None:
    e = _stack("qdrant+fts5")
    try:
        e.add(["a", "b"], ["x", "y"], [{"k": 1}, {"k": 1}])
        e.legs["keyword"].store.add(["c"], ["z"], [{"k": 1}])  # a half-written document (keyword store only)
        assert [(r.id, r.text) for r in e.get_where({"k": 1}, limit=10)] == [("a", "x"), ("b", "y"), ("c", "z")]
    finally:
        e.close()


@pytest.mark.parametrize("limit", [-1, 100_001, 2.0, None, True])
def test_a_bad_limit_is_our_error(engine: HybridEngine, limit: Any) -> None:
    with pytest.raises((InvalidArgumentError, InvalidTypeError), match="limit"):
        engine.get_where(None, limit=limit)


def test_a_malformed_filter_is_our_error(engine: HybridEngine) -> None:
    with pytest.raises(InvalidFilterError):
        engine.get_where({"n": {"$regex": "x"}}, limit=5)


def test_a_closed_engine_refuses() -> None:
    e = _stack("fts5")
    e.close()
    with pytest.raises(EngineClosedError):
        e.get_where(None, limit=1)
