"""types.scope_key: the one typed comparison behind every store's filter (and scope.matches)."""

from __future__ import annotations

import math

import pytest

from rrf_retriever.scope import matches, scope_key


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
    assert matches({"k": a}, {"k": (b,)}) is same


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, None, [1], {"a": 1}, b"x"])
def test_values_no_filter_can_match_have_no_key(value: object) -> None:
    assert scope_key(value) is None
