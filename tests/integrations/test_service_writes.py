"""Write routes: one process serves and writes an index directory (through the engine's journal, the manifest's
doc_count refreshed). Real HTTP (uvicorn on 127.0.0.1), a real index directory (FTS5 + qdrant-edge)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.apps.service_models import MAX_DOCUMENTS_PER_REQUEST
from rrf_retriever.index.directory import create_index, open_index
from rrf_retriever.index.manifest import read_manifest
from tests.integrations.server_helpers import running_server


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path, Any]]:
    root = tmp_path / "idx"
    engine = create_index(root, embedder="hashing:32")
    assert engine.journal is not None
    with running_server(create_app(engine, index_path=root)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c, root, engine
    engine.close()


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def _docs(n: int, session: int = 1, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": f"n{i}", "text": f"rotate the api token after incident {i}", "metadata": {"session_id": session}}
            for i in range(start, start + n)]


def test_add_search_delete_over_http_with_the_manifest_refreshed(served: tuple[httpx.Client, Path, Any]) -> None:
    client, root, _ = served
    r = client.post("/documents", json={"documents": [*_docs(3), {"id": "plain", "text": "no metadata at all"}]})
    assert r.status_code == 200, r.text
    assert r.json()["ids"] == ["n0", "n1", "n2", "plain"]
    assert read_manifest(root)["doc_count"] == 4
    assert client.get("/health").json()["documents"] == {"dense": 4, "keyword": 4}
    hits = client.post("/search", json={"q": "api token", "filter": {"session_id": 1}}).json()["hits"]
    assert {h["id"] for h in hits} == {"n0", "n1", "n2"}
    # an upsert replaces
    client.post("/documents", json={"documents": [{"id": "n0", "text": "changed", "metadata": {"session_id": 2}}]})
    assert read_manifest(root)["doc_count"] == 4
    r = client.request("DELETE", "/documents", json={"ids": ["n1", "n2", "missing"]})
    assert r.status_code == 200, r.text
    assert r.json()["ids"] == ["n1", "n2", "missing"]
    assert read_manifest(root)["doc_count"] == 2
    assert {h["id"] for h in client.get("/search", params={"q": "api token changed"}).json()["hits"]} <= {"n0", "plain"}


def test_writes_survive_a_reopen(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    engine = create_index(root, embedder="hashing:32")
    with running_server(create_app(engine, index_path=root)) as url, httpx.Client(base_url=url, timeout=30) as c:
        assert c.post("/documents", json={"documents": _docs(5)}).status_code == 200
    engine.close()
    again = open_index(root)
    try:
        assert again.count() == {"dense": 5, "keyword": 5}
        assert again.search("api token", top_k=10).ids
        assert again.journal is not None and not again.journal.pending()
    finally:
        again.close()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"documents": []},
        {"documents": [{"id": "a"}]},
        {"documents": [{"text": "no id"}]},
        {"documents": [{"id": "a", "text": "x", "meta": {}}]},
        {"documents": [{"id": "a", "text": "x"}], "upsert": True},
        {"documents": [{"id": "", "text": "x"}]},
        {"documents": [{"id": 5, "text": "x"}]},
        {"documents": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]},
        {"documents": [{"id": "a", "text": "x", "metadata": [1]}]},
        {"documents": [{"id": "a", "text": "x", "metadata": {"n": _nested(30)}}]},
        # an integer no store holds exactly (beyond int64) is bad input, not an outage (503)
        {"documents": [{"id": "a", "text": "x", "metadata": {"n": 2**63}}]},
        {"documents": [{"id": "a", "text": "x", "metadata": {"tags": [1, {"n": -(2**63) - 1}]}}]},
        # the rrf_ namespace is ours: a stored {"rrf_pinned": true} must not pin a document
        {"documents": [{"id": "a", "text": "x", "metadata": {"rrf_pinned": True}}]},
        {"documents": {"id": "a", "text": "x"}},
        [],
    ],
)
def test_a_bad_add_is_422_and_writes_nothing(served: tuple[httpx.Client, Path, Any], body: object) -> None:
    client, root, engine = served
    r = client.post("/documents", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"]
    assert engine.count() == {"dense": 0, "keyword": 0}
    assert read_manifest(root)["doc_count"] == 0


def test_too_many_documents_in_one_request_is_422(served: tuple[httpx.Client, Path, Any]) -> None:
    client, _, engine = served
    n = MAX_DOCUMENTS_PER_REQUEST + 1
    docs = [{"id": str(i), "text": "t"} for i in range(n)]
    r = client.post("/documents", json={"documents": docs})
    assert r.status_code == 422, r.text[:300]
    assert str(MAX_DOCUMENTS_PER_REQUEST) in r.text
    assert engine.count()["keyword"] == 0


@pytest.mark.parametrize("body", [{}, {"ids": []}, {"ids": "a"}, {"ids": [1]}, {"ids": ["a"], "all": True}, []])
def test_a_bad_delete_is_422(served: tuple[httpx.Client, Path, Any], body: object) -> None:
    client, _, engine = served
    client.post("/documents", json={"documents": _docs(2)}).raise_for_status()
    r = client.request("DELETE", "/documents", json=body)
    assert r.status_code == 422, r.text
    assert engine.count()["keyword"] == 2


def test_writes_without_an_index_path_work_in_memory() -> None:
    from rrf_retriever.embeddings import HashingEmbedding
    from rrf_retriever.engine import HybridEngine
    from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    from rrf_retriever.stores.qdrant import QdrantDenseStore

    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=16)), "keyword": FTS5KeywordStore()})
    with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as c:
        assert c.post("/documents", json={"documents": _docs(2)}).json() == {"ids": ["n0", "n1"]}
        assert c.get("/health").json()["documents"] == {"dense": 2, "keyword": 2}
    engine.close()


def test_searches_and_writes_at_the_same_time(served: tuple[httpx.Client, Path, Any]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    client, root, engine = served
    base = str(client.base_url)

    def writer(w: int) -> list[int]:
        with httpx.Client(base_url=base, timeout=60) as c:
            return [c.post("/documents", json={"documents": _docs(5, session=w, start=100 * w + 5 * j)}).status_code
                    for j in range(6)]

    def searcher(_: int) -> list[int]:
        with httpx.Client(base_url=base, timeout=60) as c:
            return [c.post("/search", json={"q": "api token incident", "filter": {"session_id": [1, 2]}}).status_code
                    for _ in range(10)]

    with ThreadPoolExecutor(5) as pool:
        writes = [pool.submit(writer, w) for w in (1, 2)]
        searches = [pool.submit(searcher, i) for i in range(3)]
        codes = [c for f in writes + searches for c in f.result()]
    assert set(codes) == {200}
    assert engine.count() == {"dense": 60, "keyword": 60}
    assert read_manifest(root)["doc_count"] == 60
