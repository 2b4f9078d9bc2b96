"""``RRFVectorStore.get_nodes(filters=...)`` / ``aget_nodes`` without node ids list the matching nodes, as Qdrant's
LlamaIndex store does: exactly the ids LlamaIndex's own filter function (``build_metadata_filter_fn``, what its
in-memory stores filter with) keeps of the inserted set, sorted, each node as inserted (same ``hash``); bounded by
``limit`` and ``LIST_MAX``.

Real stores (SQLite FTS5, BM25, qdrant-edge, qdrant-client local mode), real LlamaIndex filters and nodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.schema import BaseNode, Document, TextNode
from llama_index.core.vector_stores.types import FilterCondition, MetadataFilter, MetadataFilters
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from rrf_retriever.errors import InvalidArgumentError, InvalidFilterError, InvalidTypeError
from rrf_retriever.frameworks.listing import LIST_MAX
from rrf_retriever.llama_index import RRFVectorStore

TEAMS = ("core", "web", "ops")


def _node(i: int) -> BaseNode:
    metadata: dict[str, Any] = {"team": TEAMS[i % 3], "n": i % 7}
    if i % 4:
        metadata["lang"] = "en" if i % 2 else "de"  # missing on every fourth node
    cls = Document if i % 5 == 0 else TextNode
    return cls(id_=f"n{i:02d}", text=f"note {i} of team {TEAMS[i % 3]}", metadata=metadata,
               embedding=[1.0, float(i % 7), float(i % 3)])


NODES = [_node(i) for i in range(40)]
BY_ID = {n.node_id: n for n in NODES}


def reference(filters: MetadataFilters | None) -> list[str]:
    """What LlamaIndex's own filter function keeps of the inserted nodes, sorted by id."""
    keep = build_metadata_filter_fn(lambda node_id: BY_ID[node_id].metadata, filters)
    return sorted(node_id for node_id in BY_ID if keep(node_id))


@pytest.fixture(scope="module", params=[("qdrant-edge", "fts5"), ("qdrant-edge", "bm25"), ("qdrant", "qdrant")],
                ids="-".join)
def store(request: pytest.FixtureRequest) -> Iterator[RRFVectorStore]:
    dense, keyword = request.param
    s = RRFVectorStore(dense=dense, keyword=keyword)
    s.add(NODES)
    yield s
    s.close()


def F(key: str, value: Any, operator: str = "==") -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=operator)


CASES = {
    "eq": MetadataFilters(filters=[F("team", "web")]),
    "ne": MetadataFilters(filters=[F("lang", "de", "!=")]),  # a node without lang matches, as in LlamaIndex
    "range-and": MetadataFilters(filters=[F("n", 2, ">="), F("n", 5, "<"), F("team", ["core", "ops"], "in")]),
    "or": MetadataFilters(filters=[F("team", "ops"), F("n", 0)], condition=FilterCondition.OR),
    "not": MetadataFilters(filters=[F("team", "core"), F("lang", "en")], condition=FilterCondition.NOT),
    "nin": MetadataFilters(filters=[F("n", [1, 3, 5], "nin")]),
    "is_empty": MetadataFilters(filters=[F("lang", None, "is_empty")]),
    "none-match": MetadataFilters(filters=[F("team", "nobody")]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_get_nodes_by_filters_alone_lists_what_llamaindex_keeps(store: RRFVectorStore, name: str) -> None:
    filters = CASES[name]
    want = reference(filters)
    got = store.get_nodes(filters=filters)
    assert [n.node_id for n in got] == want
    assert [n.hash for n in got] == [BY_ID[i].hash for i in want]  # each node as inserted (class, metadata, text)
    assert [type(n) for n in got] == [type(BY_ID[i]) for i in want]
    assert [n.node_id for n in asyncio.run(store.aget_nodes(filters=filters))] == want


def test_get_nodes_without_ids_or_filters_lists_every_node(store: RRFVectorStore) -> None:
    assert [n.node_id for n in store.get_nodes()] == sorted(BY_ID)


def test_limit_gives_the_first_by_id_and_caps_a_get_by_ids_too(store: RRFVectorStore) -> None:
    filters = CASES["ne"]
    assert [n.node_id for n in store.get_nodes(filters=filters, limit=5)] == reference(filters)[:5]
    assert store.get_nodes(filters=filters, limit=0) == []
    assert [n.node_id for n in store.get_nodes(["n09", "n01", "n02"], limit=2)] == ["n09", "n01"]
    assert [n.node_id for n in asyncio.run(store.aget_nodes(limit=3))] == sorted(BY_ID)[:3]


@pytest.mark.parametrize("limit", [-1, LIST_MAX + 1, 1.5, "3", True])
def test_a_bad_limit_is_our_error(store: RRFVectorStore, limit: Any) -> None:
    with pytest.raises((InvalidArgumentError, InvalidTypeError), match="limit"):
        store.get_nodes(filters=CASES["eq"], limit=limit)


def test_a_filter_we_cannot_translate_is_refused(store: RRFVectorStore) -> None:
    with pytest.raises(InvalidFilterError):
        store.get_nodes(filters=MetadataFilters(filters=[F("n", "soon", ">")]))  # not a number, nor a date


values = {"team": st.sampled_from([*TEAMS, "x"]), "n": st.integers(-1, 8), "lang": st.sampled_from(["en", "de", "fr"])}
scalar_ops = st.sampled_from(["==", "!=", ">", ">=", "<", "<="])


@st.composite
def one_filter(draw: st.DrawFn) -> MetadataFilter:
    key = draw(st.sampled_from(sorted(values)))
    kind = draw(st.sampled_from(["scalar", "list", "empty"]))
    if kind == "list":
        return F(key, draw(st.lists(values[key], min_size=1, max_size=3)), draw(st.sampled_from(["in", "nin"])))
    if kind == "empty":
        return F(key, None, "is_empty")
    op = draw(scalar_ops) if key == "n" else draw(st.sampled_from(["==", "!="]))  # ranges are on numbers
    return F(key, draw(values[key]), op)


filters_strategy = st.builds(
    lambda parts, condition: MetadataFilters(filters=parts, condition=condition),
    st.lists(one_filter(), min_size=1, max_size=3),
    st.sampled_from([FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filters=filters_strategy)
def test_any_flat_filter_lists_exactly_llamaindex_own_selection(store: RRFVectorStore, filters: MetadataFilters
                                                                ) -> None:
    assert [n.node_id for n in store.get_nodes(filters=filters)] == reference(filters)


@pytest.mark.slow
def test_more_matching_nodes_than_the_bound_without_a_limit_are_refused_not_cut() -> None:
    many = [TextNode(id_=f"m{i:05d}", text=f"m {i}", metadata={"parity": "odd" if i % 2 else "even"}, embedding=[1.0, float(i % 5)])
            for i in range(LIST_MAX + 2)]
    store = RRFVectorStore(keyword="fts5")
    try:
        store.add(many)
        with pytest.raises(InvalidArgumentError, match=f"more than {LIST_MAX}.*limit="):
            store.get_nodes()
        assert [n.node_id for n in store.get_nodes(limit=LIST_MAX)] == [n.node_id for n in many[:LIST_MAX]]
        evens = store.get_nodes(filters=MetadataFilters(filters=[F("parity", "even")]))  # 5,001 match: listed whole
        assert [n.node_id for n in evens] == [n.node_id for n in many if n.metadata["parity"] == "even"]
    finally:
        store.close()
