"""Habits from the frameworks get a hint naming our argument, or are accepted as an alias."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError


def test_retrievers_list_names_sources() -> None:
    with pytest.raises(InvalidArgumentError, match=r"sources=\{"):
        EnsembleRRFRetriever(retrievers=[object()], weights=[0.5])


def test_embed_model_is_an_alias_of_embedding() -> None:
    docs = [Document(page_content="error E42 in the index"), Document(page_content="bread recipe")]
    with EnsembleRRFRetriever.from_documents(docs, embed_model=HashingEmbedding(16)) as r:
        assert r.invoke("E42", k=1)[0].page_content == "error E42 in the index"
    with EnsembleRRFRetriever.from_texts(["a text"], embed_model=HashingEmbedding(16)) as r:
        assert r.engine.count()


def test_embedding_and_embed_model_both_or_neither_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="embed_model"):
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), embed_model=HashingEmbedding(16))
    with pytest.raises(InvalidArgumentError, match="embedding"):
        EnsembleRRFRetriever.from_documents([])
