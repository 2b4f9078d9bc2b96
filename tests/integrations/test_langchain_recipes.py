"""RRFVectorStore inside LangChain's own retrievers: ``ParentDocumentRetriever`` (an in-memory docstore and a real
text splitter) and ``SelfQueryRetriever`` (a fake LLM answering a fixed structured query, our translator)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.chains.query_constructor.base import (
    StructuredQueryOutputParser,
    get_query_constructor_prompt,
)
from langchain_classic.chains.query_constructor.schema import AttributeInfo
from langchain_classic.retrievers import ParentDocumentRetriever
from langchain_classic.retrievers.self_query.base import SelfQueryRetriever
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.stores import InMemoryStore
from langchain_core.structured_query import Comparator, Comparison, FilterDirective, Operation, Operator
from langchain_text_splitters import RecursiveCharacterTextSplitter

from rrf_retriever import HashingEmbedding
from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.langchain import RRFTranslator, RRFVectorStore

MOVIES = [
    Document(page_content="Robots take over a space station", metadata={"genre": "sf", "year": 2021}),
    Document(page_content="A detective walks through the rain", metadata={"genre": "noir", "year": 1990}),
    Document(page_content="Robots solve crimes in a noir city", metadata={"genre": "noir", "year": 2022}),
    Document(page_content="A love story among the stars", metadata={"genre": "romance", "year": 2023}),
]
FIELDS = [AttributeInfo(name="genre", description="The movie's genre", type="string"),
          AttributeInfo(name="year", description="The release year", type="integer")]


@pytest.fixture
def store() -> Iterator[RRFVectorStore]:
    s = RRFVectorStore(HashingEmbedding(64))
    yield s
    s.close()


# ---- ParentDocumentRetriever ----------------------------------------------------------------------------


def test_parent_document_retriever_finds_children_and_returns_whole_parents(store: RRFVectorStore) -> None:
    parents = [
        Document(page_content="Release notes. The indexer crashed with error E42 when the disk filled up. "
                              "We now check free space first.", metadata={"team": "infra"}),
        Document(page_content="Search guide. Dense vectors find paraphrases; BM25 finds exact codes. "
                              "Fusion by reciprocal rank keeps both.", metadata={"team": "search"}),
    ]
    retriever = ParentDocumentRetriever(
        vectorstore=store, docstore=InMemoryStore(),
        child_splitter=RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0),
        search_kwargs={"k": 2},
    )
    retriever.add_documents(parents)
    children = store.similarity_search("error E42", k=10)
    assert len(children) > 2 and all("doc_id" in c.metadata for c in children)  # the children are indexed
    found = retriever.invoke("error E42")
    assert found[0].page_content == parents[0].page_content and found[0].metadata == {"team": "infra"}
    assert len({d.page_content for d in found}) == len(found)  # children of one parent give it once
    assert retriever.invoke("reciprocal rank fusion")[0].metadata == {"team": "search"}
    scoped = ParentDocumentRetriever(vectorstore=store, docstore=retriever.docstore,
                                     child_splitter=retriever.child_splitter,
                                     search_kwargs={"k": 2, "filter": {"team": "search"}})
    assert [d.metadata["team"] for d in scoped.invoke("error E42")] == ["search"]


async def test_parent_document_retriever_async(store: RRFVectorStore) -> None:
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(),
                                        child_splitter=RecursiveCharacterTextSplitter(chunk_size=30, chunk_overlap=0))
    await retriever.aadd_documents([Document(page_content="Error E42 appears when the disk is full of logs.")])
    assert (await retriever.ainvoke("E42"))[0].page_content.startswith("Error E42")


# ---- SelfQueryRetriever -------------------------------------------------------------------------------


def _parse_filter(text: str) -> FilterDirective:
    """LangChain's filter expression (``and(eq("genre", "noir"), gt("year", 2000))``) without lark: the grammar is
    Python call syntax once the keywords are renamed (lark, which LangChain's own parser needs, is not installed)."""
    def build(node: ast.expr) -> FilterDirective:
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        name = node.func.id.rstrip("_")
        if name in {o.value for o in Operator}:
            return Operation(operator=Operator(name), arguments=[build(a) for a in node.args])
        attribute, value = (ast.literal_eval(a) for a in node.args)
        return Comparison(comparator=Comparator(name), attribute=attribute, value=value)

    return build(ast.parse(re.sub(r"\b(and|or|not|in)\(", r"\1_(", text), mode="eval").body)


def _self_query(store: RRFVectorStore, answer: dict[str, Any], **kwargs: Any) -> SelfQueryRetriever:
    """The query constructor LangChain builds (its prompt, an LLM, its output parser), the LLM a fake one."""
    llm = FakeListLLM(responses=[f"```json\n{json.dumps(answer)}\n```"] * 4)
    prompt = get_query_constructor_prompt("Brief summary of a movie", FIELDS, enable_limit=True)
    constructor = prompt | llm | StructuredQueryOutputParser(ast_parse=_parse_filter)
    return SelfQueryRetriever(query_constructor=constructor, vectorstore=store,
                              structured_query_translator=RRFTranslator(), **kwargs)


def test_self_query_retriever_applies_the_llms_filter(store: RRFVectorStore) -> None:
    store.add_documents(MOVIES, ids=["m1", "m2", "m3", "m4"])
    unfiltered = [d.id for d in store.similarity_search("robots", k=4)]
    assert unfiltered[0] in {"m1", "m3"}
    answer = {"query": "robots", "filter": 'and(eq("genre", "noir"), gt("year", 2000))'}
    assert [d.id for d in _self_query(store, answer).invoke("noir robot movies after 2000")] == ["m3"]
    answer = {"query": "robots", "filter": 'or(eq("genre", "romance"), lt("year", 2000))', "limit": 1}
    found = _self_query(store, answer, enable_limit=True).invoke("old or romantic")
    assert len(found) == 1 and found[0].id in {"m2", "m4"}
    answer = {"query": "stars", "filter": 'not(in("genre", ["sf", "noir"]))'}
    assert [d.id for d in _self_query(store, answer).invoke("not sf nor noir")] == ["m4"]
    answer = {"query": "robots", "filter": "NO_FILTER"}
    assert len(_self_query(store, answer).invoke("robots")) == 4


async def test_self_query_retriever_async_and_refusals(store: RRFVectorStore) -> None:
    store.add_documents(MOVIES, ids=["m1", "m2", "m3", "m4"])
    answer = {"query": "robots", "filter": 'gte("year", 2022)'}
    assert {d.id for d in await _self_query(store, answer).ainvoke("recent robots")} == {"m3", "m4"}
    answer = {"query": "robots", "filter": 'like("genre", "no")'}
    with pytest.raises(InvalidFilterError, match="like"):  # a substring match we do not have: refused, not ignored
        _self_query(store, answer).invoke("genre like no")


# ---- the README's recipes, run as written ------------------------------------------------------------------


def _readme_blocks(heading: str) -> list[str]:
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = text[text.index(heading):]
    section = section[:section.index("\n## ")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_wrapper_recipes_run_as_written() -> None:
    """MultiQueryRetriever (a fake LLM giving three variants) and EnsembleRetriever(id_key=...) over ours."""
    wrappers = _readme_blocks("### Recipes: LangChain")[2]
    namespace: dict[str, Any] = {}
    exec(compile(wrappers, "README.md", "exec"), namespace)  # as printed: the block brings its own fake LLM
    variants = namespace["llm"].responses[0]
    assert len(variants.splitlines()) == 3
    hybrid, found = namespace["hybrid"], namespace["found_once"]
    union = {d.id for q in variants.splitlines() for d in hybrid.invoke(q)}
    assert sorted(d.id for d in found) == sorted(union) and len(union) < 3 * 2  # repeats were there, and dropped
    fused = namespace["fused"]
    members = {d.id for d in hybrid.invoke("error E42")} | {d.metadata["doc_id"] for d in
                                                             namespace["bm25"].invoke("error E42")}
    assert sorted(d.metadata["doc_id"] for d in fused) == sorted(members)  # both members' hits, each once
    assert all(d.metadata["doc_id"] == d.id for d in fused if d.id is not None)
    hybrid.close()


def test_the_readme_recipes_run_as_written() -> None:
    vector_store, self_query = _readme_blocks("### Recipes: LangChain")[:2]
    namespace: dict[str, Any] = {}
    exec(compile(vector_store, "README.md", "exec"), namespace)
    doc, score = namespace["hits"][0]
    assert doc.metadata == {"team": "infra"} and "E42" in doc.page_content and 0.0 < score <= 1.0
    assert len(namespace["retriever"].invoke("E42")) == 2
    assert len(namespace["diverse"].invoke("E42")) == 2
    assert namespace["stats"] == {"num_added": 1, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
    assert [d.page_content for d in namespace["whole"]] == [namespace["notes"]]
    if find_spec("lark") is None:  # SelfQueryRetriever.from_llm parses the LLM's filter with lark
        with pytest.raises(ImportError, match="lark"):
            exec(compile(self_query, "README.md", "exec"), {})
        return
    namespace = {}
    exec(compile(self_query, "README.md", "exec"), namespace)  # as printed: its own store and fake LLM
    assert [d.metadata for d in namespace["found"]] == [{"team": "infra"}]
    assert "E42" in namespace["found"][0].page_content
