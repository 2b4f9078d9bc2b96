"""The filter language of rrf_retriever.scope.tree: scope_key's typed comparison, every operator in closed
form, every malformed filter refused (InvalidFilterError, never an unscoped search), and the algebra of the
reference evaluator (idempotent normalisation, double negation, De Morgan) as properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever import InvalidFilterError
from rrf_retriever.errors import FilterError, InvalidArgumentError, InvalidTypeError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import (
    AllOf,
    AnyOf,
    Exists,
    Match,
    NormalizedFilter,
    Not,
    Range,
    matches,
    merged_equalities,
    scope_key,
)
from tests.unit.stores.filter_strategies import filter_nodes, filters, metadatas


@pytest.mark.parametrize(("a", "b", "same"), [
    (True, 1, False),  # a bool is never a number
    (False, 0, False),
    (2, 2.0, True),  # one number, however written
    ("2", 2, False),
    ("x", "x", True),
    (True, True, True),
])
def test_scope_key_keeps_types_apart_and_numbers_together(a: object, b: object, same: bool) -> None:
    assert (scope_key(a) == scope_key(b)) is same
    assert matches({"k": a}, normalize_filter({"k": (b,)})) is same


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, None, [1], {"a": 1}, b"x"])
def test_values_no_filter_can_match_have_no_key(value: object) -> None:
    assert scope_key(value) is None


# ------------------------------------------------------------------------------------------ the filter language

DOCS: dict[str, dict[str, object]] = {
    "int": {"n": 3, "tag": "x"},
    "float": {"n": 2.5},
    "same": {"n": 3.0},
    "str": {"n": "3"},
    "bool": {"n": True},
    "list": {"n": [1, 7], "tag": ["x", "y"]},
    "empty": {"n": []},
    "none": {"n": None},
    "dict": {"n": {"a": 1}},
    "missing": {},
}


def ids(flt: object) -> list[str]:
    node = normalize_filter(flt)  # type: ignore[arg-type]
    return [name for name, meta in DOCS.items() if matches(meta, node)]


@pytest.mark.parametrize(("flt", "expected"), [
    ({"n": 3}, ["int", "same"]),  # 3 == 3.0; never "3" or True
    ({"n": {"$eq": 3}}, ["int", "same"]),
    ({"n": {"$eq": True}}, ["bool"]),
    ({"n": {"$eq": "3"}}, ["str"]),
    ({"n": {"$ne": 3}}, ["float", "str", "bool", "list", "empty", "none", "dict", "missing"]),  # missing keys too
    ({"n": {"$ne": 1}}, ["int", "float", "same", "str", "bool", "empty", "none", "dict", "missing"]),  # [1, 7] has 1
    ({"n": {"$in": [1, "3"]}}, ["str", "list"]),
    ({"n": {"$in": []}}, []),
    ({"n": []}, []),
    ({"n": {"$nin": []}}, list(DOCS)),
    ({"n": {"$nin": [3, 7]}}, ["float", "str", "bool", "empty", "none", "dict", "missing"]),
    ({"n": {"$gt": 2.5}}, ["int", "same", "list"]),  # any list element in range; never "3" or True
    ({"n": {"$gte": 2.5}}, ["int", "float", "same", "list"]),
    ({"n": {"$lt": 2.5}}, ["list"]),
    ({"n": {"$lte": 2.5}}, ["float", "list"]),
    ({"n": {"$gte": 1, "$lt": 3}}, ["float", "list"]),  # several operators on one key: AND
    ({"n": {"$gt": 1, "$lt": 7}}, ["int", "float", "same"]),  # [1, 7]: no single element in (1, 7)
    ({"n": {"$exists": True}}, ["int", "float", "same", "str", "bool", "list", "dict"]),
    ({"n": {"$exists": False}}, ["empty", "none", "missing"]),
    ({"n": {"$not": {"$gte": 3}}}, ["float", "str", "bool", "empty", "none", "dict", "missing"]),
    ({"$not": {"n": 3}}, ["float", "str", "bool", "list", "empty", "none", "dict", "missing"]),
    ({"$or": [{"n": 3}, {"tag": "y"}]}, ["int", "same", "list"]),
    ({"$and": [{"n": 3}, {"tag": "x"}]}, ["int"]),
    ({"tag": "x", "$or": [{"n": 3}, {"n": 7}]}, ["int", "list"]),  # shorthand mixes with logic
    ({"tag": {"$in": ["x"]}, "n": {"$ne": 7}}, ["int"]),
])
def test_every_operator_closed_form(flt: object, expected: list[str]) -> None:
    assert ids(flt) == expected


def test_the_normalized_form() -> None:
    assert normalize_filter({"b": "x", "a": [1, 2]}) == AllOf((Match("a", (1, 2)), Match("b", ("x",))))
    assert normalize_filter({"a": 1}) == Match("a", (1,))
    assert normalize_filter({"n": {"$gte": 1, "$lt": 5}}) == Range("n", gte=1, lt=5)
    assert normalize_filter({"n": {"$ne": 1, "$gt": 0}}) == AllOf((Not(Match("n", (1,))), Range("n", gt=0)))
    assert normalize_filter({"n": {"$nin": [1, 1.0, True]}}) == Not(Match("n", (1, True)))
    assert normalize_filter({"n": {"$exists": False}}) == Not(Exists("n"))
    assert normalize_filter({"$or": [{"a": 2.0}]}) == AnyOf((Match("a", (2,)),))
    assert normalize_filter(None) is None and normalize_filter({}) is None
    assert NormalizedFilter is not None  # the old public name still imports
    node = AllOf((Match("k", ("v",)), Not(AnyOf(()))))
    assert normalize_filter(node) is node  # a valid node passes through unchanged
    assert normalize_filter(Match("k", (2.0,))) == Match("k", (2,))  # canonicalised like the mapping form


def test_filter_error_is_invalid_filter_error() -> None:
    assert FilterError is InvalidFilterError and issubclass(InvalidFilterError, InvalidArgumentError)
    assert issubclass(InvalidFilterError, ValueError)


def _deep(depth: int) -> dict[str, object]:
    flt: dict[str, object] = {"k": 1}
    for _ in range(depth):
        flt = {"$not": flt}
    return flt


@pytest.mark.parametrize("flt", [
    {"n": {"$regex": "a"}},  # unknown operator
    {"$nor": [{"n": 1}]},
    {"n": {"$gt": "3"}},  # a bound must be a number
    {"n": {"$gt": True}},  # a bool is not a number
    {"n": {"$lte": None}},
    {"n": {"$gt": math.nan}},
    {"n": {"$lt": math.inf}},
    {"n": {"$gt": 2**64}},
    {"n": {"$in": 3}},  # $in takes a list
    {"n": {"$in": "abc"}},
    {"n": {"$nin": {"a": 1}}},
    {"n": {"$eq": [1, 2]}},  # one value (use $in)
    {"n": {"$ne": {"x": 1}}},
    {"n": {"$exists": 1}},
    {"n": {"$exists": "yes"}},
    {"n": {"$not": 3}},
    {"n": {"$not": {}}},
    {"n": {}},  # no operator
    {"n": {"nested": 1}},  # a mapping is not a value
    {"n": {"$eq": 1, "x": 2}},
    {"n": None},  # None is not a value: $exists says "missing"
    {"n": [1, None]},
    {"n": 1.5},  # a fraction is not an equality value (ranges take it)
    {"n": math.nan},
    {"n": "a\x00b"},
    {"n": "\ud800"},
    {"$and": {"n": 1}},  # $and takes a list
    {"$and": []},  # an empty $and / $or is refused, as in Mongo
    {"$or": []},
    {"$or": [{}]},
    {"$or": [1]},
    {"$not": {}},
    {"$not": [{"n": 1}]},
    {"bad key": 1},
    {"": 1},
    {"a.b": 1},
    {1: 1},
    {"n": {"$in": list(range(10_001))}},
    _deep(40),
    {"$or": [{"k": i} for i in range(10_001)]},
    {f"k{i}": 1 for i in range(10_001)},
    ["n"],
    "n=1",
])
def test_every_malformed_filter_is_invalid_filter_error(flt: object) -> None:
    with pytest.raises(InvalidFilterError):
        normalize_filter(flt)  # type: ignore[arg-type]


@pytest.mark.parametrize("node", [
    Match("bad key", (1,)),
    Match("k", [1]),  # values must be a tuple
    Match("k", (None,)),
    Match("k", (1.5,)),
    Range("k"),  # no bound
    Range("k", gt=True),
    Range("k", lt="3"),
    Range("k", gte=math.nan),
    AllOf([Match("k", (1,))]),  # parts must be a tuple
    Not("k"),
    AnyOf((Exists("k"), {"k": 1})),  # a mapping inside a node tree
])
def test_a_malformed_node_is_invalid_filter_error(node: object) -> None:
    with pytest.raises(InvalidFilterError):
        normalize_filter(node)  # type: ignore[arg-type]


def test_limits_are_accepted_up_to_the_bound() -> None:
    assert normalize_filter(_deep(20)) is not None
    assert len(normalize_filter({"n": {"$in": list(range(10_000))}}).values) == 10_000  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(flt=filters())
def test_normalize_is_idempotent(flt: dict[str, object]) -> None:
    node = normalize_filter(flt)
    assert node is not None
    assert normalize_filter(node) is node
    assert normalize_filter(flt) == node  # canonical: the same mapping always gives an equal tree


@settings(max_examples=300, deadline=None)
@given(node=filter_nodes(), other=filter_nodes(), meta=metadatas())
def test_double_negation_and_de_morgan(node: NormalizedFilter, other: NormalizedFilter, meta: dict) -> None:
    assert matches(meta, Not(Not(node))) == matches(meta, node)
    assert matches(meta, Not(AllOf((node, other)))) == matches(meta, AnyOf((Not(node), Not(other))))
    assert matches(meta, Not(AnyOf((node, other)))) == matches(meta, AllOf((Not(node), Not(other))))
    assert matches(meta, AllOf(())) and not matches(meta, AnyOf(()))


@settings(max_examples=200, deadline=None)
@given(meta=metadatas(), key=st.sampled_from(["a", "b", "n", "tags"]), value=st.integers(-2, 2))
def test_ne_is_the_complement_of_eq_and_nin_of_in(meta: dict, key: str, value: int) -> None:
    assert matches(meta, normalize_filter({key: {"$ne": value}})) != matches(meta, normalize_filter({key: {"$eq": value}}))
    assert matches(meta, normalize_filter({key: {"$nin": [value, "x"]}})) != matches(
        meta, normalize_filter({key: {"$in": [value, "x"]}}))
    assert matches(meta, normalize_filter({key: {"$exists": False}})) != matches(
        meta, normalize_filter({key: {"$exists": True}}))


def test_matches_takes_a_parsed_filter_and_integers_beyond_64_bits_never_match() -> None:
    with pytest.raises(InvalidTypeError, match="parsed filter"):
        matches({"n": 2}, {"n": [1, 2]})  # type: ignore[arg-type]  # the refusal under test
    assert matches({"n": 2}, normalize_filter({"n": [1, 2]}))
    assert not matches({"n": 2**64}, normalize_filter({"n": {"$gt": 0}}))  # neither SQLite nor Qdrant holds it exactly
    assert matches({"n": 2**53 + 1}, normalize_filter({"n": {"$gt": float(2**53)}}))  # exact, not through float64


_KEYS = st.sampled_from(["a", "b"])
_VALUES = st.lists(st.one_of(st.integers(-2, 2), st.sampled_from(["x", "1"]), st.booleans()), max_size=3)
_PARTS = st.lists(st.one_of(
    st.builds(lambda k, v: Match(k, tuple(v)), _KEYS, _VALUES),
    st.builds(lambda k, v: Not(Match(k, tuple(v))), _KEYS, _VALUES),
    st.builds(lambda k, g: Range(k, gte=g), _KEYS, st.integers(-2, 2)),
), max_size=6)
_METADATA = st.dictionaries(_KEYS, st.one_of(st.integers(-2, 2), st.sampled_from(["x", "1"]), st.booleans(),
                                             st.lists(st.integers(-2, 2), max_size=2)), max_size=2)


@settings(max_examples=300, deadline=None)
@given(_PARTS, st.booleans(), _METADATA)
def test_merged_equalities_mean_what_the_parts_meant(parts: list, any_of: bool, metadata: dict) -> None:
    node = AnyOf(tuple(parts)) if any_of else AllOf(tuple(parts))
    merged = merged_equalities(node)
    assert matches(metadata, type(node)(merged)) == matches(metadata, node)
    keys = [p.key if isinstance(p, Match) else p.part.key for p in merged
            if isinstance(p, Match if any_of else Not) and isinstance(getattr(p, "part", p), Match)]
    assert len(keys) == len(set(keys))  # each key's equalities in one part
    assert len(merged) <= len(parts)


def test_merged_equalities_keep_the_values_types_and_the_other_parts_in_order() -> None:
    node = AnyOf((Match("n", (1,)), Range("m", gt=0), Match("n", ("1", True)), Exists("e")))
    assert merged_equalities(node) == (Match("n", (1, "1", True)), Range("m", gt=0), Exists("e"))
    negated = AllOf((Not(Match("n", (1,))), Match("n", (2,)), Not(Match("n", (3,)))))
    assert merged_equalities(negated) == (Not(Match("n", (1, 3))), Match("n", (2,)))
    untouched = AnyOf((Match("n", (1,)), Match("m", (1,))))
    assert merged_equalities(untouched) is untouched.parts
