"""The settings-service example over real HTTP: weights changed live, session scoping, 422 on bad input."""

from __future__ import annotations

import httpx

from integrations.settings_service import build_app
from rrf_retriever.embeddings import HashingEmbedding
from tests.integrations._server import running_server


def test_example_service_changes_weights_live_and_scopes_by_session() -> None:
    with running_server(build_app(HashingEmbedding(32))) as url, httpx.Client(base_url=url, timeout=30) as client:
        hits = client.get("/search", params={"q": "E4012 token", "session_ids": "1"}).json()["hits"]
        assert hits[0]["id"] == "kb-1" and all(h["metadata"]["session_id"] == 1 for h in hits)
        assert client.patch("/settings", json={"keywordWeight": 0.0, "topK": 2}).status_code == 200
        hits = client.get("/search", params={"q": "E4012 token"}).json()["hits"]
        assert len(hits) == 2 and all(set(h["ranks"]) == {"dense"} for h in hits)
        assert client.patch("/settings", json={"topK": 0}).status_code == 422
        assert client.get("/settings").json()["topK"] == 2
