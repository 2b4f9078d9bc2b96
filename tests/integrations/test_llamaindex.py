"""EnsembleRRFRetriever inside real LlamaIndex: query engines, async, instrumentation, scoping, metadata modes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever as LlamaIndexBaseRetriever
from llama_index.core.schema import Document, MetadataMode, NodeWithScore, QueryBundle, TextNode

from integrations import llamaindex_query_engine
from integrations.corpus import NOTES
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.llama_index.retriever import RRFRetrievalTraceEvent


@pytest.fixture
def retriever() -> EnsembleRRFRetriever:
    return llamaindex_query_engine.build_retriever(HashingEmbedding(32))


def test_retrieve_returns_nodes_with_fused_scores_and_hidden_rrf_metadata(retriever: EnsembleRRFRetriever) -> None:
    nodes = retriever.retrieve("E4012")
    # the corpus was inserted as Documents: each comes back a Document (its class hashes as the inserted one)
    assert nodes and all(isinstance(n, NodeWithScore) and isinstance(n.node, Document) for n in nodes)
    top = nodes[0]
    assert top.node.node_id == "kb-1"
    assert top.score == pytest.approx(top.node.metadata["rrf_score"])
    assert all(a.score >= b.score for a, b in zip(nodes, nodes[1:]))
    llm_view = top.node.get_content(metadata_mode=MetadataMode.LLM)
    embed_view = top.node.get_content(metadata_mode=MetadataMode.EMBED)
    for view in (llm_view, embed_view):
        assert "rrf_" not in view and "session_id: 1" in view  # the user's metadata stays visible


def test_query_engine_sync_and_async(retriever: EnsembleRRFRetriever) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    response = engine.query("cap the wait between retries max_retry_backoff")
    assert response.source_nodes[0].node.node_id == "kb-3"
    aresponse = asyncio.run(engine.aquery("cap the wait between retries max_retry_backoff"))
    assert [n.node.node_id for n in aresponse.source_nodes] == [n.node.node_id for n in response.source_nodes]


def test_aretrieve_inside_a_running_event_loop(retriever: EnsembleRRFRetriever) -> None:
    async def main() -> list[list[str]]:
        results = await asyncio.gather(retriever.aretrieve("E4012"), retriever.aretrieve(QueryBundle("disk space")))
        return [[n.node.node_id for n in r] for r in results]

    first, second = asyncio.run(main())
    assert first[0] == "kb-1" and second[0] == "kb-2"


def test_scoped_gives_per_call_scope(retriever: EnsembleRRFRetriever) -> None:
    scoped = retriever.scoped(filter={"session_id": [2, 3]}, exclude_ids=["kb-3"], top_k=10)
    ids = [n.node.node_id for n in scoped.retrieve("retry crash emoji authentication index")]
    assert ids and set(ids) <= {"kb-4", "kb-5", "kb-6"}
    assert scoped.engine is retriever.engine  # the copy shares the engine (and its runtime settings)
    assert retriever.search_kwargs == {}  # the original is untouched


def test_isinstance_of_both_frameworks(retriever: EnsembleRRFRetriever) -> None:
    from langchain_core.retrievers import BaseRetriever as LangChainBaseRetriever

    assert isinstance(retriever, LlamaIndexBaseRetriever) and isinstance(retriever, LangChainBaseRetriever)


class _Collect(BaseEventHandler):
    events: list[BaseEvent] = []

    @classmethod
    def class_name(cls) -> str:
        return "_Collect"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


def test_trace_reaches_llamaindex_instrumentation(retriever: EnsembleRRFRetriever) -> None:
    root = get_dispatcher()
    handler = _Collect(events=[]) if "events" in _Collect.model_fields else _Collect()
    spans = SimpleSpanHandler()
    root.add_event_handler(handler)
    root.add_span_handler(spans)
    try:
        retriever.retrieve("E4012")
        asyncio.run(retriever.aretrieve("disk"))
    finally:
        root.event_handlers.remove(handler)
        root.span_handlers.remove(spans)
    traces = [e for e in handler.events if isinstance(e, RRFRetrievalTraceEvent)]
    assert [t.query for t in traces] == ["E4012", "disk"]
    assert {leg["name"] for leg in traces[0].trace["legs"]} == {"dense", "keyword"}
    span_names = " ".join(s.id_ for s in spans.completed_spans)
    assert "EnsembleRRFRetriever" in span_names  # retrieve/_retrieve run inside dispatcher spans


def test_example_script_runs() -> None:
    out = llamaindex_query_engine.main()
    assert out["response"].source_nodes[0].node.node_id == "kb-3"
    assert {n.node.node_id for n in out["scoped"]} <= {"kb-5", "kb-6"}


def test_update_settings_applies_to_the_next_retrieve(retriever: EnsembleRRFRetriever) -> None:
    before = [n.node.metadata["rrf_ranks"] for n in retriever.retrieve("E4012 token")]
    assert any("keyword" in r for r in before)
    retriever.update_settings(keyword_weight=0.0, top_k=2)
    after = retriever.retrieve("E4012 token")
    assert len(after) == 2 and all(set(n.node.metadata["rrf_ranks"]) == {"dense"} for n in after)


def test_nodes_in_nodes_out() -> None:
    nodes = [TextNode(id_=doc_id, text=text, metadata=meta) for doc_id, text, meta in NOTES]
    r = EnsembleRRFRetriever.from_documents(nodes, HashingEmbedding(32), top_k=2)
    assert [n.node.node_id for n in r.retrieve("E4012")][0] == "kb-1"
    assert r.engine.count() == {"dense": len(NOTES), "keyword": len(NOTES)}
