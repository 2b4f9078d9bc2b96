"""The settings service over real HTTP: uvicorn on 127.0.0.1 (a free port, in a thread), httpx as the client.

Real stores (SQLite FTS5, Qdrant in memory); the hashing embedder is enough: these tests are about the API,
validation, atomic settings and scoping, not ranking quality.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

TOPICS = ["backup restore snapshot", "password reset login", "certificate tls pin", "disk quota storage"]
DOCS = [
    (f"s{session}-d{i}", f"{TOPICS[i % 4]} note {i} for session {session}", {"session_id": session})
    for session in range(1, 6)
    for i in range(8)
]
DEFAULTS = {"semanticWeight": 1.0, "keywordWeight": 1.0, "topK": 10, "k": 60.0, "fetchK": None, "diversity": None,
            "rerankK": None, "expandLimit": None}


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=64)), "keyword": FTS5KeywordStore()})
    engine.add([d[0] for d in DOCS], [d[1] for d in DOCS], [d[2] for d in DOCS])
    with running_server(create_app(engine)) as url:
        yield url
    engine.close()


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as c:
        c.patch("/settings", json=DEFAULTS).raise_for_status()
        yield c
        c.patch("/settings", json=DEFAULTS).raise_for_status()


def test_health_and_openapi(client: httpx.Client) -> None:
    health = client.get("/health").json()
    assert health == {"status": "ok", "documents": {"dense": 40, "keyword": 40}}
    spec = client.get("/openapi.json").json()
    assert {"/settings", "/search", "/health", "/documents"} <= set(spec["paths"])
    assert {"get", "post"} <= set(spec["paths"]["/search"]) and {"post", "delete"} <= set(spec["paths"]["/documents"])
    assert "rrf_k" in json.dumps(spec["components"]["schemas"]["SettingsView"])  # k is documented as rrf_k
    assert client.get("/docs").status_code == 200


def test_patch_applies_to_the_next_search_without_restart(client: httpx.Client) -> None:
    assert client.get("/settings").json() == DEFAULTS
    r = client.patch("/settings", json={"keywordWeight": 0.0, "topK": 3, "k": 10})
    assert r.status_code == 200
    assert r.json() == {**DEFAULTS, "keywordWeight": 0.0, "topK": 3, "k": 10.0, "persisted": False}
    data = client.get("/search", params={"q": "password reset"}).json()
    assert len(data["hits"]) == 3
    assert data["trace"]["weights"] == {"dense": 1.0, "keyword": 0.0}
    assert data["trace"]["rrf_k"] == 10.0
    assert all(set(h["ranks"]) == {"dense"} for h in data["hits"])
    r = client.patch("/settings", json={"fetchK": 50})
    assert r.json()["fetchK"] == 50
    assert client.get("/search", params={"q": "password"}).json()["trace"]["fetch_k"] == 50
    assert client.patch("/settings", json={"fetchK": None}).json()["fetchK"] is None


def test_stage_settings_are_patched_like_update_settings(client: httpx.Client) -> None:
    plain = [h["id"] for h in client.get("/search", params={"q": "password reset", "top_k": 5}).json()["hits"]]
    r = client.patch("/settings", json={"diversity": 0.0, "rerankK": 30, "expandLimit": 2})
    assert r.status_code == 200
    assert r.json() == {**DEFAULTS, "diversity": 0.0, "rerankK": 30, "expandLimit": 2, "persisted": False}
    data = client.get("/search", params={"q": "password reset", "top_k": 5}).json()
    assert "diversity" in data["trace"]["stages_ms"] and [h["id"] for h in data["hits"]][0] == plain[0]
    assert client.patch("/settings", json={"diversity": None}).json()["diversity"] is None
    assert [h["id"] for h in client.get("/search", params={"q": "password reset", "top_k": 5}).json()["hits"]] == plain
    for bad in ({"diversity": 1.5}, {"rerankK": 0}, {"expandLimit": -1}):
        r = client.patch("/settings", json=bad)
        assert r.status_code == 422, bad
    assert client.get("/settings").json()["rerankK"] == 30  # a refused patch changed nothing


def test_search_returns_hits_with_ranks_scores_and_trace(client: httpx.Client) -> None:
    data = client.get("/search", params={"q": "certificate tls pin", "top_k": 4}).json()
    assert data["query"] == "certificate tls pin"
    assert len(data["hits"]) == 4
    for hit in data["hits"]:
        assert set(hit) == {"id", "text", "metadata", "score", "normalized_score", "relevance", "ranks", "scores"}
        assert "certificate" in hit["text"]
        assert 0.0 <= hit["relevance"] <= hit["normalized_score"] <= 1.0  # the level times the fused shape
    relevance = [hit["relevance"] for hit in data["hits"]]
    assert relevance == sorted(relevance, reverse=True)  # monotone with the fused order
    legs = {leg["name"]: leg for leg in data["trace"]["legs"]}
    assert legs["keyword"]["called"] and legs["keyword"]["hits"] > 0 and legs["keyword"]["error"] is None
    assert legs["dense"]["called"] and legs["dense"]["hits"] > 0


def test_session_scoping_and_exclusions(client: httpx.Client) -> None:
    for sessions in ("2", "1,3", "4,5,1"):
        allowed = {int(s) for s in sessions.split(",")}
        hits = client.get("/search", params={"q": "backup restore", "top_k": 50, "session_ids": sessions}).json()["hits"]
        assert hits, sessions
        assert {h["metadata"]["session_id"] for h in hits} <= allowed
    hits = client.get("/search", params={"q": "backup", "session_ids": "2", "exclude_ids": "s2-d0,s2-d4"}).json()["hits"]
    ids = {h["id"] for h in hits}
    assert ids and not ids & {"s2-d0", "s2-d4"}
    assert client.get("/search", params={"q": "backup", "session_ids": "99"}).json()["hits"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"topK": 0},
        {"topK": 10_001},
        {"topK": 2.5},
        {"topK": "5"},
        {"topK": True},
        {"fetchK": 0},
        {"semanticWeight": -0.1},
        {"keywordWeight": "high"},
        {"k": -1},
        {"k": None},
        {"rrf_k": 10},
        {"semanticWeight": 0.5, "unknown": 1},
        {"semanticWeight": 0, "keywordWeight": 0},
        [],
    ],
)
def test_invalid_patch_is_422_and_changes_nothing(client: httpx.Client, body: object) -> None:
    client.patch("/settings", json={"semanticWeight": 0.7}).raise_for_status()
    before = client.get("/settings").json()
    r = client.patch("/settings", json=body)
    assert r.status_code == 422, r.text
    assert client.get("/settings").json() == before


@pytest.mark.parametrize("raw", ['{"semanticWeight": NaN}', '{"k": Infinity}', '{"keywordWeight": -Infinity}', "{"])
def test_non_finite_or_broken_json_is_422(client: httpx.Client, raw: str) -> None:
    before = client.get("/settings").json()
    r = client.patch("/settings", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422
    r.json()  # the error body is valid JSON even when it echoes NaN
    assert client.get("/settings").json() == before


def test_bad_search_parameters_are_422(client: httpx.Client) -> None:
    assert client.get("/search").status_code == 422
    assert client.get("/search", params={"q": "x", "top_k": 0}).status_code == 422
    assert client.get("/search", params={"q": "x", "top_k": 10_001}).status_code == 422


def test_concurrent_patches_and_searches_see_whole_snapshots(client: httpx.Client, base_url: str) -> None:
    snapshots = [
        {"semanticWeight": 1.0, "keywordWeight": 0.0, "k": 10.0, "topK": 3},
        {"semanticWeight": 0.0, "keywordWeight": 1.0, "k": 60.0, "topK": 5},
        {"semanticWeight": 0.3, "keywordWeight": 2.0, "k": 5.0, "topK": 7},
    ]
    allowed = {(s["semanticWeight"], s["keywordWeight"], s["k"], s["topK"]) for s in snapshots}
    client.patch("/settings", json=snapshots[0]).raise_for_status()

    def patcher(i: int) -> list[int]:
        codes = []
        with httpx.Client(base_url=base_url, timeout=30) as c:
            for j in range(15):
                codes.append(c.patch("/settings", json=snapshots[(i + j) % 3]).status_code)
        return codes

    def searcher(i: int) -> list[tuple[float, float, float, int]]:
        seen = []
        with httpx.Client(base_url=base_url, timeout=30) as c:
            for _ in range(15):
                trace = c.get("/search", params={"q": "backup password certificate disk"}).json()["trace"]
                seen.append((trace["weights"]["dense"], trace["weights"]["keyword"], trace["rrf_k"], trace["top_k"]))
        return seen

    with ThreadPoolExecutor(8) as pool:
        patches = [pool.submit(patcher, i) for i in range(3)]
        searches = [pool.submit(searcher, i) for i in range(5)]
        codes = [c for f in patches for c in f.result()]
        seen = [s for f in searches for s in f.result()]
    assert set(codes) == {200}
    assert len(seen) == 75
    assert set(seen) <= allowed  # never a mix of two snapshots
    final = client.get("/settings").json()
    assert (final["semanticWeight"], final["keywordWeight"], final["k"], final["topK"]) in allowed
