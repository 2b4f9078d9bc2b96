"""The filter language compiled into every Qdrant store, case by case, against :func:`rrf_retriever.scope.tree.matches`.

Each typed edge case Qdrant reads its own way is here: ``MatchValue(2)`` never matches the float 2.0, ranges
compare in float64 past 2**53 (an integer rounds onto a bound), an empty ``should`` is true, ``IsEmpty`` on a dict
or ``[None]``, ranges on lists (one element must satisfy every bound), bools never in a range, strings that look
like numbers. Stores: qdrant-client local mode (exact Python comparisons, no indexes) and qdrant-edge (Qdrant's
own engine) with no payload index, with the float index the store builds, and with an integer index left by an
older version (it holds integral floats as integers and drops the others); dense and sparse-keyword stores.
The random version is test_filters_property.py.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidFilterError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import AllOf, AnyOf, Exists, Match, Not, Range, matches
from rrf_retriever.stores.qdrant import (
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    QdrantEdgeKeywordStore,
    QdrantKeywordStore,
)

DIM = 16
BIG = 2**53
NS = 1_700_000_000_000_000_123  # a nanosecond timestamp: float64 steps of 256 there

DOCS: dict[str, dict[str, Any]] = {
    "int2": {"k": 2}, "float2": {"k": 2.0}, "str2": {"k": "2"}, "true": {"k": True}, "one": {"k": 1},
    "false": {"k": False}, "zero": {"k": 0}, "null": {"k": None}, "empty_list": {"k": []},
    "list2x": {"k": [2, "x"]}, "list_true": {"k": [True]}, "dict": {"k": {}}, "dict1": {"k": {"a": 1}},
    "missing": {}, "list_null": {"k": [None]}, "f25": {"k": 2.5}, "mixed": {"k": [1.0, "2"]},
    "nested": {"k": [[2]]}, "empty_str": {"k": ""}, "neg_zero": {"k": -0.0}, "big_plus1": {"k": BIG + 1},
    "big_float": {"k": float(BIG)}, "big": {"k": BIG}, "int_max": {"k": 2**63 - 1}, "int_min": {"k": -(2**63)},
    "huge_float": {"k": 1e300}, "false_zero": {"k": [False, 0]}, "null2": {"k": [None, 2]},
    "spread": {"k": [0, 10]}, "ns": {"k": NS}, "ns_float": {"k": float(NS)}, "ns_minus": {"k": NS - 100},
    "str_true": {"k": "true"}, "other_key": {"j": 2}, "two_keys": {"k": 7, "j": "x"},
}

FILTERS: list[Any] = [
    {"k": 2}, {"k": "2"}, {"k": True}, {"k": False}, {"k": 1}, {"k": 0}, {"k": ""}, {"k": "x"},
    {"k": [2, "x"]}, {"k": [True, False, 1]}, {"k": []}, {"k": 2.0},
    {"k": {"$ne": 2}}, {"k": {"$ne": True}}, {"k": {"$nin": [2, "x", True]}}, {"k": {"$in": []}},
    {"k": {"$nin": []}}, {"k": {"$in": list(range(-3, 40))}}, {"k": {"$in": [*range(-3, 40), "2", True]}},
    {"k": {"$gt": 1}}, {"k": {"$gte": 2, "$lte": 2}}, {"k": {"$gt": 5, "$lt": 7}}, {"k": {"$lt": 0.5}},
    {"k": {"$gte": -0.0, "$lte": 0}}, {"k": {"$gt": 2.5}}, {"k": {"$gte": 2.5}}, {"k": {"$lt": -1e308}},
    {"k": {"$gt": 0, "$gte": 1}}, {"k": {"$lt": 3, "$lte": 2.5}}, {"k": {"$gt": 3, "$lt": 2}},
    {"k": {"$exists": True}}, {"k": {"$exists": False}}, {"j": {"$exists": True}}, {"k": {"$not": {"$gt": 1}}},
    {"$or": [{"k": 2}, {"k": "x"}]}, {"$not": {"$or": [{"k": 2}, {"k": "x"}]}},
    {"$and": [{"k": {"$exists": True}}, {"k": {"$ne": "2"}}]}, {"k": 7, "j": "x"}, {"$or": [{"k": 7}, {"j": 2}]},
    {"k": BIG}, {"k": BIG + 1}, {"k": BIG - 1}, {"k": 2**63 - 1}, {"k": -(2**63)}, {"k": NS}, {"k": NS + 1},
    {"k": {"$gt": BIG}}, {"k": {"$gte": BIG}}, {"k": {"$lt": BIG}}, {"k": {"$lte": BIG}},
    {"k": {"$gt": BIG + 1}}, {"k": {"$gte": float(BIG)}}, {"k": {"$gt": 2**63 - 1025}},
    {"k": {"$gte": NS}}, {"k": {"$gt": NS - 1}}, {"k": {"$lt": NS}}, {"k": {"$lte": NS - 100}},
    {"k": {"$gte": NS - 100, "$lt": NS}}, {"k": {"$in": [BIG + 1, NS, 3]}}, {"k": {"$nin": [BIG, NS]}},
    AnyOf(()), AllOf(()), Not(AnyOf(())), Not(AllOf(())), AnyOf((Match("k", ()), Exists("k"))),
    AllOf((Exists("k"), Not(Match("k", ())))), Not(Not(Range("k", gt=1))), Match("k", ()),
]


def _label(value: Any) -> str:
    return repr(value)[:60]


def _edge_with_integer_index(path: Path, factory: Any) -> Any:
    """A store whose shard already has an INTEGER index on ``k`` (as an older version built), then reopened."""
    store = factory(path)
    _add(store)
    store.close()
    shard = qe.EdgeShard.load(str(path / "shard"))  # the documented layout: path/shard holds Qdrant's shard
    shard.update(qe.UpdateOperation.create_field_index("metadata.k", qe.PayloadSchemaType.Integer))
    shard.close()
    return factory(path)


def _add(store: Any) -> None:
    ids = list(DOCS)
    texts = [f"alpha {i}" for i in ids]
    store.add(ids, texts, [DOCS[i] for i in ids])


def _dense(path: Path, **kwargs: Any) -> QdrantEdgeDenseStore:
    return QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path, **kwargs)


def _keyword(path: Path, **kwargs: Any) -> QdrantEdgeKeywordStore:
    return QdrantEdgeKeywordStore(path=path, **kwargs)


KINDS = [
    "local-dense", "local-keyword", "edge-dense", "edge-keyword", "edge-dense-noindex", "edge-keyword-noindex",
    "edge-dense-integer-index", "edge-keyword-integer-index",
]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made: dict[str, Any] = {}

    def get(kind: str) -> Any:
        if kind not in made:
            path = tmp_path_factory.mktemp(kind)
            if kind == "local-dense":
                made[kind] = QdrantDenseStore(HashingEmbedding(dim=DIM))
            elif kind == "local-keyword":
                made[kind] = QdrantKeywordStore()
            elif kind.endswith("integer-index"):
                made[kind] = _edge_with_integer_index(path, _dense if "dense" in kind else _keyword)
                return made[kind]
            else:
                factory = _dense if "dense" in kind else _keyword
                made[kind] = factory(path, max_auto_indexes=0) if kind.endswith("noindex") else factory(path)
            _add(made[kind])
        return made[kind]

    yield get
    for store in made.values():
        store.close()


def _search_ids(store: Any, flt: Any, exclude_ids: Any = None) -> list[str]:
    if isinstance(store, (QdrantKeywordStore, QdrantEdgeKeywordStore)):
        hits = store.search("alpha", 100, filter=flt, exclude_ids=exclude_ids)
    else:
        hits = store.search(store.embedding.embed_query("alpha"), 100, filter=flt, exclude_ids=exclude_ids)
    return [h.id for h in hits]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("flt", FILTERS, ids=_label)
def test_each_filter_returns_exactly_what_the_reference_matches(stores: Any, kind: str, flt: Any) -> None:
    store = stores(kind)
    node = normalize_filter(flt)
    expected = sorted(i for i, meta in DOCS.items() if matches(meta, node))
    got = _search_ids(store, flt)
    assert len(got) == len(set(got))
    assert sorted(got) == expected, (flt, node)
    assert store.ids_matching(flt) == expected
    excluded = [*expected[:2], "not-stored"]
    assert sorted(_search_ids(store, flt, excluded)) == expected[2:]


@pytest.mark.parametrize("kind", ["local-dense", "edge-keyword"])
def test_typed_equality_and_the_float_rule(stores: Any, kind: str) -> None:
    store = stores(kind)
    assert store.ids_matching({"k": 2}) == sorted(["float2", "int2", "list2x", "null2"])  # 2 == 2.0, not "2"
    assert store.ids_matching({"k": "2"}) == ["mixed", "str2"]  # a string that looks like a number stays one
    assert store.ids_matching({"k": True}) == ["list_true", "true"]  # True is not 1
    assert store.ids_matching({"k": 1}) == ["mixed", "one"]  # 1 is not True; 1.0 is 1
    assert store.ids_matching({"k": {"$gt": 5, "$lt": 7}}) == []  # [0, 10]: no ONE element in (5, 7)
    assert "spread" in store.ids_matching({"$and": [{"k": {"$gt": 5}}, {"k": {"$lt": 7}}]})  # two elements may
    assert store.ids_matching({"k": {"$exists": True}}) == sorted(set(DOCS) - {"null", "empty_list", "missing",
                                                                               "other_key"})


def test_an_integer_index_is_replaced_before_a_range_uses_it(stores: Any) -> None:
    store = stores("edge-dense-integer-index")
    # With the integer index Qdrant drops non-integral floats from ranges: 2.5 and 1e300 would be missed.
    assert {"f25", "huge_float"} <= set(store.ids_matching({"k": {"$gt": 2}}))
    assert ("k", "float") in store.indexed_keys


def test_ids_matching_limits_sorts_and_scopes_every_id(stores: Any) -> None:
    store = stores("edge-keyword")
    assert store.ids_matching() == sorted(DOCS)
    assert store.ids_matching(None, limit=3) == sorted(DOCS)[:3]
    assert store.ids_matching({"k": {"$ne": 2}}, limit=0) == []
    with pytest.raises(InvalidFilterError):
        store.ids_matching({"k": {"$regex": "x"}})
    with pytest.raises((InvalidArgumentError, TypeError)):
        store.ids_matching({"k": 1}, limit=-1)


def test_ids_matching_on_an_empty_store_and_async(tmp_path: Path) -> None:
    with QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=tmp_path) as store:
        assert store.ids_matching({"k": 1}) == []
        store.add(["a", "b"], ["x", "y"], [{"ref": "doc-1"}, {"ref": "doc-2"}])
        assert asyncio.run(store.aids_matching({"ref": "doc-1"})) == ["a"]
    local = QdrantKeywordStore()
    assert local.ids_matching() == []
    local.add(["a", "b"], ["x", "y"], [{"ref": "doc-1"}, {"ref": "doc-2"}])
    assert asyncio.run(local.aids_matching({"ref": {"$in": ["doc-2"]}})) == ["b"]


@pytest.mark.parametrize("value", [2**63, 2**64, -(2**63) - 1, [1, 2**70], {"deep": [2**64]}])
def test_integers_beyond_64_bits_are_refused_before_anything_is_written(tmp_path: Path, value: Any) -> None:
    # Qdrant cannot hold them (qdrant-edge turns 2**64 into a float): a range would match what no filter may.
    store = QdrantEdgeKeywordStore(path=tmp_path)
    try:
        store.add(["keep"], ["alpha"], [{"k": 1}])
        with pytest.raises(InvalidArgumentError, match="int64"):
            store.add(["a", "b"], ["alpha", "alpha"], [{"k": 1}, {"k": value}])
        assert store.ids_matching() == ["keep"]
    finally:
        store.close()
    dense = QdrantDenseStore(HashingEmbedding(dim=DIM))
    with pytest.raises(InvalidArgumentError, match="int64"):
        dense.add(["a"], ["alpha"], [{"k": value}])
    assert dense.count() == 0


def test_langchain_points_without_doc_id_are_listed_by_their_point_id() -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    client.create_collection("lc", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    pid = str(uuid.uuid4())
    client.upsert("lc", points=[models.PointStruct(id=pid, vector=[1.0] * DIM,
                                                   payload={"page_content": "x", "metadata": {"s": 1}})])
    store = QdrantDenseStore(HashingEmbedding(dim=DIM), client=client, collection_name="lc")
    assert store.ids_matching({"s": 1.0}) == [pid]
    assert store.ids_matching({"s": {"$exists": False}}) == []


@pytest.mark.parametrize("kind", KINDS)
def test_thousands_of_integers_match_exactly_what_the_reference_matches(stores: Any, kind: str) -> None:
    # Past 8 integers on a field without a numeric index the compile builds a shallow tree of ranges (16 children
    # a node): every level of it must stay exact, floats equal to an integer and lists included.
    store = stores(kind)
    for flt in ({"k": list(range(-2_000, 2_000))}, {"k": [3 * v - 1 for v in range(3_000)]},
                {"k": {"$nin": list(range(-500, 1_500))}}, {"$or": [{"k": list(range(100, 400))}, {"k": [2]}]}):
        node = normalize_filter(flt)
        assert store.ids_matching(flt) == sorted(i for i, meta in DOCS.items() if matches(meta, node)), flt
