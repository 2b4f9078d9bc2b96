"""Language data of the analyzer: Snowball names and codes, the shipped stopword lists, CJK segmentation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever.analysis.languages import (
    LANGUAGES,
    STOPWORDS,
    cjk_segments,
    has_cjk,
    is_cjk,
    language_name,
    stemmer,
    stopwords_for,
)
from rrf_retriever.errors import InvalidArgumentError


def test_every_language_has_a_pystemmer_algorithm() -> None:
    import Stemmer

    assert set(LANGUAGES) == set(Stemmer.algorithms()) - {"porter"}
    for name in LANGUAGES:
        assert isinstance(stemmer(name)("words"), str)


@pytest.mark.parametrize(("given_name", "name"), [("de", "german"), ("FR", "french"), (" Spanish ", "spanish"),
                                                  ("nb", "norwegian")])
def test_names_and_iso_codes(given_name: str, name: str) -> None:
    assert language_name(given_name) == name


def test_stopword_lists_hold_folded_and_accented_forms() -> None:
    assert {"für", "fur", "über", "uber"} <= stopwords_for("german")
    assert {"été", "ete"} <= STOPWORDS["french"]
    assert set(STOPWORDS) == {"german", "french", "spanish", "italian", "portuguese", "dutch"}


def test_unknown_stemmer_is_our_error() -> None:
    with pytest.raises(InvalidArgumentError):
        stemmer("klingon")
    with pytest.raises(InvalidArgumentError):
        language_name("porter")  # an algorithm, not a language


@pytest.mark.parametrize(
    ("token", "pieces"),
    [("東京都庁", ["東京", "京都", "都庁"]), ("fts5の検索", ["fts5", "の検", "検索"]), ("水", ["水"]),
     ("abc", ["abc"]), ("a東b", ["a", "東", "b"]), ("한국어", ["한국", "국어"]), ("ラーメン", ["ラー", "ーメ", "メン"])],
)
def test_cjk_segments(token: str, pieces: list[str]) -> None:
    assert cjk_segments(token) == pieces


def test_script_tests() -> None:
    assert has_cjk("x 検索") and not has_cjk("Ελληνικά русский")
    assert is_cjk("検索") and not is_cjk("検索x") and not is_cjk("")


@given(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=30))
def test_segments_cover_the_token_and_bigrams_overlap(token: str) -> None:
    pieces = cjk_segments(token)
    assert all(pieces)
    # Joining each CJK run's bigrams back (dropping the overlap) gives the token again.
    rebuilt = ""
    previous_cjk = False
    for piece in pieces:
        cjk_bigram = is_cjk(piece) and len(piece) == 2
        rebuilt += piece[1] if cjk_bigram and previous_cjk else piece
        previous_cjk = cjk_bigram
    assert rebuilt == token
