"""Every filter door refuses the JSON forms of other stores' dialects by name (the parser runs
:func:`~rrf_retriever.scope.dialects.refuse_foreign` first): Qdrant's must / should / must_not / min_should,
Elasticsearch's bool / term / terms / range / match, Weaviate's path / operator / valueText, Milvus expressions.
Only the SHAPE is refused: a field called ``must`` or ``path`` with a value of ours is a field, as before."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.scope.dialects import from_dialect
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import AllOf, AnyOf, Exists, FilterNode, Match, Not, Range
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.unit.stores.filter_strategies import KEYS, filters

QDRANT = "Qdrant filter in JSON"
ELASTIC = "Elasticsearch query"
WEAVIATE = "Weaviate where filter"
MILVUS = "Milvus boolean expression"

FOREIGN = [
    ({"must": [{"key": "session_id", "match": {"any": [1, 2]}}]}, QDRANT),
    ({"should": [{"key": "lang", "match": {"value": "en"}}, {"has_id": [1]}]}, QDRANT),
    ({"must_not": {"key": "lang", "match": {"value": "de"}}}, QDRANT),
    ({"must_not": [{"is_empty": {"key": "tags"}}]}, QDRANT),
    ({"min_should": {"conditions": [{"key": "n", "range": {"gte": 1}}], "min_count": 1}}, QDRANT),
    ({"must": [{"key": "n", "range": {"gte": 1, "lt": 5}}], "should": [{"key": "lang", "match": {"value": "en"}}]},
     QDRANT),
    ({"key": "lang", "match": {"value": "en"}}, QDRANT),  # a lone field condition as the filter
    ({"$or": [{"lang": "en"}, {"must": [{"key": "n", "match": {"value": 1}}]}]}, QDRANT),  # inside our logic
    ({"bool": {"must": [{"term": {"metadata.lang.keyword": "en"}}], "filter": [{"range": {"n": {"gte": 1}}}]}},
     ELASTIC),
    ({"term": {"lang": "en"}}, ELASTIC),
    ({"terms": {"session_id": [1, 2]}}, ELASTIC),
    ({"range": {"n": {"gte": 1, "lt": 5}}}, ELASTIC),
    ({"match": {"text": "backups"}}, ELASTIC),
    ([{"term": {"lang": "en"}}, {"range": {"n": {"gt": 1}}}], ELASTIC),
    ({"path": ["lang"], "operator": "Equal", "valueText": "en"}, WEAVIATE),
    ({"operator": "And", "operands": [{"path": ["n"], "operator": "GreaterThan", "valueInt": 1}]}, WEAVIATE),
    ({"path": ["n"], "operator": "LessThanEqual", "valueNumber": 2.5}, WEAVIATE),
    ("session_id in [1, 2]", MILVUS),
    ('lang == "en"', MILVUS),
    ("n >= 1 && n < 5", MILVUS),
    ({"$and": [{"lang": "en"}, 'tags like "a%"']}, MILVUS),
]

OURS = [  # a field called like a dialect's word, with a value of ours: a field
    ({"must": "x"}, Match("must", ("x",))),
    ({"must": ["a", "b"]}, Match("must", ("a", "b"))),
    ({"should": {"$in": [1, 2]}}, Match("should", (1, 2))),
    ({"must_not": {"$exists": True}}, Exists("must_not")),
    ({"path": ["a", "b"]}, Match("path", ("a", "b"))),
    ({"path": "docs/a.md", "operator": "Equal"},
     AllOf((Match("operator", ("Equal",)), Match("path", ("docs/a.md",))))),
    ({"key": "a", "match": {"$eq": 1}}, AllOf((Match("key", ("a",)), Match("match", (1,))))),
    ({"range": {"$gt": 1}}, Range("range", gt=1)),
    ({"term": "en", "bool": True}, AllOf((Match("bool", (True,)), Match("term", ("en",))))),
    ({"value": 3, "operator": "And"}, AllOf((Match("operator", ("And",)), Match("value", (3,))))),
    ({"min_should": 2}, Match("min_should", (2,))),
]


@pytest.mark.parametrize(("spec", "dialect"), FOREIGN)
def test_each_dialect_is_refused_by_name_and_pointed_to_ours(spec: Any, dialect: str) -> None:
    with pytest.raises(InvalidFilterError, match=dialect) as err:
        normalize_filter(spec)
    assert "'$gte'" in str(err.value) and "'$in'" in str(err.value)  # what to write instead


@pytest.mark.parametrize(("spec", "node"), OURS)
def test_a_field_named_like_a_dialect_word_stays_a_field(spec: dict[str, Any], node: FilterNode) -> None:
    assert normalize_filter(spec) == node


@pytest.mark.parametrize(("spec", "node"), [*OURS, ({"path": ["genre"], "operator": "Equal"},
                                                     AllOf((Match("operator", ("Equal",)), Match("path", ("genre",)))))])
def test_the_framework_door_reads_a_filter_as_the_parser_does(spec: dict[str, Any], node: FilterNode) -> None:
    """from_dialect (LangChain's door) and the parser (the engine's, the stores', the service's) agree: a field
    named like a dialect's word is a field at both (Weaviate's path + operator without a typed value was refused
    by one and read as two fields by the other)."""
    assert normalize_filter(from_dialect(spec)) == node


@pytest.mark.parametrize(("spec", "dialect"), FOREIGN)
def test_the_framework_door_refuses_what_the_parser_refuses(spec: Any, dialect: str) -> None:
    with pytest.raises(InvalidFilterError, match=dialect):
        from_dialect(spec)


def test_a_field_named_operator_holding_a_list_is_a_field_at_both_doors() -> None:
    spec = {"operator": ["Equal", "And"], "path": ["a"]}  # was a raw TypeError (a list is not hashable)
    assert from_dialect(spec) == spec
    assert normalize_filter(spec) == AllOf((Match("operator", ("Equal", "And")), Match("path", ("a",))))


def test_the_engine_refuses_them_before_any_store_is_asked() -> None:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(16)), "keyword": FTS5KeywordStore()})
    try:
        engine.add(["a", "b"], ["alpha one", "alpha two"], [{"must": "x"}, {"must": "y"}])
        for spec, dialect in FOREIGN:
            with pytest.raises(InvalidFilterError, match=dialect):
                engine.search("alpha", filter=spec)
            with pytest.raises(InvalidFilterError, match=dialect):
                engine.delete_where(spec)
        assert [h.id for h in engine.search("alpha", filter={"must": "x"}).hits] == ["a"]
        assert engine.count() == {"dense": 2, "keyword": 2}
    finally:
        engine.close()


def test_dialect_objects_are_refused_by_name() -> None:
    models = pytest.importorskip("qdrant_client.models")
    flt = models.Filter(must=[models.FieldCondition(key="lang", match=models.MatchValue(value="en"))])
    with pytest.raises(InvalidFilterError, match="Qdrant filter model"):
        normalize_filter(flt)  # type: ignore[arg-type]  # the attack: another store's object


# -- property: any filter in our language parses as before, whatever its field names -------------------------------

#: Renamings of the strategy's keys (a, b, n, tags) to dialect words, in the same sorted order (so the parsed
#: trees line up part by part).
RENAMINGS = [
    dict(zip(KEYS, ("bool", "must", "path", "should"))),
    dict(zip(KEYS, ("match", "must_not", "operator", "term"))),
    dict(zip(KEYS, ("key", "min_should", "query", "terms"))),
    dict(zip(KEYS, ("filter", "must", "range", "value"))),
]


def _rename_spec(spec: Any, names: dict[str, str]) -> Any:
    if isinstance(spec, dict):
        return {names.get(k, k): _rename_spec(v, names) if k.startswith("$") else _rename_ops(v, names)
                for k, v in spec.items()}
    if isinstance(spec, list):
        return [_rename_spec(v, names) for v in spec]
    return spec


def _rename_ops(value: Any, names: dict[str, str]) -> Any:  # a key's operators hold values, never field names
    return value


def _rename_node(node: FilterNode, names: dict[str, str]) -> FilterNode:
    if isinstance(node, Match):
        return Match(names[node.key], node.values)
    if isinstance(node, Range):
        return Range(names[node.key], gt=node.gt, gte=node.gte, lt=node.lt, lte=node.lte)
    if isinstance(node, Exists):
        return Exists(names[node.key])
    if isinstance(node, Not):
        return Not(_rename_node(node.part, names))
    assert isinstance(node, (AllOf, AnyOf))
    return type(node)(tuple(_rename_node(p, names) for p in node.parts))


@given(spec=filters(), names=st.sampled_from(RENAMINGS))
def test_any_filter_of_ours_parses_unchanged_with_dialect_words_as_field_names(
        spec: dict[str, Any], names: dict[str, str]) -> None:
    renamed = _rename_spec(spec, names)
    assert normalize_filter(renamed) == _rename_node(normalize_filter(spec), names)  # type: ignore[arg-type]


@pytest.mark.parametrize(("spec", "dialect"), FOREIGN)
def test_a_store_called_directly_refuses_them_by_name(spec: Any, dialect: str) -> None:
    """The README's "at every door": the stores' own search, without the engine in front."""
    keyword, dense = FTS5KeywordStore(), QdrantDenseStore(HashingEmbedding(16))
    keyword.add(["a"], ["hybrid search"], [{"lang": "en"}])
    dense.add(["a"], ["hybrid search"], [{"lang": "en"}])
    with pytest.raises(InvalidFilterError, match=dialect):
        keyword.search("hybrid", 5, filter=spec)
    with pytest.raises(InvalidFilterError, match=dialect):
        dense.search(HashingEmbedding(16).embed_query("hybrid"), 5, filter=spec)
    assert keyword.count() == dense.count() == 1
