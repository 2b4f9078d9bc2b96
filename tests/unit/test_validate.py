"""validate.py: the checks at the door. Attacks found by trying hostile input on the default stack."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.validate import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, check_ids, check_list, validate_batch


def _nested(depth: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = {"k": value}
    return {"k": value}


def _nested_lists(depth: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(depth - 1):
        value = [value]
    return {"k": value}


@pytest.mark.parametrize("depth", [MAX_METADATA_DEPTH + 1, 130, 900, 5000])
@pytest.mark.parametrize("make", [_nested, _nested_lists])
def test_deeply_nested_metadata_is_refused_at_the_door(depth: int, make: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="nested"):
        validate_batch(["a"], ["text"], [make(depth)])


def test_metadata_at_the_depth_limit_is_stored_searched_and_deleted_on_the_default_stack() -> None:
    r = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16))
    r.add_texts(["deep document", "other document"], [_nested(MAX_METADATA_DEPTH), {}], ids=["deep", "other"])
    with pytest.raises(InvalidArgumentError):
        r.add_texts(["too deep"], [_nested(900)], ids=["too-deep"])
    assert {d.id for d in r.invoke("document")} == {"deep", "other"}  # the refused one broke nothing
    r.delete(["deep"])
    assert r.engine.count() == {"dense": 1, "keyword": 1}


def test_huge_metadata_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="bytes"):
        validate_batch(["a"], ["text"], [{"blob": "x" * (MAX_METADATA_BYTES + 1)}])


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, [1, 2**64], {"inner": 10**30}, [[-(10**40)]]])
def test_an_integer_beyond_int64_in_metadata_is_refused_at_the_door(value: Any) -> None:
    # No store holds it exactly (SQLite INTEGER, Qdrant's int64 payload): bad input, never a store failure.
    with pytest.raises(InvalidArgumentError, match="int64"):
        validate_batch(["a"], ["text"], [{"n": value}])


def test_int64_edges_are_kept_and_one_past_them_is_refused_on_the_default_stack() -> None:
    r = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16))
    r.add_texts(["edge document"], [{"hi": 2**63 - 1, "lo": -(2**63)}], ids=["edge"])
    with pytest.raises(InvalidArgumentError, match="int64"):
        r.add_texts(["too big"], [{"hi": 2**63}], ids=["big"])
    assert [d.id for d in r.invoke("document")] == ["edge"]
    assert r.engine.get(["edge"])[0].metadata == {"hi": 2**63 - 1, "lo": -(2**63)}
    assert r.engine.count() == {"dense": 1, "keyword": 1}


@pytest.mark.parametrize("key", ["rrf_pinned", "rrf_score", "rrf_expanded_from", "rrf_anything"])
def test_the_rrf_metadata_namespace_is_ours_alone_on_write(key: str) -> None:
    # A stored {"rrf_pinned": true} was read as the pin marker: a document could pin itself onto page one.
    with pytest.raises(InvalidArgumentError, match="reserved"):
        validate_batch(["a"], ["text"], [{key: True}])
    r = EnsembleRRFRetriever.from_texts(["a pinned memory", "another memory"], HashingEmbedding(16), ids=["a", "b"])
    with pytest.raises(InvalidArgumentError, match=key):
        r.add_texts(["self-pinning memory"], [{key: True}], ids=["evil"])
    assert sorted(d.id for d in r.invoke("memory", k=10)) == ["a", "b"]
    validate_batch(["a"], ["text"], [{"RRF_pinned": 1, "xrrf_score": 2, "nested": {"rrf_pinned": True}}])


@pytest.mark.parametrize("keyword", ["qdrant-edge", "fts5"])
def test_a_write_is_validated_once_whatever_the_number_of_stores(keyword: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine checks a batch at the door; the stores take the checked batch as it is (ids, texts, metadata
    # were checked 1 + 2 x stores times before).
    from rrf_retriever import validate

    r = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), keyword=keyword)
    calls: list[object] = []
    real = validate.check_id

    def counting(doc_id: object, **kwargs: Any) -> str:
        calls.append(doc_id)
        return real(doc_id, **kwargs)

    monkeypatch.setattr(validate, "check_id", counting)
    r.add_texts([f"note {i}" for i in range(5)], [{"n": i} for i in range(5)], ids=[f"n{i}" for i in range(5)])
    assert len(calls) == 5, calls
    r.delete(["n0", "n1"])
    assert len(calls) == 7, calls
    assert sorted(d.id for d in r.invoke("note", k=10)) == ["n2", "n3", "n4"]
    with pytest.raises(InvalidArgumentError):  # a store called directly still checks at its own door
        r.engine.legs["keyword"].store.add(["x"], ["text"], [{"rrf_score": 1}])


def test_a_checked_batch_cannot_be_changed_and_passed_on_unchecked() -> None:
    # The checked lists pass the stores' doors as they are: a list changed after the check must not.
    ids, texts, metas = validate_batch(["a"], ["text"], [{}])
    for change in (lambda: ids.append("b"), lambda: texts.__setitem__(0, 5), lambda: metas.extend([{"rrf_x": 1}]),
                   lambda: ids.insert(0, ""), lambda: texts.pop(), lambda: metas.__delitem__(0), lambda: ids.clear(),
                   lambda: texts.sort(), lambda: metas.reverse(), lambda: ids.remove("a")):
        with pytest.raises(TypeError):
            change()
    assert (ids, texts, metas) == (["a"], ["text"], [{}])
    with pytest.raises(TypeError):
        ids += ["b"]


_ID = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=8)


@given(ids=st.lists(_ID, max_size=8), container=st.sampled_from([list, tuple, iter]))
def test_check_ids_keeps_any_iterable_of_ids_in_order_without_repeats(ids: list[str], container: Any) -> None:
    assert check_ids(container(ids)) == list(dict.fromkeys(ids))


@given(value=st.one_of(_ID, st.binary(min_size=1, max_size=8), st.dictionaries(_ID, st.integers(), min_size=1,
                                                                                max_size=3)))
def test_one_value_that_iterates_is_not_a_list(value: Any) -> None:
    # A string, bytes or a mapping iterates (letters, byte values, keys): list() would split it silently.
    for check in (lambda: check_ids(value, "ids"), lambda: check_list(value, "texts", "strings"),
                  lambda: check_list(bytearray(b"ab"), "ids", "ids")):
        with pytest.raises(InvalidTypeError, match="must be a list of"):
            check()


def test_a_store_refuses_a_mapping_of_ids_and_keeps_its_documents() -> None:
    store = FTS5KeywordStore()
    store.add(["a", "b"], ["x", "y"])
    for call in (lambda: store.delete({"a": 1}), lambda: store.get({"a": 1})):  # keys taken as ids before
        with pytest.raises(InvalidTypeError, match="ids must be a list of ids, not dict"):
            call()
    assert [r.id for r in store.get(["a", "b"])] == ["a", "b"]
