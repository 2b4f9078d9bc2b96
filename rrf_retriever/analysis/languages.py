"""The language layer of the keyword analyzer: Unicode normalisation and tokens, CJK bigrams, Snowball stemmers,
small stopword lists. Pure (no I/O); :mod:`rrf_retriever.analysis.analyzer` builds the analyzer on it.

* :func:`normalize` (NFKC, lower case, Latin diacritics folded as FTS5's ``unicode61 remove_diacritics 2`` does) and
  :func:`tokenize` (runs of Unicode letters and digits); ``rrf_retriever.tokenize`` is this one.

* :data:`LANGUAGES`: the Snowball stemmers PyStemmer ships (its ``porter`` is English, the default), reachable by
  name or ISO 639-1 code (``"de"`` -> ``"german"``) through :func:`language_name`. :data:`CJK_LANGUAGES` (their
  text is cut into bigrams; Latin words among it are analysed as English) and :data:`UNSTEMMED_LANGUAGES`
  (languages the corpus-language detector names that Snowball has no stemmer for: no stemming) are languages too,
  so an analyzer records the language of its corpus whatever it is.
* :data:`STOPWORDS`: short, conservative stopword lists written for this project (the most frequent function
  words; Lucene-sized, not the long Snowball lists) for German, French, Spanish, Italian, Portuguese and Dutch.
  Every other language gets none: BM25's IDF already makes its frequent words cheap.
* CJK: Chinese, Japanese and Korean are written without spaces between words (Korean with spaces between
  phrases), so a run of Han / Hiragana / Katakana / Hangul characters is one unicode61 token, and a query for a
  word inside it finds nothing. :func:`cjk_segments` cuts such a run into overlapping character bigrams
  (``東京都庁`` -> ``東京 京都 都庁``; a lone character stays itself), the scheme of Lucene's ``CJKBigramFilter``:
  no dictionary, and every query word of two or more characters is a run of bigrams the index holds.

Example:
    >>> language_name("DE"), cjk_segments("fts5の検索")
    ('german', ['fts5', 'の検', '検索'])
"""

from __future__ import annotations

import enum
import re
import threading
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, missing_dependency
from rrf_retriever.validate import check_str

__all__ = [
    "CJK_LANGUAGES",
    "LANGUAGES",
    "LANGUAGE_DEFAULT",
    "STOPWORDS",
    "UNSTEMMED_LANGUAGES",
    "LanguageDefault",
    "cjk_bigrams",
    "cjk_segments",
    "has_cjk",
    "is_cjk",
    "language_name",
    "normalize",
    "stemmer",
    "stopwords_for",
    "tokenize",
    "words",
]

#: Snowball languages of PyStemmer 2.2 (``Stemmer.algorithms()`` without ``porter``, which is English's default).
LANGUAGES: tuple[str, ...] = (
    "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish", "french", "german",
    "greek", "hindi", "hungarian", "indonesian", "irish", "italian", "lithuanian", "nepali", "norwegian",
    "portuguese", "romanian", "russian", "serbian", "spanish", "swedish", "tamil", "turkish", "yiddish",
)  # fmt: skip


#: Written without spaces between words: every analyzer cuts their text into character bigrams (``cjk_bigrams``);
#: ``Analyzer(language="chinese")`` is the English default analyzer (for the Latin words mixed in) that says so.
CJK_LANGUAGES: tuple[str, ...] = ("chinese", "japanese", "korean")

#: Languages without a Snowball stemmer that the corpus-language detector tells apart: analyzed without stemming.
UNSTEMMED_LANGUAGES: tuple[str, ...] = ("bulgarian", "hebrew", "persian", "ukrainian")


class LanguageDefault(enum.Enum):
    """The marker of an analyzer argument left to its language (its stemmer, stopwords, query stopwords)."""

    LANGUAGE = "the language's default"

    def __repr__(self) -> str:
        return "<the language's default>"


#: The default of the analyzer's ``stem``, ``stopwords`` and ``query_stopwords``: the language's own (English:
#: Porter, Lucene's stopwords, the conversational query words; another language: its Snowball stemmer and list).
LANGUAGE_DEFAULT = LanguageDefault.LANGUAGE

_CODES = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
    "en": "english", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian", "ne": "nepali",
    "no": "norwegian", "nb": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
    "zh": "chinese", "ja": "japanese", "ko": "korean", "bg": "bulgarian", "he": "hebrew", "fa": "persian",
    "uk": "ukrainian",
}  # fmt: skip

# Hand-written for this project: each language's most frequent articles, pronouns, prepositions, conjunctions and
# auxiliaries. Diacritics as written; :func:`stopwords_for` adds the folded forms (``für`` and ``fur``).
_LISTS = {
    "german": "aber als am an auch auf aus bei bin bis bist da damit dann das dass daß dem den denn der des die "
    "dies diese diesem diesen dieser dieses doch du durch ein eine einem einen einer eines er es für hat hatte "
    "ich ihr im in ist ja kein keine mit nach nicht noch nur ob oder sich sie sind so über um und uns von vom vor "
    "war waren was weil wenn wie wir wird wo zu zum zur",
    "french": "au aux avec ce ces cette dans de des du elle elles en est et eux il ils je la le les leur leurs "
    "lui ma mais me même mes moi mon ne nos notre nous on ou où par pas pour qu que qui sa se ses son sont sur "
    "ta te tes toi ton tu un une vos votre vous été être",
    "spanish": "al algo como con de del el ella ellas ellos en entre era es esa ese eso esta está están este "
    "esto estos fue ha hay la las le les lo los más me mi muy no nos para pero por que se ser sin sobre son "
    "su sus también te tu un una uno unos ya yo",
    "italian": "agli ai al alla alle anche che chi come con da dal dalla dei del della delle di ed gli ha hanno "
    "il in io la le lo ma mi ne nel nella non per più se si sono su sua suo tra un una uno",
    "portuguese": "ao aos as com como da das de do dos ela ele em entre era essa esse esta este eu foi há isso "
    "mais mas na nas no nos não os ou para pela pelo por que se sem ser seu sua são também um uma",
    "dutch": "aan al als bij dan dat de der deze die dit door een en er had heb heeft het hij hoe ik in is je "
    "kan maar met mij naar niet nog of om ook op over te tot uit van voor was wat we wel werd wie wij worden zal "
    "ze zich zij zijn",
}


def _with_folded(words: str) -> frozenset[str]:
    out = set()
    for word in words.split():
        out.add(word)
        out.add("".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)))
    return frozenset(out)


#: The stopword lists shipped, by Snowball language name (each word also in its diacritics-folded form).
STOPWORDS: dict[str, frozenset[str]] = {name: _with_folded(words) for name, words in _LISTS.items()}


def language_name(language: str) -> str:
    """The name of ``language`` (a name or an ISO 639-1 code, any case): a Snowball language, or one of
    :data:`CJK_LANGUAGES` or :data:`UNSTEMMED_LANGUAGES`.

    Raises:
        InvalidTypeError: not a string.
        InvalidArgumentError: not a language the analyzer knows.

    Example:
        >>> language_name("French"), language_name("pt"), language_name("zh")
        ('french', 'portuguese', 'chinese')
    """
    if not isinstance(language, str):
        msg = f"language must be a language name such as 'german', not {type(language).__name__}"
        raise InvalidTypeError(msg)
    key = language.strip().lower()
    name = _CODES.get(key, key)
    if name in LANGUAGES or name in CJK_LANGUAGES or name in UNSTEMMED_LANGUAGES:
        return name
    known = sorted((*LANGUAGES, *CJK_LANGUAGES, *UNSTEMMED_LANGUAGES))
    msg = f"unknown language {language!r}; use one of {', '.join(known)} (or its ISO 639-1 code)"
    raise InvalidArgumentError(msg)


def stopwords_for(language: str) -> frozenset[str]:
    """The shipped stopword list of a language; empty for a language without one (see :data:`STOPWORDS`).

    Example:
        >>> "und" in stopwords_for("de"), stopwords_for("finnish")
        (True, frozenset())
    """
    return STOPWORDS.get(language_name(language), frozenset())


# ---------------------------------------------------------------------------------------------- tokens

# A token is a run of Unicode letters and digits; ``[^\W_]`` is "word character but not underscore".
_TOKEN = re.compile(r"[^\W_]+")


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    """Strip the marks of a Latin letter (``é`` -> ``e``); leave other scripts alone (``й`` stays ``й``).

    This is what FTS5's ``unicode61 remove_diacritics 2`` does: it folds Latin diacritics only.
    """
    decomposed = unicodedata.normalize("NFKD", ch)
    base = decomposed[0]
    if base.isascii() and all(unicodedata.combining(c) for c in decomposed[1:]):
        return base
    return ch


def normalize(text: str, *, fold_diacritics: bool = True) -> str:
    """NFKC, lower-case and (by default) Latin diacritics folded: the text form both index and query use.

    Example:
        >>> normalize("Café ＦＴＳ５ Русский")
        'cafe fts5 русский'
    """
    text = unicodedata.normalize("NFKC", check_str(text, "text")).lower()
    if fold_diacritics and not text.isascii():
        text = "".join(ch if ch.isascii() else _fold_char(ch) for ch in text)
    return text


def tokenize(text: str, *, fold_diacritics: bool = True) -> list[str]:
    """Split text into lower-cased tokens of Unicode letters and digits, keeping every token.

    Args:
        text: Any string (control characters, NUL and lone surrogates are separators).
        fold_diacritics: Remove combining marks (``é`` -> ``e``), as FTS5's unicode61 tokenizer does.

    Returns:
        The tokens in order, duplicates and stopwords included.

    Example:
        >>> tokenize("Error E1234: the DB-connection (café) timed_out")
        ['error', 'e1234', 'the', 'db', 'connection', 'cafe', 'timed', 'out']
    """
    return words(normalize(text, fold_diacritics=fold_diacritics))


def words(text: str) -> list[str]:
    """The runs of Unicode letters and digits of ``text`` (no normalisation: see :func:`tokenize`).

    Example:
        >>> words("fts5の検索, snake_case!")
        ['fts5の検索', 'snake', 'case']
    """
    return _TOKEN.findall(text)


# ---------------------------------------------------------------------------------------------- CJK

# Han (with the iteration marks 々〆〇 and CJK compatibility ideographs), Hiragana, Katakana (with the phonetic
# extensions), Hangul syllables and jamo. Only letters reach this test (tokens are runs of letters and digits).
_CJK_CHAR = re.compile(
    "[\u1100-\u11ff\u3005-\u3007\u3041-\u309f\u30a1-\u30ff\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\U00020000-\U0003134f]"
)
_CJK_RUNS = re.compile(f"{_CJK_CHAR.pattern}+")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han, Kana or Hangul character.

    Example:
        >>> has_cjk("plain text"), has_cjk("東京 tower")
        (False, True)
    """
    return not text.isascii() and _CJK_CHAR.search(text) is not None


def is_cjk(token: str) -> bool:
    """Whether every character of ``token`` is Han, Kana or Hangul (a bigram or a lone CJK character).

    Example:
        >>> is_cjk("東京"), is_cjk("fts5の")
        (True, False)
    """
    return bool(token) and _CJK_RUNS.fullmatch(token) is not None


def cjk_segments(token: str) -> list[str]:
    """Cut the CJK runs of one token into overlapping bigrams; other characters stay whole pieces.

    Args:
        token: A run of letters and digits (one token of the analyzer).

    Returns:
        The pieces in order: each non-CJK stretch as is, each CJK run of n >= 2 characters as its n - 1
        bigrams, a lone CJK character as itself.

    Example:
        >>> cjk_segments("東京都庁"), cjk_segments("한국어"), cjk_segments("水")
        (['東京', '京都', '都庁'], ['한국', '국어'], ['水'])
    """
    pieces: list[str] = []
    last = 0
    for match in _CJK_RUNS.finditer(token):
        if match.start() > last:
            pieces.append(token[last : match.start()])
        run = match.group()
        pieces.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        last = match.end()
    if last < len(token):
        pieces.append(token[last:])
    return pieces


def _bigram_token(match: re.Match[str]) -> str:
    token = match.group()
    return token if token.isascii() else " ".join(cjk_segments(token))


def cjk_bigrams(text: str) -> str:
    """``text`` with each token holding CJK characters replaced by its :func:`cjk_segments`, space-separated
    (what a keyword store indexes: FTS5's unicode61 then sees every bigram as a token). Text without CJK
    characters is returned as is.

    Example:
        >>> cjk_bigrams("see 東京都庁, fts5の検索")
        'see 東京 京都 都庁, fts5 の検 検索'
    """
    return _TOKEN.sub(_bigram_token, text) if has_cjk(text) else text


# ---------------------------------------------------------------------------------------------- stemmers

# Porter (1980) is what SQLite's ``porter`` tokenizer implements; Snowball "english" is Porter2.
_STEMMER_ALIASES = {"porter": "porter", "english": "english", "snowball": "english", "porter2": "english"}


class _ThreadLocalStemmer:
    """PyStemmer objects are not thread-safe: one per thread, each with its own word cache."""

    def __init__(self, algorithm: str) -> None:
        try:
            import Stemmer  # PyStemmer
        except ImportError as exc:
            raise missing_dependency("PyStemmer", "bm25", f"stemming with {algorithm!r}") from exc
        self._module = Stemmer
        self._algorithm = algorithm
        self._local = threading.local()
        # Fail now, not on first use, if the algorithm does not exist.
        self._module.Stemmer(algorithm)

    def __call__(self, word: str) -> str:
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = self._module.Stemmer(self._algorithm)
            self._local.stemmer = stemmer
        return stemmer.stemWord(word)

    def __repr__(self) -> str:
        return f"PyStemmer({self._algorithm!r})"


@lru_cache(maxsize=16)
def stemmer(name: str) -> Callable[[str], str]:
    """A thread-safe Snowball stemmer by name: ``"porter"`` (SQLite's porter tokenizer's algorithm),
    ``"english"`` (Porter2), another Snowball language or its ISO 639-1 code. Needs PyStemmer (extra ``bm25``).

    Raises:
        InvalidArgumentError: an unknown algorithm.

    Example:
        >>> stemmer("german")("häuser"), stemmer("porter")("configuring")
        ('haus', 'configur')
    """
    key = name.lower()
    algorithm = _STEMMER_ALIASES.get(key, _CODES.get(key, key))
    try:
        return _ThreadLocalStemmer(algorithm)
    except KeyError as exc:
        msg = f"unknown stemming algorithm {name!r}; use 'porter', 'english' or another Snowball language"
        raise InvalidArgumentError(msg) from exc
