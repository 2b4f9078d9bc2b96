"""What a search response tells one tenant about the others: the keyword leg's raw BM25 score carries the
collection-wide IDF (how many documents, anyone's, hold a query term), so the service withholds it unless the
operator turns it on (``create_app(expose_keyword_scores=True)``, ``serve --expose-scores``).

Real HTTP: uvicorn on 127.0.0.1 in a thread; real stores (FTS5 and Qdrant in memory), the hashing embedder.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

MINE = [("m1", "my note about the zebra crossing", {"session_id": 1}),
        ("m2", "my note about the garden shed", {"session_id": 1})]
THEIRS = [(f"t{i}", f"their private zebra diary entry {i}", {"session_id": 2}) for i in range(5)]


def _engine(docs: list[tuple[str, str, dict[str, Any]]]) -> HybridEngine:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    engine.add([d[0] for d in docs], [d[1] for d in docs], [d[2] for d in docs])
    return engine


@pytest.fixture(scope="module")
def engine() -> Iterator[HybridEngine]:
    engine = _engine(MINE + THEIRS)
    yield engine
    engine.close()


def _hits(url: str, how: str) -> list[dict[str, Any]]:
    with httpx.Client(base_url=url, timeout=30) as c:
        if how == "get":
            r = c.get("/search", params={"q": "zebra note", "session_ids": "1"})
        else:
            r = c.post("/search", json={"q": "zebra note", "filter": {"session_id": [1]}})
    assert r.status_code == 200, r.text
    hits: list[dict[str, Any]] = r.json()["hits"]
    assert hits and {h["metadata"]["session_id"] for h in hits} == {1}
    return hits


def test_the_leak_is_real_an_own_scope_keyword_score_moves_with_other_tenants_documents() -> None:
    # Why the scores are withheld: the same own-session query scores differently once another session holds
    # the term; the ranks inside the own session stay the same here.
    alone, shared = _engine(MINE), _engine(MINE + THEIRS)
    try:
        options = SearchOptions(filter={"session_id": [1]})
        a, b = alone.search("zebra note", options), shared.search("zebra note", options)
        assert [h.id for h in a.hits] == [h.id for h in b.hits]
        assert a.hits[0].scores["keyword"] != pytest.approx(b.hits[0].scores["keyword"])
    finally:
        alone.close()
        shared.close()


@pytest.mark.parametrize("how", ["get", "post"])
def test_by_default_a_search_response_carries_no_raw_keyword_score(engine: HybridEngine, how: str) -> None:
    with running_server(create_app(engine)) as url:
        hits = _hits(url, how)
    for hit in hits:
        assert "keyword" not in hit["scores"], hit
        assert "dense" in hit["scores"]  # a cosine of the query and this document: no one else's statistics
    assert any("keyword" in hit["ranks"] for hit in hits)  # ranks and the fused score stay
    assert all(hit["score"] > 0 and 0 < hit["normalized_score"] <= 1 for hit in hits)


@pytest.mark.parametrize("how", ["get", "post"])
def test_the_operator_can_expose_the_raw_keyword_scores(engine: HybridEngine, how: str) -> None:
    with running_server(create_app(engine, expose_keyword_scores=True)) as url:
        hits = _hits(url, how)
    assert any(hit["scores"].get("keyword", 0) > 0 for hit in hits)


def test_expose_keyword_scores_must_be_a_bool(engine: HybridEngine) -> None:
    from rrf_retriever.errors import InvalidTypeError

    with pytest.raises(InvalidTypeError, match="expose_keyword_scores"):
        create_app(engine, expose_keyword_scores="yes")  # type: ignore[arg-type]  # the wrong type on purpose
