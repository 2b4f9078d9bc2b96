"""POST /search takes the full filter language as JSON: operators and logic reach every store, and a
malformed filter is a 422 with our message, never an unscoped search. Real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

DOCS = {
    f"d{i}": {"n": i, "lang": "en" if i % 2 else "de", **({"tag": "x"} if i % 3 == 0 else {})} for i in range(12)
}


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    engine.add(list(DOCS), [f"alpha note {i}" for i in DOCS], list(DOCS.values()))
    with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c
    engine.close()


@pytest.mark.parametrize("flt", [
    {"n": {"$gte": 3, "$lt": 7}},
    {"tag": {"$exists": False}, "lang": "en"},
    {"$or": [{"n": {"$lte": 1}}, {"tag": "x"}]},
    {"$not": {"lang": {"$in": ["de"]}}},
    {"n": {"$nin": [1, 3, 5]}, "$and": [{"n": {"$ne": 0}}]},
])
def test_operators_flow_through_post_search(client: httpx.Client, flt: dict) -> None:
    r = client.post("/search", json={"q": "alpha note", "top_k": 20, "filter": flt})
    assert r.status_code == 200, r.text
    got = {h["id"] for h in r.json()["hits"]}
    assert got == {i for i, m in DOCS.items() if matches(m, normalize_filter(flt))}


@pytest.mark.parametrize(("flt", "message"), [
    ({"n": {"$gt": "3"}}, "needs a number"),
    ({"n": {"$regex": "a"}}, "unknown filter operator"),
    ({"$or": []}, "at least one filter"),
    ({"n": {"$in": 3}}, "list of values"),
    ({"n": None}, "None"),
])
def test_a_bad_filter_is_a_422_with_our_message(client: httpx.Client, flt: dict, message: str) -> None:
    r = client.post("/search", json={"q": "alpha note", "filter": flt})
    assert r.status_code == 422, r.text
    assert message in str(r.json()["detail"])
