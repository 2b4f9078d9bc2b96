"""A repeated JSON key in any request body, at any depth, is a 422 naming it: never silently "the last one wins"
(``{"filter": {"session_id": [0]}, "filter": {}}`` would otherwise be an unscoped search). Real HTTP (uvicorn on
127.0.0.1), real stores, the hashing embedder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.index.directory import create_index, open_index
from rrf_retriever.index.manifest import read_manifest, save_manifest
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[httpx.Client, HybridEngine]]:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    engine.add(["a", "b"], ["alpha note one", "alpha note two"], [{"session_id": 0}, {"session_id": 1}])
    with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c, engine
    engine.close()


def _refused(r: httpx.Response, loc: list[object]) -> None:
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["type"] == "json_duplicate_key"
    assert error["loc"] == ["body", *loc]
    assert f"repeats the key {loc[-1]!r}" in error["msg"]


def test_a_repeated_filter_key_is_a_422_not_an_unscoped_search(served: tuple[httpx.Client, HybridEngine]) -> None:
    client, _ = served
    r = client.post("/search", content=b'{"q": "alpha note", "filter": {"session_id": [0]}, "filter": {}}',
                    headers=JSON)
    _refused(r, ["filter"])
    scoped = client.post("/search", json={"q": "alpha note", "filter": {"session_id": [0]}})
    assert [h["id"] for h in scoped.json()["hits"]] == ["a"]  # the same body without the repeat: scoped


@pytest.mark.parametrize(("method", "path", "body", "loc"), [
    ("POST", "/search", '{"q": "alpha", "filter": {"session_id": 0, "session_id": 1}}', ["filter", "session_id"]),
    ("POST", "/search", '{"q": "alpha", "filter": {"$or": [{"n": {"$gt": 1, "$gt": 5}}]}}',
     ["filter", "$or", 0, "n", "$gt"]),
    ("POST", "/search", '{"q": "alpha", "q": "beta"}', ["q"]),
    ("POST", "/search", '{"q": "alpha", "weights": {"dense": 1, "dense": 0}}', ["weights", "dense"]),
    ("POST", "/documents", '{"documents": [{"id": "c", "text": "t", "metadata": {"session_id": 1, "session_id": 2}}]}',
     ["documents", 0, "metadata", "session_id"]),
    ("POST", "/documents", '{"documents": [{"id": "c", "id": "d", "text": "t"}]}', ["documents", 0, "id"]),
    ("DELETE", "/documents", '{"ids": ["a"], "ids": []}', ["ids"]),
    ("PATCH", "/settings", '{"topK": 3, "topK": 7}', ["topK"]),
])
def test_every_json_route_refuses_a_repeated_key_at_any_depth(
        served: tuple[httpx.Client, HybridEngine], method: str, path: str, body: str, loc: list[object]) -> None:
    client, engine = served
    before = (engine.settings, engine.count(), sorted(r.id for r in engine.get(["a", "b", "c", "d"])))
    _refused(client.request(method, path, content=body.encode(), headers=JSON), loc)
    assert (engine.settings, engine.count(), sorted(r.id for r in engine.get(["a", "b", "c", "d"]))) == before


def test_a_repeat_is_refused_without_a_content_type_and_the_same_keys_in_separate_objects_are_fine(
        served: tuple[httpx.Client, HybridEngine]) -> None:
    client, _ = served
    r = client.post("/search", content=b'{"q": "alpha", "filter": {"session_id": 0, "session_id": 1}}')
    _refused(r, ["filter", "session_id"])
    fine = {"q": "alpha note", "filter": {"$or": [{"session_id": 0}, {"session_id": 1}]}}
    r = client.post("/search", content=json.dumps(fine).encode(), headers=JSON)
    assert r.status_code == 200, r.text
    assert sorted(h["id"] for h in r.json()["hits"]) == ["a", "b"]


def test_the_body_limit_and_malformed_json_keep_their_answers(served: tuple[httpx.Client, HybridEngine]) -> None:
    client, _ = served
    r = client.post("/search", content=b'{"q": "alpha", ', headers=JSON)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["type"] == "json_invalid"
    big = b'{"q": "alpha", "q": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    assert client.post("/search", content=big, headers=JSON).status_code == 413


def test_a_repeated_key_is_never_echoed_whole(served: tuple[httpx.Client, HybridEngine]) -> None:
    client, _ = served
    key = "k" * 5000
    r = client.post("/search", content=f'{{"q": "a", "filter": {{"{key}": 1, "{key}": 2}}}}'.encode(), headers=JSON)
    assert r.status_code == 422, r.text
    assert key not in r.text


def test_a_refused_settings_patch_leaves_the_saved_settings_alone(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    engine = create_index(root, embedder="hashing:32")
    engine.add(["a"], ["alpha"], [{"session_id": 1}])
    save_manifest(root, engine)
    engine.close()
    engine = open_index(root)
    try:
        with running_server(create_app(engine, index_path=root)) as url, httpx.Client(base_url=url) as c:
            r = c.patch("/settings", content=b'{"topK": 3, "topK": 7}', headers=JSON)
            _refused(r, ["topK"])
            assert c.get("/settings").json()["topK"] == engine.settings.top_k
    finally:
        engine.close()
    assert "settings" not in read_manifest(root) or read_manifest(root)["settings"].get("top_k") != 7
