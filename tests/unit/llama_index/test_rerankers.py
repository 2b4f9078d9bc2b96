"""A LlamaIndex postprocessor as a reranker outside the retriever (wrapped for the engine and the apps), and
MetadataFilters converted by the LlamaIndex side only."""

from __future__ import annotations

import pytest
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from rrf_retriever import FTS5KeywordStore, HybridEngine, InvalidTypeError
from rrf_retriever.apps.rerankers import load_reranker
from rrf_retriever.llama_index import LlamaIndexRRFRetriever, PostprocessorReranker

TEXTS = {"a": "pump one", "b": "pump two two", "c": "pump three three three"}


class Shortest(BaseNodePostprocessor):
    """Scores each node by minus its length: the shortest first."""

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        scored = [NodeWithScore(node=n.node, score=-float(len(n.node.get_content()))) for n in nodes]
        return sorted(scored, key=lambda n: -(n.score or 0.0))


WRAPPED = PostprocessorReranker(Shortest())
BARE = Shortest()


def _engine() -> HybridEngine:
    engine = HybridEngine({"keyword": FTS5KeywordStore()})
    engine.add(list(TEXTS), list(TEXTS.values()), [{"n": i} for i in range(3)])
    return engine


def test_the_engine_takes_a_wrapped_postprocessor() -> None:
    result = _engine().search("pump", reranker=WRAPPED)
    assert [h.id for h in result.hits] == ["a", "b", "c"]
    assert result.hits[0].metadata["rrf_rerank_score"] == -8.0


def test_the_apps_load_a_wrapped_postprocessor_and_refuse_a_bare_one_naming_the_wrapper() -> None:
    assert load_reranker("tests.unit.llama_index.test_rerankers:WRAPPED") is WRAPPED
    with pytest.raises(InvalidTypeError, match="PostprocessorReranker"):
        load_reranker("tests.unit.llama_index.test_rerankers:BARE")


def test_the_llama_index_retriever_converts_postprocessors_and_metadata_filters() -> None:
    r = LlamaIndexRRFRetriever(engine=_engine())
    assert [n.node.node_id for n in r.scoped(reranker=BARE).retrieve("pump")] == ["a", "b", "c"]
    only_c = MetadataFilters(filters=[MetadataFilter(key="n", value=2)])
    assert [n.node.node_id for n in r.scoped(filter=only_c).retrieve("pump")] == ["c"]
