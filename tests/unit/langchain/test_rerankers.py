"""A LangChain compressor as a reranker outside the retriever: wrapped for the engine and for the apps'
``--reranker module:attr``; a bare one is refused there with the wrapper's name, converted by the retriever."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor

from rrf_retriever import FTS5KeywordStore, HybridEngine, InvalidTypeError
from rrf_retriever.apps.rerankers import load_reranker
from rrf_retriever.langchain import CompressorReranker, LangChainRRFRetriever

TEXTS = {"a": "pump one", "b": "pump two two", "c": "pump three three three"}


class Longest(BaseDocumentCompressor):
    """Keeps the two longest documents, longest first, with a relevance score."""

    def compress_documents(self, documents: Sequence[Document], query: str, callbacks: Any = None) -> list[Document]:
        ranked = sorted(documents, key=lambda d: -len(d.page_content))[:2]
        return [Document(id=d.id, page_content=d.page_content,
                         metadata={**d.metadata, "relevance_score": float(len(d.page_content))}) for d in ranked]


WRAPPED = CompressorReranker(Longest())  # what `--reranker tests.unit.langchain.test_rerankers:WRAPPED` names
BARE = Longest()


def _engine() -> HybridEngine:
    engine = HybridEngine({"keyword": FTS5KeywordStore()})
    engine.add(list(TEXTS), list(TEXTS.values()))
    return engine


def test_the_engine_takes_a_wrapped_compressor() -> None:
    result = _engine().search("pump", reranker=WRAPPED)
    assert [h.id for h in result.hits] == ["c", "b"]  # "a" dropped by the compressor
    assert [h.metadata["rrf_rerank_score"] for h in result.hits] == [22.0, 12.0]


def test_the_apps_load_a_wrapped_compressor_and_refuse_a_bare_one_naming_the_wrapper() -> None:
    assert load_reranker("tests.unit.langchain.test_rerankers:WRAPPED") is WRAPPED
    with pytest.raises(InvalidTypeError, match="CompressorReranker"):
        load_reranker("tests.unit.langchain.test_rerankers:BARE")


def test_the_langchain_retriever_converts_a_bare_compressor_itself() -> None:
    r = LangChainRRFRetriever(engine=_engine())
    assert [d.id for d in r.invoke("pump", reranker=BARE)] == ["c", "b"]
    assert r.update_settings(reranker=BARE).reranker is not BARE  # stored as the engine's shape
