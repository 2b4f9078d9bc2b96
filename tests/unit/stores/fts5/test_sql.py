"""The pure SQL builders of the FTS5 store (rrf_retriever.stores.fts5.sql), with closed-form expectations."""

from __future__ import annotations

import json
import sqlite3

import pytest

from rrf_retriever.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.stores.fts5.scope import scope_rows, scope_sql, scope_table_sql, scope_value
from rrf_retriever.stores.fts5.sql import (
    SCHEMA_VERSION,
    Tables,
    check_table,
    field_values,
    ranked_sql,
    schema_sql,
    split_by_idf,
    store_error,
)
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from tests.reliability.hostile import HOSTILE_QUERIES


def test_tables_are_named_from_a_checked_prefix() -> None:
    assert Tables.of("kw") == ("kw_docs", "kw_fts", "kw_scope", "kw_meta", "kw_vocab")
    for bad in ["", "1abc", "a b", "x; DROP TABLE t", "a" * 65, None]:
        with pytest.raises(InvalidArgumentError):
            check_table(bad)


def test_scope_value_keeps_types_apart() -> None:
    assert scope_value("42") == ("s", "42")
    assert scope_value("042") == ("s", "042")
    assert scope_value(42) == ("n", 42) and scope_value(42.0) == ("n", 42.0)
    assert scope_value(True) == ("b", 1) and scope_value(False) == ("b", 0)
    for nothing in [None, float("nan"), float("inf"), [1], {"a": 1}, 2**63, -(2**63) - 1]:
        assert scope_value(nothing) is None
    assert scope_value(2**63 - 1) == ("n", 2**63 - 1)


def test_scope_rows_one_row_per_distinct_typed_value() -> None:
    rows = list(scope_rows({"tags": ["1", "1.0", 1, 1.0, True, True, None, [2]], "s": "x", "t": ("a", "a")}))
    assert rows == [
        ("tags", "e", 1),  # the presence row of $exists
        ("tags", "s", "1"),
        ("tags", "s", "1.0"),
        ("tags", "n", 1),
        ("tags", "b", 1),
        ("s", "e", 1),
        ("s", "s", "x"),
        ("t", "e", 1),
        ("t", "s", "a"),
    ]
    # None and [] are absent for $exists (and hold no value); a dict is present though no value row holds it.
    assert list(scope_rows({"n": None, "l": [], "d": {"x": 1}, "ln": [None]})) == [("d", "e", 1), ("ln", "e", 1)]


def test_scope_sql_binds_every_key_value_and_id() -> None:
    sql, params = scope_sql(normalize_filter({"k-1": ("'; DROP TABLE x; --", 7, True), "e": ()}), frozenset({"i'd", "b"}))
    assert "DROP" not in sql and "k-1" not in sql and "i'd" not in sql
    assert sql.startswith(" AND (0 AND "), "an empty any-of list matches nothing"
    assert params == [
        "k-1",
        "s",
        json.dumps(["'; DROP TABLE x; --"]),
        "n",
        "[7]",
        "b",
        "[1]",
        json.dumps(["b", "i'd"]),
    ]
    assert scope_sql(None, frozenset()) == ("", [])
    assert "other_scope" in scope_sql(normalize_filter({"k": ("v",)}), frozenset(), table="other")[0]


def test_the_scope_table_keeps_every_value_exactly_as_bound() -> None:
    conn = sqlite3.connect(":memory:")
    for statement in scope_table_sql("t"):
        conn.execute(statement)
    values = ["042", "42.0", " 42", "+42", "4.2e1", "0x10", "1", "1.0", 42, 42.5, 1]
    conn.executemany(
        "INSERT INTO t_scope VALUES (?, 'k', ?, ?)",
        [(i, scope_value(v)[0], scope_value(v)[1]) for i, v in enumerate(values)],
    )  # type: ignore[index]
    stored = [v for (v,) in conn.execute("SELECT value FROM t_scope ORDER BY doc")]
    assert stored == values and [type(v) for v in stored] == [type(v) for v in values]
    # Typed comparison through the scope fragment's own subquery: '42' finds nothing, 42 the number only.
    sql, params = scope_sql(normalize_filter({"k": ("42",)}), frozenset(), table="t")
    inner = sql[sql.index("(SELECT doc") + 1 : sql.rindex(")")]
    assert conn.execute(inner, params).fetchall() == []
    assert conn.execute(inner, scope_sql(normalize_filter({"k": ("042",)}), frozenset(), table="t")[1]).fetchall() == [(0,)]
    assert conn.execute(inner, scope_sql(normalize_filter({"k": (42,)}), frozenset(), table="t")[1]).fetchall() == [(8,)]
    conn.close()


def test_schema_sql_is_what_the_store_creates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "kw.sqlite"
    with FTS5KeywordStore(path, table="kw") as store:
        assert store.schema_version == SCHEMA_VERSION == FTS5KeywordStore.SCHEMA_VERSION
    conn = sqlite3.connect(path)
    created = {
        sql for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE name LIKE 'kw%' AND sql IS NOT NULL")
    }
    conn.close()
    assert set(schema_sql("kw", ["title", "text"])) <= created
    assert "value BLOB" in scope_table_sql("kw")[0]
    with pytest.raises(InvalidArgumentError):
        schema_sql("rrf", ["title"])  # no text field


def test_ranked_sql_forms() -> None:
    unscoped = ranked_sql("rrf", [2.0, 1.0])
    assert "bm25(rrf_fts, 2.0, 1.0)" in unscoped and unscoped.count("LIMIT ?") == 1
    scope, _ = scope_sql(normalize_filter({"k": ("v",)}), frozenset())
    scoped = ranked_sql("rrf", [1.0], scope)
    assert scope in scoped and "JOIN rrf_docs d" in scoped and scoped.endswith("LIMIT ?")


def test_split_by_idf_closed_form() -> None:
    df = {"common": 5, "half": 4, "rare": 1}.get
    assert split_by_idf(["common", "half", "rare", "common"], lambda t: df(t) or 0, 8) == (
        ["rare"],
        ["common", "half", "common"],
    )
    assert split_by_idf(["common"], lambda t: 7, 7) == (["common"], []), "below 8 documents nothing is split"
    assert split_by_idf(["half"], lambda t: 4, 8, share=0.6) == (["half"], [])


def test_field_values() -> None:
    assert field_values(["title", "text"], ["b1", "b2"], [{"title": "T"}, {}], strict=True) == [["T", "b1"], ["", "b2"]]
    assert field_values(["title", "text"], ["b"], [{"title": None}], strict=False) == [["", "b"]]
    with pytest.raises(InvalidTypeError, match="indexed field"):
        field_values(["title", "text"], ["b"], [{"title": 3}], strict=True)


def test_store_error_is_always_ours() -> None:
    assert isinstance(store_error(sqlite3.OperationalError("database is locked"), "s", "add", 1), StoreLockedError)
    assert isinstance(
        store_error(sqlite3.OperationalError("unable to open database file"), "s", "open", 1), StoreUnavailableError
    )
    err = store_error(sqlite3.IntegrityError("UNIQUE constraint failed"), "s", "add", 1)
    assert type(err) is StoreError and "failed to add" in str(err)


def test_doc_freq_takes_any_string() -> None:
    with FTS5KeywordStore() as store:
        store.add(["a", "b"], ["configure the database", "configuring"])
        assert store.doc_freq("configured") == 2 and store.doc_freq("database") == 1
        assert store.doc_freq("zebra") == 0 and store.doc_freq("two words") == 0
        for query in HOSTILE_QUERIES:
            assert store.doc_freq(query) >= 0
        with pytest.raises(InvalidTypeError):
            store.doc_freq(None)  # type: ignore[arg-type]
