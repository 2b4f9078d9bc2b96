"""EnsembleRRFRetriever: the four points that make one class serve both frameworks, writes, persistence."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import Document as LlamaDocument
from llama_index.core.schema import QueryBundle

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine, Leg
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.types import Hit


class AsyncOnlyLeg(Leg):
    """Answers asynchronously only: proves the async paths never fall back to the sync search."""

    def search(self, request):  # type: ignore[no-untyped-def]
        msg = "sync search called from an async path"
        raise AssertionError(msg)

    async def asearch(self, request):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0)
        return [Hit("a", "async text")]


def test_llamaindex_instance_state_is_declared_and_excluded_from_serialisation() -> None:
    r = EnsembleRRFRetriever(sources={"x": AsyncOnlyLeg()}, verbose=True)
    assert r.callback_manager is not None and r.object_map == {}
    assert r._verbose is True
    dumped = r.model_dump()
    assert "callback_manager" not in dumped and "object_map" not in dumped and "engine" not in dumped


def test_llamaindex_aretrieve_reaches_ours_by_its_keyword() -> None:
    # LlamaIndex's public aretrieve calls the subclass hook as _aretrieve(query_bundle=...): a hook whose parameter
    # had another name would raise TypeError here.
    r = EnsembleRRFRetriever(sources={"x": AsyncOnlyLeg()})
    nodes = asyncio.run(r.aretrieve(QueryBundle("q")))
    assert [n.node.node_id for n in nodes] == ["a"]


def test_both_async_paths_are_native() -> None:
    r = EnsembleRRFRetriever(sources={"x": AsyncOnlyLeg()}, on_error="raise")
    assert [d.id for d in asyncio.run(r.ainvoke("q"))] == ["a"]
    assert [n.node.node_id for n in asyncio.run(r.aretrieve("q"))] == ["a"]


def test_get_prompts_clash_is_resolved() -> None:
    r = EnsembleRRFRetriever(sources={"x": AsyncOnlyLeg()})
    assert r.get_prompts() == {} and r.get_prompts(config={"tags": []}) == []


def test_add_documents_from_both_frameworks_and_delete() -> None:
    r = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16))
    r.add_documents([Document(id="lc", page_content="langchain document about rockets", metadata={"s": 1})])
    r.add_documents([LlamaDocument(id_="li", text="llamaindex document about rockets", metadata={"s": 2})])
    ids = r.add_texts(["plain text about rockets"])
    assert len(ids) == 1 and len(ids[0]) == 32
    assert {d.id for d in r.invoke("rockets")} == {"lc", "li", ids[0]}
    assert r.get_by_ids(["li"])[0].metadata == {"s": 2}
    r.delete(["lc"])
    assert "lc" not in {d.id for d in r.invoke("rockets")}
    assert r.engine.count() == {"dense": 2, "keyword": 2}
    with pytest.raises(InvalidTypeError):
        r.add_documents(["not a document"])
    with pytest.raises(InvalidTypeError):
        r.add_texts("a single string")


def test_from_texts_persists_to_a_path_and_reopens(tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = EnsembleRRFRetriever.from_texts(["persistent rockets", "other"], HashingEmbedding(16), ids=["p", "o"],
                                        path=tmp_path)
    assert [d.id for d in r.invoke("rockets", k=1)] == ["p"]
    r.engine.legs["dense"].store.close()
    r.engine.legs["keyword"].store.close()
    reopened = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path)
    assert reopened.engine.count() == {"dense": 2, "keyword": 2}
    assert [d.id for d in reopened.invoke("rockets", k=1)] == ["p"]


def test_bm25_keyword_option_and_bad_options() -> None:
    r = EnsembleRRFRetriever.from_texts(["alpha beta", "gamma"], HashingEmbedding(16), keyword="bm25", ids=["a", "g"])
    assert r.invoke("alpha")[0].id == "a"
    with pytest.raises(InvalidArgumentError):
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), keyword="whoosh")
    with pytest.raises(InvalidArgumentError):
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), dense="faiss")
    with pytest.raises(InvalidArgumentError, match="at least one source"):
        EnsembleRRFRetriever()
    with pytest.raises(InvalidArgumentError, match="no keyword source"):
        EnsembleRRFRetriever(sources={"x": AsyncOnlyLeg()}, keyword_weight=1.0)


def test_constructor_weights_and_update_settings_shortcuts() -> None:
    r = EnsembleRRFRetriever.from_texts(["x"], HashingEmbedding(16), semantic_weight=0.7, keyword_weight=0.3,
                                        rrf_k=20, fetch_k=50)
    s = r.settings
    assert dict(s.weights) == {"dense": 0.7, "keyword": 0.3} and s.rrf_k == 20 and s.fetch_k == 50
    s2 = r.update_settings(semantic_weight=0.0, k=3)
    assert dict(s2.weights) == {"dense": 0.0, "keyword": 0.3} and s2.top_k == 3
    assert r.settings is s2


def test_wrapping_an_existing_engine() -> None:
    engine = HybridEngine({"x": AsyncOnlyLeg()})
    r = EnsembleRRFRetriever(engine=engine, top_k=4)
    assert r.engine is engine and engine.settings.top_k == 4
    with pytest.raises(InvalidTypeError):
        EnsembleRRFRetriever(engine="nope")  # type: ignore[arg-type]


def test_a_persistent_retriever_keeps_a_journal_and_redoes_interrupted_writes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = EnsembleRRFRetriever.from_texts(["alpha rockets"], HashingEmbedding(16), ids=["a"], path=tmp_path)
    journal = r.engine.journal
    assert journal is not None and (tmp_path / "journal.sqlite3").is_file()
    # A batch recorded but never written (the process died between the journal and the stores) ...
    journal.begin("add", ["b"], ["beta rockets"], [{}], {"dense": HashingEmbedding(16).embed_documents(["beta rockets"])})
    for leg in r.engine.legs.values():
        leg.store.close()
    journal.close()
    # ... is completed in every store when the retriever is built again.
    reopened = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path)
    assert reopened.engine.count() == {"dense": 2, "keyword": 2}
    assert reopened.engine.journal.pending() == []


_ONE_FRAMEWORK = """
import sys
sys.modules[{blocked!r}] = None  # as if it were not installed: any import of it fails
from rrf_retriever import EnsembleRRFRetriever, FTS5KeywordStore
r = EnsembleRRFRetriever(keyword=FTS5KeywordStore(), top_k=1)
r.add_texts(["error E42", "vector search"], ids=["e42", "vec"])
{check}
assert {blocked!r} not in {{m.split(".")[0] for m, v in sys.modules.items() if v is not None}}
print(type(r).__name__)
"""


@pytest.mark.parametrize(
    ("blocked", "check", "name"),
    [
        ("llama_index", "from langchain_core.retrievers import BaseRetriever as B\n"
         "assert isinstance(r, B) and [d.id for d in r.invoke('E42')] == ['e42']", "LangChainRRFRetriever"),
        ("langchain_core", "from llama_index.core.base.base_retriever import BaseRetriever as B\n"
         "assert isinstance(r, B) and [n.node.node_id for n in r.retrieve('E42')] == ['e42']",
         "LlamaIndexRRFRetriever"),
    ],
)
def test_one_framework_alone_gives_that_frameworks_retriever(blocked: str, check: str, name: str) -> None:
    import subprocess
    import sys

    code = _ONE_FRAMEWORK.format(blocked=blocked, check=check)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == name


def test_unknown_constructor_arguments_are_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="semantic_weigth"):
        EnsembleRRFRetriever(sources={"x": AsyncOnlyLeg()}, semantic_weigth=3.0)


def test_rerunning_a_quickstart_with_a_path_does_not_duplicate_documents(tmp_path) -> None:  # type: ignore[no-untyped-def]
    texts = ["first note about rockets", "second note about rockets", "first note about rockets"]
    metas = [{"s": 1}, {"s": 1}, {"s": 2}]
    for _ in range(2):  # the same script run twice against the same folder
        with EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(16), metadatas=metas, path=tmp_path) as r:
            counts = r.engine.count()
    assert counts == {"dense": 3, "keyword": 3}  # same text, other metadata: another document
    r2 = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16))
    ids = r2.add_texts(["same", "same"]) + r2.add_documents([Document(page_content="same")])
    assert len(set(ids)) == 2 and ids[2] == ids[0]  # a repeat in one batch is kept apart; a re-add is an upsert
    assert r2.engine.count() == {"dense": 2, "keyword": 2}
