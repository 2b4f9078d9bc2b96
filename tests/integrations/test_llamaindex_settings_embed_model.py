"""``llama_index.core.Settings.embed_model`` is honoured when no embedding is given, as LlamaIndex users expect:
``EnsembleRRFRetriever.from_documents(nodes)`` / ``from_texts(texts)`` embed with it (said in the log) and rank as
with the same model passed by hand, and as ``VectorStoreIndex`` over our store ranks with it. LlamaIndex's own
default (OpenAI: a key, the network) is never resolved: with nothing set, an embedding is asked for.

Real LlamaIndex objects: ``Settings``, ``MockEmbedding``, our hashing embedder as a LlamaIndex ``BaseEmbedding``,
``VectorStoreIndex``; Settings is put back as it was after each test.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import Settings, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import Document, TextNode

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.langchain import LangChainRRFRetriever
from rrf_retriever.llama_index import LlamaIndexRRFRetriever, RRFLlamaIndexEmbedding, RRFVectorStore

TEXTS = ["sync token expired: error E4012", "uploads pause when the disk is full", "backups restore nightly",
         "the sync runs every five minutes", "quota of the upload folder"]
NODES = [TextNode(id_=f"t{i}", text=t, metadata={"i": i}) if i % 2 else Document(id_=f"t{i}", text=t)
         for i, t in enumerate(TEXTS)]
QUERIES = ["sync error", "disk full uploads", "nightly backups", "upload quota"]


@pytest.fixture(autouse=True)
def settings_restored() -> Iterator[None]:
    """Settings as the test found it, afterwards; unset during the test. ``_embed_model`` is LlamaIndex's field
    itself: assigning ``Settings.embed_model = None`` would set a MockEmbedding, not unset it."""
    saved = Settings._embed_model
    Settings._embed_model = None
    try:
        yield
    finally:
        Settings._embed_model = saved


def _ranking(retriever: Any, query: str) -> list[tuple[str, dict[str, int], float]]:
    return [(n.node.node_id, n.node.metadata["rrf_ranks"], n.score) for n in retriever.retrieve(query)]


def test_from_documents_and_from_texts_embed_with_settings_embed_model(caplog: pytest.LogCaptureFixture) -> None:
    model = HashingEmbedding(64)
    Settings.embed_model = RRFLlamaIndexEmbedding(model)
    with caplog.at_level(logging.INFO, logger="rrf_retriever"):
        from_nodes = EnsembleRRFRetriever.from_documents(NODES, top_k=5)
    assert any("Settings.embed_model" in r.getMessage() for r in caplog.records)
    by_hand = EnsembleRRFRetriever.from_documents(NODES, model, top_k=5)
    from_texts = LlamaIndexRRFRetriever.from_texts(TEXTS, ids=[f"t{i}" for i in range(5)], top_k=5)
    by_hand_texts = LlamaIndexRRFRetriever.from_texts(TEXTS, model, ids=[f"t{i}" for i in range(5)], top_k=5)
    try:
        assert from_nodes.engine.legs["dense"].embedding is model  # the user's model, no copy
        for query in QUERIES:
            assert _ranking(from_nodes, query) == _ranking(by_hand, query)
            assert _ranking(from_texts, query) == _ranking(by_hand_texts, query)
            assert any("dense" in ranks for _, ranks, _ in _ranking(from_nodes, query))  # the dense leg answered
    finally:
        for r in (from_nodes, by_hand, from_texts, by_hand_texts):
            r.close()


def test_dense_order_is_the_one_vector_store_index_gets_from_settings() -> None:
    Settings.embed_model = RRFLlamaIndexEmbedding(HashingEmbedding(64))
    store = RRFVectorStore(keyword="fts5")
    index = VectorStoreIndex(NODES, storage_context=StorageContext.from_defaults(vector_store=store))  # no embed_model
    retriever = EnsembleRRFRetriever.from_documents(NODES, keyword="fts5", top_k=5, weights={"keyword": 0.0})
    try:
        for query in QUERIES:
            theirs = [n.node.node_id for n in index.as_retriever(similarity_top_k=5).retrieve(query)]
            assert [n.node.node_id for n in retriever.retrieve(query)] == theirs
    finally:
        retriever.close()
        store.close()


def test_a_llamaindex_mock_embedding_on_settings_builds_the_dense_leg() -> None:
    Settings.embed_model = MockEmbedding(embed_dim=12)
    with EnsembleRRFRetriever.from_texts(TEXTS, top_k=3) as retriever:
        assert retriever.engine.legs["dense"].embedding.dimension == 12
        assert len(retriever.retrieve("sync")) == 3


def test_an_embedding_given_wins_over_settings() -> None:
    Settings.embed_model = MockEmbedding(embed_dim=12)
    with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32)) as retriever:
        assert retriever.engine.legs["dense"].embedding.dimension == 32


def test_nothing_set_asks_for_an_embedding_and_never_resolves_llamaindex_default() -> None:
    for build in (lambda: EnsembleRRFRetriever.from_texts(TEXTS), lambda: EnsembleRRFRetriever.from_documents(NODES)):
        with pytest.raises(InvalidArgumentError, match=r"embedding is needed.*Settings\.embed_model"):
            build()
    assert Settings._embed_model is None  # not resolved to LlamaIndex's OpenAI default (a key, the network)


def test_a_langchain_only_retriever_does_not_read_llamaindex_settings() -> None:
    Settings.embed_model = MockEmbedding(embed_dim=12)
    with pytest.raises(InvalidArgumentError, match="embedding is needed") as caught:
        LangChainRRFRetriever.from_texts(TEXTS)
    assert "Settings" not in str(caught.value)
