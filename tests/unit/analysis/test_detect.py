"""Corpus-language detection: one closed-form case per script and language family, the majority rule, the English
default when unsure, and properties (deterministic, order-free, never raises)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.analysis.detect import LanguageDetection, detect_language, language_of_text, sample_texts
from rrf_retriever.analysis.detect_words import FUNCTION_WORDS, SCRIPT_LANGUAGES, script_of
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.index.manifest import read_manifest

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


# ---- attacks: code, numbers, tables, short and mixed texts stay English; real text of other languages does not ----

JS_TEMPLATES = [
    "const {n} = (e) => {{ e.preventDefault(); return e.target.value; }};",
    "function {n}(a, b) {{ if (a === b) return a; else return b; }}",
    "document.querySelector('#{n}').addEventListener('click', function (e) {{ e.stopPropagation(); }});",
    "for (let i = 0; i < {n}.length; i++) {{ if ({n}[i] > e) e = {n}[i]; }}",
    "try {{ JSON.parse({n}); }} catch (e) {{ console.error(e); }}",
    "export default {{ name: '{n}', data() {{ return {{ e: null, a: 1 }}; }} }};",
    "const {n} = arr.map((x, i) => x * i).filter(e => e !== undefined);",
    "if (typeof {n} === 'undefined' || {n} === null) {{ throw new Error('e'); }}",
    "{n}.then(function (r) {{ return r.json(); }}).catch(function (e) {{ return e; }});",
    "var {n} = e.keyCode || e.which; if ({n} == 13) {{ e.preventDefault(); }}",
    "$('.{n}').on('change', e => setState({{ value: e.target.value }}));",
    "let {n} = new Map(); {n}.set('a', 1); for (const [k, v] of {n}) console.log(k, v);",
]
JS_SNIPPETS = [t.format(n=n) for t in JS_TEMPLATES for n in ("handler", "items", "result", "payload", "node")]

PYTHON = ["def f(a, e):\n    if e is None:\n        return a\n    del a[e]\n    return e",
          "for i, e in enumerate(xs):\n    se = e * 2\n    la = se + i",
          "try:\n    e = d['a']\nexcept KeyError as e:\n    raise ValueError(e) from e",
          "with open(p) as f:\n    for e in f:\n        print(e, end='')",
          "x = [e for e in range(10) if e % 2]\nda = {'a': 1, 'e': 2}"]  # fmt: skip
SQL = ["SELECT a.id, e.name FROM a JOIN e ON e.a_id = a.id WHERE e.x IS NOT NULL",
       "INSERT INTO e (a, b) VALUES (1, 'e'), (2, 'a') ON CONFLICT DO NOTHING",
       "UPDATE e SET a = a + 1 WHERE e.id IN (SELECT id FROM a WHERE a.de = 'la')",
       "CREATE INDEX e_a ON e (a, e) WHERE del IS FALSE"]  # fmt: skip
JSON_LINES = ['{"e": 1, "a": [1, 2, 3], "i": "e", "o": null}', '{"id": "e-1", "la": "de", "se": true, "e": 2.5}',
              '{"a": {"e": {"i": "o"}}, "u": "a e i o u"}']  # fmt: skip
CSV_ROWS = ["id,e,a,i,o\n1,2,3,4,5", "e;a;i\n0.1;0.2;0.3\n1e-3;2e5;3", "a\te\ti\n12\t13\t14\ne\ta\ti",
            "name,de,la,se\nx,1,2,3\ny,e,a,i"]  # fmt: skip
UNICODE_NAMES = ["\n".join(f"    '\\u{0x43B + i:04x}'   #  0x{0xEB + i:02X} -> CYRILLIC SMALL LETTER {name}"
                           for i, name in enumerate(["EL", "EN", "ES", "DE", "HA", "TE", "U", "EF"]))]  # fmt: skip
LOG_LINES = ["2024-03-01 12:00:01 INFO e=1 a=2 i=3 took 12 ms", "E 12:00:02 [a] e: connection reset (e=104)",
             "W0301 12:00:03.123 e.py:42] a e i o u timeout=30s", "DEBUG e 0x7f3a a 0x00ff i 12 o 13"]  # fmt: skip


@pytest.mark.parametrize("corpus", [JS_SNIPPETS, PYTHON * 6, SQL * 8, JSON_LINES * 10, CSV_ROWS * 8, LOG_LINES * 8,
                                    PYTHON + SQL + JSON_LINES + CSV_ROWS + LOG_LINES, UNICODE_NAMES],
                         ids=["javascript", "python", "sql", "json", "csv", "logs", "all", "letter-names"])  # fmt: skip
def test_code_numbers_tables_and_logs_are_english(corpus: list[str]) -> None:
    found = detect_language(corpus)
    assert found.language == "english", found.reason
    assert [t for t in corpus if language_of_text(t)[1] not in (None, "english")] == []  # no text votes otherwise


@pytest.mark.parametrize("text", ["Vitamin E is found in nuts", "Her name is Ana", "Take vitamin E with food",
                                  "Grade A or grade E", "Vitamin E and vitamin A"])  # fmt: skip
def test_a_single_letter_is_never_evidence_of_another_language(text: str) -> None:
    assert detect_language([text]).language == "english"
    assert detect_language([text] * 20).language == "english"
    assert language_of_text(text)[1] in (None, "english")


ENGLISH = ["The patients were followed for two years after the start of the treatment.",
           "We found that the effect of the drug was larger in older patients than in younger ones.",
           "This study describes a new method for measuring blood pressure at home.",
           "The results suggest that exercise can reduce the risk of heart disease.",
           "In the second trial, the dose was doubled and the side effects were recorded."]  # fmt: skip
FOREIGN_LINES = ["Il file non è stato trovato nella cartella della applicazione.",
                 "Dosya bulunamadı ve bu işlem için bir hata oluştu.",
                 "Die Datei wurde nicht gefunden, und der Vorgang ist fehlgeschlagen."]  # fmt: skip


def test_a_mostly_english_corpus_with_a_few_foreign_lines_stays_english() -> None:
    corpus = ENGLISH * 4 + FOREIGN_LINES  # 20 English texts, 3 of other languages
    found = detect_language(corpus)
    assert (found.language, found.detected) == ("english", True), found.reason
    assert detect_language(ENGLISH + FOREIGN_LINES[:1] * 4).language == "english"  # 5 against 4: not twice English
    titles = ["Error handling in e-commerce", "Vitamin E", "Her name is Ana", "Type A and type E", "del Toro"] * 4
    assert detect_language(titles + FOREIGN_LINES[:2]).language == "english"


PARAGRAPHS = {
    "italian": "La città è stata fondata nel periodo romano e per molti secoli è rimasta un centro importante per il "
    "commercio. Oggi gli abitanti sono circa duecentomila e la maggior parte di loro lavora nei servizi.",
    "turkish": "Şehir Roma döneminde kurulmuş ve yüzyıllar boyunca ticaret için önemli bir merkez olarak kalmıştır. "
    "Bugün yaklaşık iki yüz bin kişi yaşıyor ve bu insanların çoğu hizmet sektöründe çalışıyor.",
    "german": "Die Stadt wurde in der Römerzeit gegründet und blieb über viele Jahrhunderte ein wichtiges Zentrum "
    "für den Handel. Heute leben dort etwa zweihunderttausend Menschen, die meisten von ihnen arbeiten im Dienst.",
    "french": "La ville a été fondée à l'époque romaine et elle est restée pendant des siècles un centre important "
    "pour le commerce. Aujourd'hui elle compte environ deux cent mille habitants qui travaillent dans les services.",
    "spanish": "La ciudad fue fundada en la época romana y durante muchos siglos fue un centro importante para el "
    "comercio. Hoy tiene unos doscientos mil habitantes y la mayoría de ellos trabaja en los servicios.",
    "portuguese": "A cidade foi fundada no período romano e durante muitos séculos foi um centro importante para o "
    "comércio. Hoje tem cerca de duzentos mil habitantes e a maioria deles trabalha nos serviços.",
    "dutch": "De stad werd in de Romeinse tijd gesticht en bleef eeuwenlang een belangrijk centrum voor de handel. "
    "Nu wonen er ongeveer tweehonderdduizend mensen en de meesten van hen werken in de dienstverlening.",
    "finnish": "Kaupunki perustettiin roomalaisella kaudella, ja se oli vuosisatojen ajan tärkeä kaupan keskus. "
    "Nyt siellä asuu noin kaksisataatuhatta ihmistä, ja useimmat heistä ovat töissä palveluissa, mutta myös "
    "teollisuus on tärkeä.",
}


@pytest.mark.parametrize("language", sorted(PARAGRAPHS))
def test_real_paragraphs_of_other_languages_are_still_detected(language: str) -> None:
    paragraph = PARAGRAPHS[language]
    assert detect_language([paragraph]).language == language
    sentences = [s.strip() + "." for s in paragraph.split(".") if s.strip()]
    assert detect_language(sentences * 3 + JS_SNIPPETS[:2]).language == language  # a corpus of its sentences


CODE_TOKENS = st.sampled_from(["e", "a", "i", "o", "u", "x", "'de'", '"la":', "x.se", "el=1", "del", "var", "const",
                               "if", "else", "return", "null", "true", "def", "import", "from", "SELECT", "WHERE",
                               "e.target", "a[i]", "f(e)", "x_1", "0x1f", "1e-3", "{", "}", "(", ")", ";", "=", "=>",
                               "==", ",", ":", "#", "//", "12", "3.14", "2024-01-01", "\n", "\t"])  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(CODE_TOKENS, max_size=60).map(" ".join), min_size=1, max_size=40))
def test_texts_of_code_tokens_numbers_and_punctuation_are_never_another_language(texts: list[str]) -> None:
    assert detect_language(texts).language == "english"


def english_embedding() -> HashingEmbedding:
    """A plumbing embedder that declares English (as MiniLM does): the weak-leg rule reads it."""
    emb = HashingEmbedding(16)
    emb.languages = frozenset({"english"})
    return emb


@pytest.mark.parametrize("corpus", [JS_SNIPPETS, ["Vitamin E is found in nuts", "Her name is Ana"] * 10,
                                    PYTHON + SQL + JSON_LINES + CSV_ROWS + LOG_LINES, ENGLISH * 4 + FOREIGN_LINES],
                         ids=["javascript", "single-letters", "code-tables-logs", "mostly-english"])  # fmt: skip
def test_an_index_of_code_or_short_english_keeps_english_and_its_dense_leg(corpus: list[str], tmp_path: Path) -> None:
    ids = [f"d{i}" for i in range(len(corpus))]
    with EnsembleRRFRetriever.from_texts(corpus, english_embedding(), ids=ids, path=tmp_path / "idx") as retriever:
        assert retriever.corpus_language == "english"
        result = retriever.search("value")
        dense = next(t for t in result.trace.legs if t.name == "dense")
        assert dense.weight == 1.0 and "corpus language" not in (dense.note or "")  # not weighted down x0.05
        assert "weak_legs" not in result.trace.stage_counts
    manifest = read_manifest(tmp_path / "idx")
    assert manifest["analyzer"]["language"] in (None, "english")
    assert manifest["language_detection"]["language"] == "english"


def test_an_index_of_italian_paragraphs_is_italian_and_says_so(tmp_path: Path) -> None:
    corpus = [s.strip() + "." for s in PARAGRAPHS["italian"].split(".") if s.strip()] * 3
    ids = [f"d{i}" for i in range(len(corpus))]
    with EnsembleRRFRetriever.from_texts(corpus, english_embedding(), ids=ids, path=tmp_path / "idx") as retriever:
        assert retriever.corpus_language == "italian"
        dense = next(t for t in retriever.search("città").trace.legs if t.name == "dense")
        assert "corpus language (italian)" in (dense.note or "")  # the rule acts on real Italian, as it should
    assert read_manifest(tmp_path / "idx")["language_detection"]["language"] == "italian"
