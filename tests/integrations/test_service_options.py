"""POST /search's body becomes the engine's SearchOptions in one place (SearchRequest.options): every option is a
field of the body under its own name, unless declared not to be (the reranker: a request cannot name code)."""

from __future__ import annotations

import pytest

from rrf_retriever.apps.service_models import NOT_IN_REQUESTS, SearchRequest
from rrf_retriever.engine.options import OPTION_NAMES, SearchOptions
from rrf_retriever.errors import InvalidArgumentError


def test_every_option_is_a_request_field_or_declared_not_to_be() -> None:
    assert OPTION_NAMES - set(SearchRequest.model_fields) == NOT_IN_REQUESTS


def test_the_request_becomes_the_options() -> None:
    body = SearchRequest(q="x", top_k=3, offset=3, filter={"lang": "en"}, exclude_ids=["a"], pinned_ids=["p"],
                         weights={"keyword": 2.0}, rerank=False, rerank_k=7, dense_paths={"all": None})
    assert body.options() == SearchOptions(top_k=3, offset=3, filter={"lang": "en"}, exclude_ids=["a"],
                                           pinned_ids=["p"], weights={"keyword": 2.0}, reranker=False, rerank_k=7,
                                           dense_paths={"all": None})
    assert SearchRequest(q="x").options() == SearchOptions()
    assert SearchRequest(q="x", rerank=True).options().reranker is None  # the server's reranker
    with pytest.raises(InvalidArgumentError, match="diversity"):
        SearchRequest(q="x", diversity=3.0).options()  # the engine's check (a 422 over HTTP)
