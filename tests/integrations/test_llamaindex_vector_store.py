"""RRFVectorStore inside real LlamaIndex: VectorStoreIndex, query modes, query engine, IngestionPipeline,
delete_ref_doc, MetadataFilters, an index directory reopened."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery
from pydantic import PrivateAttr

from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.llama_index import RRFVectorStore

#: Words on each topic axis: the "model" knows that "synchronisation" is about sync, and nothing of "E4012".
TOPICS = (("sync", "synchronisation", "syncing"), ("upload", "uploads", "quota", "disk"), ("backup", "restore"))


class TopicEmbedding(BaseEmbedding):
    """A deterministic toy embedding: one axis per topic, plus a small constant axis (never a zero vector).
    It knows topics, not exact terms: the dense leg finds paraphrases and misses codes. Logs what it embeds."""

    _queries: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "TopicEmbedding"

    @property
    def queries(self) -> list[str]:
        return self._queries

    @staticmethod
    def vector(text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower())
        return [float(sum(w in topic for w in words)) for topic in TOPICS] + [0.1]

    def _get_query_embedding(self, query: str) -> list[float]:
        self._queries.append(query)
        return self.vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.vector(text)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


DOCS = [
    Document(id_="s1", text="Sync runs every five minutes in the background.", metadata={"team": "core"}),
    Document(id_="s2", text="Sync conflicts keep the newest sync of a file.", metadata={"team": "core"}),
    Document(id_="s3", text="Sync pauses on metered networks until sync is resumed.", metadata={"team": "core"}),
    Document(id_="u1", text="Error E4012 is shown when the upload quota is exhausted.", metadata={"team": "web"}),
    Document(id_="b1", text="A backup can restore a deleted folder.", metadata={"team": "web"}),
]
#: A paraphrase for the dense leg ("synchronisation") and an exact code for the keyword leg ("E4012").
QUERY = "synchronisation failure code E4012"


def _index(store: RRFVectorStore, embed: BaseEmbedding | None = None) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        DOCS, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed or TopicEmbedding())


def _sources(nodes: list[Any]) -> list[str]:
    return [n.node.ref_doc_id for n in nodes]


def test_hybrid_finds_the_exact_term_the_dense_leg_misses() -> None:
    index = _index(RRFVectorStore())
    hybrid = index.as_retriever(vector_store_query_mode="hybrid", alpha=0.5, similarity_top_k=3).retrieve(QUERY)
    dense = index.as_retriever(vector_store_query_mode="default", similarity_top_k=3).retrieve(QUERY)
    assert "u1" not in _sources(dense)
    assert _sources(hybrid)[0] == "u1"
    ahybrid = asyncio.run(index.as_retriever(vector_store_query_mode="hybrid", alpha=0.5, similarity_top_k=3)
                          .aretrieve(QUERY))
    assert [n.node.node_id for n in ahybrid] == [n.node.node_id for n in hybrid]
    assert all(0.0 <= (n.score or 0.0) <= 1.0 for n in hybrid)
    for mode in ("sparse", "text_search"):
        keyword = index.as_retriever(vector_store_query_mode=mode, similarity_top_k=3).retrieve(QUERY)
        assert _sources(keyword) == ["u1"] and keyword[0].score == 1.0  # only u1 holds a query term


def test_alpha_maps_to_the_leg_weights_with_the_zero_weight_guard() -> None:
    index = _index(RRFVectorStore())
    only_dense = index.as_retriever(vector_store_query_mode="hybrid", alpha=1.0, similarity_top_k=3).retrieve(QUERY)
    only_keyword = index.as_retriever(vector_store_query_mode="hybrid", alpha=0.0, similarity_top_k=3).retrieve(QUERY)
    assert "u1" not in _sources(only_dense) and all(set(n.node.metadata["rrf_ranks"]) == {"dense"}
                                                    for n in only_dense)
    assert _sources(only_keyword) == ["u1"]
    with pytest.raises(InvalidArgumentError, match="alpha"):
        index.as_retriever(vector_store_query_mode="hybrid", alpha=1.5).retrieve(QUERY)


def test_nodes_come_back_whole_and_the_cutoff_keeps_what_both_legs_rank() -> None:
    index = _index(RRFVectorStore())
    nodes = index.as_retriever(vector_store_query_mode="hybrid", alpha=0.5, similarity_top_k=3).retrieve(
        "E4012 upload quota")
    top = nodes[0].node
    assert top.ref_doc_id == "u1" and top.metadata["team"] == "web" and top.source_node is not None
    kept = SimilarityPostprocessor(similarity_cutoff=0.7).postprocess_nodes(nodes)
    assert [n.node.node_id for n in kept] == [top.node_id]  # u1 is high in both legs; the others in one only


def test_query_engine_answers() -> None:
    engine = _index(RRFVectorStore()).as_query_engine(llm=MockLLM(max_tokens=8), vector_store_query_mode="hybrid",
                                                      alpha=0.5, similarity_top_k=2)
    response = engine.query(QUERY)
    assert str(response) and response.source_nodes[0].node.ref_doc_id == "u1"


def test_ingestion_pipeline_then_query_and_delete_ref_doc() -> None:
    store = RRFVectorStore()
    embed = TopicEmbedding()
    long_doc = Document(id_="long", text=" ".join(f"Sentence {i} is about sync and backup." for i in range(40)))
    pipeline = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), embed],
                                 vector_store=store)
    nodes = pipeline.run(documents=[*DOCS, long_doc])

    chunks = [n.node_id for n in nodes if n.ref_doc_id == "long"]
    assert len(chunks) > 3
    index = VectorStoreIndex.from_vector_store(store, embed_model=embed)
    hits = index.as_retriever(vector_store_query_mode="hybrid", similarity_top_k=3).retrieve(QUERY)
    assert _sources(hits)[0] == "u1"
    index.delete_ref_doc("long")
    assert store.get_nodes(chunks) == []
    assert store.client.engine.count() == {"dense": len(DOCS), "keyword": len(DOCS)}


def test_ingestion_pipeline_arun_writes_through_async_add() -> None:
    store = RRFVectorStore()
    asyncio.run(IngestionPipeline(transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), TopicEmbedding()],
                                  vector_store=store).arun(documents=DOCS))
    assert store.client.engine.count() == {"dense": len(DOCS), "keyword": len(DOCS)}


def test_metadata_filters_apply_to_every_mode() -> None:
    index = _index(RRFVectorStore())
    only_core = MetadataFilters(filters=[MetadataFilter(key="team", value="core")])
    for mode in ("default", "sparse", "hybrid"):
        nodes = index.as_retriever(vector_store_query_mode=mode, filters=only_core, similarity_top_k=5).retrieve(
            "sync E4012")
        assert nodes and {n.node.metadata["team"] for n in nodes} == {"core"}


def test_store_level_calls_get_delete_nodes_clear_and_mmr() -> None:
    store = RRFVectorStore()
    vec = TopicEmbedding.vector
    store.add([TextNode(id_=d.doc_id, text=d.text, metadata=d.metadata, embedding=vec(d.text)) for d in DOCS])
    assert [n.node_id for n in store.get_nodes(["u1", "s1"])] == ["u1", "s1"]
    web = MetadataFilters(filters=[MetadataFilter(key="team", value="web")])
    assert [n.node_id for n in store.get_nodes(["u1", "s1"], filters=web)] == ["u1"]
    mmr = store.query(VectorStoreQuery(query_embedding=vec("sync"), similarity_top_k=2, mode="mmr"))
    assert len(mmr.ids or []) == 2
    store.delete_nodes(filters=web)
    assert store.client.engine.count() == {"dense": 3, "keyword": 3}
    store.delete_nodes(["s1"])
    store.clear()
    assert store.client.engine.count() == {"dense": 0, "keyword": 0}
    with pytest.raises(InvalidArgumentError, match="no embedding"):
        store.add([TextNode(id_="x", text="no vector")])
    with pytest.raises(InvalidArgumentError, match="svm"):
        store.query(VectorStoreQuery(query_embedding=vec("sync"), mode="svm"))


def test_an_index_directory_reopens_with_its_data(tmp_path: Path) -> None:
    first = RRFVectorStore(path=tmp_path / "idx")
    _index(first)
    first.close()
    again = RRFVectorStore(path=tmp_path / "idx")
    try:
        index = VectorStoreIndex.from_vector_store(again, embed_model=TopicEmbedding())
        hits = index.as_retriever(vector_store_query_mode="hybrid", alpha=0.5, similarity_top_k=3).retrieve(QUERY)
        assert _sources(hits)[0] == "u1"
    finally:
        again.close()
