"""EnsembleRRFRetriever inside real LangChain: standard tests, LCEL, tools, callbacks, EnsembleRetriever."""

from __future__ import annotations

import asyncio
import functools
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import ConfigurableField, RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests

from integrations import langchain_rag_chain
from integrations.corpus import NOTES
from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import DEFAULT_LEG_WEIGHTS
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.fusion import DEFAULT_RRF_K

TEXTS = [f"note {i} about hybrid search, fusion and keyword index number {i + 10}" for i in range(12)]


def _retriever(**kwargs: Any) -> EnsembleRRFRetriever:
    return EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(32), ids=[f"n{i}" for i in range(12)], **kwargs)


class TestStandardRetrieverWithK(RetrieversIntegrationTests):
    """LangChain's own retriever test suite, with ``k`` as the count (what LangChain users write)."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return functools.partial(EnsembleRRFRetriever.from_texts, TEXTS, HashingEmbedding(32))  # type: ignore[return-value]

    @property
    def retriever_constructor_params(self) -> dict:
        return {"k": 5}

    @property
    def retriever_query_example(self) -> str:
        return "hybrid search fusion"


class TestStandardRetrieverWithTopK(TestStandardRetrieverWithK):
    """The same suite with our own name for the count."""

    @property
    def retriever_constructor_params(self) -> dict:
        return {"top_k": 5}

    @property
    def num_results_arg_name(self) -> str:
        return "top_k"


def test_k_is_the_number_of_results_never_the_rrf_constant() -> None:
    r = _retriever(k=4)
    assert r.settings.top_k == 4 and r.settings.rrf_k == DEFAULT_RRF_K
    assert len(r.invoke("hybrid", k=2)) == 2
    with pytest.raises(InvalidArgumentError, match="alias"):
        r.invoke("hybrid", k=2, top_k=3)


def test_documents_carry_id_and_rrf_metadata() -> None:
    r = EnsembleRRFRetriever.from_texts(
        [t for _, t, _ in NOTES], HashingEmbedding(32), metadatas=[m for *_, m in NOTES], ids=[i for i, *_ in NOTES]
    )
    docs = r.invoke("E4012 token")
    top = docs[0]
    assert top.id == "kb-1"
    assert top.metadata["session_id"] == 1 and top.metadata["kind"] == "kb"  # the user's keys stay
    assert set(top.metadata["rrf_ranks"]) <= {"dense", "keyword"} and top.metadata["rrf_ranks"]["keyword"] == 1
    weights, k = r.settings.weights, r.settings.rrf_k
    assert top.metadata["rrf_score"] == pytest.approx(
        sum(weights[leg] / (k + rank) for leg, rank in top.metadata["rrf_ranks"].items())
    )
    assert set(top.metadata["rrf_scores"]) == set(top.metadata["rrf_ranks"])


def test_invoke_passes_scope_and_weights_per_call() -> None:
    r = EnsembleRRFRetriever.from_texts(
        [t for _, t, _ in NOTES], HashingEmbedding(32), metadatas=[m for *_, m in NOTES], ids=[i for i, *_ in NOTES]
    )
    docs = r.invoke("sync token disk", filter={"session_id": [1]}, exclude_ids=["kb-1"])
    assert [d.id for d in docs] == ["kb-2"]
    only_dense = r.invoke("E4012", weights={"keyword": 0.0})
    assert all(set(d.metadata["rrf_ranks"]) == {"dense"} for d in only_dense)
    with pytest.raises(InvalidArgumentError, match="unknown search argument"):
        r.invoke("x", rrf_k=3)


def test_batch_and_async() -> None:
    r = _retriever(top_k=3)
    batched = r.batch(["note 1", "note 2"])
    assert [len(b) for b in batched] == [3, 3]
    assert [d.id for d in asyncio.run(r.ainvoke("note 1"))] == [d.id for d in r.invoke("note 1")]
    abatched = asyncio.run(r.abatch(["note 1", "note 2"]))
    assert [[d.id for d in b] for b in abatched] == [[d.id for d in b] for b in batched]


def test_lcel_rag_chain_sync_and_async() -> None:
    r = langchain_rag_chain.build_retriever(HashingEmbedding(32))
    seen: list[str] = []
    spy = RunnableLambda(lambda prompt_value: seen.append(prompt_value.to_string()) or prompt_value)
    llm_chain = langchain_rag_chain.build_chain(r, ["sync answer", "async answer"])
    # Insert the spy between prompt and model to check the retrieved context reached the prompt.
    first, prompt, llm, parser = llm_chain.first, *llm_chain.middle, llm_chain.last
    chain = first | prompt | spy | llm | parser
    assert chain.invoke("what does E4012 mean?") == "sync answer"
    assert "kb-1" in seen[-1] and "E4012" in seen[-1]
    assert asyncio.run(chain.ainvoke("max_retry_backoff")) == "async answer"
    assert "kb-3" in seen[-1]


def test_example_script_runs() -> None:
    out = langchain_rag_chain.main()
    assert out["docs"][0].id == "kb-1"
    assert {d.id for d in out["scoped"]} <= {"kb-3", "kb-4"}


def test_as_tool_and_retriever_tool() -> None:
    r = _retriever(top_k=2)
    tool = r.as_tool(name="search_notes", description="Search the notes")
    out = tool.invoke({"input": "note 3"}) if "input" in tool.args else tool.invoke("note 3")
    assert isinstance(out, list) and len(out) == 2 and isinstance(out[0], Document)
    from langchain_core.tools import create_retriever_tool

    rt = create_retriever_tool(r, "notes", "Search the notes")
    text = rt.invoke({"query": "keyword index number 17"})
    assert "number 17" in text


def test_langchain_ensemble_retriever_accepts_ours_as_a_member() -> None:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

    ours = _retriever(top_k=3)
    bm25 = BM25Retriever.from_texts(TEXTS, k=3)
    ensemble = EnsembleRetriever(retrievers=[ours, bm25], weights=[0.5, 0.5], id_key=None)
    docs = ensemble.invoke("keyword index number 17")
    assert docs and any("number 17" in d.page_content for d in docs[:2])


def test_configurable_search_kwargs() -> None:
    r = _retriever(top_k=5).configurable_fields(
        search_kwargs=ConfigurableField(id="rrf_search_kwargs", name="Search kwargs")
    )
    assert len(r.invoke("note")) == 5
    got = r.invoke("note", config={"configurable": {"rrf_search_kwargs": {"top_k": 2, "weights": {"dense": 0}}}})
    assert len(got) == 2 and all(set(d.metadata["rrf_ranks"]) == {"keyword"} for d in got)


class TraceCollector(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.ended: list[list[Document]] = []

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data))

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.ended.append(list(documents))


def test_trace_reaches_langchain_callbacks_sync_and_async() -> None:
    r = _retriever(top_k=2)
    collector = TraceCollector()
    r.invoke("note 4", config={"callbacks": [collector]})
    asyncio.run(r.ainvoke("note 5", config={"callbacks": [collector]}))
    assert [name for name, _ in collector.events] == ["rrf_retriever_trace", "rrf_retriever_trace"]
    trace = collector.events[0][1]
    assert {leg["name"] for leg in trace["legs"]} == {"dense", "keyword"}
    assert all(leg["called"] and leg["error"] is None for leg in trace["legs"])
    assert trace["weights"] == dict(DEFAULT_LEG_WEIGHTS) and trace["rrf_k"] == DEFAULT_RRF_K
    assert len(collector.ended) == 2 and len(collector.ended[0]) == 2


def test_get_prompts_serves_both_frameworks() -> None:
    r = _retriever()
    assert r.get_prompts({}) == []  # LangChain passes a config, gets a list
    assert r.get_prompts() == {}  # LlamaIndex passes nothing, gets a dict


def test_bad_inputs_through_invoke_raise_our_errors() -> None:
    r = _retriever()
    with pytest.raises(InvalidTypeError, match="query"):
        r.invoke(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="top_k"):
        r.invoke("x", k=0)
    with pytest.raises(InvalidArgumentError, match="dense"):
        r.invoke("x", weights={"dense": float("nan")})
