"""``PATCH /settings`` over an index directory is written to its manifest (as ``tune`` writes its choice) and
survives a restart; over an engine without a directory it says ``"persisted": false``.

Real HTTP (uvicorn on 127.0.0.1 in a thread), a real index directory, the hashing embedder.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.index.directory import create_index, open_index
from rrf_retriever.index.manifest import read_manifest, save_manifest
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

CHANGE = {"keywordWeight": 0.5, "topK": 3, "k": 20.0, "fetchK": 30, "diversity": 0.7, "rerankK": 25,
          "expandLimit": 2}


def _index(root: Path) -> Path:
    engine = create_index(root, embedder="hashing:32")
    engine.add(["a", "b"], ["backup restore snapshot", "password reset login"], [{"session_id": 1}, {"session_id": 2}])
    save_manifest(root, engine)
    engine.close()
    return root


def test_a_patch_survives_a_restart_on_the_same_index_directory(tmp_path: Path) -> None:
    root = _index(tmp_path / "idx")
    engine = open_index(root)
    try:
        with running_server(create_app(engine, index_path=root)) as url, httpx.Client(base_url=url) as c:
            r = c.patch("/settings", json=CHANGE)
            assert r.status_code == 200, r.text
            assert r.json() == {**c.get("/settings").json(), "persisted": True}
    finally:
        engine.close()
    assert read_manifest(root)["settings"]["top_k"] == 3
    engine = open_index(root)  # a restart: a new engine and app on the same directory
    try:
        with running_server(create_app(engine, index_path=root)) as url, httpx.Client(base_url=url) as c:
            shown = c.get("/settings").json()
    finally:
        engine.close()
    assert {name: shown[name] for name in CHANGE} == CHANGE
    assert shown["semanticWeight"] == 1.0


def test_a_later_patch_keeps_the_earlier_ones_and_null_resets(tmp_path: Path) -> None:
    root = _index(tmp_path / "idx")
    engine = open_index(root)
    try:
        with running_server(create_app(engine, index_path=root)) as url, httpx.Client(base_url=url) as c:
            assert c.patch("/settings", json={"topK": 4, "diversity": 0.5}).status_code == 200
            assert c.patch("/settings", json={"k": 30.0, "diversity": None}).status_code == 200
    finally:
        engine.close()
    engine = open_index(root)
    try:
        assert (engine.settings.top_k, engine.settings.rrf_k, engine.settings.diversity) == (4, 30.0, None)
    finally:
        engine.close()


def test_a_refused_patch_writes_nothing(tmp_path: Path) -> None:
    root = _index(tmp_path / "idx")
    before = read_manifest(root).get("settings")
    engine = open_index(root)
    try:
        with running_server(create_app(engine, index_path=root)) as url, httpx.Client(base_url=url) as c:
            assert c.patch("/settings", json={"topK": 0}).status_code == 422
    finally:
        engine.close()
    assert read_manifest(root).get("settings") == before


def test_without_an_index_directory_a_patch_says_it_is_not_persisted() -> None:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    try:
        with running_server(create_app(engine)) as url, httpx.Client(base_url=url) as c:
            r = c.patch("/settings", json={"topK": 3})
            assert r.status_code == 200, r.text
            assert r.json()["persisted"] is False and r.json()["topK"] == 3
    finally:
        engine.close()
