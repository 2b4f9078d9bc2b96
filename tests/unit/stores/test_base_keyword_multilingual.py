"""CJK text and languages in every keyword store: FTS5, BM25 (bm25s) and Qdrant sparse on edge.

The analyzer cuts CJK runs into bigrams and stems with a Snowball language; every store must find the same
documents, keep its analyzer across a reopen, and refuse another one with our error.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.sql import TERMS_TOKENIZER, TOKENIZER
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore
from tests.reliability.hostile import HOSTILE_QUERIES

KINDS = ["fts5", "bm25", "edge"]

DOCS = {
    "zh": "全文检索引擎通过倒排索引快速查找文档。",
    "ja": "東京都庁の検索システムはデータベースを使います。",
    "ko": "자연어처리는 컴퓨터가 언어를 이해하는 기술입니다.",
    "de": "Die Häuser am Hafen wurden im neunzehnten Jahrhundert gebaut.",
    "fr": "Les chevaux sauvages vivent en Camargue.",
    "en": "Configuring the database connection pool.",
}


def make(kind: str, path: Path | None, analyzer: Analyzer | None = None) -> Any:
    if kind == "fts5":
        return FTS5KeywordStore(":memory:" if path is None else path / "kw.sqlite3", analyzer=analyzer)
    if kind == "bm25":
        return BM25KeywordStore(path=None if path is None else path / "bm25", analyzer=analyzer)
    return QdrantEdgeKeywordStore(None if path is None else path / "edge", analyzer=analyzer)


def ids(store: Any, query: str) -> list[str]:
    return [h.id for h in store.search(query, 10)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("query", "expected"),
    [("倒排索引", "zh"), ("都庁", "ja"), ("データベース", "ja"), ("検索", "ja"), ("자연어", "ko"), ("ＦＴＳ５の検索", "ja")],
)
def test_a_cjk_substring_query_finds_the_document_with_the_default_analyzer(kind: str, query: str,
                                                                             expected: str) -> None:
    with make(kind, None) as store:
        store.add(list(DOCS), list(DOCS.values()))
        assert ids(store, query)[0] == expected


@pytest.mark.parametrize("kind", KINDS)
def test_a_german_store_finds_haeuser_by_haus_and_a_french_one_chevaux_by_cheval(kind: str) -> None:
    with make(kind, None, Analyzer(language="german")) as german:
        german.add(list(DOCS), list(DOCS.values()))
        assert ids(german, "Haus") == ["de"]
        assert ids(german, "die am") == []  # German stopwords
        assert ids(german, "東京") == ["ja"]  # CJK bigrams in a German store too
    with make(kind, None, Analyzer(language="french")) as french:
        french.add(list(DOCS), list(DOCS.values()))
        assert ids(french, "cheval") == ["fr"]
    with make(kind, None) as english:  # Porter does not know German plurals: the reason for languages
        english.add(list(DOCS), list(DOCS.values()))
        assert ids(english, "Haus") == []


@pytest.mark.parametrize("kind", KINDS)
def test_reopening_keeps_the_language_and_refuses_another_analyzer(kind: str, tmp_path: Path) -> None:
    with make(kind, tmp_path, Analyzer(language="german")) as store:
        store.add(list(DOCS), list(DOCS.values()))
    with make(kind, tmp_path) as again:  # analyzer=None: the saved one
        assert again.analyzer == Analyzer(language="german")
        assert ids(again, "Haus") == ["de"]
    for other in (Analyzer(), Analyzer(language="french"), Analyzer(language="german", cjk_bigrams=False)):
        with pytest.raises(InvalidArgumentError, match="analyzer"):
            make(kind, tmp_path, other)
    with make(kind, tmp_path, Analyzer(language="de")) as same:  # the same analyzer, named by its code
        assert ids(same, "Häusern") == ["de"]


def test_fts5_keeps_the_porter_schema_for_english_and_indexes_analyzer_terms_for_a_language(tmp_path: Path) -> None:
    FTS5KeywordStore(tmp_path / "en.sqlite3").close()
    FTS5KeywordStore(tmp_path / "de.sqlite3", analyzer=Analyzer(language="german")).close()
    for name, tokenizer in (("en", TOKENIZER), ("de", TERMS_TOKENIZER)):
        conn = sqlite3.connect(tmp_path / f"{name}.sqlite3")
        ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'rrf_fts'").fetchone()[0]
        conn.close()
        assert f"tokenize = '{tokenizer}'" in ddl


def test_an_fts5_file_written_before_languages_opens_as_it_was_built(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with FTS5KeywordStore(path, analyzer=Analyzer(cjk_bigrams=False)) as store:
        store.add(["ja", "en"], [DOCS["ja"], DOCS["en"]])
    # Rewrite the saved analyzer as an older version wrote it: no "language", no "cjk_bigrams".
    conn = sqlite3.connect(path)
    config = json.loads(conn.execute("SELECT value FROM rrf_meta WHERE key = 'analyzer'").fetchone()[0])
    del config["language"], config["cjk_bigrams"]
    conn.execute("UPDATE rrf_meta SET value = ? WHERE key = 'analyzer'", (json.dumps(config),))
    conn.commit()
    conn.close()
    with FTS5KeywordStore(path) as old:
        assert old.analyzer.cjk_bigrams is False
        assert ids(old, "configuring") == ["en"]
        assert ids(old, DOCS["ja"][:7]) == []  # whole CJK runs, as before: no partial match
    with FTS5KeywordStore(path, analyzer=Analyzer(cjk_bigrams=False)) as same:  # the equal analyzer is accepted
        assert same.count() == 2
    with pytest.raises(InvalidArgumentError, match="analyzer"):
        FTS5KeywordStore(path, analyzer=Analyzer())  # bigram queries would not match whole-run tokens


@pytest.mark.parametrize("language", ["german", "french"])
@pytest.mark.parametrize("text", HOSTILE_QUERIES, ids=lambda s: repr(s[:20]))
def test_hostile_queries_on_a_language_store_never_raise(language: str, text: str) -> None:
    with FTS5KeywordStore(analyzer=Analyzer(language=language)) as store:
        store.add(["a"], ["Les chevaux et die Häuser, 東京都庁"])
        assert isinstance(store.search(text, 5), list)


def test_a_custom_stemmer_that_emits_punctuation_never_reaches_fts5_as_syntax() -> None:
    with FTS5KeywordStore(analyzer=Analyzer(stem=lambda w: f'"{w}*:^(')) as store:
        store.add(["a", "b"], ["near database", "other words"])
        assert ids(store, "database") == ["a"]


_TEXT = st.text(alphabet=st.sampled_from(list("東京都庁の検索データ한국어처리水abcxyz ÄäéHaus")), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=6), st.sampled_from([None, "german"]))
def test_every_document_is_found_by_its_own_text(texts: list[str], language: str | None) -> None:
    analyzer = Analyzer(language=language)
    doc_ids = [f"d{i}" for i in range(len(texts))]
    for kind in ("fts5", "bm25"):
        with make(kind, None, analyzer) as store:
            store.add(doc_ids, texts)
            for doc_id, text in zip(doc_ids, texts):
                if analyzer.analyze_query(text):
                    assert doc_id in ids(store, text), (kind, text)


def test_fts5_doc_freq_of_a_language_store_counts_the_analyzer_term() -> None:
    with FTS5KeywordStore(analyzer=Analyzer(language="german")) as store:
        store.add(["a", "b", "c"], ["Die Häuser", "Ein Haus", "Der Baum"])
        assert store.doc_freq("Häusern") == store.doc_freq("haus") == 2
        assert store.doc_freq("die Häuser") == 2  # "die" is a German stopword: one term left
        assert store.doc_freq("Haus Baum") == 0  # two terms
