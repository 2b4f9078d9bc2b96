"""CJK and language-aware keyword search through the retriever: LangChain invoke, LlamaIndex retrieve, an index
directory that remembers its analyzer, and the CLI's --language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import IndexDirectoryError, InvalidArgumentError, InvalidTypeError

TEXTS = [
    "全文检索引擎通过倒排索引快速查找文档。",
    "東京都庁の検索システムはデータベースを使います。",
    "자연어처리는 컴퓨터가 언어를 이해하는 기술입니다.",
    "Die Häuser am Hafen wurden im neunzehnten Jahrhundert gebaut.",
    "Configuring the database connection pool.",
]
IDS = ["zh", "ja", "ko", "de", "en"]


@pytest.mark.parametrize("keyword", ["fts5", "bm25", "qdrant-edge"])
def test_cjk_documents_are_found_by_the_keyword_leg_alone_in_both_frameworks(keyword: str) -> None:
    with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), ids=IDS, keyword=keyword,
                                         weights={"dense": 0}) as retriever:
        docs = retriever.invoke("都庁")  # LangChain
        assert [d.id for d in docs] == ["ja"]
        assert docs[0].metadata["rrf_ranks"] == {"keyword": 1}
        nodes = retriever.retrieve("倒排索引")  # LlamaIndex
        assert [n.node.node_id for n in nodes] == ["zh"]
        assert [d.id for d in retriever.invoke("자연어")] == ["ko"]


def test_from_texts_takes_a_language_or_an_analyzer() -> None:
    for analyzer in ("german", Analyzer(language="de")):
        with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), ids=IDS, analyzer=analyzer,
                                             weights={"dense": 0}) as retriever:
            assert [d.id for d in retriever.invoke("Haus")] == ["de"]
            assert [n.node.node_id for n in retriever.retrieve("Haus")] == ["de"]
            assert [d.id for d in retriever.invoke("都庁")] == ["ja"]
    with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), ids=IDS, weights={"dense": 0}) as english:
        assert english.invoke("Haus") == []


def test_bad_analyzer_arguments_are_our_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown language"):
        EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), analyzer="klingon")
    with pytest.raises(InvalidTypeError):
        EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), analyzer=42)
    from rrf_retriever.stores.fts5.store import FTS5KeywordStore

    with pytest.raises(InvalidArgumentError, match="analyzer"):
        EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), keyword=FTS5KeywordStore(), analyzer="german")


@pytest.mark.parametrize("keyword", ["fts5", "bm25"])
def test_an_index_directory_remembers_its_language(tmp_path: Path, keyword: str) -> None:
    path = tmp_path / "idx"
    EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), ids=IDS, path=path, keyword=keyword,
                                    analyzer="german").close()
    assert json.loads((path / "rrf-index.json").read_text())["analyzer"]["language"] == "german"
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(32), path=path, weights={"dense": 0}) as again:
        assert [d.id for d in again.invoke("Häusern")] == ["de"]
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(32), path=path, analyzer="german") as same:
        assert same.engine.count()["keyword"] == len(TEXTS)
    with pytest.raises(IndexDirectoryError, match="another analyzer"):
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(32), path=path, analyzer="french")
