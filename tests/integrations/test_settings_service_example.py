"""The settings-service example over real HTTP: weights changed live, session scoping, 422 on bad input."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
import uvicorn

from integrations.settings_service import build_app
from rrf_retriever.embeddings import HashingEmbedding


def test_example_service_changes_weights_live_and_scopes_by_session() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(HashingEmbedding(32)), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            hits = client.get("/search", params={"q": "E4012 token", "session_ids": "1"}).json()["hits"]
            assert hits[0]["id"] == "kb-1" and all(h["metadata"]["session_id"] == 1 for h in hits)
            assert client.patch("/settings", json={"keywordWeight": 0.0, "topK": 2}).status_code == 200
            hits = client.get("/search", params={"q": "E4012 token"}).json()["hits"]
            assert len(hits) == 2 and all(set(h["ranks"]) == {"dense"} for h in hits)
            assert client.patch("/settings", json={"topK": 0}).status_code == 422
            assert client.get("/settings").json()["topK"] == 2
    finally:
        server.should_exit = True
        thread.join(10)
