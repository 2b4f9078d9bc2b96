"""``POST /search`` with another store's filter dialect as ``filter`` is a 422 naming the dialect (never "must must
be a string..." nor an empty or unscoped result); a field called like a dialect's word still filters. Real HTTP
(uvicorn on 127.0.0.1), real stores, the hashing embedder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

BODIES: list[tuple[Any, str]] = [
    ({"must": [{"key": "session_id", "match": {"value": 1}}]}, "Qdrant"),
    ({"should": [{"key": "session_id", "match": {"any": [1, 2]}}], "must_not": [{"key": "lang", "match": {"value": "de"}}]},
     "Qdrant"),
    ({"min_should": {"conditions": [{"key": "session_id", "match": {"value": 1}}], "min_count": 1}}, "Qdrant"),
    ({"bool": {"filter": [{"term": {"session_id": 1}}]}}, "Elasticsearch"),
    ({"terms": {"session_id": [1, 2]}}, "Elasticsearch"),
    ({"range": {"session_id": {"gte": 1}}}, "Elasticsearch"),
    ({"match": {"lang": "en"}}, "Elasticsearch"),
    ([{"term": {"session_id": 1}}], "Elasticsearch"),
    ({"path": ["lang"], "operator": "Equal", "valueText": "en"}, "Weaviate"),
    ({"operator": "Or", "operands": [{"path": ["session_id"], "operator": "Equal", "valueInt": 1}]}, "Weaviate"),
    ("session_id in [1, 2]", "Milvus"),
    ('lang == "en"', "Milvus"),
]


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    engine.add(["a", "b", "c"], ["alpha one", "alpha two", "alpha three"],
               [{"session_id": 1, "lang": "en", "must": "x", "path": "docs/a.md"},
                {"session_id": 2, "lang": "de", "must": "y", "path": "docs/b.md"},
                {"session_id": 3, "lang": "en", "must": "x", "path": "notes/c.md"}])
    with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c
    engine.close()


@pytest.mark.parametrize(("flt", "dialect"), BODIES)
def test_each_dialect_is_a_422_naming_it(client: httpx.Client, flt: Any, dialect: str) -> None:
    r = client.post("/search", json={"q": "alpha", "filter": flt})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str), detail  # our message, not a pydantic type error
    assert dialect in detail
    assert "$gte" in detail  # and ours, to write instead


@pytest.mark.parametrize(("flt", "dialect"), [BODIES[0], BODIES[3], BODIES[8], BODIES[10]])
def test_a_dense_path_filter_in_a_dialect_is_a_422_naming_it(client: httpx.Client, flt: Any, dialect: str) -> None:
    r = client.post("/search", json={"q": "alpha", "dense_paths": {"scoped": flt}})
    assert r.status_code == 422, r.text
    assert dialect in str(r.json()["detail"])


@pytest.mark.parametrize(("flt", "ids"), [
    ({"must": "x"}, ["a", "c"]),
    ({"path": ["docs/a.md", "docs/b.md"]}, ["a", "b"]),
    ({"must": {"$ne": "x"}, "lang": "de"}, ["b"]),
])
def test_a_field_named_like_a_dialect_word_still_filters(client: httpx.Client, flt: dict, ids: list[str]) -> None:
    r = client.post("/search", json={"q": "alpha", "filter": flt})
    assert r.status_code == 200, r.text
    assert sorted(h["id"] for h in r.json()["hits"]) == ids
