"""Typed equality in the FTS5 scope side table: ``"42"`` never matches ``"042"``, ``42`` or ``True``.

The side table once had a ``value`` column of NUMERIC affinity, so SQLite turned ``"042"``, ``" 42"``,
``"+42"`` or ``"4.2e1"`` into the integer 42: a filter ``{"session_id": "42"}`` returned them all on the keyword
leg (a scope leak), and ``{"tags": ["1", "1.0"]}`` could not be stored at all. These tests pin the fix, the
migration of index files written by that schema, and a property test against :func:`rrf_retriever.scope.tree.matches`.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever.analysis.analyzer import default_analyzer
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.fts5.store import FTS5KeywordStore

#: Strings that SQLite's NUMERIC affinity would read as numbers (or that look like them to a person).
NUMBER_LIKE = [
    "042",
    "42.0",
    " 42",
    "42 ",
    "+42",
    "4.2e1",
    "1e3",
    "0x10",
    "0x2A",
    "true",
    "1",
    "1.0",
    "-0",
    "0",
    "42",
    "1000",
    "16",
    "-42",
    "42e0",
    "4.20E+1",
]


def ids_of(hits: list) -> list[str]:
    return [h.id for h in hits]


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FTS5KeywordStore]:
    s = FTS5KeywordStore() if request.param == "memory" else FTS5KeywordStore(tmp_path / "kw.sqlite")
    yield s
    s.close()


def test_a_string_filter_matches_that_exact_string_only(store: FTS5KeywordStore) -> None:
    values: list[Any] = [*NUMBER_LIKE, 42, 42.0, 1000, 16, True, 1, 0, False, -0.0]
    ids = [f"d{i}" for i in range(len(values))]
    store.add(ids, ["session note"] * len(values), [{"session_id": v} for v in values])
    by_value = {i: v for i, v in zip(ids, values)}
    for flt_value in ["42", "042", "1e3", "0x10", "1", "true", " 42", 42, 1000, 16, True, 1, 0, False]:
        got = set(ids_of(store.search("session", 100, filter={"session_id": flt_value})))
        flt = normalize_filter({"session_id": flt_value})
        expected = {i for i, v in by_value.items() if matches({"session_id": v}, flt)}
        assert got == expected, flt_value


def test_the_string_42_finds_only_the_string_42(store: FTS5KeywordStore) -> None:
    metas = [{"session_id": v} for v in ["42", "042", "42.0", " 42", "+42", "4.2e1", 42, 42.0, True]]
    store.add([f"d{i}" for i in range(len(metas))], ["shared words"] * len(metas), metas)
    assert ids_of(store.search("shared", 20, filter={"session_id": "42"})) == ["d0"]
    assert set(ids_of(store.search("shared", 20, filter={"session_id": 42}))) == {"d6", "d7"}
    assert ids_of(store.search("shared", 20, filter={"session_id": True})) == ["d8"]
    assert store.search("shared", 20, filter={"session_id": 1}) == []


def test_list_metadata_with_numerically_equal_strings_is_stored_and_matched(store: FTS5KeywordStore) -> None:
    store.add(
        ["a", "b"],
        ["tagged text", "tagged text"],
        [{"tags": ["1", "1.0", "01", " 1", 1, 1.0, True]}, {"tags": ["1e0"]}],
    )
    assert store.count() == 2
    for tag in ["1", "1.0", "01", " 1", 1, True]:
        assert ids_of(store.search("tagged", 5, filter={"tags": tag})) == ["a"], tag
    assert ids_of(store.search("tagged", 5, filter={"tags": "1e0"})) == ["b"]
    assert store.search("tagged", 5, filter={"tags": "+1"}) == []
    assert store.get(["a"])[0].metadata == {"tags": ["1", "1.0", "01", " 1", 1, 1.0, True]}


# ---------------------------------------------------------------- an index file of the previous schema

_V1_DDL = [
    "CREATE TABLE rrf_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE rrf_docs (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL, "
    "metadata TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE rrf_fts USING fts5(title, text, tokenize = 'porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE rrf_vocab USING fts5vocab(rrf_fts, 'row')",
    # value ANY: NUMERIC affinity in an ordinary table, the cause of the leak.
    "CREATE TABLE rrf_scope (doc INTEGER NOT NULL, key TEXT NOT NULL, vtype TEXT NOT NULL, value ANY, "
    "PRIMARY KEY (key, vtype, value, doc)) WITHOUT ROWID",
    "CREATE INDEX rrf_scope_doc ON rrf_scope (doc)",
]


def write_schema_1_index(path: Path, docs: list[tuple[str, str, dict[str, Any]]]) -> None:
    """An index file exactly as the schema-1 store wrote it (scalar and list metadata, one row per value)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in _V1_DDL:
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO rrf_meta VALUES (?, ?)",
        [
            ("schema_version", "1"),
            ("analyzer", json.dumps(default_analyzer().config(), sort_keys=True)),
            ("fields", json.dumps(["title", "text"])),
            ("field_weights", json.dumps({"text": 1.0, "title": 2.0}, sort_keys=True)),
            ("count", str(len(docs))),
        ],
    )
    for rowid, (doc_id, text, meta) in enumerate(docs, start=1):
        conn.execute("INSERT INTO rrf_docs VALUES (?, ?, ?, ?)", (rowid, doc_id, text, json.dumps(meta)))
        conn.execute("INSERT INTO rrf_fts (rowid, title, text) VALUES (?, '', ?)", (rowid, text))
        for key, value in meta.items():
            vtype = "b" if isinstance(value, bool) else "n" if isinstance(value, (int, float)) else "s"
            conn.execute("INSERT OR IGNORE INTO rrf_scope VALUES (?, ?, ?, ?)", (rowid, key, vtype, value))
    conn.close()


def test_an_index_written_by_the_previous_schema_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    values: list[Any] = ["42", "042", "42.0", " 42", "+42", "4.2e1", 42, True]
    docs = [(f"d{i}", "old memory", {"session_id": v, "lang": "en"}) for i, v in enumerate(values)]
    write_schema_1_index(path, docs)
    raw = sqlite3.connect(path)
    assert (
        raw.execute("SELECT count(*) FROM rrf_scope WHERE key = 'session_id' AND typeof(value) = 'text'").fetchone()[0]
        == 0
    ), "the old schema really did turn the strings into numbers"
    raw.close()

    with FTS5KeywordStore(path) as store:
        assert store.schema_version == FTS5KeywordStore.SCHEMA_VERSION >= 2
        assert ids_of(store.search("memory", 20, filter={"session_id": "42"})) == ["d0"]
        assert ids_of(store.search("memory", 20, filter={"session_id": "042"})) == ["d1"]
        assert ids_of(store.search("memory", 20, filter={"session_id": 42})) == ["d6"]
        assert ids_of(store.search("memory", 20, filter={"session_id": True})) == ["d7"]
        assert len(store.search("memory", 20, filter={"lang": "en"})) == len(values)
        assert store.count() == len(values)
        store.add(["new"], ["new memory"], [{"session_id": ["1", "1.0"]}])  # refused by the old schema
        assert ids_of(store.search("memory", 20, filter={"session_id": "1.0"})) == ["new"]

    raw = sqlite3.connect(path)
    assert raw.execute("SELECT value FROM rrf_meta WHERE key = 'schema_version'").fetchone()[0] == str(
        FTS5KeywordStore.SCHEMA_VERSION
    )
    raw.close()
    with FTS5KeywordStore(path) as again:  # a second open finds the new schema and changes nothing
        assert again.count() == len(values) + 1
        assert ids_of(again.search("memory", 20, filter={"session_id": "42"})) == ["d0"]


def test_an_index_of_an_unknown_schema_is_refused(tmp_path: Path) -> None:
    from rrf_retriever.errors import StoreError

    path = tmp_path / "future.sqlite"
    FTS5KeywordStore(path).close()
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("UPDATE rrf_meta SET value = '99' WHERE key = 'schema_version'")
    raw.close()
    with pytest.raises(StoreError, match="schema 99"):
        FTS5KeywordStore(path)


# ---------------------------------------------------------------- property: the store agrees with scope.matches

_INTS = st.one_of(st.sampled_from([0, 1, -1, 2, 10, 16, 42, 1000, -42]), st.integers(-(2**63), 2**63 - 1))
_FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 42.0, 4.2, 1000.0, 16.0, 0.5, 1e3, 2.0**63]),
    st.floats(allow_nan=False, allow_infinity=False),
)
_STRINGS = st.one_of(st.sampled_from(NUMBER_LIKE), st.text(alphabet="0123456789+-.e x", max_size=4))
_METADATA_VALUES = st.one_of(_INTS, _FLOATS, st.booleans(), _STRINGS)
# A filter takes str, int and bool (an integral float is normalised to the int).
_FILTER_VALUES = st.one_of(_INTS, st.booleans(), _STRINGS, st.sampled_from([1.0, 42.0, 0.0, 1000.0]))


@st.composite
def typed_cases(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 12))
    metas: list[dict[str, Any]] = []
    for _ in range(n):
        meta: dict[str, Any] = {}
        for key in ("v", "w"):
            if draw(st.integers(0, 4)) == 0:
                continue  # the key is missing
            values = st.lists(_METADATA_VALUES, max_size=4)
            meta[key] = draw(st.one_of(_METADATA_VALUES, values, values.map(tuple)))
        metas.append(meta)
    used = [x for m in metas for v in m.values() for x in (v if isinstance(v, (list, tuple)) else [v])]
    value = _FILTER_VALUES | (st.sampled_from(used) if used else _FILTER_VALUES)
    flt = st.dictionaries(st.sampled_from(["v", "w"]), value | st.lists(value, max_size=4), min_size=1, max_size=2)
    filters = draw(st.lists(flt, min_size=1, max_size=4))
    return {"metas": metas, "filters": filters}


def _normalize_or_skip(flt: dict[str, Any]) -> Any:
    from rrf_retriever.errors import FilterError

    try:
        return normalize_filter(flt)
    except FilterError:
        return None  # e.g. a non-integral float drawn from the metadata values: not a valid filter


def _check_case(store: FTS5KeywordStore, case: dict[str, Any]) -> None:
    metas = case["metas"]
    ids = [f"d{i}" for i in range(len(metas))]
    store.add(ids, [f"doc number {i}" for i in range(len(metas))], metas)
    for flt in case["filters"]:
        normalized = _normalize_or_skip(flt)
        if normalized is None:
            continue
        expected = {i for i, m in zip(ids, metas) if matches(m, normalized)}
        got = [h.id for h in store.search("doc", 100, filter=flt)]
        assert len(got) == len(set(got))
        assert set(got) == expected, (flt, metas)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=typed_cases())
def test_property_memory_store_filters_exactly_like_scope_matches(case: dict[str, Any]) -> None:
    with FTS5KeywordStore() as store:
        _check_case(store, case)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=typed_cases())
def test_property_file_store_filters_exactly_like_scope_matches(case: dict[str, Any]) -> None:
    # A fresh file per example; in RAM where there is a tmpfs (the file format is the same, only fsync is free).
    ram = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(dir=ram) as tmp, FTS5KeywordStore(Path(tmp) / "kw.sqlite") as store:
        _check_case(store, case)
