"""The analyzer and the FTS5 MATCH builder."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever.analysis.analyzer import (
    DEFAULT_STOPWORDS,
    MAX_QUERY_TERMS,
    Analyzer,
    default_analyzer,
)
from rrf_retriever.analysis.languages import is_cjk, normalize, tokenize
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, RRFRetrieverError
from rrf_retriever.stores.fts5.match import build_match_query, match_expression
from tests.reliability.hostile import HOSTILE_QUERIES

# ---- tokenize -----------------------------------------------------------------------------------------


def test_tokenize_lowercases_and_splits_on_non_alphanumerics() -> None:
    assert tokenize("Error E1234: DB-connection timed_out!") == ["error", "e1234", "db", "connection", "timed", "out"]


def test_tokenize_keeps_unicode_letters_and_digits_and_folds_diacritics() -> None:
    assert tokenize("Café Ελληνικά русский ١٢٣ 中文") == ["cafe", "ελληνικά", "русский", "١٢٣", "中文"]
    assert tokenize("Café", fold_diacritics=False) == ["café"]


def test_tokenize_fullwidth_and_ligatures_are_normalised() -> None:
    assert tokenize("ＦＴＳ５ ﬁle") == ["fts5", "file"]


def test_only_latin_diacritics_are_folded_like_fts5_unicode61() -> None:
    assert normalize("Ångström naïve") == "angstrom naive"
    assert normalize("русский ελληνικά") == "русский ελληνικά"


def test_tokenize_rejects_non_strings() -> None:
    with pytest.raises(InvalidTypeError, match="str"):
        tokenize(b"bytes")  # type: ignore[arg-type]


# ---- Analyzer -----------------------------------------------------------------------------------------


def test_terms_drop_stopwords_and_single_characters_but_keep_two_character_tokens() -> None:
    assert Analyzer().terms("The db is a CI/IO x thing") == ["db", "ci", "io", "thing"]


def test_default_stopwords_are_lucenes_33_word_set() -> None:
    assert len(DEFAULT_STOPWORDS) == 33
    assert {"the", "and", "not", "with"} <= DEFAULT_STOPWORDS
    assert "how" not in DEFAULT_STOPWORDS


def test_porter_stemming_conflates_inflections() -> None:
    a = Analyzer()
    assert a.analyze("configuring") == a.analyze("configured") == a.analyze("configure") == a.analyze("configures")


def test_stemming_can_be_switched_off_or_replaced() -> None:
    assert Analyzer(stem=None).analyze("configuring") == ["configuring"]
    assert Analyzer(stem=lambda w: w[:4]).analyze("configuring") == ["conf"]
    assert Analyzer(stem="english").analyze("generously") == ["generous"]


def test_custom_stopwords() -> None:
    assert Analyzer(stopwords=["foo"]).terms("foo the bar") == ["the", "bar"]
    assert Analyzer(stopwords=()).terms("the bar") == ["the", "bar"]


def test_bad_analyzer_arguments_raise_our_errors() -> None:
    with pytest.raises(InvalidTypeError):
        Analyzer(stopwords="the a")
    with pytest.raises(InvalidArgumentError):
        Analyzer(min_length=0)
    with pytest.raises(InvalidTypeError):
        Analyzer(stem=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="stemming"):
        Analyzer(stem="klingon").analyze("word")


def test_config_round_trip() -> None:
    a = Analyzer(stopwords=["x", "y"], stem="english", min_length=3, fold_diacritics=False)
    assert Analyzer.from_config(a.config()) == a
    with pytest.raises(InvalidArgumentError):
        Analyzer.from_config(Analyzer(stem=str.upper).config())


@given(st.text())
def test_terms_are_lowercase_alphanumeric_and_never_stopwords(text: str) -> None:
    for term in Analyzer().terms(text):
        assert term.isalnum()
        assert term == term.lower() or not term.isascii()
        assert len(term) >= 2 or is_cjk(term)  # a lone CJK character is a word of its own
        assert term not in DEFAULT_STOPWORDS


@given(st.text())
def test_analysis_is_deterministic_and_does_not_depend_on_case(text: str) -> None:
    a = default_analyzer()
    assert a.analyze(text) == a.analyze(text)
    assert a.terms(text.upper()) == a.terms(text.lower()) or not text.isascii()


# ---- build_match_query --------------------------------------------------------------------------------


def test_match_query_quotes_every_term_and_joins_with_or() -> None:
    assert build_match_query("configure FTS5 index") == '"configure" OR "fts5" OR "index"'


def test_match_query_is_none_when_nothing_survives() -> None:
    for text in ["", "   ", "the a of", "!!! ???", "x y z", "\x00"]:
        assert build_match_query(text) is None


def test_match_query_caps_terms() -> None:
    q = build_match_query("word " * 1000, max_terms=5)
    assert q == " OR ".join(['"word"'] * 5)
    with pytest.raises(InvalidArgumentError):
        build_match_query("x", max_terms=0)


def test_match_expression_joins_analyzer_terms_and_refuses_anything_else() -> None:
    assert match_expression(["a1", "ελληνικά"]) == '"a1" OR "ελληνικά"'
    assert match_expression(["x", "y"], "AND") == '"x" AND "y"'
    assert match_expression([]) is None
    for bad in (['say "hi'], ["two words"], ["col:x"], [""], ["*"]):
        with pytest.raises(InvalidArgumentError, match="analyzer term"):
            match_expression(bad)
    with pytest.raises(InvalidArgumentError, match="operator"):
        match_expression(["x"], "NEAR")


def test_match_query_rejects_non_strings_with_our_error() -> None:
    for bad in (None, b"bytes", 42, ["list"]):
        with pytest.raises(InvalidTypeError, match="query must be a str"):
            build_match_query(bad)  # type: ignore[arg-type]


@given(st.text())
def test_match_query_round_trips_to_the_analyzer_terms(text: str) -> None:
    """Property: parsing the MATCH string back gives exactly the analyzer's query terms (nothing else got in)."""
    query = build_match_query(text)
    terms = Analyzer().query_terms(text)[:256]
    if query is None:
        assert terms == []
        return
    parts = query.split(" OR ")
    assert all(p.startswith('"') and p.endswith('"') and p.count('"') == 2 for p in parts)
    assert [p[1:-1] for p in parts] == terms


# ---- against a real FTS5 table ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fts_table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
    rows = [
        "Configure the FTS5 index for near real-time search",
        "The DB connection failed with error E1234",
        "Use NEAR queries and column filters in SQLite",
        "Café résumé naïve: diacritics are folded",
        "Ελληνικά and русский and 中文 text",
        "Don't panic: O'Reilly's guide to e-mail",
        "Emoji 😀 are ignored by the tokenizer",
    ]
    # Stores index the analyzer's normalised text, so FTS5 sees what queries see (NFKC, Latin folding).
    conn.executemany("INSERT INTO docs(rowid, body) VALUES (?, ?)", [(i, normalize(r)) for i, r in enumerate(rows)])
    conn.execute("CREATE TABLE originals(id INTEGER PRIMARY KEY, body TEXT)")
    conn.executemany("INSERT INTO originals VALUES (?, ?)", list(enumerate(rows)))
    return conn


def _search(conn: sqlite3.Connection, text: str) -> list[str]:
    query = build_match_query(text)
    if query is None:
        return []
    sql = "SELECT o.body FROM docs JOIN originals o ON o.id = docs.rowid WHERE docs MATCH ? ORDER BY rank"
    return [r[0] for r in conn.execute(sql, (query,))]


@pytest.mark.parametrize("text", HOSTILE_QUERIES, ids=lambda s: repr(s[:30]))
def test_hostile_queries_never_raise_sqlite_errors(fts_table: sqlite3.Connection, text: str) -> None:
    try:
        _search(fts_table, text)
    except sqlite3.Error as exc:  # pragma: no cover - this is the failure being tested for
        pytest.fail(f"raw sqlite3 error for {text[:40]!r}: {exc}")


def test_operators_are_matched_as_text_not_parsed(fts_table: sqlite3.Connection) -> None:
    # "NEAR" is a word in one document; parsed as an operator it would be a syntax error or match nothing.
    assert sorted(_search(fts_table, "NEAR(")) == [
        "Configure the FTS5 index for near real-time search",
        "Use NEAR queries and column filters in SQLite",
    ]
    # "col:x" would be a column filter on a missing column; as text it is two terms.
    assert _search(fts_table, "column:filters") == ["Use NEAR queries and column filters in SQLite"]
    # A trailing * is not a prefix query: "conf*" must not match "Configure".
    assert _search(fts_table, "conf*") == []
    # "-" is not negation: "e-mail" finds the e-mail document.
    assert "Don't panic: O'Reilly's guide to e-mail" in _search(fts_table, "e-mail")


def test_porter_stemming_in_fts5_finds_inflections(fts_table: sqlite3.Connection) -> None:
    assert _search(fts_table, "configuring")[0].startswith("Configure")


def test_unicode_and_diacritics_match(fts_table: sqlite3.Connection) -> None:
    assert _search(fts_table, "cafe") == ["Café résumé naïve: diacritics are folded"]
    assert _search(fts_table, "русский") == ["Ελληνικά and русский and 中文 text"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=200))
def test_any_string_gives_a_result_or_our_error(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t(body) VALUES ('hello world')")
    try:
        query = build_match_query(text)
    except RRFRetrieverError:
        return
    if query is not None:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,)).fetchall()


# ---- conversational queries (tokenization holds by default) -----------------------------------------------


def test_seed_000_examples_hold_by_default() -> None:
    from rrf_retriever.stores.fts5.match import build_match_query

    assert build_match_query("How do I configure the Qdrant collection?") == '"configure" OR "qdrant" OR "collection"'
    assert build_match_query("how do I do it?") is None


def test_conversational_words_are_dropped_at_query_time_only() -> None:
    from rrf_retriever.analysis.analyzer import CONVERSATIONAL_STOPWORDS, Analyzer

    analyzer = Analyzer()
    assert "what" in CONVERSATIONAL_STOPWORDS
    assert analyzer.query_terms("What does the error mean") == ["error", "mean"]
    assert analyzer.terms("What does the error mean") == ["what", "does", "error", "mean"]  # indexing keeps them
    assert Analyzer(query_stopwords=()).query_terms("what does it mean") == ["what", "does", "mean"]
    # A query-time set is not part of the saved config: changing it never forces an index rebuild.
    assert Analyzer(query_stopwords=["error"]).config() == analyzer.config()


def test_a_conversational_question_runs_dense_only_on_the_default_stack() -> None:
    from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding

    r = EnsembleRRFRetriever.from_texts(["how do I do it", "configure the collection"], HashingEmbedding(16))
    trace = r.search("how do I do it?").trace
    keyword = next(leg for leg in trace.legs if leg.name == "keyword")
    assert not keyword.called and keyword.note == "no keyword term survives analysis"
    r.close()


# ---- CJK bigrams --------------------------------------------------------------------------------------------


def test_a_cjk_run_becomes_overlapping_bigrams() -> None:
    assert Analyzer().terms("東京都庁") == ["東京", "京都", "都庁"]
    assert Analyzer().terms("東京") == ["東京"]


def test_mixed_latin_and_cjk_text_splits_at_the_script_boundary() -> None:
    assert Analyzer().terms("FTS5の検索") == ["fts5", "の検", "検索"]
    assert Analyzer().analyze("Configuring データベース") == ["configur", "デー", "ータ", "タベ", "ベー", "ース"]


def test_hangul_is_bigrammed_and_a_lone_cjk_character_stays_a_unigram() -> None:
    assert Analyzer().terms("자연어처리 시스템") == ["자연", "연어", "어처", "처리", "시스", "스템"]
    assert Analyzer().terms("水 and 火") == ["水", "火"]  # min_length does not drop a one-character CJK word


def test_full_width_forms_are_nfkc_normalised_before_splitting() -> None:
    assert Analyzer().terms("ＦＴＳ５　１２３ ｶﾀｶﾅ") == ["fts5", "123", "カタ", "タカ", "カナ"]


def test_cjk_bigrams_can_be_switched_off_and_text_without_cjk_is_untouched() -> None:
    assert Analyzer(cjk_bigrams=False).terms("東京都庁の検索") == ["東京都庁の検索"]
    text = "Café naïve Ελληνικά русский configuring"
    assert Analyzer().normalize(text) == Analyzer(cjk_bigrams=False).normalize(text) == normalize(text)


def test_a_cjk_query_of_a_substring_shares_terms_with_the_document() -> None:
    a = Analyzer()
    assert set(a.analyze_query("都庁")) <= set(a.analyze("東京都庁の検索システム"))
    assert set(a.analyze_query("자연어")) <= set(a.analyze("자연어처리는 기술입니다"))


# ---- languages ------------------------------------------------------------------------------------------------


def test_a_language_sets_its_snowball_stemmer_and_stopwords() -> None:
    german = Analyzer(language="german")
    assert german.stem == "german"
    assert german.analyze("Die Häuser und die Bücher") == ["haus", "buch"]
    assert german.analyze_query("Haus") == ["haus"]
    assert Analyzer(language="fr").analyze("Les chevaux de l'économie") == ["cheval", "econom"]
    assert Analyzer(language="es").analyze("Las canciones de los niños") == ["cancion", "nin"]


def test_english_is_the_default_exactly() -> None:
    assert Analyzer(language="english") == Analyzer(language="en") == Analyzer() == default_analyzer()
    assert Analyzer().stem == "porter"
    assert Analyzer().stopwords == DEFAULT_STOPWORDS


def test_explicit_arguments_win_over_the_language_defaults() -> None:
    a = Analyzer(language="german", stem=None, stopwords=())
    assert a.analyze("Die Häuser") == ["die", "hauser"]
    assert a.language == "german"


def test_a_language_without_a_shipped_stopword_list_drops_none() -> None:
    assert Analyzer(language="finnish").stopwords == frozenset()


def test_unknown_language_names_are_our_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown language"):
        Analyzer(language="klingon")
    with pytest.raises(InvalidTypeError):
        Analyzer(language=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Analyzer(cjk_bigrams="yes")  # type: ignore[arg-type]


def test_a_cjk_language_is_the_english_analysis_under_its_own_name() -> None:
    for name, code in (("chinese", "zh"), ("japanese", "ja"), ("korean", "ko")):
        a = Analyzer(language=code)
        assert a.language == name
        assert a.analyze("東京都庁 configuring") == Analyzer().analyze("東京都庁 configuring")
        assert a != Analyzer()  # another language: an index of one refuses the other


def test_a_language_without_a_snowball_stemmer_does_not_stem() -> None:
    for name in ("hebrew", "persian", "ukrainian", "bulgarian"):
        a = Analyzer(language=name)
        assert a.language == name and a.stem is None and a.stopwords == frozenset()
    assert Analyzer(language="uk").analyze("Київ столиця України") == ["київ", "столиця", "україни"]


def test_language_and_cjk_settings_round_trip_through_config() -> None:
    for a in (Analyzer(language="german"), Analyzer(language="french", cjk_bigrams=False), Analyzer(),
              Analyzer(language="chinese"), Analyzer(language="hebrew")):
        assert Analyzer.from_config(a.config()) == a
        assert Analyzer.from_config(a.config()).language == a.language


def test_a_config_saved_before_languages_opens_as_it_was_built() -> None:
    old = {"stopwords": sorted(DEFAULT_STOPWORDS), "stem": "porter", "min_length": 2, "fold_diacritics": True}
    a = Analyzer.from_config(old)
    assert a.language is None
    assert a.cjk_bigrams is False  # the index holds whole CJK runs: its queries must too
    assert a.terms("東京都庁 configuring") == ["東京都庁", "configuring"]
    assert a == Analyzer(cjk_bigrams=False)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=200), st.sampled_from([None, "german", "french"]))
def test_analyzer_never_raises_and_terms_hold_no_whitespace_or_quotes(text: str, language: str | None) -> None:
    a = Analyzer(language=language)
    for term in [*a.terms(text), *a.analyze(text), *a.analyze_query(text)]:
        assert term
        assert not any(ch.isspace() or ch in "\"'" for ch in term)
    assert match_expression(a.query_terms(text)) is None or a.query_terms(text)


_MIXED = st.text(
    alphabet=st.sampled_from(list("東京都庁の検索データベース한국어처리水火abcxyz0123 ÄäÖöéè")), min_size=1, max_size=40
)


@settings(max_examples=300, deadline=None)
@given(_MIXED, st.sampled_from([None, "german"]))
def test_the_query_terms_of_a_document_are_all_in_its_index_terms(text: str, language: str | None) -> None:
    # Whatever the document, searching for its own text looks up only terms its index entry holds.
    a = Analyzer(language=language)
    assert set(a.analyze_query(text)) <= set(a.analyze(text))


def test_a_long_query_keeps_its_first_terms_only() -> None:
    words = [f"w{i}x" for i in range(5_000)]
    analyzer = Analyzer()
    assert analyzer.query_terms(" ".join(words)) == words[:MAX_QUERY_TERMS]
    assert analyzer.analyze_query(" ".join(words)) == [analyzer.analyze(w)[0] for w in words[:MAX_QUERY_TERMS]]
    assert len(analyzer.terms(" ".join(words))) == 5_000  # the index side reads every term


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(alphabet="abcdeéingsß ÄÖ.,", max_size=40), max_size=8),
       language=st.sampled_from([None, "german", "english", "french"]))
def test_analyze_many_is_analyze_of_each_text(texts: list[str], language: str | None) -> None:
    analyzer = Analyzer(language=language) if language else Analyzer()
    assert analyzer.analyze_many(texts) == [analyzer.analyze(t) for t in texts]
