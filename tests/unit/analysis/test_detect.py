"""Corpus-language detection: one closed-form case per script and language family, the majority rule, the English
default when unsure, and properties (deterministic, order-free, never raises)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.analysis.detect import LanguageDetection, detect_language, language_of_text, sample_texts
from rrf_retriever.analysis.detect_words import FUNCTION_WORDS, SCRIPT_LANGUAGES, script_of
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError

CORPORA = {
    "english": ["The cat is on the roof and it is asleep.", "A study of the effects of exercise on the heart."],
    "german": ["Die Katze sitzt auf dem Dach und schläft.", "Der Hund ist nicht im Haus, er ist im Garten."],
    "french": ["Le chat dort sur le toit de la maison.", "Les enfants sont dans le jardin avec leur mère."],
    "spanish": ["El gato duerme en el tejado de la casa.", "Los niños juegan en el parque con sus amigos."],
    "italian": ["Il gatto dorme sul tetto della casa.", "I bambini giocano nel parco con gli amici."],
    "portuguese": ["O gato dorme no telhado da casa.", "As crianças brincam no parque com os amigos."],
    "dutch": ["De kat slaapt op het dak van het huis.", "De kinderen spelen in het park met hun vrienden."],
    "swedish": ["Katten sover på taket och det är varmt.", "Barnen leker i parken med sina vänner."],
    "russian": ["Кошка спит на крыше, и это хорошо.", "Дети играют в парке с друзьями."],
    "ukrainian": ["Кішка спить на даху, і це добре.", "Діти граються в парку з друзями, їх багато."],
    "greek": ["Η γάτα κοιμάται στη στέγη του σπιτιού.", "Τα παιδιά παίζουν στο πάρκο με τους φίλους."],
    "arabic": ["القطة نائمة على سطح المنزل في الصباح.", "يلعب الأطفال في الحديقة مع أصدقائهم."],
    "persian": ["گربه روی پشت بام خانه خوابیده است.", "بچه‌ها در پارک با دوستان خود بازی می‌کنند."],
    "hebrew": ["החתול ישן על הגג של הבית.", "הילדים משחקים בפארק עם החברים שלהם."],
    "hindi": ["बिल्ली घर की छत पर सो रही है।", "बच्चे पार्क में अपने दोस्तों के साथ खेल रहे हैं।"],
    "chinese": ["猫在房子的屋顶上睡觉。", "孩子们和朋友们在公园里玩。"],
    "japanese": ["猫は家の屋根の上で寝ています。", "子供たちは友達と公園で遊んでいます。"],
    "korean": ["고양이가 집 지붕 위에서 자고 있습니다.", "아이들이 친구들과 공원에서 놀고 있습니다."],
}


@pytest.mark.parametrize("language", sorted(CORPORA))
def test_each_language_is_detected_and_its_analyzer_built(language: str) -> None:
    found = detect_language(CORPORA[language])
    assert (found.language, found.detected) == (language, True), found.reason
    analyzer = found.analyzer()
    assert isinstance(analyzer, Analyzer)
    assert analyzer.language == (None if language == "english" else language)  # None: the English default
    assert found.documents == 2 and sum(found.scripts.values()) == pytest.approx(1.0)


def test_scripts_of_letters() -> None:
    assert [script_of(c) for c in "aéжλשع語か한ก"] == [
        "latin", "latin", "cyrillic", "greek", "hebrew", "arabic", "cjk", "cjk", "cjk", "thai"]  # fmt: skip
    assert [script_of(c) for c in "1 .\u0301"] == ["other"] * 4


def test_a_text_abstains_without_evidence() -> None:
    assert language_of_text("") == (None, None, {})
    assert language_of_text("qdrant fts5 bm25 rrf")[:2] == ("latin", None)  # Latin letters, no function word
    assert language_of_text("Кошка")[:2] == ("cyrillic", "russian")  # a non-Latin script has a main language


def test_the_majority_of_texts_decides_and_one_long_text_cannot_outvote_many() -> None:
    german = CORPORA["german"] * 3
    long_english = " ".join(CORPORA["english"] * 200)
    found = detect_language([*german, long_english])
    assert found.language == "german" and found.languages == {"german": 0.8571, "english": 0.1429}


def test_no_majority_is_the_english_default_and_says_why() -> None:
    mixed = CORPORA["german"] + CORPORA["french"] + CORPORA["spanish"]
    found = detect_language(mixed)
    assert (found.language, found.detected) == ("english", False)
    assert "no Latin-script language holds a majority" in found.reason
    assert found.analyzer() == Analyzer()
    half = CORPORA["russian"] + CORPORA["chinese"] + CORPORA["english"][:1]
    assert "no script holds a majority" in detect_language(half).reason


def test_unsure_cases_fall_back_to_the_default_analyzer() -> None:
    assert detect_language([]).reason.startswith("no text has 3 letters")
    assert detect_language(["12", "", "!!"]).language == "english"
    thai = detect_language(["แมวนอนอยู่บนหลังคาบ้าน", "เด็กๆ เล่นในสวนสาธารณะ"])
    assert (thai.language, thai.detected, thai.script) == ("english", False, "thai")
    titles = detect_language(["Qdrant sparse vectors", "FTS5 tokenizer porter", "RRF fusion k=60"])
    assert (titles.language, titles.detected) == ("english", False)  # Latin without function words


def test_a_mostly_english_corpus_with_some_cjk_stays_english() -> None:
    corpus = CORPORA["english"] * 3 + CORPORA["chinese"]
    assert detect_language(corpus).language == "english"


def test_sample_texts_is_even_and_cut() -> None:
    texts = [str(i) for i in range(10)]
    assert sample_texts(texts, 5) == ["0", "2", "4", "6", "8"]
    assert sample_texts(["x" * 5000])[0] == "x" * 2000
    with pytest.raises(InvalidArgumentError):
        sample_texts(texts, 0)


def test_detection_reads_any_iterable_and_skips_non_strings() -> None:
    found = detect_language(t for t in [*CORPORA["french"], None, 42])  # type: ignore[misc]  # what a user may pass
    assert found.language == "french" and found.documents == 2


def test_as_dict_is_json_able_and_complete() -> None:
    import json

    found = detect_language(CORPORA["russian"])
    assert json.loads(json.dumps(found.as_dict())) == found.as_dict()
    assert set(found.as_dict()) == {"language", "detected", "script", "documents", "scripts", "languages", "reason"}


def test_every_candidate_language_has_words_and_an_analyzer() -> None:
    for script, languages in SCRIPT_LANGUAGES.items():
        for language in languages:
            Analyzer(language=language)  # every language detection can name is one the analyzer takes
            if script not in ("cjk", "greek", "tamil", "armenian"):
                assert 15 <= len(FUNCTION_WORDS[language]) <= 45, language


# ---- properties ----------------------------------------------------------------------------------------------

TEXTS = st.lists(st.text(max_size=80), max_size=12)


@settings(max_examples=150, deadline=None)
@given(TEXTS)
def test_never_raises_and_is_deterministic_on_any_unicode(texts: list[str]) -> None:
    first = detect_language(texts)
    assert isinstance(first, LanguageDetection)
    assert detect_language(list(texts)) == first
    assert first.language == "english" or first.detected
    first.analyzer()


@settings(max_examples=60, deadline=None)
@given(st.permutations(CORPORA["german"] * 4 + CORPORA["english"] + CORPORA["chinese"]))
def test_the_order_of_the_texts_does_not_change_a_clear_majority(texts: list[str]) -> None:
    assert detect_language(texts).language == "german"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(sorted(CORPORA)), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_a_shuffled_sample_gives_the_same_detection(picks: list[str], rng: object) -> None:
    texts = [t for name in picks for t in CORPORA[name]]
    shuffled = list(texts)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]  # hypothesis's Random
    assert detect_language(shuffled) == detect_language(texts)  # every text is in the sample: counts, not order


def test_a_single_string_is_refused_not_read_letter_by_letter() -> None:
    # Before: detect_language("Der Hund ...") read each letter as a text and answered English.
    text = "Der Hund ist nicht im Haus und die Katze auch nicht."
    for value in (text, text.encode(), {text: 1}):
        with pytest.raises(InvalidTypeError, match="texts"):
            detect_language(value)  # type: ignore[arg-type]  # the attack
    assert detect_language(iter([text])).language == "german"
