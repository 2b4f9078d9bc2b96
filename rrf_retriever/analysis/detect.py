"""Corpus-language detection: which analyzer language fits a corpus, from a sample of its texts. Pure: no model, no
I/O, deterministic; the data it reads is :mod:`rrf_retriever.analysis.detect_words`.

How it decides (each text of the sample votes once, so a few long texts cannot outvote many short ones):

1. A text's **script** is the script most of its letters are written in (Latin, Cyrillic, Greek, Arabic, Hebrew,
   Devanagari, Tamil, Armenian, CJK, or another). The corpus needs a script that at least half of its texts
   (those with 3 letters or more) are written in; else the choice is the default analyzer.
2. Within that script a text's **language** is the language whose function words it uses most (each word counts
   ``1 / the number of the script's languages that share it``, so ``de`` or ``en`` decide little; letters only
   one language uses add a little: Ukrainian ``ї``, Persian ``گ``). A CJK text is Korean when most of its CJK
   characters are Hangul, Japanese when a tenth or more are Kana, else Chinese. A non-Latin text without word
   evidence is its script's main language (Cyrillic: Russian; Arabic script: Arabic; Hebrew script: Hebrew).
   A Latin text needs function words worth 1 or more, and more than any other language's, else it abstains.
3. The corpus language is the language of at least half of the texts that decided (Latin: and at least a fifth
   of the script's texts must have decided); a non-Latin script takes its most frequent language.

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
_MIN_LATIN_EVIDENCE = 1.0  # function-word weight a Latin text needs to decide
_MIN_LATIN_DECIDED = 0.2  # share of the script's texts that must decide for a Latin language to be chosen
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


def language_of_text(text: str) -> tuple[str | None, str | None, dict[str, float]]:
    """One text's script, language (None: it abstains) and word-evidence scores (see the module doc).

    Example:
        >>> language_of_text("The cat is on the mat and it is asleep.")[:2]
        ('latin', 'english')
        >>> language_of_text("12345 !!")
        (None, None, {})
    """
    text = normalize(text[:_TEXT_CHARS])
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
    if script == "latin":
        return script, ranked[0] if top >= _MIN_LATIN_EVIDENCE and top > runner_up else None, evidence
    return script, ranked[0] if top > runner_up else candidates[0], evidence


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
    votes = [language_of_text(t) for t in sample_texts(seq, sample)]
    votes = [v for v in votes if v[0] is not None]
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

    if 2 * count < n:
        return unsure(f"no script holds a majority ({script} {count} of {n} texts)")
    if script not in SCRIPT_LANGUAGES:
        return unsure(f"{script} script ({count} of {n} texts) has no analyzer language here", script)
    decided = Counter(str(v[1]) for v in votes if v[0] == script and v[1] is not None)
    total = sum(decided.values())
    languages = _shares(decided, total) if total else {}
    if script == "latin" and total < _MIN_LATIN_DECIDED * count:
        return unsure(f"too few Latin-script texts use function words ({total} of {count})", script, languages)
    order = SCRIPT_LANGUAGES[script]
    best = min(decided, key=lambda lang: (-decided[lang], order.index(lang)))
    share = f"{decided[best]} of {total} {script}-script texts that decided"
    if script == "latin" and 2 * decided[best] < total:
        return unsure(f"no Latin-script language holds a majority ({best} {share})", script, languages)
    how = "function words" if script not in ("cjk", "greek", "tamil", "armenian") else "characters"
    return LanguageDetection(best, True, script, n, scripts, languages,
                             f"{best}: {share} ({how}); {script} is {count} of {n} texts")
