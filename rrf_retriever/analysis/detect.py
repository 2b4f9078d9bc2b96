"""Corpus-language detection: which analyzer language fits a corpus, from a sample of its texts. Pure: no model, no
I/O, deterministic; the data it reads is :mod:`rrf_retriever.analysis.detect_words`.

How it decides (each text of the sample votes once, so a few long texts cannot outvote many short ones). The rule
is **English unless the evidence is strong**: a wrong language costs more than a missed one (another stemmer and
stopwords for the index, and the weak-leg rule weights an English embedder's dense leg down on every query).

1. A text's **script** is the script most of its letters are written in (Latin, Cyrillic, Greek, Arabic, Hebrew,
   Devanagari, Tamil, Armenian, CJK, or another). The corpus needs a script that more than half of its texts
   (those with 3 letters or more) are written in; else the choice is the default analyzer.
2. A **non-Latin** text's language is the one of its script whose function words it uses most (each word counts
   ``1 / the number of the script's languages that share it``; letters only one language uses add a little:
   Ukrainian ``ї``, Persian ``گ``), else its script's main language (Cyrillic: Russian; Arabic script: Arabic):
   the script alone says it is not English. A CJK text is Korean when most of its CJK characters are Hangul,
   Japanese when a tenth or more are Kana, else Chinese.
3. A **Latin** text counts only words of 2 letters or more made of letters alone: a single letter never counts
   (folded ``è`` is ``e``; code is full of ``e``, ``i``, ``a``), nor ``e.target``, ``x1``, ``snake_case``, a
   quoted ``"la":`` or a word in capitals (``LETTER EL``, ``SELECT``). It votes for the language L (not English)
   with the highest score (as above) only when all three hold: it uses
   **3 or more distinct function words of L that are not English ones**, **at least twice as many as the English
   function words** L lacks, and their uses are **a twentieth of its words** or more. Else it votes English when
   it uses 2 or more distinct English function words, else it abstains (code, numbers, tables, titles do).
   A text of fewer than 30 such words that abstains is judged with the others like it: sorted, read in groups
   of 30 words or more, each group judged as one text by the same rule; a text of the group takes the group's
   language only when it uses one of that language's function words itself, or (not English) a Latin letter
   English does not use (``ß``, ``ı``, ``é``); else it still abstains.
4. The corpus language is the language of more than half of the texts that decided; for a Latin language these
   must be a fifth or more of the script's texts, and any language but English needs **at least twice as many
   texts as voted English**. So a mostly English corpus with a few lines of another language stays English, and
   so does a half-and-half one.

**When unsure** (no script or Latin language holds a majority, too little evidence, a script without a language
here such as Thai or Georgian) the choice is the **default analyzer**: English Porter stemming and Lucene's 33
English stopwords, CJK bigrams. It is the language-neutral choice in the sense that matters: on words of any other
script Porter changes nothing and no stopword matches, so they are indexed as written; and it is the analyzer
every index built before detection has. :attr:`LanguageDetection.detected` is False then, and ``reason`` says why.

Example:
    >>> detect_language(["Die Katze sitzt auf dem Dach und schläft.", "Der Hund ist nicht im Haus."]).language
    'german'
    >>> detect_language(["Кошка спит на крыше, и это хорошо."]).language
    'russian'
    >>> detect_language(["東京都庁の検索システムです。"]).language
    'japanese'
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.analysis.detect_words import FUNCTION_WORDS, HINT_LETTERS, SCRIPT_LANGUAGES, script_of
from rrf_retriever.analysis.languages import normalize
from rrf_retriever.validate import check_int, check_list

__all__ = ["DEFAULT_SAMPLE", "LanguageDetection", "detect_language", "language_of_text", "sample_texts"]

#: How many texts :func:`detect_language` reads (spread evenly over the corpus), and how much of each.
DEFAULT_SAMPLE = 500
_TEXT_CHARS = 2000
_MIN_LETTERS = 3  # a text with fewer letters does not vote
_MIN_DISTINCT = 3  # distinct function words (not English ones) a Latin text needs to vote for a language not English
_MARGIN = 2  # ... and at least twice as many as the English function words (not the language's own) in it
_MIN_SHARE = 0.05  # ... and their uses must be a twentieth of its words or more
_GROUP_WORDS = 30  # a Latin text of fewer words is judged with other short ones, in groups of this many words
_MIN_ENGLISH = 2  # distinct English function words a Latin text needs to vote English
_MIN_LATIN_DECIDED = 0.2  # share of the script's texts that must vote for a Latin language for it to be chosen
_HINT_WEIGHT = 0.2
_FALLBACK = "english"
_SCRIPT_ORDER = ("latin", "cjk", "cyrillic", "arabic", "devanagari", "greek", "hebrew", "tamil", "armenian")


@dataclass(frozen=True)
class LanguageDetection:
    """What :func:`detect_language` found, and why.

    Attributes:
        language: The analyzer language chosen (``"english"`` when detected, and when unsure).
        detected: False when the evidence was not enough and ``language`` is the default (see the module doc).
        script: The corpus's majority script (None: none).
        documents: Texts of the sample that voted (3 letters or more).
        scripts: Share of those texts per script.
        languages: Share per language of the majority script's texts that decided.
        reason: One sentence: what decided.
    """

    language: str
    detected: bool
    script: str | None
    documents: int
    scripts: dict[str, float] = field(default_factory=dict)
    languages: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    def analyzer(self) -> Analyzer:
        """The analyzer of the chosen language (English: the default ``Analyzer()``).

        Example:
            >>> detect_language(["Le chat est sur le toit et il dort."]).analyzer().language
            'french'
        """
        return Analyzer() if self.language == _FALLBACK else Analyzer(language=self.language)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able copy (what an index manifest records under ``language_detection``)."""
        return {"language": self.language, "detected": self.detected, "script": self.script,
                "documents": self.documents, "scripts": dict(self.scripts), "languages": dict(self.languages),
                "reason": self.reason}  # fmt: skip


def sample_texts(texts: Sequence[Any], size: int = DEFAULT_SAMPLE) -> list[str]:
    """Up to ``size`` texts spread evenly over ``texts`` (all of them when there are fewer), strings only, each
    cut to its first 2,000 characters. Deterministic.

    Example:
        >>> sample_texts(["a", "b", "c", "d"], 2), sample_texts(["x", 3, "y"])
        (['a', 'c'], ['x', 'y'])
    """
    check_int(size, "size", 1)
    n = len(texts)
    picked = texts if n <= size else [texts[i * n // size] for i in range(size)]
    return [t[:_TEXT_CHARS] for t in picked if isinstance(t, str)]


def _tokens(text: str) -> list[str]:
    """Whitespace-separated words with punctuation and symbols stripped from their ends (marks kept: the words of
    Devanagari or Tamil hold vowel signs that are not letters)."""
    out = []
    for chunk in text.split():
        start, end = 0, len(chunk)
        while start < end and unicodedata.category(chunk[start])[0] in "PSZC":
            start += 1
        while end > start and unicodedata.category(chunk[end - 1])[0] in "PSZC":
            end -= 1
        if start < end:
            out.append(chunk[start:end])
    return out


# script -> word -> how many of the script's languages list it (a shared word is weaker evidence).
_SHARED: dict[str, dict[str, int]] = {
    script: Counter(w for lang in langs for w in FUNCTION_WORDS.get(lang, ()))
    for script, langs in SCRIPT_LANGUAGES.items()
}
_HANGUL = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7FF))
_KANA = ((0x3040, 0x30FF), (0x31F0, 0x31FF))


def _cjk_language(text: str) -> str:
    hangul = kana = han = 0
    for ch in text:
        point = ord(ch)
        if any(lo <= point <= hi for lo, hi in _HANGUL):
            hangul += 1
        elif any(lo <= point <= hi for lo, hi in _KANA):
            kana += 1
        elif script_of(ch) == "cjk":
            han += 1
    total = hangul + kana + han
    if 2 * hangul >= total:
        return "korean"
    return "japanese" if 10 * kana >= total else "chinese"


_PROSE_EDGES = ".,;:!?\u00a1\u00bf\u2026()\u00ab\u00bb\u2013\u2014-"  # punctuation a word of running text may carry
_QUOTES = "'\"`\u2018\u2019\u201a\u201c\u201d\u201e"


def _latin_words(text: str) -> list[str]:
    """The words of a Latin-script text that can be function words: letters only, two or more of them (split at
    apostrophes: ``l'homme`` is ``l`` and ``homme``), with at most running-text punctuation around them. A single
    letter is never evidence (folded ``è`` is ``e``, code is full of ``e``, ``i``, ``a``), nor a token holding a
    digit, a dot, a bracket, an ``=`` or an underscore, nor a quoted one (``"la":``, ``'de'``: keys and literals),
    nor one in capitals (``LETTER EL``, ``SELECT``, ``DE``: constants and acronyms). Folded as the analyzer folds."""
    out = []
    for chunk in unicodedata.normalize("NFKC", text).split():
        core = chunk.strip(_PROSE_EDGES)
        if not core or core[0] in _QUOTES or core[-1] in _QUOTES:
            continue
        for part in core.replace("\u2019", "'").split("'"):
            if len(part) >= 2 and part.isalpha() and not part.isupper():
                out.append(normalize(part))
    return out


def _latin_language(text: str) -> tuple[str | None, dict[str, float]]:
    """A Latin-script text's vote: a language other than English only on strong evidence, else English when it
    uses 2 or more English function words, else None (see the module doc)."""
    words = _latin_words(text)
    candidates = SCRIPT_LANGUAGES["latin"]
    shared = _SHARED["latin"]
    scores = dict.fromkeys(candidates, 0.0)
    for word in words:
        owners = shared.get(word)
        if owners:
            for lang in candidates:
                if word in FUNCTION_WORDS[lang]:
                    scores[lang] += 1.0 / owners
    ranked = sorted(candidates, key=lambda lang: (-scores[lang], candidates.index(lang)))
    evidence = {lang: round(scores[lang], 3) for lang in ranked if scores[lang] > 0}
    present = set(words)
    english = present & FUNCTION_WORDS[_FALLBACK]
    top = min(candidates[1:], key=lambda lang: (-scores[lang], candidates.index(lang)))
    own = present & _own_words(top)  # a word English also has says nothing
    against = english - FUNCTION_WORDS[top]
    uses = sum(1 for word in words if word in own)
    if len(own) >= _MIN_DISTINCT and len(own) >= _MARGIN * len(against) and uses >= _MIN_SHARE * len(words):
        return top, evidence
    return (_FALLBACK if len(english) >= _MIN_ENGLISH else None), evidence


def language_of_text(text: str) -> tuple[str | None, str | None, dict[str, float]]:
    """One text's script, language (None: it abstains) and word-evidence scores (see the module doc).

    Example:
        >>> language_of_text("The cat is on the mat and it is asleep.")[:2]
        ('latin', 'english')
        >>> language_of_text("Vitamin E is found in nuts")[:2], language_of_text("if (e) { return e; }")[:2]
        (('latin', 'english'), ('latin', None))
        >>> language_of_text("12345 !!")
        (None, None, {})
    """
    raw = text[:_TEXT_CHARS]
    text = normalize(raw)
    if text.isascii():
        letters = Counter({"latin": sum(1 for ch in text if ch.isalpha())})
    else:
        letters = Counter(script_of(ch) for ch in text if ch.isalpha())
    if sum(letters.values()) < _MIN_LETTERS:
        return None, None, {}
    script = max(letters, key=lambda s: (letters[s], -_SCRIPT_ORDER.index(s) if s in _SCRIPT_ORDER else -99))
    candidates = SCRIPT_LANGUAGES.get(script)
    if candidates is None:
        return script, None, {}
    if script == "cjk":
        return script, _cjk_language(text), {}
    if script == "latin":
        return (script, *_latin_language(raw))
    shared = _SHARED[script]
    scores = dict.fromkeys(candidates, 0.0)
    for token in _tokens(text):
        owners = shared.get(token)
        if owners:
            for lang in candidates:
                if token in FUNCTION_WORDS[lang]:
                    scores[lang] += 1.0 / owners
    for lang in candidates:
        hints = HINT_LETTERS.get(lang)
        if hints:
            scores[lang] += _HINT_WEIGHT * sum(text.count(ch) for ch in hints)
    ranked = sorted(candidates, key=lambda lang: (-scores[lang], candidates.index(lang)))
    top = scores[ranked[0]]
    runner_up = scores[ranked[1]] if len(ranked) > 1 else 0.0
    evidence = {lang: round(scores[lang], 3) for lang in ranked if scores[lang] > 0}
    return script, ranked[0] if top > runner_up else candidates[0], evidence


def _own_words(language: str) -> frozenset[str]:
    """The function words that are evidence for ``language`` (English: its own; another: those English lacks)."""
    words = FUNCTION_WORDS[language]
    return words if language == _FALLBACK else words - FUNCTION_WORDS[_FALLBACK]


def _accented(text: str) -> bool:
    """Whether ``text`` holds a Latin letter English does not use (``é``, ``ß``, ``ı``, ``ø``, ...)."""
    return not text.isascii() and any(not ch.isascii() and script_of(ch) == "latin" for ch in text)


def _with_short_texts_grouped(texts: list[str]) -> list[tuple[str | None, str | None, dict[str, float]]]:
    """Each text's vote (texts of fewer than 3 letters left out). A Latin-script text of fewer than 30 words that
    abstains is judged with the others like it: sorted (so their order does not matter), they are read in groups
    of 30 words or more, each group judged as one text, and a text of the group takes the group's language when
    it uses one of that language's function words itself, or (a language not English) a Latin letter English
    does not use; else it still abstains."""
    votes = []
    short: list[tuple[str, list[str]]] = []
    for text in texts:
        vote = language_of_text(text)
        words = _latin_words(text[:_TEXT_CHARS]) if vote[0] == "latin" and vote[1] is None else []
        if 0 < len(words) < _GROUP_WORDS:
            short.append((text[:_TEXT_CHARS], words))
        elif vote[0] is not None:
            votes.append(vote)
    short.sort()
    group: list[tuple[str, list[str]]] = []
    size = 0
    for i, member in enumerate(short):
        group.append(member)
        size += len(member[1])
        if size >= _GROUP_WORDS or i == len(short) - 1:
            language, evidence = _latin_language("\n".join(text for text, _ in group))
            own = _own_words(language) if language is not None else frozenset()
            votes.extend(("latin", language, evidence) if own.intersection(words)
                         or (language != _FALLBACK and _accented(text)) else ("latin", None, {})
                         for text, words in group)  # fmt: skip
            group, size = [], 0
    return votes


def _shares(counts: Counter[str], total: int) -> dict[str, float]:
    return {k: round(v / total, 4) for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def detect_language(texts: Iterable[Any], *, sample: int = DEFAULT_SAMPLE) -> LanguageDetection:
    """The analyzer language of a corpus, from up to ``sample`` of its texts (see the module doc for the rule).

    Never raises on text: any string is evidence or is ignored (non-strings are skipped).

    Args:
        texts: The corpus texts (a sequence, or any iterable: it is read into a list).
        sample: How many texts to read, spread evenly over the corpus.

    Returns:
        A :class:`LanguageDetection`: the language, whether the evidence sufficed, the shares and the reason.

    Example:
        >>> found = detect_language(["Le chat dort sur le toit.", "La maison est dans la ville."])
        >>> found.language, found.detected, found.scripts
        ('french', True, {'latin': 1.0})
        >>> detect_language(["ok", "12"]).reason
        'no text has 3 letters or more: the default analyzer (English)'
    """
    seq = texts if isinstance(texts, (list, tuple)) else check_list(texts, "texts", "strings")  # not a str's letters
    votes = _with_short_texts_grouped(sample_texts(seq, sample))
    if not votes:
        return LanguageDetection(_FALLBACK, False, None, 0, reason="no text has 3 letters or more: the default "
                                 "analyzer (English)")
    n = len(votes)
    script_counts: Counter[str] = Counter(str(v[0]) for v in votes)
    scripts = _shares(script_counts, n)
    script = next(iter(scripts))  # the most frequent (ties: by name)
    count = script_counts[script]

    def unsure(why: str, top: str | None = None, languages: dict[str, float] | None = None) -> LanguageDetection:
        return LanguageDetection(_FALLBACK, False, top, n, scripts, languages or {},
                                 f"{why}: the default analyzer (English)")

    if 2 * count <= n:
        return unsure(f"no script holds a majority ({script} {count} of {n} texts)")
    if script not in SCRIPT_LANGUAGES:
        return unsure(f"{script} script ({count} of {n} texts) has no analyzer language here", script)
    decided = Counter(str(v[1]) for v in votes if v[0] == script and v[1] is not None)
    total = sum(decided.values())
    languages = _shares(decided, total) if total else {}
    order = SCRIPT_LANGUAGES[script]
    best = min(decided, key=lambda lang: (-decided[lang], order.index(lang))) if total else _FALLBACK
    if script == "latin" and decided[best] < _MIN_LATIN_DECIDED * count:
        return unsure(f"too few Latin-script texts have strong evidence ({decided[best]} of {count} for {best})",
                      script, languages)
    share = f"{decided[best]} of {total} {script}-script texts that decided"
    if script == "latin" and 2 * decided[best] <= total:
        return unsure(f"no Latin-script language holds a majority ({best} {share})", script, languages)
    english = sum(1 for v in votes if v[1] == _FALLBACK)
    if best != _FALLBACK and decided[best] < _MARGIN * english:
        return unsure(f"{best} has fewer than twice the texts English has ({decided[best]} against {english})",
                      script, languages)
    how = "function words" if script not in ("cjk", "greek", "tamil", "armenian") else "characters"
    return LanguageDetection(best, True, script, n, scripts, languages,
                             f"{best}: {share} ({how}); {script} is {count} of {n} texts")
