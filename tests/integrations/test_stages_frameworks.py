"""The result stages through both frameworks, with real framework objects: a LangChain ``BaseDocumentCompressor``
and LlamaIndex ``BaseNodePostprocessor`` s (a subclass and built-ins) as rerankers, MMR diversity, dense paths and
expand_limit, per call (LangChain ``invoke`` / ``batch`` / LCEL), per instance (``scoped``) and as settings."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.runnables import RunnableLambda
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import LongContextReorder, SimilarityPostprocessor
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError

DIM = 32
IDS = [f"n{i:02d}" for i in range(24)]
TEXTS = [f"{'fuel pump' if i % 2 else 'orbit burn'} checklist {i // 6} revision {i % 6}" for i in range(24)]
METAS = [{"team": i % 3, "links": [IDS[(i + 5) % 24]]} for i in range(24)]
QUERY = "fuel pump checklist"


class FuelFirst(BaseDocumentCompressor):
    """A compressor that drops the 'orbit' documents and returns NEW Documents (no id) in reverse order: they are
    matched back by their text."""

    def compress_documents(self, documents: Sequence[Document], query: str, callbacks: Any = None) -> list[Document]:
        kept = [d for d in documents if "fuel" in d.page_content]
        return [Document(page_content=d.page_content, metadata=dict(d.metadata)) for d in reversed(kept)]


class Extracting(BaseDocumentCompressor):
    """An extractor: new content, our metadata carried back (as LLMChainExtractor does), with a relevance score."""

    def compress_documents(self, documents: Sequence[Document], query: str, callbacks: Any = None) -> list[Document]:
        return [Document(page_content="extract", metadata={**d.metadata, "relevance_score": float(i)})
                for i, d in enumerate(documents)][::-1]


class RevisionFive(BaseNodePostprocessor):
    """A postprocessor that scores 'revision 5' nodes highest (sets the node scores, as cross-encoders do)."""

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        assert query_bundle is not None and query_bundle.query_str
        scored = [NodeWithScore(node=n.node, score=1.0 if "revision 5" in n.node.get_content() else 0.1)
                  for n in nodes]
        return sorted(scored, key=lambda n: -(n.score or 0.0))


@pytest.fixture
def retriever() -> Iterator[EnsembleRRFRetriever]:
    r = EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(DIM), metadatas=METAS, ids=IDS, top_k=5)
    yield r
    r.close()


# ---- LangChain ---------------------------------------------------------------------------------------------------


def test_langchain_invoke_with_a_compressor_that_drops_and_rebuilds_documents(retriever: Any) -> None:
    fused = retriever.invoke(QUERY, k=24)
    docs = retriever.invoke(QUERY, reranker=FuelFirst(), rerank_k=10)
    head = [d for d in fused[:10] if "fuel" in d.page_content]
    assert [d.id for d in docs] == [d.id for d in reversed(head)][:5]
    assert all(d.metadata["rrf_ranks"] and "rrf_rerank_score" in d.metadata for d in docs)
    fused_scores = {d.id: d.metadata["rrf_score"] for d in fused}
    assert all(d.metadata["rrf_score"] == fused_scores[d.id] for d in docs)  # the fused score stays


def test_langchain_compressor_matched_by_metadata_and_its_relevance_score(retriever: Any) -> None:
    docs = retriever.invoke(QUERY, reranker=Extracting(), rerank_k=6)
    fused = retriever.invoke(QUERY, k=6)
    assert [d.id for d in docs] == [d.id for d in reversed(fused)][:5]
    assert docs[0].metadata["rrf_rerank_score"] == 5.0 and docs[0].page_content != "extract"  # our text stays


def test_langchain_batch_lcel_and_settings(retriever: Any) -> None:
    chain = retriever | RunnableLambda(lambda docs: [d.id for d in docs])
    per_call = retriever.invoke(QUERY, reranker=FuelFirst(), rerank_k=10)
    assert chain.invoke(QUERY) == [d.id for d in retriever.invoke(QUERY)]
    batched = retriever.batch([QUERY, "orbit burn"], diversity=0.3)
    assert [d.id for d in batched[0]] == [d.id for d in retriever.invoke(QUERY, diversity=0.3)]
    retriever.update_settings(reranker=FuelFirst(), rerank_k=10)
    assert chain.invoke(QUERY) == [d.id for d in per_call]
    assert retriever.settings.to_dict()["reranker"].startswith("langchain:")
    assert asyncio.run(retriever.ainvoke(QUERY)) == retriever.invoke(QUERY)
    retriever.update_settings(reranker=None)
    assert "rrf_rerank_score" not in retriever.invoke(QUERY)[0].metadata


def test_langchain_diversity_dense_paths_and_expand_limit(retriever: Any) -> None:
    plain = retriever.invoke(QUERY, k=5, diversity=1.0)
    assert [d.id for d in plain] == [d.id for d in retriever.invoke(QUERY, k=5)]
    diverse = retriever.invoke(QUERY, k=5, diversity=0.0)
    assert [d.id for d in diverse] != [d.id for d in plain] and diverse[0].id == plain[0].id
    docs = retriever.invoke(QUERY, k=24, filter={"team": 1}, dense_paths={"dense_all": None})
    assert any("dense_all" in d.metadata["rrf_ranks"] for d in docs)
    assert {d.metadata["team"] for d in docs if set(d.metadata["rrf_ranks"]) != {"dense_all"}} == {1}
    with pytest.raises(InvalidArgumentError, match="diversity"):
        retriever.invoke(QUERY, diversity=3)
    with pytest.raises(InvalidTypeError, match="reranker"):
        retriever.invoke(QUERY, reranker=object())
    with pytest.raises(InvalidArgumentError, match="unknown search argument"):
        retriever.invoke(QUERY, rerankr=FuelFirst())


def test_expand_limit_from_the_retriever() -> None:
    r = EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(DIM), metadatas=METAS, ids=IDS, top_k=3,
                                        links_key="links")
    try:
        def expanded(metadatas: list[dict[str, Any]]) -> int:
            return sum("rrf_expanded_from" in m for m in metadatas)

        docs = r.invoke(QUERY)
        assert len(docs) == 3 and expanded([d.metadata for d in docs]) >= 1  # neighbours fit within top_k
        assert expanded([d.metadata for d in r.invoke(QUERY, expand_limit=1)]) == 1
        r.update_settings(expand_limit=1)
        nodes = r.scoped().retrieve(QUERY)
        assert len(nodes) == 3 and expanded([n.node.metadata for n in nodes]) == 1
    finally:
        r.close()


# ---- LlamaIndex --------------------------------------------------------------------------------------------------


def test_llamaindex_scoped_postprocessor_and_query_engine(retriever: Any) -> None:
    nodes = retriever.scoped(reranker=RevisionFive(), rerank_k=24).retrieve(QUERY)
    assert all("revision 5" in n.node.get_content() for n in nodes[:4])
    assert all(n.node.metadata["rrf_rerank_score"] == 1.0 for n in nodes[:4])
    hidden = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "rrf_rerank_score" not in hidden and "rrf_ranks" not in hidden  # kept from the LLM
    engine = RetrieverQueryEngine.from_args(retriever.scoped(reranker=RevisionFive(), rerank_k=24),
                                            llm=MockLLM(max_tokens=8))
    response = engine.query(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == [n.node.node_id for n in nodes]
    aresponse = asyncio.run(engine.aquery(QUERY))
    assert [n.node.node_id for n in aresponse.source_nodes] == [n.node.node_id for n in nodes]


def test_llamaindex_built_in_postprocessors_and_mmr(retriever: Any) -> None:
    fused = retriever.scoped(top_k=8).retrieve(QUERY)
    reordered = retriever.scoped(top_k=8, reranker=LongContextReorder(), rerank_k=8).retrieve(QUERY)
    assert sorted(n.node.node_id for n in reordered) == sorted(n.node.node_id for n in fused)
    cutoff = fused[3].score
    kept = retriever.scoped(top_k=8, reranker=SimilarityPostprocessor(similarity_cutoff=cutoff),
                            rerank_k=8).retrieve(QUERY)
    assert [n.node.node_id for n in kept] == [n.node.node_id for n in fused if n.score >= cutoff]
    diverse = retriever.scoped(diversity=0.0).retrieve(QUERY)
    assert [n.node.node_id for n in diverse] == [d.id for d in retriever.invoke(QUERY, diversity=0.0)]
    retriever.update_settings(reranker=RevisionFive(), rerank_k=24)
    assert retriever.settings.to_dict()["reranker"].startswith("llama_index:")
    assert "revision 5" in retriever.retrieve(QUERY)[0].node.get_content()
