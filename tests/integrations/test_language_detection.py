"""Corpus-language detection through the retriever: from_texts / from_documents / RRFVectorStore pick the analyzer
of the corpus's language, an index directory saves it (manifest and store) and keeps it on reopen, an explicit
analyzer wins, and a query in another script than the corpus still finds what it names."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import IndexDirectoryError
from rrf_retriever.index.manifest import read_manifest
from rrf_retriever.langchain import RRFVectorStore

CORPORA = {
    "german": ["Die Häuser am Hafen sind sehr alt.", "Der Hund ist nicht im Garten, er schläft.",
               "Die Regierung plant neue Gesetze für den Klimaschutz.", "Das Python-Skript liest die Datei."],
    "french": ["Les chevaux sauvages vivent dans le sud de la France.", "Le journal est sur la table.",
               "Les enfants sont dans le jardin avec leur mère.", "Le script Python lit le fichier."],
    "russian": ["Дома в гавани очень старые.", "Собака не в саду, она в доме.",
                "Правительство готовит новые законы о климате.", "Скрипт Python читает файл."],
    "chinese": ["全文检索引擎通过倒排索引快速查找文档。", "北京大学图书馆收藏了大量古籍。",
                "上海地铁是世界上最长的城市轨道交通系统之一。", "这个Python脚本读取文件。"],
}  # fmt: skip
# A word of each corpus, inflected otherwise than in its document (the analyzer's stemming must meet them).
QUERIES = {"german": ("Haus", 0), "french": ("cheval sauvage", 0), "russian": ("дом", 0), "chinese": ("倒排", 0)}


def build(texts: list[str], **kwargs: object) -> EnsembleRRFRetriever:
    ids = [f"d{i}" for i in range(len(texts))]
    return EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(16), ids=ids, weights={"dense": 0}, **kwargs)


@pytest.mark.parametrize("language", sorted(CORPORA))
@pytest.mark.parametrize("keyword", ["qdrant-edge", "fts5"])
def test_from_texts_detects_saves_and_reopens_with_the_corpus_language(
    language: str, keyword: str, tmp_path: Path
) -> None:
    index = tmp_path / "idx"
    with build(CORPORA[language], path=index, keyword=keyword) as retriever:
        assert retriever.corpus_language == language
        query, doc = QUERIES[language]
        assert retriever.search(query).ids[:1] == [f"d{doc}"]
    manifest = read_manifest(index)
    assert manifest["analyzer"]["language"] == language
    assert manifest["language_detection"]["language"] == language and manifest["language_detection"]["detected"]
    with EnsembleRRFRetriever.open(index, HashingEmbedding(16), weights={"dense": 0}) as reopened:
        assert reopened.corpus_language == language
        reopened.add_texts(CORPORA["german" if language != "german" else "french"], ids=["x0", "x1", "x2", "x3"])
        assert reopened.corpus_language == language  # a later write in another language changes nothing
        assert reopened.search(QUERIES[language][0]).ids[:1] == [f"d{QUERIES[language][1]}"]
    with pytest.raises(IndexDirectoryError, match="another analyzer"):
        EnsembleRRFRetriever.open(index, HashingEmbedding(16), analyzer="english" if language != "english" else "de")


def test_an_explicit_analyzer_wins_over_detection() -> None:
    with build(CORPORA["german"], analyzer="english") as english:
        assert english.corpus_language == "english"
        assert english.search("Haus").ids == []  # Porter does not meet "Häuser": no German stemming
    with build(CORPORA["german"], analyzer=Analyzer(language="french")) as french:
        assert french.corpus_language == "french"
    with build(CORPORA["german"]) as detected:
        assert detected.search("Haus").ids == ["d0"]  # german: Häuser -> haus


def test_from_documents_and_the_vector_store_detect_too(tmp_path: Path) -> None:
    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(CORPORA["russian"])]
    with EnsembleRRFRetriever.from_documents(docs, HashingEmbedding(16), path=tmp_path / "idx") as retriever:
        assert retriever.corpus_language == "russian"
    assert read_manifest(tmp_path / "idx")["language_detection"]["language"] == "russian"
    store = RRFVectorStore.from_texts(CORPORA["french"], HashingEmbedding(16))
    try:
        assert store.retriever.corpus_language == "french"
    finally:
        store.close()


def test_nothing_to_detect_keeps_the_english_default(tmp_path: Path) -> None:
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path / "idx") as empty:
        assert empty.corpus_language == "english"
        empty.add_texts(CORPORA["german"])  # the stores were built before any text: no detection on later writes
        assert empty.corpus_language == "english"
    assert "language_detection" not in read_manifest(tmp_path / "idx")


def test_a_query_in_another_script_than_the_corpus_still_matches() -> None:
    with build(CORPORA["russian"]) as russian:  # Latin words in a Cyrillic corpus: the same analyzer both sides
        assert russian.search("python").ids == ["d3"]
    with build(CORPORA["chinese"]) as chinese:
        assert chinese.search("Python").ids == ["d3"]
    with build(CORPORA["german"]) as german:  # CJK in a German corpus: bigrams, whatever the language
        german.add_texts(["東京都庁の検索システム"], ids=["ja"])
        assert german.search("都庁").ids == ["ja"]
    with build(["The cat is on the roof.", "東京都庁の検索システムです。", "It is a test of the index."]) as en:
        assert en.corpus_language == "english"
        assert en.search("検索").ids == ["d1"]
