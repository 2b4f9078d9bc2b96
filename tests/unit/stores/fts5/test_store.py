"""FTS5KeywordStore specifics: schema and reopen rules, normalisation, fields, locking, rollback, exactness."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    RRFRetrieverError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.stores.fts5 import sql as fts5_sql
from rrf_retriever.stores.fts5.scope import scope_sql
from rrf_retriever.stores.fts5.sql import fts_token, split_by_idf
from rrf_retriever.stores.fts5.store import FTS5KeywordStore


def ids_of(hits: list) -> list[str]:
    return [h.id for h in hits]


def test_missing_fts5_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # FTS5 is compiled into this Python's SQLite; the check itself is what we exercise here.
    monkeypatch.setattr(fts5_sql, "fts5_available", lambda: False)
    with pytest.raises(StoreUnavailableError, match="without FTS5"):
        FTS5KeywordStore()


def test_fts5_check_is_true_here() -> None:
    assert fts5_sql.fts5_available()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"table": "bad name"},
        {"table": "x; DROP TABLE t"},
        {"fields": ()},
        {"fields": "text"},
        {"fields": ("title",)},
        {"fields": ("text", "text")},
        {"fields": ("text", "ti tle")},
        {"fields": ("text", "rank")},
        {"fields": ("text",), "field_weights": {"title": 2.0}},
        {"field_weights": {"text": -1.0}},
        {"field_weights": {"text": float("nan")}},
        {"mode": "and"},
        {"timeout": -1},
    ],
)
def test_bad_constructor_arguments(kwargs: dict) -> None:
    with pytest.raises(InvalidArgumentError):
        FTS5KeywordStore(**kwargs)


def test_analyzer_must_be_an_analyzer() -> None:
    with pytest.raises(InvalidTypeError):
        FTS5KeywordStore(analyzer="porter")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stem", "query", "found"),
    [(None, "configuring", ["a"]), (None, "configured", []), ("english", "generously", ["b"]),
     (lambda w: w[:4], "confusing", ["a"])],
)
def test_a_stemmer_other_than_porter_is_applied_not_ignored(stem: object, query: str, found: list[str]) -> None:
    # A non-porter analyzer indexes its own terms (FTS5 no longer stems them), so its stemmer decides what matches.
    with FTS5KeywordStore(analyzer=Analyzer(stem=stem)) as store:  # type: ignore[arg-type]
        store.add(["a", "b"], ["configuring things", "generous people"])
        assert [h.id for h in store.search(query, 5)] == found


def test_reopen_uses_the_saved_analyzer_and_refuses_another(tmp_path: Path) -> None:
    path = tmp_path / "kw.sqlite"
    custom = Analyzer(stopwords=["database"])
    with FTS5KeywordStore(path, analyzer=custom) as store:
        store.add(["a", "b"], ["database tuning", "vector database"])
        assert store.search("database", 5) == []
    with FTS5KeywordStore(path) as again:  # analyzer=None: the saved one
        assert again.analyzer == custom
        assert again.search("database", 5) == []
        assert ids_of(again.search("tuning", 5)) == ["a"]
    with pytest.raises(InvalidArgumentError, match="another analyzer"):
        FTS5KeywordStore(path, analyzer=Analyzer())
    with pytest.raises(InvalidArgumentError, match="fields"):
        FTS5KeywordStore(path, fields=("text",))


def test_default_store_indexes_the_metadata_title_with_weight_two() -> None:
    store = FTS5KeywordStore()
    assert store.fields == ("title", "text") and store.field_weights == {"title": 2.0, "text": 1.0}
    store.add(["t", "b", "n"], ["about cooking", "sqlite tips for people who tune databases", "no title here"],
              [{"title": "SQLite"}, {}, {"title": None}])
    # Filler, so that "sqlite" is in few documents (in 2 of 3, FTS5's IDF is ~0 and every score ties).
    store.add([f"f{i}" for i in range(8)], [f"pasta recipe {i}" for i in range(8)])
    # Title x2: one title occurrence outranks one body occurrence (the bodies are of similar length).
    assert ids_of(store.search("sqlite", 5)) == ["t", "b"]
    # A missing, None or non-text title is an empty field in the default schema, never an error.
    store.add(["x"], ["numbers"], [{"title": 2024}])
    assert ids_of(store.search("numbers", 5)) == ["x"] and store.count() == 12


def test_without_titles_the_default_ranks_exactly_like_a_flat_index() -> None:
    texts = ["sqlite tuning guide", "vector search and sqlite", "fts5 bm25 ranking in sqlite", "cooking"]
    ids = [f"d{i}" for i in range(len(texts))]
    flat = FTS5KeywordStore(fields=("text",))
    default = FTS5KeywordStore()
    for store in (flat, default):
        store.add(ids, texts)
    for query in ("sqlite", "sqlite ranking", "vector guide"):
        assert [(h.id, h.score) for h in default.search(query, 5)] == [(h.id, h.score) for h in flat.search(query, 5)]


def test_reopen_keeps_the_saved_fields_and_weights(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    with FTS5KeywordStore(old, fields=("text",)) as store:
        store.add(["a"], ["plain text"], [{"title": "ignored"}])
    with FTS5KeywordStore(old) as again:  # fields=None adopts the saved ("text",)
        assert again.fields == ("text",) and again.field_weights == {"text": 1.0}
        assert again.search("ignored", 5) == []
    heavy = tmp_path / "heavy.sqlite"
    with FTS5KeywordStore(heavy, field_weights={"title": 5.0}) as store:
        store.add(["a"], ["body"], [{"title": "head"}])
    with FTS5KeywordStore(heavy) as again:
        assert again.field_weights == {"title": 5.0, "text": 1.0}
    with FTS5KeywordStore(heavy, field_weights={"title": 1.0}) as again:  # weights are query-time: may change
        assert again.field_weights == {"title": 1.0, "text": 1.0}
    with pytest.raises(InvalidArgumentError, match="field_weights"):
        FTS5KeywordStore(old, field_weights={"title": 2.0})


def test_tables_prefix_keeps_two_stores_in_one_file_apart(tmp_path: Path) -> None:
    path = tmp_path / "kw.sqlite"
    with FTS5KeywordStore(path, table="one") as one, FTS5KeywordStore(path, table="two") as two:
        one.add(["a"], ["apples"])
        two.add(["b"], ["bananas"])
        assert (one.count(), two.count()) == (1, 1)
        assert one.search("bananas", 5) == []
        assert ids_of(two.search("bananas", 5)) == ["b"]


def test_index_and_query_agree_on_nfkc_and_diacritics() -> None:
    store = FTS5KeywordStore()
    store.add(["full", "ascii", "cafe", "lig"], ["ＦＴＳ５ ｆｕｌｌｗｉｄｔｈ", "fts5 plain", "Café crème", "ﬁnance"])
    assert set(ids_of(store.search("fts5", 5))) == {"full", "ascii"}
    assert set(ids_of(store.search("ＦＴＳ５", 5))) == {"full", "ascii"}
    assert ids_of(store.search("cafe creme", 5)) == ["cafe"]
    assert ids_of(store.search("CAFÉ", 5)) == ["cafe"]
    assert ids_of(store.search("finance", 5)) == ["lig"], "NFKC turns the ligature ﬁ into fi"
    # The original text is kept as written.
    assert store.get(["full"])[0].text == "ＦＴＳ５ ｆｕｌｌｗｉｄｔｈ"


def test_title_field_and_weights() -> None:
    docs = (["t", "b"], ["about cooking", "sqlite sqlite tips"], [{"title": "SQLite"}, {"title": "Tips"}])
    flat = FTS5KeywordStore(fields=("title", "text"))
    flat.add(*docs)
    heavy = FTS5KeywordStore(fields=("title", "text"), field_weights={"title": 10.0})
    heavy.add(*docs)
    assert ids_of(flat.search("sqlite", 5)) == ["b", "t"]
    assert ids_of(heavy.search("sqlite", 5)) == ["t", "b"]
    assert heavy.get(["t"])[0].metadata == {"title": "SQLite"}
    with pytest.raises(InvalidTypeError, match="indexed field"):
        heavy.add(["x"], ["text"], [{"title": 3}])
    assert heavy.count() == 2


def test_and_or_mode_puts_documents_with_every_term_first() -> None:
    store = FTS5KeywordStore(mode="and_or")
    texts = ["rare rare rare rare", "rare common", "common", "common one", "common two", "filler three"]
    store.add([f"d{i}" for i in range(len(texts))], texts)
    assert ids_of(store.search("rare common", 10))[:2] == ["d1", "d0"]
    assert set(ids_of(store.search("rare common", 10))) == {"d0", "d1", "d2", "d3", "d4"}
    plain = FTS5KeywordStore()
    plain.add([f"d{i}" for i in range(len(texts))], texts)
    assert ids_of(plain.search("rare common", 10))[0] == "d0", "OR ranks by BM25 alone"


def _direct_bm25_ranking(store: FTS5KeywordStore, terms: list[str]) -> list[tuple[str, float]]:
    """The plain OR query straight through sqlite3 on the store's file, without the store's zero-IDF pass."""
    match = " OR ".join(f'"{t}"' for t in terms)
    conn = sqlite3.connect(store.path)
    try:
        rows = conn.execute(
            "SELECT d.id, -bm25(rrf_fts) AS s FROM rrf_fts f JOIN rrf_docs d ON d.rowid = f.rowid "
            "WHERE rrf_fts MATCH ? ORDER BY bm25(rrf_fts), f.rowid",
            [match],
        ).fetchall()
    finally:
        conn.close()
    return [(i, s) for i, s in rows]


@pytest.mark.parametrize("limit", [1, 3, 5, 12, 40])
def test_zero_idf_terms_skipped_without_changing_the_result(limit: int, tmp_path: Path) -> None:
    store = FTS5KeywordStore(tmp_path / "kw.sqlite", fields=("text",))
    # "common" and "usual" are in every document (bm25 IDF clamped to 1e-6), "rare" in three.
    texts = [
        "common usual" + (" rare" * (i % 3 + 1) if i < 3 else "") + (" usual" if i % 3 else "")
        for i in range(30)
    ]
    store.add([f"d{i:02d}" for i in range(30)], texts)
    assert [store.doc_freq(t) for t in ("common", "usual", "rare")] == [30, 30, 3]
    informative, flat = split_by_idf(["common", "usual", "rare"], store.doc_freq, store.count())
    assert (informative, flat) == (["rare"], ["common", "usual"])
    got = store.search("common usual rare", limit)
    expected = _direct_bm25_ranking(store, ["common", "usual", "rare"])[:limit]
    assert [h.id for h in got][:3] == [i for i, _ in expected][:3]
    assert len(got) == len(expected)
    assert {h.id for h in got} == {i for i, _ in expected} or limit < 30
    assert [h.score for h in got] == pytest.approx([s for _, s in expected], abs=1e-4)
    # skip_common_terms=False runs the plain OR query: the same documents, the same order.
    plain = FTS5KeywordStore(tmp_path / "kw.sqlite", skip_common_terms=False)
    assert [h.id for h in plain.search("common usual rare", limit)] == [i for i, _ in expected]
    plain.close()
    store.close()


def test_the_fts_token_helper_asks_sqlite() -> None:
    assert fts_token("configuring") == "configur"
    assert fts_token("db") == "db"
    assert fts_token("x" * 300) is None
    assert fts_token("two words") is None
    assert fts_token("lone \ud800") is None


def test_a_failure_inside_the_transaction_rolls_everything_back(tmp_path: Path) -> None:
    store = FTS5KeywordStore(tmp_path / "kw.sqlite")
    store.add(["a", "b"], ["original alpha", "original beta"], [{"s": 1}, {"s": 2}])
    # A real SQLite failure mid-batch: after "a" was deleted and re-inserted, the insert of "boom" aborts.
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute(
        "CREATE TRIGGER fail_on_boom BEFORE INSERT ON rrf_docs WHEN NEW.id = 'boom' "
        "BEGIN SELECT RAISE(ABORT, 'boom refused'); END"
    )
    other.close()
    with pytest.raises(StoreError, match="boom refused"):
        store.add(["a", "boom"], ["replaced alpha", "boom text"], [{"s": 9}, {}])
    assert store.count() == 2
    assert store.get(["a"])[0].text == "original alpha"
    assert ids_of(store.search("original", 5, filter={"s": 1})) == ["a"]
    assert store.search("replaced", 5) == []
    store.close()
    reopened = FTS5KeywordStore(tmp_path / "kw.sqlite")
    assert reopened.count() == 2
    reopened.close()


def test_a_locked_file_raises_store_locked_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "kw.sqlite"
    store = FTS5KeywordStore(path, timeout=0.2)
    store.add(["a"], ["kept document"])
    # Another connection (as another process would) takes the write lock and keeps it.
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreLockedError, match="locked"):
            store.add(["b"], ["waiting document"])
        with pytest.raises(StoreLockedError):
            store.delete(["a"])
        # WAL: reads go on while another writer holds the lock.
        assert ids_of(store.search("kept", 5)) == ["a"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.add(["b"], ["waiting document"])
    assert store.count() == 2
    assert ids_of(store.search("document", 5)) == ["a", "b"]
    store.close()


def test_closed_store_refuses_use_and_bad_path_is_unavailable(tmp_path: Path) -> None:
    store = FTS5KeywordStore()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.count()
    with pytest.raises(StoreError):
        FTS5KeywordStore(tmp_path / "no" / "such" / "dir" / "kw.sqlite")


def test_a_file_that_is_not_sqlite_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        FTS5KeywordStore(path)


def test_filter_sql_binds_keys_and_values() -> None:
    store = FTS5KeywordStore()
    sql, params = scope_sql(normalize_filter({"my-key": ("x'; DROP TABLE rrf_docs; --", 3, True)}), frozenset({"id'"}))
    assert "DROP" not in sql and "my-key" not in sql and "id'" not in sql
    assert "my-key" in params and any("DROP TABLE" in str(p) for p in params)
    store.add(["a"], ["text"], [{"my-key": "x'; DROP TABLE rrf_docs; --"}])
    assert ids_of(store.search("text", 5, filter={"my-key": "x'; DROP TABLE rrf_docs; --"})) == ["a"]
    assert store.count() == 1


def test_document_frequency_cache_follows_writes_from_other_connections(tmp_path: Path) -> None:
    path = tmp_path / "kw.sqlite"
    reader = FTS5KeywordStore(path)
    writer = FTS5KeywordStore(path)
    writer.add([f"c{i}" for i in range(10)], ["common filler"] * 9 + ["common rare"])
    assert (reader.doc_freq("common"), reader.doc_freq("rare")) == (10, 1)
    assert split_by_idf(["common", "rare"], reader.doc_freq, reader.count()) == (["rare"], ["common"])
    # Another connection makes "rare" frequent and "common" rare: the reader must see it at once.
    writer.add([f"r{i}" for i in range(30)], ["rare words"] * 30)
    assert (reader.doc_freq("common"), reader.doc_freq("rare")) == (10, 31)
    assert split_by_idf(["common", "rare"], reader.doc_freq, reader.count()) == (["common"], ["rare"])
    got = reader.search("common rare", 15)
    expected = _direct_bm25_ranking(reader, ["common", "rare"])[:15]
    assert [h.score for h in got] == pytest.approx([s for _, s in expected], abs=1e-4)
    # And its own writes too.
    reader.delete([f"r{i}" for i in range(30)])
    assert (reader.doc_freq("common"), reader.doc_freq("rare")) == (10, 1)
    assert split_by_idf(["common", "rare"], reader.doc_freq, reader.count()) == (["rare"], ["common"])
    reader.close()
    writer.close()


def test_scopes_larger_than_sqlites_variable_limit() -> None:
    store = FTS5KeywordStore()
    store.add([f"d{i}" for i in range(50)], [f"shared word {i}" for i in range(50)], [{"s": i} for i in range(50)])
    excluded = [f"d{i}" for i in range(49)] + [f"ghost{i}" for i in range(40_000)]
    assert ids_of(store.search("shared", 10, exclude_ids=excluded)) == ["d49"]
    hits = store.search("shared", 10, filter={"s": list(range(10_000))[::-1]}, exclude_ids=excluded)
    assert ids_of(hits) == ["d49"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("analyzer", "{broken"), ("analyzer", '{"stem": 5}'), ("analyzer", "[]"), ("fields", "{broken"),
     ("fields", '"text"'), ("fields", "[1, 2]"), ("field_weights", "{broken"), ("field_weights", '{"text": "x"}'),
     ("count", "many")],
)
def test_a_corrupt_meta_row_is_our_error_on_open(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "kw.sqlite3"
    with FTS5KeywordStore(path) as store:
        store.add(["a"], ["hello world"])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE rrf_meta SET value = ? WHERE key = ?", (value, key))
    conn.commit()
    conn.close()
    try:
        with FTS5KeywordStore(path) as store:  # if it opens, it must still answer with our types only
            store.count()
            store.search("hello", 5)
    except RRFRetrieverError as exc:
        assert "corrupt" in str(exc) or key in str(exc)
