"""A value is validated once, at the door: a query's filter is parsed once per query, whatever the stack and however
many legs search it (the stores take the engine's :class:`~rrf_retriever.scope.parse.Scope` as it is)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rrf_retriever import EnsembleRRFRetriever, FTS5KeywordStore, HashingEmbedding
from rrf_retriever.scope import parse as scope_parse
from rrf_retriever.scope.parse import Scope, normalize_scope

TEXTS = [f"note {i} about rotating the api token" for i in range(12)]
IDS = [f"d{i}" for i in range(12)]
METAS = [{"session_id": i % 3, "n": i} for i in range(12)]
FILTER = {"session_id": {"$in": [0, 1]}, "n": {"$gte": 2}}


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    calls: list[object] = []
    real = scope_parse.parse

    def counting(spec: object) -> Any:
        calls.append(spec)
        return real(spec)

    monkeypatch.setattr(scope_parse, "parse", counting)
    yield calls


@pytest.mark.parametrize("stack", ["default", "fts5", "fts5-and-or", "joint-local"])
def test_a_query_filter_is_parsed_once_on_every_stack(stack: str, parse_calls: list[object]) -> None:
    embedding = HashingEmbedding(16)
    if stack == "default":
        r = EnsembleRRFRetriever.from_texts(TEXTS, embedding, metadatas=METAS, ids=IDS)
    elif stack == "joint-local":
        r = EnsembleRRFRetriever.from_texts(TEXTS, embedding, metadatas=METAS, ids=IDS, keyword="qdrant",
                                        dense="qdrant")
    else:
        keyword = FTS5KeywordStore(mode="and_or" if stack == "fts5-and-or" else "or")
        r = EnsembleRRFRetriever.from_texts(TEXTS, embedding, metadatas=METAS, ids=IDS, keyword=keyword)
    parse_calls.clear()
    result = r.search("rotating api token", top_k=5, filter=FILTER, exclude_ids=["note-x"])
    assert {leg.name for leg in result.trace.legs if leg.called} == {"dense", "keyword"}
    assert result.ids and all(METAS[int(i[1:])]["session_id"] in (0, 1) and int(i[1:]) >= 2 for i in result.ids)
    assert len(parse_calls) == 1, parse_calls


def test_a_scope_passes_a_store_door_unchecked_and_refuses_a_second_exclude_list() -> None:
    scope = normalize_scope({"session_id": 1}, ["a"])
    assert isinstance(scope, Scope) and normalize_scope(scope) is scope
    store = FTS5KeywordStore()
    store.add(["a", "b", "c"], ["token note", "token note", "token note"], [{"session_id": 1}, {"session_id": 1}, {}])
    assert [h.id for h in store.search("token", 5, scope)] == ["b"]
    with pytest.raises(ValueError, match="exclude_ids"):
        store.search("token", 5, scope, ["b"])


@pytest.mark.parametrize("scope", [
    Scope({"session_id": 1}, frozenset()),  # an unparsed filter
    Scope("session_id = 1", frozenset()),
    Scope(None, ["d1"]),  # a list, not a frozenset
    Scope(None, "d1"),
    Scope(None, frozenset({1})),  # an int id: "1" would never be excluded, with no error
])
def test_a_hand_built_scope_of_wrong_parts_is_our_error_and_nothing_is_lost(scope: Scope) -> None:
    from rrf_retriever.errors import InvalidTypeError

    with pytest.raises(InvalidTypeError, match="normalize_scope"):
        normalize_scope(scope)
    with FTS5KeywordStore() as store:
        store.add(IDS, TEXTS, METAS)
        with pytest.raises(InvalidTypeError):
            store.search("token", 5, filter=scope)
        assert {h.id for h in store.search("token", 20)} == set(IDS)  # the store still answers, whole


def test_a_scope_made_by_normalize_scope_still_passes_through() -> None:
    scope = normalize_scope(FILTER, ["d1"])
    assert normalize_scope(scope) is scope
    assert normalize_scope(Scope(None, frozenset())) == Scope(None, frozenset())
