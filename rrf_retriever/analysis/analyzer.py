"""Keyword analysis: one analyzer for indexing and querying.

Everything here is pure: no I/O, no framework types, inputs never mutated.

The analyzer (shared by every keyword store, so FTS5 and BM25 agree):

1. Unicode NFKC normalisation, lower-casing, and (by default) Latin diacritics folded (``café`` -> ``cafe``),
   as FTS5's ``unicode61 remove_diacritics 2`` does (other scripts keep their marks: ``й`` is a letter).
   Keyword stores index this normalised form, so a store and its queries always agree.
2. Split on anything that is not a Unicode letter or digit (``_`` included: ``snake_case`` is two words);
   runs of Han, Kana and Hangul become overlapping character bigrams (``東京都庁`` -> ``東京 京都 都庁``).
3. Drop 1-character tokens (a lone CJK character excepted) and stopwords (Lucene's 33-word English set by
   default: conservative, and what the published Lucene BM25 baselines use). 2-character tokens stay (``db``).
4. Stem (Porter by default, the algorithm FTS5's ``porter`` tokenizer implements; or any Snowball
   language, or any callable, or none). ``Analyzer(language="german")`` picks a language's stemmer and
   stopwords (:mod:`rrf_retriever.analysis.languages`).

A term only ever holds Unicode letters and digits, which is what lets the FTS5 store quote terms safely
(:mod:`rrf_retriever.stores.fts5.match`).

Example:
    >>> analyzer = Analyzer()
    >>> analyzer.terms("Configuring the FTS5 index, don't panic!")
    ['configuring', 'fts5', 'index', 'don', 'panic']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rrf_retriever.analysis.languages import (
    CJK_LANGUAGES,
    LANGUAGE_DEFAULT,
    STOPWORDS,
    UNSTEMMED_LANGUAGES,
    LanguageDefault,
    cjk_bigrams,
    is_cjk,
    language_name,
    normalize,
    stemmer,
    words,
)
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.validate import check_int

__all__ = [
    "CONVERSATIONAL_STOPWORDS",
    "DEFAULT_STOPWORDS",
    "MAX_QUERY_TERMS",
    "Analyzer",
    "as_analyzer",
    "default_analyzer",
    "saved_config",
]

#: Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (33 words): small and conservative, and the set the
#: published Lucene BM25 baselines use, so our figures compare with theirs.
DEFAULT_STOPWORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such "
    "that the their then there these they this to was will with".split()
)

#: Function words of questions put to an assistant ("How do I ...", "what does ... mean"), dropped from KEYWORD
#: QUERIES only (never from the index, so changing the set never forces a rebuild). The set measured to cost
#: nothing on five collections (benchmarks/quality/bench_collections.py: SciFact and ArguAna unchanged, CACM +0.005, NPL
#: +0.003 nDCG@10), and it leaves conversational queries their content words: "How do I configure the Qdrant
#: collection?" -> configure OR qdrant OR collection; "how do I do it?" -> no keyword query (the dense leg answers
#: alone).
CONVERSATIONAL_STOPWORDS: frozenset[str] = frozenset(
    "how do does what which who when where why can could would should may might must i me my we our you your".split()
)

#: A query's first this many terms are kept (:meth:`Analyzer.query_terms`), so a long query costs no stemming past
#: them; every keyword store reads at most 256 (``DEFAULT_MAX_TERMS``).
MAX_QUERY_TERMS = 1_024

# A token is a run of Unicode letters and digits; ``[^\W_]`` is "word character but not underscore".
StemSpec = str | Callable[[str], str] | None


class Analyzer:
    """Tokenizer + stopwords + stemmer, used for indexing and querying alike.

    Args:
        stopwords: Words to drop (compared lower-cased, before stemming). Default: the language's list
            (English: Lucene's 33 words; see :data:`rrf_retriever.analysis.languages.STOPWORDS` for the others; a
            language without a shipped list drops none). Pass ``()`` to keep every word.
        stem: ``"porter"`` (English default, what FTS5's porter tokenizer does), ``"english"`` (Snowball
            Porter2), another Snowball language name, a callable ``str -> str``, or None for no stemming.
            Default: the language's Snowball stemmer. Named stemmers need PyStemmer (extra ``bm25``).
        language: A Snowball language (``"german"``, ``"french"``, ... or its ISO code ``"de"``): sets the
            defaults of ``stem``, ``stopwords`` and ``query_stopwords``. None or ``"english"``: English, as
            before (Porter). ``"chinese"``, ``"japanese"``, ``"korean"``: the English defaults (for the Latin
            words among the text; the CJK text itself is cut into bigrams by every analyzer, see
            ``cjk_bigrams``), recorded as the corpus language. ``"hebrew"``, ``"persian"``, ``"ukrainian"``,
            ``"bulgarian"``: no stemming, no stopwords (Snowball has no stemmer for them).
        min_length: Tokens shorter than this are dropped (default 2: "db" stays, "a" goes); a lone CJK character
            (a word of its own) stays when ``cjk_bigrams`` is on.
        fold_diacritics: Fold ``é`` to ``e`` (default True, like FTS5 ``remove_diacritics``).
        query_stopwords: More words dropped from QUERIES only (English default :data:`CONVERSATIONAL_STOPWORDS`,
            other languages none; ``()`` keeps them). Not part of :meth:`config`: an index never depends on it.
        cjk_bigrams: Cut runs of Han, Kana and Hangul characters into overlapping bigrams (``東京都庁`` ->
            ``東京 京都 都庁``) so a word inside a run is found (default True; text without CJK is unchanged).
            An index saved before this option existed reopens with it off, as it was built.

    Example:
        >>> Analyzer(stem=None).analyze("The databases are configured")
        ['databases', 'configured']
        >>> Analyzer(language="german").analyze("Die Häuser am See")
        ['haus', 'see']
        >>> Analyzer().terms("東京都庁の検索")
        ['東京', '京都', '都庁', '庁の', 'の検', '検索']
    """

    __slots__ = (
        "_stem_fn", "cjk_bigrams", "fold_diacritics", "language", "min_length", "query_stopwords", "stem",
        "stopwords",
    )  # fmt: skip

    def __init__(
        self,
        stopwords: Iterable[str] | LanguageDefault | None = LANGUAGE_DEFAULT,
        stem: StemSpec | LanguageDefault = LANGUAGE_DEFAULT,
        *,
        language: str | None = None,
        min_length: int = 2,
        fold_diacritics: bool = True,
        query_stopwords: Iterable[str] | LanguageDefault | None = LANGUAGE_DEFAULT,
        cjk_bigrams: bool = True,
    ) -> None:
        name = None if language is None else language_name(language)
        english = name in (None, "english") or name in CJK_LANGUAGES
        self.language: str | None = None if name == "english" else name  # English is the default: one config
        unstemmed = name in UNSTEMMED_LANGUAGES
        # isinstance, not ``is``: it narrows the type for checkers too (LanguageDefault has one member).
        if isinstance(stopwords, LanguageDefault):
            stopwords = DEFAULT_STOPWORDS if english else STOPWORDS.get(str(name), frozenset())
        if isinstance(stem, LanguageDefault):
            stem = "porter" if english else None if unstemmed else name
        if isinstance(query_stopwords, LanguageDefault):
            query_stopwords = CONVERSATIONAL_STOPWORDS if english else ()
        for arg, given in (("stopwords", stopwords), ("query_stopwords", query_stopwords)):
            if isinstance(given, str):
                msg = f"{arg} must be a collection of words, not a single string"
                raise InvalidTypeError(msg)
        self.query_stopwords: frozenset[str] = frozenset(w.lower() for w in (query_stopwords or ()))
        check_int(min_length, "min_length", 1)
        if stem is not None and not isinstance(stem, str) and not callable(stem):
            msg = f"stem must be a stemmer name, a callable or None, not {type(stem).__name__}"
            raise InvalidTypeError(msg)
        for arg, flag in (("fold_diacritics", fold_diacritics), ("cjk_bigrams", cjk_bigrams)):
            if not isinstance(flag, bool):
                msg = f"{arg} must be a bool, not {type(flag).__name__}"
                raise InvalidTypeError(msg)
        self.stopwords: frozenset[str] = frozenset(w.lower() for w in (stopwords or ()))
        self.stem: StemSpec = stem
        self.min_length = min_length
        self.fold_diacritics = fold_diacritics
        self.cjk_bigrams = cjk_bigrams
        self._stem_fn: Callable[[str], str] | None = None if isinstance(stem, str) else stem

    def __repr__(self) -> str:
        return (
            f"Analyzer(language={self.language or 'english'!r}, stopwords=<{len(self.stopwords)} words>, "
            f"stem={self.stem!r}, min_length={self.min_length}, fold_diacritics={self.fold_diacritics}, "
            f"cjk_bigrams={self.cjk_bigrams})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Analyzer):
            return NotImplemented
        return self.config() == other.config()

    def __hash__(self) -> int:
        return hash(
            (self.stopwords, str(self.stem), self.min_length, self.fold_diacritics, self.language, self.cjk_bigrams)
        )

    @property
    def stems_like_porter(self) -> bool:
        """Whether this analyzer stems with Porter, as SQLite FTS5's ``porter`` tokenizer does (English default).

        Example:
            >>> Analyzer().stems_like_porter, Analyzer(language="french").stems_like_porter
            (True, False)
        """
        return isinstance(self.stem, str) and self.stem.lower() == "porter"

    def config(self) -> dict[str, object]:
        """A JSON-able description, saved beside an index so it is reopened with the same analyzer.

        Example:
            >>> Analyzer(stopwords=["x"], stem=None).config()["stem"] is None
            True
        """
        stem = self.stem if self.stem is None or isinstance(self.stem, str) else repr(self.stem)
        return {
            "stopwords": sorted(self.stopwords),
            "stem": stem,
            "min_length": self.min_length,
            "fold_diacritics": self.fold_diacritics,
            "language": self.language,
            "cjk_bigrams": self.cjk_bigrams,
        }

    @classmethod
    def from_config(cls, config: dict[str, object]) -> Analyzer:
        """Rebuild an analyzer saved with :meth:`config` (a custom callable stemmer cannot be saved).

        A config saved before ``language`` and ``cjk_bigrams`` existed is English without CJK bigrams: the
        analyzer its index was built with.

        Example:
            >>> a = Analyzer(stem=None)
            >>> Analyzer.from_config(a.config()) == a
            True
            >>> Analyzer.from_config({"stem": "porter"}).cjk_bigrams
            False
        """
        stem = config.get("stem", "porter")
        if stem is not None and not isinstance(stem, str):
            msg = "a saved analyzer config must name its stemmer"
            raise InvalidArgumentError(msg)
        if isinstance(stem, str) and stem.startswith("<"):
            msg = f"the index was built with a custom stemmer ({stem}); pass the same analyzer explicitly"
            raise InvalidArgumentError(msg)
        language = config.get("language")
        if language is not None and not isinstance(language, str):
            msg = "a saved analyzer config must name its language"
            raise InvalidArgumentError(msg)
        return cls(
            stopwords=config.get("stopwords", DEFAULT_STOPWORDS),  # type: ignore[arg-type]  # JSON: a list of words
            stem=stem,
            language=language,
            min_length=int(config.get("min_length", 2)),  # type: ignore[call-overload]  # JSON: a number
            fold_diacritics=bool(config.get("fold_diacritics", True)),
            cjk_bigrams=bool(config.get("cjk_bigrams", False)),
        )

    def _stemmer(self) -> Callable[[str], str] | None:
        if self._stem_fn is None and isinstance(self.stem, str):
            self._stem_fn = stemmer(self.stem)
        return self._stem_fn

    def normalize(self, text: str) -> str:
        """The text as keyword stores index it (see :func:`normalize`), with CJK runs cut into space-separated
        bigrams when ``cjk_bigrams`` is on (text without CJK characters is left exactly as :func:`normalize`).

        Example:
            >>> Analyzer().normalize("ＦＴＳ５の検索")
            'fts5 の検 検索'
        """
        text = normalize(text, fold_diacritics=self.fold_diacritics)
        return cjk_bigrams(text) if self.cjk_bigrams else text

    def tokenize(self, text: str) -> list[str]:
        """Every token of ``text`` (see :func:`~rrf_retriever.analysis.languages.tokenize`; CJK runs as bigrams),
        stopwords included."""
        return words(self.normalize(text))

    def terms(self, text: str) -> list[str]:
        """Tokens that survive the length and stopword rules, NOT stemmed (what FTS5 receives: it stems itself).

        Example:
            >>> Analyzer().terms("How to configure a DB")
            ['how', 'configure', 'db']
        """
        stop = self.stopwords
        min_len = self.min_length
        tokens = self.tokenize(text)
        if self.cjk_bigrams and min_len > 1 and any(len(t) < min_len for t in tokens):
            return [t for t in tokens if (len(t) >= min_len or is_cjk(t)) and t not in stop]
        return [t for t in tokens if len(t) >= min_len and t not in stop]

    def query_terms(self, text: str) -> list[str]:
        """:meth:`terms` of a query: also without the query-time stopwords (:data:`CONVERSATIONAL_STOPWORDS`), its
        first :data:`MAX_QUERY_TERMS` only.

        Example:
            >>> Analyzer().query_terms("How do I configure the Qdrant collection?")
            ['configure', 'qdrant', 'collection']
        """
        extra = self.query_stopwords
        terms = [t for t in self.terms(text) if t not in extra] if extra else self.terms(text)
        return terms[:MAX_QUERY_TERMS]

    def analyze_query(self, text: str) -> list[str]:
        """:meth:`query_terms`, stemmed: what a BM25 query looks up."""
        stem = self._stemmer()
        terms = self.query_terms(text)
        return terms if stem is None else [stem(t) for t in terms]

    def analyze(self, text: str) -> list[str]:
        """Surviving tokens, stemmed: the terms a BM25 index stores (queries: :meth:`analyze_query`).

        Example:
            >>> Analyzer().analyze("configuring configured configures")
            ['configur', 'configur', 'configur']
        """
        terms = self.terms(text)
        stem = self._stemmer()
        if stem is None:
            return terms
        return [stem(t) for t in terms]

    def analyze_many(self, texts: Iterable[str]) -> list[list[str]]:
        """:meth:`analyze` over many texts (for indexing); each distinct term stemmed once (the same result).

        Example:
            >>> Analyzer().analyze_many(["configuring the index", "configured"])
            [['configur', 'index'], ['configur']]
        """
        stem = self._stemmer()
        if stem is None:
            return [self.terms(t) for t in texts]
        stems: dict[str, str] = {}
        out = []
        for text in texts:
            row = []
            for term in self.terms(text):
                stemmed = stems.get(term)
                if stemmed is None:
                    stemmed = stems[term] = stem(term)
                row.append(stemmed)
            out.append(row)
        return out


def as_analyzer(spec: Analyzer | str | None) -> Analyzer | None:
    """An analyzer from what a user passes: an :class:`Analyzer`, a language name (``"german"`` is
    ``Analyzer(language="german")``), or None (None: the store decides).

    Example:
        >>> as_analyzer("fr").language, as_analyzer(None)
        ('french', None)
    """
    if spec is None or isinstance(spec, Analyzer):
        return spec
    if isinstance(spec, str):
        return Analyzer(language=spec)
    msg = f"analyzer must be an rrf_retriever.analysis.analyzer.Analyzer or a language name, not {type(spec).__name__}"
    raise InvalidTypeError(msg)


def saved_config(config: dict[str, object]) -> dict[str, object]:
    """A saved :meth:`Analyzer.config` with the keys of later versions filled in as the index was built (a config
    saved before languages had no ``language`` / ``cjk_bigrams``: English, no bigrams), to compare with another.

    Example:
        >>> saved_config({"stem": "porter"}) == {"stem": "porter", "language": None, "cjk_bigrams": False}
        True
    """
    return {"language": None, "cjk_bigrams": False, **config}


_DEFAULT: Analyzer | None = None


def default_analyzer() -> Analyzer:
    """The shared default :class:`Analyzer` (Lucene stopwords, Porter stemming).

    Example:
        >>> default_analyzer() is default_analyzer()
        True
    """
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Analyzer()
    return _DEFAULT
