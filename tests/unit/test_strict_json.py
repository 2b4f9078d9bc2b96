"""The strict JSON reader every door shares: ``json.loads`` exactly, except that a repeated key in any object, at
any depth, is a :class:`DuplicateKeyError` naming the key and where it is."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.strict_json import DuplicateKeyError, loads

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=25)


@given(VALUES)
def test_a_text_without_repeats_reads_as_json_loads_reads_it(value: Any) -> None:
    text = json.dumps(value)
    assert loads(text) == json.loads(text)
    assert loads(text.encode("utf-8")) == json.loads(text)


@given(VALUES, st.text(max_size=6), st.data())
def test_a_repeat_anywhere_is_refused_with_its_path(value: Any, key: str, data: st.DataObject) -> None:
    # put {key: 1, key: 2} somewhere inside the value, recording the path that leads there
    path: list[str | int] = []
    node = value
    while isinstance(node, (list, dict)) and node and data.draw(st.booleans()):
        step = data.draw(st.sampled_from(sorted(node, key=str) if isinstance(node, dict) else range(len(node))))
        path.append(step)
        node = node[step]
    marker = "\x00mark\x00"
    outer = value if path else marker
    if path:
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = marker
    repeat = f"{{{json.dumps(key)}: 1, {json.dumps(key)}: 2}}"
    text = json.dumps(outer).replace(json.dumps(marker), repeat)
    with pytest.raises(DuplicateKeyError) as err:
        loads(text, what="the body")
    assert err.value.key == key
    assert err.value.path == (*path, key)
    assert str(err.value).startswith(f"the body repeats the key {key!r}")


@pytest.mark.parametrize(("text", "path"), [
    ('{"filter": {"session_id": [0]}, "filter": {}}', ("filter",)),
    ('{"filter": {"$or": [{"n": 1}, {"n": {"$gt": 1, "$gt": 9}}]}}', ("filter", "$or", 1, "n", "$gt")),
    ('[{"a": 1, "a": 1}]', (0, "a")),  # equal values too: still two keys
    ('{"x": {"a": 1, "b": 2, "a": 3}}', ("x", "a")),
])
def test_the_message_names_the_key_and_where_it_is(text: str, path: tuple[object, ...]) -> None:
    with pytest.raises(InvalidArgumentError, match="repeats the key") as err:
        loads(text)
    assert isinstance(err.value, DuplicateKeyError)
    assert err.value.path == path


def test_what_is_not_json_stays_json_loads_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads('{"a": ')
    assert loads('{"a": NaN}')["a"] != loads('{"a": NaN}')["a"]  # read as json.loads reads it
