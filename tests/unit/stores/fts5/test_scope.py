"""The full filter language in the FTS5 store: the schema 2 -> 3 migration (presence rows for
``$exists``), the 3 -> 4 one (date rows), ranges served by the side table's index, exact int/float comparison, ``ids_matching``, and the
regressions found while building it. The random exactness property is in
``tests/unit/stores/test_base_filter_property.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rrf_retriever import InvalidFilterError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.fts5.scope import scope_sql
from rrf_retriever.stores.fts5.sql import ranked_sql
from rrf_retriever.stores.fts5.store import FTS5KeywordStore

METAS = {
    "a": {"n": 1, "tag": "x"},
    "b": {"n": 2.5, "tag": ["x", "y"]},
    "c": {"n": "3", "flag": True},
    "d": {"n": None, "obj": {"k": 1}},
    "e": {"n": [], "tag": []},
    "f": {"n": [7, 9], "obj": [None]},
    "g": {},
}
FILTERS = [
    {"n": {"$exists": True}},
    {"n": {"$exists": False}},
    {"obj": {"$exists": True}},  # a dict and [None] are present though no value row holds them
    {"tag": {"$ne": "x"}},
    {"n": {"$gte": 2, "$lt": 8}},
    {"$or": [{"flag": True}, {"n": {"$gt": 8}}]},
    {"$not": {"tag": {"$in": ["y", "z"]}}},
]


def _fill(store: FTS5KeywordStore) -> None:
    store.add(list(METAS), [f"alpha {i}" for i in METAS], list(METAS.values()))


def _expected(flt: dict) -> list[str]:
    node = normalize_filter(flt)
    return sorted(i for i, m in METAS.items() if matches(m, node))


def test_a_schema_2_file_is_migrated_on_open_and_scopes_exactly(tmp_path: Path) -> None:
    path = tmp_path / "kw.sqlite"
    with FTS5KeywordStore(path) as store:
        _fill(store)
    # Turn the file into what schema 2 wrote: the same tables, without the presence rows ('e') that schema 3
    # added (schema 2's code cannot be run any more, so its layout is made by hand from today's file).
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM rrf_scope WHERE vtype = 'e'")
        conn.execute("UPDATE rrf_meta SET value = '2' WHERE key = 'schema_version'")
    conn.close()
    with FTS5KeywordStore(path) as store:
        assert store.schema_version == FTS5KeywordStore.SCHEMA_VERSION
        assert store.count() == len(METAS)
        assert {r.id: r.metadata for r in store.get(list(METAS))} == METAS  # nothing stored is lost
        for flt in FILTERS:
            assert sorted(h.id for h in store.search("alpha", 20, filter=flt)) == _expected(flt), flt
            assert store.ids_matching(flt) == _expected(flt), flt
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM rrf_meta WHERE key = 'schema_version'").fetchone() == (
        str(FTS5KeywordStore.SCHEMA_VERSION),)
    conn.close()


def test_a_schema_3_file_gets_its_date_rows_on_open(tmp_path: Path) -> None:
    # Schema 3 had no date rows ('d'): a date range would match nothing there. Opening it rebuilds the side table.
    path = tmp_path / "kw.sqlite"
    metas = {"old": {"at": "2020-05-01T10:00:00+02:00"}, "new": {"at": "2024-05-01"}, "num": {"at": 1588320000}}
    with FTS5KeywordStore(path) as store:
        store.add(list(metas), ["alpha"] * 3, list(metas.values()))
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM rrf_scope WHERE vtype = 'd'")
        conn.execute("UPDATE rrf_meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()
    with FTS5KeywordStore(path) as store:
        assert store.schema_version == FTS5KeywordStore.SCHEMA_VERSION
        assert {r.id: r.metadata for r in store.get(list(metas))} == metas  # nothing stored is lost
        assert store.ids_matching({"at": {"$lt": "2021-01-01"}}) == ["old"]
        assert [h.id for h in store.search("alpha", 5, filter={"at": {"$gte": "2021-01-01"}})] == ["new"]


@pytest.mark.parametrize("flt", FILTERS)
def test_new_store_scopes_exactly(flt: dict) -> None:
    with FTS5KeywordStore() as store:
        _fill(store)
        assert sorted(h.id for h in store.search("alpha", 20, filter=flt)) == _expected(flt)


def test_a_value_list_of_several_types_stays_on_its_key() -> None:
    # Regression: "key = ? AND (A) OR (B)" let the second type match on ANY key ({"w": [0, False]} found
    # a document holding v = False).
    with FTS5KeywordStore() as store:
        store.add(["d0", "d1"], ["alpha", "alpha"], [{"v": False}, {"w": 0}])
        assert [h.id for h in store.search("alpha", 5, filter={"w": [0, False]})] == ["d1"]
        assert store.ids_matching({"w": {"$in": [True, "x", 0]}}) == ["d1"]


def test_ranges_compare_ints_and_floats_exactly_through_the_index(tmp_path: Path) -> None:
    big = 2**53 + 1  # a float64 cannot hold it: 2**53 + 1 > float(2**53) must stay true
    with FTS5KeywordStore(tmp_path / "kw.sqlite") as store:
        store.add(["big", "f", "edge"], ["alpha"] * 3, [{"n": big}, {"n": 0.5}, {"n": 2**63 - 1}])
        assert store.ids_matching({"n": {"$gt": float(2**53)}}) == ["big", "edge"]
        assert store.ids_matching({"n": {"$gt": 0, "$lt": 1}}) == ["f"]
        assert store.ids_matching({"n": {"$gte": 2**63 - 1}}) == ["edge"]
    scope, params = scope_sql(normalize_filter({"n": {"$gte": 1, "$lt": 5}}), frozenset())
    conn = sqlite3.connect(tmp_path / "kw.sqlite")
    plan = " ".join(str(row) for row in conn.execute(
        "EXPLAIN QUERY PLAN " + ranked_sql("rrf", [2.0, 1.0], scope), ["alpha", *params, 10]))
    conn.close()
    assert "value>? AND value<?" in plan, plan  # the range is an index range, not a scan


def test_ids_matching_limits_sorts_and_refuses_bad_filters() -> None:
    with FTS5KeywordStore() as store:
        _fill(store)
        assert store.ids_matching(None) == sorted(METAS)
        assert store.ids_matching({"tag": "x"}, limit=1) == ["a"]
        assert store.ids_matching({"tag": "x"}, limit=0) == []
        store.delete(["a"])
        assert store.ids_matching({"tag": "x"}) == ["b"]
        with pytest.raises(InvalidFilterError):
            store.ids_matching({"n": {"$gt": "1"}})
        with pytest.raises(InvalidFilterError):
            store.search("alpha", 5, filter={"n": {"$unknown": 1}})


@pytest.mark.parametrize("parts", [1_000, 4_900])
@pytest.mark.parametrize("logic", ["$or", "$or-ranges", "$and", "$and-ranges"])
def test_a_filter_of_thousands_of_parts_is_answered_not_dropped(parts: int, logic: str) -> None:
    # SQLite refuses an expression tree deeper than 1,000 ("Expression tree is too large"); the filter language
    # allows 10,000 conditions, so the compiled SQL must stay shallow whatever the width. Equalities on one key
    # are merged into one list before compiling (merged_equalities): the "-ranges" cases keep every part.
    store = FTS5KeywordStore()
    store.add([f"d{i}" for i in range(20)], ["alpha note"] * 20, [{"n": i} for i in range(20)])
    if logic == "$or":
        flt = {"$or": [{"n": i} for i in range(0, parts * 2, 2)]}  # the even numbers
        want = sorted(f"d{i}" for i in range(0, 20, 2))
    elif logic == "$or-ranges":
        flt = {"$or": [{"n": {"$gte": i, "$lte": i}} for i in range(0, parts * 2, 2)]}
        want = sorted(f"d{i}" for i in range(0, 20, 2))
    elif logic == "$and-ranges":
        flt = {"$and": [{"n": {"$lt": 10 + i}} for i in range(parts)]}  # the tightest: n < 10
        want = sorted(f"d{i}" for i in range(10))
    else:
        flt = {"$and": [{"n": {"$ne": i}} for i in range(1, parts * 2, 2)]}  # not any odd number
        want = sorted(f"d{i}" for i in range(0, 20, 2))
    assert sorted(h.id for h in store.search("alpha", 50, filter=flt)) == want
    assert store.ids_matching(flt) == want
    node = normalize_filter(flt)
    assert want == sorted(i for i in (f"d{j}" for j in range(20)) if matches({"n": int(i[1:])}, node))
    store.close()
