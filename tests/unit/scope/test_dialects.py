"""Other stores' filter dialects at the door (framework-free): PGVector's translated, foreign ones refused by name."""

from __future__ import annotations

import pytest

from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.scope.dialects import from_dialect
from rrf_retriever.scope.parse import normalize_filter


def test_pgvector_operators_become_ours() -> None:
    pg = {"or": [{"genre": {"in": ["sf"]}}, {"and": [{"year": {"gte": 2020, "lt": 2024}}, {"tag": {"ne": "x"}}]}],
          "n": {"nin": [1, 2]}, "m": {"eq": 3}, "p": {"gt": 1, "lte": 9}}
    ours = {"$or": [{"genre": {"$in": ["sf"]}}, {"$and": [{"year": {"$gte": 2020, "$lt": 2024}},
                                                          {"tag": {"$ne": "x"}}]}],
            "n": {"$nin": [1, 2]}, "m": {"$eq": 3}, "p": {"$gt": 1, "$lte": 9}}
    assert from_dialect(pg) == ours
    assert normalize_filter(from_dialect(pg)) == normalize_filter(ours)  # type: ignore[arg-type]  # a mapping


@pytest.mark.parametrize("spec", [{"year": {"$gte": 2020}}, {"tag": ["a", "b"]}, {"$not": {"tag": "x"}},
                                  {"and": "a field named and"}, {"path": "a field named path"},
                                  {"operator": "alice", "value": 3}, {"operator": "Equal", "path": "p"}])
def test_ours_is_unchanged(spec: dict[str, object]) -> None:
    assert from_dialect(spec) == spec


@pytest.mark.parametrize(("spec", "dialect"), [
    ({"path": ["genre"], "operator": "Equal", "valueText": "sf"}, "Weaviate"),
    ({"operator": "And", "operands": [{"path": ["a"], "operator": "Equal", "valueInt": 1}]}, "Weaviate"),
    ({"bool": {"must": [{"term": {"metadata.genre.keyword": "sf"}}]}}, "Elasticsearch"),
    ({"term": {"metadata.genre.keyword": "sf"}}, "Elasticsearch"),
    ([{"range": {"metadata.year": {"gt": 2020}}}], "Elasticsearch"),
    ('(( genre == "sf" ) and ( year > 2020 ))', "Milvus"),
    ({"title": {"like": "%sf%"}}, "like"),
    ({"title": {"$ilike": "%sf%"}}, "ilike"),
])
def test_foreign_dialects_are_refused_by_name(spec: object, dialect: str) -> None:
    with pytest.raises(InvalidFilterError, match=dialect) as err:
        from_dialect(spec)
    assert "$" in str(err.value)  # says what to pass instead


def test_a_qdrant_model_is_refused_by_name() -> None:
    models = pytest.importorskip("qdrant_client.models")
    flt = models.Filter(must=[models.FieldCondition(key="genre", match=models.MatchValue(value="sf"))])
    with pytest.raises(InvalidFilterError, match="Qdrant filter model"):
        from_dialect(flt)


def test_a_field_named_like_an_elasticsearch_clause_with_our_operators_is_ours() -> None:
    assert from_dialect({"range": {"$gt": 1}}) == {"range": {"$gt": 1}}
    assert from_dialect({"range": {"gt": 1}}) == {"range": {"$gt": 1}}
