"""The service as an attacker meets it: bearer auth, allowed hosts (DNS rebinding), a body limit that never buffers
a huge request, 422s that never echo a huge input, and every error as our JSON (never a traceback).

Real HTTP: uvicorn on 127.0.0.1 in a thread, httpx or a raw socket as the client.
"""

from __future__ import annotations

import json
import socket
import time
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

KEY = "s3cret-κey"  # non-ASCII on purpose
DOCS = [(f"d{i}", f"backup restore snapshot note {i}", {"session_id": i % 3}) for i in range(12)]


def _engine() -> HybridEngine:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    engine.add([d[0] for d in DOCS], [d[1] for d in DOCS], [d[2] for d in DOCS])
    return engine


@pytest.fixture(scope="module")
def engine() -> Iterator[HybridEngine]:
    engine = _engine()
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def plain_url(engine: HybridEngine) -> Iterator[str]:
    with running_server(create_app(engine, max_body=4096)) as url:
        yield url


@pytest.fixture(scope="module")
def keyed_url(engine: HybridEngine) -> Iterator[str]:
    with running_server(create_app(engine, api_key=KEY)) as url:
        yield url


def _auth(key: str = KEY) -> dict[str, bytes]:
    return {"Authorization": f"Bearer {key}".encode()}  # UTF-8 on the wire (the key is not ASCII)


# -- bearer auth ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/settings", None),
        ("PATCH", "/settings", {"topK": 3}),
        ("GET", "/search?q=backup", None),
        ("POST", "/search", {"q": "backup"}),
        ("POST", "/documents", {"documents": [{"id": "x", "text": "intruder"}]}),
        ("DELETE", "/documents", {"ids": ["d1"]}),
        ("GET", "/openapi.json", None),
        ("GET", "/docs/", None),  # only the /docs page itself is open (test_service_docs.py)
        ("GET", "/nowhere", None),
    ],
)
@pytest.mark.parametrize("headers", [{}, _auth("wrong"), _auth(KEY + "x"), {"Authorization": KEY.encode()},
                                     {"Authorization": f"Basic {KEY}".encode()}, {"Authorization": b"Bearer"}])
def test_every_route_but_health_and_the_docs_page_needs_the_bearer_key(
    keyed_url: str, engine: HybridEngine, method: str, path: str, body: Any, headers: dict[str, bytes]
) -> None:
    before = (engine.count(), engine.settings)
    with httpx.Client(base_url=keyed_url, timeout=30) as c:
        r = c.request(method, path, json=body, headers=headers)
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"].lower().startswith("bearer")
    assert "detail" in r.json()
    assert KEY not in r.text
    assert (engine.count(), engine.settings) == before


def test_the_right_key_opens_every_route_and_health_needs_none(keyed_url: str) -> None:
    with httpx.Client(base_url=keyed_url, timeout=30) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/settings", headers=_auth()).status_code == 200
        assert c.get("/search", params={"q": "backup"}, headers=_auth()).json()["hits"]
        assert c.get("/search", params={"q": "backup"}, headers={"Authorization": f"bearer {KEY}".encode()}).status_code == 200
        assert c.get("/openapi.json", headers=_auth()).status_code == 200


def test_an_empty_api_key_is_refused_at_build_time(engine: HybridEngine) -> None:
    with pytest.raises(ValueError, match="api_key"):
        create_app(engine, api_key="")


# -- allowed hosts --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "0.0.0.0",
                                  "localhost.", "[::2]:80", ""])
def test_a_foreign_host_cannot_patch_or_read(plain_url: str, engine: HybridEngine, host: str) -> None:
    before = engine.settings
    with httpx.Client(base_url=plain_url, timeout=30) as c:
        r = c.patch("/settings", json={"topK": 3}, headers={"Host": host})
        assert r.status_code == 400, r.text
        assert "host" in r.json()["detail"].lower()
        assert c.get("/search", params={"q": "backup"}, headers={"Host": host}).status_code == 400
    assert engine.settings == before


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:1234", "127.0.0.1", "[::1]", "[::1]:8000"])
def test_local_hosts_are_allowed_by_default(plain_url: str, host: str) -> None:
    with httpx.Client(base_url=plain_url, timeout=30) as c:
        assert c.get("/settings", headers={"Host": host}).status_code == 200


def test_allowed_hosts_can_be_widened(engine: HybridEngine) -> None:
    app = create_app(engine, allowed_hosts=["localhost", "127.0.0.1", "search.internal"])
    with running_server(app) as url, httpx.Client(base_url=url, timeout=30) as c:
        assert c.get("/settings", headers={"Host": "search.internal:8000"}).status_code == 200
        assert c.get("/settings", headers={"Host": "evil.example"}).status_code == 400
    with running_server(create_app(engine, allowed_hosts=["*"])) as url, httpx.Client(base_url=url) as c:
        assert c.get("/settings", headers={"Host": "anything.example"}).status_code == 200


# -- body limit -----------------------------------------------------------------------------------------------


def _raw_request(url: str, head: str, body: bytes = b"", read_timeout: float = 10) -> tuple[int, bytes, float]:
    """Send ``head`` (+ ``body``) on a raw socket; return the status, the response and the seconds it took."""
    host, port = url.removeprefix("http://").split(":")
    start = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=read_timeout) as s:
        s.sendall(head.encode("latin-1") + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        # the rest of the response (small JSON)
        s.settimeout(2)
        try:
            while chunk := s.recv(65536):
                data += chunk
        except (TimeoutError, ConnectionError, OSError):
            pass
    status = int(data.split(b" ", 2)[1]) if data else 0
    return status, data, time.monotonic() - start


def test_a_huge_declared_body_is_413_before_it_is_sent(plain_url: str, engine: HybridEngine) -> None:
    before = engine.settings
    head = (f"PATCH /settings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {200 * 1024 * 1024}\r\n\r\n")
    status, data, seconds = _raw_request(plain_url, head, b'{"topK": ')
    assert status == 413, data
    assert seconds < 5  # answered at once: the server did not wait for (or buffer) 200 MB
    assert b"4096" in data  # the message says the limit
    assert engine.settings == before


def test_a_streamed_body_without_length_is_cut_at_the_limit(plain_url: str) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"documents": [{"id": "big", "text": "'
        for _ in range(16):
            yield b"x" * 1024
        yield b'"}]}'

    with httpx.Client(base_url=plain_url, timeout=30) as c:
        r = c.post("/documents", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413, r.text
        assert c.get("/health").json()["documents"]["keyword"] == len(DOCS)


def test_a_bad_content_length_is_400(plain_url: str) -> None:
    head = "PATCH /settings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n"
    status, data, _ = _raw_request(plain_url, head)
    assert status == 400, data


def test_a_body_at_the_limit_is_fine(plain_url: str) -> None:
    raw = json.dumps({"topK": 10}).encode()
    raw = raw[:-1] + b" " * (4096 - len(raw)) + b"}"
    assert len(raw) == 4096
    with httpx.Client(base_url=plain_url, timeout=30) as c:
        r = c.patch("/settings", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text


# -- 422s never echo a huge input -----------------------------------------------------------------------------

BIG = "A" * 3000


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("PATCH", "/settings", {"json": {"semanticWeight": BIG}}),
        ("PATCH", "/settings", {"json": {BIG: 1}}),
        ("POST", "/search", {"json": {"q": "x", "filter": {BIG: 1}}}),
        ("POST", "/search", {"json": {"q": "x", "filter": {"session_id": {BIG: 1}}}}),
        ("POST", "/search", {"json": {"q": "x", "top_k": BIG}}),
        ("POST", "/search", {"json": {"q": "x", BIG: 1}}),
        ("POST", "/documents", {"json": {"documents": [{"id": "x", "text": 5, "metadata": {"k": BIG}}]}}),
        ("GET", "/search", {"params": {"q": "x", "top_k": BIG}}),
        ("GET", "/search", {"params": {"q": "x", BIG: "1"}}),
        ("GET", "/search", {"params": {"q": "x" * 10_001}}),
    ],
)
def test_a_422_never_echoes_a_huge_input(plain_url: str, method: str, path: str, kwargs: dict[str, Any]) -> None:
    with httpx.Client(base_url=plain_url, timeout=30) as c:
        r = c.request(method, path, **kwargs)
    assert r.status_code == 422, r.text[:500]
    assert "A" * 200 not in r.text and "x" * 200 not in r.text
    assert len(r.content) < 2000
    assert r.json()["detail"]


# -- every error is our JSON ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("GET", "/nowhere", {}, 404),
        ("PUT", "/settings", {"json": {}}, 405),
        ("POST", "/search", {"content": b"{", "headers": {"content-type": "application/json"}}, 422),
        ("POST", "/search", {"content": b"\xff\xfe", "headers": {"content-type": "application/json"}}, 422),
        ("POST", "/search", {"content": b"q=x", "headers": {"content-type": "text/plain"}}, 422),
        ("POST", "/documents", {"content": b'{"documents": [{"id": "a", "text": "\\ud800"}]}',
                                "headers": {"content-type": "application/json"}}, 422),
        # nested past the JSON parser's recursion limit: FastAPI cannot parse it (400), still our JSON
        ("PATCH", "/settings", {"content": b"[" * 3000, "headers": {"content-type": "application/json"}}, 400),
        ("POST", "/search", {"json": {"q": "x", "filter": {"a": [[[[[[[[[[1]]]]]]]]]]}}}, 422),
    ],
)
def test_errors_are_json_never_a_traceback(
    plain_url: str, method: str, path: str, kwargs: dict[str, Any], status: int
) -> None:
    with httpx.Client(base_url=plain_url, timeout=30) as c:
        r = c.request(method, path, **kwargs)
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("application/json")
    assert "Traceback" not in r.text and "File \"" not in r.text
    assert r.json()["detail"]


class _Exploding(FTS5KeywordStore):
    def search_request(self, *args: Any, **kwargs: Any) -> Any:
        msg = "internal detail /secret/path"
        raise RuntimeError(msg)

    def count(self) -> int:
        msg = "internal detail /secret/path"
        raise RuntimeError(msg)


def test_an_unexpected_failure_is_a_generic_json_500() -> None:
    engine = HybridEngine({"keyword": _Exploding()}, on_error="raise")
    with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as c:
        for r in (c.get("/search", params={"q": "backup"}), c.get("/health")):
            assert r.status_code in (500, 503), r.text
            assert r.headers["content-type"].startswith("application/json")
            assert "secret" not in r.text and "Traceback" not in r.text
    engine.close()
