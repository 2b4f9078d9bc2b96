"""RRFDocument: a LangChain Document whose per-query ``rrf_*`` metadata is not part of its identity; everything
else about it is a Document's (fields, serialization, pickling, copies)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.load import dumpd, dumps, loads

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.langchain import RRFDocument, to_langchain_document
from rrf_retriever.types import FusedHit

scoring = st.dictionaries(st.sampled_from(["rrf_score", "rrf_score_normalized", "rrf_ranks", "rrf_scores",
                                           "rrf_pinned", "rrf_rerank_score", "rrf_expanded_from"]),
                          st.one_of(st.floats(allow_nan=False), st.dictionaries(st.text(max_size=5), st.integers())))
user = st.dictionaries(st.text(max_size=8).filter(lambda k: not k.startswith("rrf_")),
                       st.one_of(st.integers(), st.text(max_size=8)), max_size=4)


def _doc(metadata: dict[str, Any], **kw: Any) -> RRFDocument:
    return RRFDocument(id=kw.get("id", "d1"), page_content=kw.get("text", "the text"), metadata=metadata)


@given(user, scoring, scoring)
def test_equal_whatever_the_scoring_and_equal_to_the_users_document(meta: dict[str, Any], a: dict[str, Any],
                                                                    b: dict[str, Any]) -> None:
    one, two = _doc({**meta, **a}), _doc({**meta, **b})
    mine = Document(id="d1", page_content="the text", metadata=meta)
    assert one == two and two == one
    assert one == mine and mine == one and (one != mine) is False and (mine != one) is False
    assert one in [mine] and mine in [two]


@given(user, scoring)
def test_anything_else_that_differs_makes_it_another_document(meta: dict[str, Any], a: dict[str, Any]) -> None:
    base = _doc({**meta, **a})
    assert base != _doc({**meta, "other_key": 1, **a})
    assert base != _doc({**meta, **a}, id="d2")
    assert base != _doc({**meta, **a}, text="another text")
    assert base != "the text" and base != {"page_content": "the text"}


def test_scoring_stays_readable_and_isinstance_document() -> None:
    doc = to_langchain_document(FusedHit("a", "text", {"lang": "en"}, 0.5, {"keyword": 1}, {"keyword": 2.0}))
    assert isinstance(doc, Document) and doc.type == "Document"
    assert doc.metadata == {"lang": "en", "rrf_score": 0.5, "rrf_score_normalized": doc.metadata[
        "rrf_score_normalized"], "rrf_relevance": doc.metadata["rrf_relevance"], "rrf_ranks": {"keyword": 1},
        "rrf_scores": {"keyword": 2.0}}
    assert str(doc) == str(Document(page_content="text", metadata=doc.metadata))  # what a prompt sees


@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_serialized_it_is_a_plain_document() -> None:
    doc = _doc({"lang": "en", "rrf_score": 0.03})
    assert dumpd(doc) == dumpd(Document(id="d1", page_content="the text", metadata={"lang": "en", "rrf_score": 0.03}))
    back = loads(dumps(doc), allowed_objects=[Document])  # LangChain's Document: no namespace of ours needed
    assert type(back) is Document and back.metadata["rrf_score"] == 0.03 and back == doc and doc == back
    assert pickle.loads(pickle.dumps(doc)) == doc and type(pickle.loads(pickle.dumps(doc))) is RRFDocument
    assert copy.deepcopy(doc) == doc and doc.model_copy(update={"metadata": {"lang": "en"}}) == doc


def test_unhashable_as_a_document_is() -> None:
    try:
        hash(_doc({}))
    except TypeError:
        return
    raise AssertionError("an RRFDocument is mutable: it must not be hashable")


def test_two_queries_give_equal_documents_with_their_own_scoring() -> None:
    with EnsembleRRFRetriever.from_texts(["error E42 in the indexer", "the indexer restarts", "disk full"],
                                         HashingEmbedding(32), ids=["a", "b", "c"], keyword="bm25",
                                         dense="qdrant") as r:
        first, second = r.invoke("error E42", k=3), r.invoke("indexer restarts", k=3)
        by_id = {d.id: d for d in second}
        for doc in first:
            assert doc == by_id[doc.id]
        assert [d.metadata["rrf_ranks"] for d in first] != [by_id[d.id].metadata["rrf_ranks"] for d in first]
