"""Copies of a retriever share its engine (like a DB client): copy.copy, copy.deepcopy, pydantic model_copy."""

from __future__ import annotations

import copy

import pytest

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import EngineClosedError
from rrf_retriever.langchain import LangChainRRFRetriever
from rrf_retriever.llama_index import LlamaIndexRRFRetriever

TEXTS = ["rockets reach orbit", "error E42 in the FTS5 index", "a recipe for bread"]


CASES = [(cls, how) for cls in (EnsembleRRFRetriever, LangChainRRFRetriever, LlamaIndexRRFRetriever)
         for how in ("copy", "deepcopy", "model_copy")
         if how != "model_copy" or cls is not LlamaIndexRRFRetriever]  # a LlamaIndex retriever is no pydantic model


@pytest.mark.parametrize(("cls", "how"), CASES)
def test_a_copy_shares_the_engine_and_answers(cls: type, how: str) -> None:
    r = cls.from_texts(TEXTS, HashingEmbedding(16), search_kwargs={"k": 2})
    c = {"copy": copy.copy, "deepcopy": copy.deepcopy, "model_copy": lambda x: x.model_copy(deep=True)}[how](r)
    assert c is not r and c.engine is r.engine
    assert c.search_kwargs == r.search_kwargs
    if how != "copy":  # a deep copy's search_kwargs are its own (a shallow copy shares them, as Python's rule is)
        c.search_kwargs["k"] = 1
        assert r.search_kwargs["k"] == 2
    assert [h.id for h in c.search("E42", k=1).hits] == [h.id for h in r.search("E42", k=1).hits]
    r.close()  # the engine is shared: closing the original closes the copy's too
    with pytest.raises(EngineClosedError):
        c.search("E42")
