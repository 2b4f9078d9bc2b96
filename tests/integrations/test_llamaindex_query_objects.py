"""The retriever honours LlamaIndex's query objects (``QueryBundle.embedding``, HyDE's ``custom_embedding_strs``) and
the ``score=`` choice of what ``NodeWithScore.score`` holds."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.indices.query.query_transform import HyDEQueryTransform
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine, TransformQueryEngine
from llama_index.core.schema import QueryBundle

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.llama_index import LlamaIndexRRFRetriever
from tests.integrations.test_llamaindex_vector_store import DOCS, QUERY, TopicEmbedding


def test_a_query_bundle_embedding_is_the_dense_query_vector() -> None:
    embed = TopicEmbedding()
    retriever = EnsembleRRFRetriever.from_documents(DOCS, embed, top_k=3)
    nodes = retriever.retrieve(QueryBundle(query_str="E4012", embedding=TopicEmbedding.vector("sync")))
    assert embed.queries == []  # no embedding call: the bundle's vector was used
    assert nodes[0].node.node_id == "u1" and {"dense", "keyword"} <= set(nodes[0].node.metadata["rrf_ranks"])
    ranks = {n.node.node_id: n.node.metadata["rrf_ranks"].get("dense") for n in nodes}
    assert {"s1", "s2", "s3"} & {i for i, rank in ranks.items() if rank is not None and rank <= 3}


def test_hyde_embeds_the_hypothetical_document_for_the_dense_leg() -> None:
    embed = TopicEmbedding()
    retriever = EnsembleRRFRetriever.from_documents(DOCS, embed, top_k=3)
    hyde = HyDEQueryTransform(llm=MockLLM(), include_original=True)
    engine = TransformQueryEngine(RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8)),
                                  query_transform=hyde)
    response = engine.query(QUERY)
    hypothetical, original = embed.queries
    assert original == QUERY and hypothetical != QUERY and QUERY in hypothetical  # MockLLM echoes HyDE's prompt
    assert response.source_nodes[0].node.node_id == "u1"  # the keyword leg still searched query_str
    bundle = hyde.run(QUERY)
    asyncio.run(retriever.aretrieve(bundle))
    assert embed.queries[2:] == bundle.custom_embedding_strs  # the async path too


def test_score_normalized_makes_a_similarity_cutoff_keep_the_top_hit() -> None:
    raw = EnsembleRRFRetriever.from_documents(DOCS, TopicEmbedding(), top_k=3, weights={"dense": 1.0, "keyword": 1.0})
    normalized = EnsembleRRFRetriever(engine=raw.engine, score="normalized")
    query = "E4012 upload quota"
    assert all((n.score or 0.0) < 0.1 for n in raw.retrieve(query))  # raw fused scores: about 2/61 at best
    nodes = normalized.retrieve(query)
    assert nodes[0].score == 1.0 == nodes[0].node.metadata["rrf_score_normalized"]
    kept = SimilarityPostprocessor(similarity_cutoff=0.7).postprocess_nodes(nodes)
    assert [n.node.node_id for n in kept] == ["u1"]
    assert normalized.scoped(k=1).retrieve(query)[0].score == 1.0  # a scoped copy keeps the choice
    assert LlamaIndexRRFRetriever(engine=raw.engine, score="normalized").retrieve(query)[0].score == 1.0
    with pytest.raises(InvalidArgumentError, match="score must be one of"):
        EnsembleRRFRetriever(engine=raw.engine, score="cosine")
