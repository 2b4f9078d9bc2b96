"""The full filter language in the in-memory BM25 store: the compiled numpy mask (ScopeIndex) against
the reference, exact int/float ranges, ``ids_matching``, and a corpus without one token. The random exactness
property is in ``tests/unit/stores/test_base_filter_property.py``."""

from __future__ import annotations

import pytest

from rrf_retriever import InvalidFilterError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import AnyOf, matches
from rrf_retriever.stores.base import IdsMatching
from rrf_retriever.stores.bm25.scope import ScopeIndex
from rrf_retriever.stores.bm25.store import BM25KeywordStore

METAS = {
    "a": {"n": 1, "tag": "x"},
    "b": {"n": 2.5, "tag": ["x", "y"]},
    "c": {"n": "3", "flag": True},
    "d": {"n": None, "obj": {"k": 1}},
    "e": {"n": [], "tag": []},
    "f": {"n": [7, 9], "obj": [None]},
    "g": {"n": 2**53 + 1},
    "h": {},
}
FILTERS = [
    {"n": {"$exists": True}},
    {"obj": {"$exists": True}},
    {"tag": {"$ne": "x"}},
    {"n": {"$gte": 2, "$lt": 8}},
    {"n": {"$gt": float(2**53)}},  # exact: 2**53 + 1 is above it, as a float64 would not say
    {"n": {"$gt": 7, "$lt": 9}},  # [7, 9]: no single element strictly between
    {"n": {"$lte": 1}},
    {"$or": [{"flag": True}, {"n": {"$gt": 8}}]},
    {"$not": {"tag": {"$in": ["y", "z"]}}},
]


@pytest.mark.parametrize("engine", ["bm25s", "rank_bm25"])
@pytest.mark.parametrize("flt", FILTERS)
def test_search_and_ids_matching_equal_the_reference(engine: str, flt: dict) -> None:
    store = BM25KeywordStore(engine=engine)
    ids = list(METAS)
    # "alpha" in every document would get a negative IDF from rank-bm25: padding documents keep it rare.
    store.add([*ids, *(f"pad{i}" for i in range(12))], [f"alpha {i}" for i in ids] + ["beta"] * 12,
              [*METAS.values(), *({} for _ in range(12))])
    node = normalize_filter(flt)
    expected = sorted(i for i, m in METAS.items() if matches(m, node))
    assert sorted(h.id for h in store.search("alpha", 50, filter=flt)) == expected
    pads = [] if not matches({}, node) else sorted(f"pad{i}" for i in range(12))
    assert store.ids_matching(flt) == sorted(expected + pads)


def test_scope_index_handles_empty_and_unknown_keys() -> None:
    assert ScopeIndex([]).mask(normalize_filter({"k": 1})).tolist() == []  # type: ignore[arg-type]
    idx = ScopeIndex([{"k": 1}, {}])
    assert idx.mask(normalize_filter({"zz": {"$gt": 0}})).tolist() == [False, False]  # type: ignore[arg-type]
    assert idx.mask(normalize_filter({"zz": {"$exists": False}})).tolist() == [True, True]  # type: ignore[arg-type]
    assert idx.mask(AnyOf(())).tolist() == [False, False]


def test_ids_matching_limit_updates_and_bad_filters() -> None:
    store = BM25KeywordStore()
    assert isinstance(store, IdsMatching)
    store.add(list(METAS), [f"alpha {i}" for i in METAS], list(METAS.values()))
    assert store.ids_matching() == sorted(METAS)
    assert store.ids_matching({"tag": "x"}, limit=1) == ["a"]
    store.delete(["a"])
    store.add(["z"], ["alpha"], [{"tag": "x"}])
    assert store.ids_matching({"tag": "x"}) == ["b", "z"]  # the index is rebuilt after writes
    for bad in ({"n": {"$gt": "1"}}, {"n": {"$in": 3}}, {"$and": []}):
        with pytest.raises(InvalidFilterError):
            store.ids_matching(bad)
        with pytest.raises(InvalidFilterError):
            store.search("alpha", 5, filter=bad)


def test_a_corpus_without_one_token_searches_to_nothing() -> None:
    # bm25s raised ValueError("max() arg is an empty sequence") building an index of stopword-only texts.
    store = BM25KeywordStore()
    store.add(["a", "b"], ["the", "of and"], [{"k": 1}, {}])
    assert store.search("anything", 5) == []
    assert store.ids_matching({"k": {"$exists": True}}) == ["a"]
