"""The data of the corpus-language detector (:mod:`rrf_retriever.analysis.detect`): Unicode script ranges, the
languages each script is written in, and short function-word lists. Pure data; no I/O.

* :func:`script_of`: the script of one letter (``"latin"``, ``"cyrillic"``, ``"cjk"``, ..., or ``"other"``), from
  the Unicode blocks below (Han, Kana and Hangul are one ``"cjk"`` script: a Japanese text mixes Han and Kana).
* :data:`SCRIPT_LANGUAGES`: each script's candidate languages, the first being the one a text of that script is
  taken to be without other evidence (Cyrillic: Russian; Arabic script: Arabic). Latin has no such default: a
  Latin text without function words says nothing.
* :data:`FUNCTION_WORDS`: 20-40 of the most frequent function words (articles, pronouns, prepositions,
  conjunctions, auxiliaries) per language, written for this project from general knowledge of each language and
  kept conservative: only words frequent in running text. They are evidence for detection, NOT the analyzer's
  stopword lists (:data:`rrf_retriever.analysis.languages.STOPWORDS` is that). Compared after Latin diacritics
  are folded (as the analyzer folds them), so ``für`` and ``fur`` are one word.
* :data:`HINT_LETTERS`: letters one language of a script uses and its neighbours do not (Ukrainian ``ї``, Persian
  ``گ``), weak evidence added to the function words.

Example:
    >>> script_of("ж"), script_of("語"), script_of("a"), "und" in FUNCTION_WORDS["german"]
    ('cyrillic', 'cjk', 'latin', True)
"""

from __future__ import annotations

import bisect

from rrf_retriever.analysis.languages import normalize

__all__ = ["FUNCTION_WORDS", "HINT_LETTERS", "SCRIPT_LANGUAGES", "script_of"]

# (first code point, last code point, script); sorted, not overlapping.
_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x024F, "latin"), (0x0370, 0x03FF, "greek"), (0x0400, 0x052F, "cyrillic"),
    (0x0530, 0x058F, "armenian"), (0x0590, 0x05FF, "hebrew"), (0x0600, 0x06FF, "arabic"),
    (0x0750, 0x077F, "arabic"), (0x08A0, 0x08FF, "arabic"), (0x0900, 0x097F, "devanagari"),
    (0x0B80, 0x0BFF, "tamil"), (0x0E00, 0x0E7F, "thai"), (0x10A0, 0x10FF, "georgian"), (0x1100, 0x11FF, "cjk"),
    (0x1E00, 0x1EFF, "latin"), (0x1F00, 0x1FFF, "greek"), (0x3040, 0x30FF, "cjk"), (0x3130, 0x318F, "cjk"),
    (0x31F0, 0x31FF, "cjk"), (0x3400, 0x4DBF, "cjk"), (0x4E00, 0x9FFF, "cjk"), (0xA960, 0xA97F, "cjk"),
    (0xAC00, 0xD7FF, "cjk"), (0xF900, 0xFAFF, "cjk"), (0xFB1D, 0xFB4F, "hebrew"), (0xFB50, 0xFDFF, "arabic"),
    (0xFE70, 0xFEFF, "arabic"), (0x20000, 0x3134F, "cjk"),
)  # fmt: skip
_STARTS = [r[0] for r in _RANGES]


def script_of(char: str) -> str:
    """The script of one character (``"other"`` for a script not in the table, a digit, a mark or a symbol).

    Example:
        >>> [script_of(c) for c in "kλש語1"]
        ['latin', 'greek', 'hebrew', 'cjk', 'other']
    """
    point = ord(char)
    i = bisect.bisect_right(_STARTS, point) - 1
    if i >= 0 and point <= _RANGES[i][1] and char.isalpha():
        return _RANGES[i][2]
    return "other"


#: Each script's candidate languages; the first is the script's default (none for Latin: see the module doc).
#: CJK is decided by its characters (Hangul: Korean; Kana: Japanese; Han alone: Chinese), not by words.
SCRIPT_LANGUAGES: dict[str, tuple[str, ...]] = {
    "latin": ("english", "german", "french", "spanish", "italian", "portuguese", "dutch", "swedish", "danish",
              "norwegian", "finnish", "hungarian", "romanian", "turkish", "indonesian", "catalan"),
    "cyrillic": ("russian", "ukrainian", "bulgarian", "serbian"),
    "greek": ("greek",),
    "arabic": ("arabic", "persian"),
    "hebrew": ("hebrew", "yiddish"),
    "devanagari": ("hindi", "nepali"),
    "tamil": ("tamil",),
    "armenian": ("armenian",),
    "cjk": ("chinese", "japanese", "korean"),
}  # fmt: skip

_WORDS = {
    "english": "the of and to in is that for it as with was on be by are this from at or an which not have has "
    "but were their also can its these been may such than other into only more we they there would will",
    "german": "der die das und ist nicht mit von den dem des ein eine einer auf für sich auch als wird werden bei "
    "sind oder aus nach wie im zum zur noch über durch wurde",
    "french": "de et un ne se ce son sa ses le la les des est une dans que qui pour pas sur sont avec par au aux "
    "du ces cette mais ou leur elle il ils nous vous plus être été",
    "spanish": "de la el los las del que en por para con una es se al lo como más pero sus le ya este esta son entre "
    "cuando muy sin sobre también fue ha",
    "italian": "la le un da il di che è per una con non sono della del dei delle nel nella gli alla anche come "
    "più ma si ha lo questo questa essere tra",
    "portuguese": "de que não um uma no na os do da em para com por mais as dos das como mas ao ele ela foi são "
    "seu sua também pelo pela já isso está",
    "dutch": "de het een van en in is dat op te zijn voor met niet aan er die ook als bij door maar om dan wordt "
    "werd nog naar worden",
    "swedish": "och att det som en är av för med till den har inte om ett på var men jag ska från kan eller när "
    "så också vid efter sig",
    "danish": "og at det som en er af for med til den har ikke om et på var men jeg skal fra kan eller når så "
    "også ved efter sig blev hvad meget noget",
    "norwegian": "og at det som en er av for med til den har ikke om et på var men jeg skal fra kan eller når så "
    "også ved etter seg ble hva mye noe",
    "finnish": "ja on ei se että oli kun hän mutta niin tai ovat myös kuin sen joka mitä jos nyt vain ole olla "
    "tämä siitä sekä joten voi kanssa jo kaikki jotka eikä koska ilman kuten tässä sitä vielä eivät ennen jälkeen",
    "hungarian": "az és hogy nem is egy van meg de volt csak már mint még ez azt vagy ki el fel lesz mert kell után "
    "nincs lehet minden amely amelyek akkor itt hanem sem pedig nagyon",
    "romanian": "și în de la cu pe nu este că un sau mai din care se pentru ce sunt fost ca dar să al lui ale prin",
    "turkish": "ve bir bu da de için ile olarak çok daha en gibi ama ne var olan kadar sonra mi her şey ya değil "
    "ise onun veya ancak kendi göre tüm sadece bile çünkü önce şu hem ki nasıl neden",
    "indonesian": "yang dan di dari ini itu dengan untuk tidak dalam akan pada juga ke karena ada adalah oleh atau "
    "bisa saya kami mereka sudah telah",
    "catalan": "el la els les de del que en per amb no és una un es al com més però són dels seva seu també ha "
    "aquest aquesta",
    "russian": "и в не на что с по как это он к из но у за от то так все она они же бы для был мы вы его ее уже "
    "или при",
    "ukrainian": "і в не на що з та як це він до але у за від то так все вона вони би для був ми ви його її вже "
    "або при є",
    "bulgarian": "и в не на че с по като това той от за да се са е но ще ли тя те му ги бе със при във или",
    "serbian": "и у не на да се је са за од као то али из што би су по ће ми он она они који која",
    "greek": "και το η της του τα των να με σε από για την που στο στην είναι οι δεν θα ως στα ένα μια ή",
    "arabic": "في من على إلى أن عن مع هذا هذه التي الذي ما لا كان قد هو هي ثم بين كل أو لم إن ذلك عند",
    "persian": "و در به از که این را با است آن برای یک تا می ها هم بر شد نیز خود بود اما یا باید شده کرد",
    "hebrew": "של את על זה לא הוא היא עם כי גם אם או אבל הם יש אני מה כל זו היה בין רק עוד לפי",
    "yiddish": "און איז דער די דאָס פון מיט ניט נישט אויף צו וואס ער זי מען האט געווען ווי",
    "hindi": "है के में की को और से का यह हैं पर भी नहीं ने एक कि तो था लिए इस किया कर वह होता जो",
    "nepali": "छ र पनि को मा लाई हो थियो गरेको भने यो त्यो गर्न छन् हुन्छ तथा भएको उनी हामी",
}


#: Function words by language, Latin diacritics folded (see the module doc).
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    name: frozenset(normalize(w) for w in words.split()) for name, words in _WORDS.items()
}

#: Letters that point to one language of a script (weak evidence: each counts a fifth of a function word).
HINT_LETTERS: dict[str, frozenset[str]] = {
    "ukrainian": frozenset("іїєґ"),
    "serbian": frozenset("ђјљњћџ"),
    "russian": frozenset("ыэ"),
    "persian": frozenset("پچژگیک"),
    "arabic": frozenset("ةيك"),
}
