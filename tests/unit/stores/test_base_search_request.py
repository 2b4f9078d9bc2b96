"""``SearchRequest.checked``, the one door of every store's ``search``: hostile arguments are refused with our error
types before a store sees them; valid ones come out as the typed request the engine would have built."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError, InvalidFilterError, InvalidTypeError
from rrf_retriever.scope.parse import Scope, normalize_scope
from rrf_retriever.stores.base import NO_SCOPE, SearchRequest
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.validate import MAX_LIMIT


def checked(**given: Any) -> SearchRequest:
    args: dict[str, Any] = {"kind": "dense", "query": "q", "vector": None, "limit": 5, **given}
    return SearchRequest.checked(**args)


@pytest.mark.parametrize(("given", "error", "says"), [
    ({"vector": "0.1, 0.2"}, InvalidTypeError, "sequence of floats, not str"),
    ({"vector": b"\x00\x01"}, InvalidTypeError, "not bytes"),
    ({"vector": {"x": 1.0}}, InvalidTypeError, "not dict"),
    ({"vector": [0.1, "0.2x"]}, InvalidTypeError, "numbers only"),
    ({"vector": [0.1, None]}, InvalidTypeError, "numbers only"),
    ({"vector": []}, DimensionMismatchError, "empty"),
    ({"vector": [0.1, math.nan]}, DimensionMismatchError, "NaN or infinity"),
    ({"vector": [math.inf]}, DimensionMismatchError, "NaN or infinity"),
    ({"limit": True}, InvalidTypeError, "not bool"),
    ({"limit": 2.0}, InvalidTypeError, "not float"),
    ({"limit": "5"}, InvalidTypeError, "not str"),
    ({"limit": -1}, InvalidArgumentError, "between 0"),
    ({"limit": MAX_LIMIT + 1}, InvalidArgumentError, "between 0"),
    ({"query": None}, InvalidTypeError, "query must be a str"),
    ({"query": b"q"}, InvalidTypeError, "query must be a str"),
    ({"filter": (None, frozenset())}, InvalidFilterError, "not tuple"),  # a Scope's shape, not a Scope
    ({"filter": ["lang", "en"]}, InvalidFilterError, "mapping"),
    ({"filter": {"lang": math.nan}}, InvalidFilterError, "not the float nan"),
    ({"exclude_ids": "abc"}, InvalidTypeError, "list of ids, not str"),
    ({"exclude_ids": [1]}, InvalidTypeError, "strings"),
    ({"filter": NO_SCOPE, "exclude_ids": ["a"]}, InvalidArgumentError, "beside a Scope"),
])
def test_hostile_arguments_are_refused_with_our_errors(given: dict[str, Any], error: type[Exception],
                                                        says: str) -> None:
    with pytest.raises(error, match=says):
        checked(**given)


def test_valid_arguments_become_the_typed_request() -> None:
    out = checked(vector=(1, 2.5), limit=0, filter={"lang": "en"}, exclude_ids=["a", "a"])
    assert out == SearchRequest("dense", "q", [1.0, 2.5], 0, normalize_scope({"lang": "en"}, ["a"]))
    assert isinstance(out.vector, list) and all(type(x) is float for x in out.vector)
    assert out.filter == out.scope.filter and out.exclude_ids == frozenset({"a"})
    assert checked(limit=MAX_LIMIT).limit == MAX_LIMIT


def test_a_scope_passes_through_as_it_is_and_an_empty_exclusion_beside_it_is_no_second_list() -> None:
    scope = normalize_scope({"lang": "en"}, ["x"])
    assert checked(filter=scope).scope is scope
    assert checked(filter=scope, exclude_ids=[]).scope is scope
    assert checked().scope == NO_SCOPE == Scope(None, frozenset())


def test_a_store_door_refuses_before_searching_and_reads_the_request_as_its_typed_entry() -> None:
    store = FTS5KeywordStore()
    store.add(["a", "b"], ["hybrid search", "search engines"], [{"n": 1}, {"n": 2}])
    with pytest.raises(InvalidTypeError):
        store.search("search", True)  # type: ignore[arg-type]  # a bool is not a limit
    with pytest.raises(InvalidFilterError):
        store.search("search", 5, ("n", 1))  # type: ignore[arg-type]
    door = [h.id for h in store.search("search", 5, {"n": 2}, ["a"])]
    typed = [h.id for h in store.search_request(SearchRequest("keyword", "search", None, 5,
                                                              normalize_scope({"n": 2}, ["a"])))]
    assert door == typed == ["b"]
