"""The settings-service example over real HTTP: weights changed live, session scoping, 422 on bad input, writes,
and the API key."""

from __future__ import annotations

import httpx

from integrations.settings_service import build_app
from rrf_retriever.embeddings import HashingEmbedding
from tests.integrations.server_helpers import running_server


def test_example_service_changes_weights_live_and_scopes_by_session() -> None:
    with running_server(build_app(HashingEmbedding(32))) as url, httpx.Client(base_url=url, timeout=30) as client:
        hits = client.get("/search", params={"q": "E4012 token", "session_ids": "1"}).json()["hits"]
        assert hits[0]["id"] == "kb-1" and all(h["metadata"]["session_id"] == 1 for h in hits)
        assert client.patch("/settings", json={"keywordWeight": 0.0, "topK": 2}).status_code == 200
        hits = client.get("/search", params={"q": "E4012 token"}).json()["hits"]
        assert len(hits) == 2 and all(set(h["ranks"]) == {"dense"} for h in hits)
        assert client.patch("/settings", json={"topK": 0}).status_code == 422
        assert client.get("/settings").json()["topK"] == 2


def test_example_service_json_search_writes_and_strictness() -> None:
    with running_server(build_app(HashingEmbedding(32))) as url, httpx.Client(base_url=url, timeout=30) as client:
        body = {"q": "disk space uploads", "filter": {"session_id": [1, 2], "kind": "kb"}}
        hits = client.post("/search", json=body).json()["hits"]
        assert hits and all(h["metadata"]["kind"] == "kb" and h["metadata"]["session_id"] in (1, 2) for h in hits)
        assert client.post("/search", json={"q": "E4012", "filter": {"session_id": []}}).json()["hits"] == []
        assert client.get("/search", params={"q": "E4012", "session_ids": ""}).status_code == 422
        assert client.get("/search", params={"q": "E4012", "sessionId": "1"}).status_code == 422
        doc = {"id": "kb-7", "text": "E5001 means the vault is read-only", "metadata": {"session_id": 4}}
        assert client.post("/documents", json={"documents": [doc]}).json() == {"ids": ["kb-7"]}
        hits = client.get("/search", params={"q": "E5001 read-only", "sessionIds": "4"}).json()["hits"]
        assert [h["id"] for h in hits] == ["kb-7"]
        assert client.request("DELETE", "/documents", json={"ids": ["kb-7"]}).status_code == 200
        assert client.get("/search", params={"q": "E5001", "session_ids": "4"}).json()["hits"] == []


def test_example_service_with_an_api_key() -> None:
    app = build_app(HashingEmbedding(32), api_key="example-key")
    with running_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/health").status_code == 200
        assert client.get("/settings").status_code == 401
        assert client.get("/settings", headers={"Authorization": "Bearer example-key"}).status_code == 200
