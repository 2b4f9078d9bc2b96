"""``/docs`` is one self-contained page (no script, style or font from another host: it renders offline), and with
an API key it stays readable from a browser (it holds no data) while ``/openapi.json`` and every data route still
need the key.

Real HTTP: uvicorn on 127.0.0.1 in a thread; real stores, the hashing embedder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

KEY = "docs-key-1"
#: Any absolute or protocol-relative URL in an attribute or a CSS url(): what a browser would fetch.
EXTERNAL = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:)?//|url\(\s*["']?\s*(?:[a-z]+:)?//""",
                      re.IGNORECASE)


@pytest.fixture(scope="module")
def engine() -> Iterator[HybridEngine]:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    engine.add(["secret-doc"], ["the launch code is swordfish"], [{"session_id": 1}])
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def plain(engine: HybridEngine) -> Iterator[httpx.Client]:
    with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def keyed(engine: HybridEngine) -> Iterator[httpx.Client]:
    with running_server(create_app(engine, api_key=KEY)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c


def test_the_docs_page_loads_nothing_from_another_host(plain: httpx.Client) -> None:
    r = plain.get("/docs")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "https://" not in page and "http://" not in page
    assert not EXTERNAL.search(page), EXTERNAL.search(page)
    assert "<script" not in page.lower()
    assert "default-src 'none'" in r.headers["content-security-policy"]  # a browser fetches nothing else either
    for route in ("/settings", "/search", "/documents", "/health", "/openapi.json"):
        assert route in page, route


def test_the_cdn_pages_are_gone(plain: httpx.Client) -> None:
    assert plain.get("/redoc").status_code == 404
    assert plain.get("/docs/oauth2-redirect").status_code == 404


def test_with_a_key_the_docs_page_opens_in_a_browser_and_the_data_does_not(keyed: httpx.Client) -> None:
    r = keyed.get("/docs")
    assert r.status_code == 200, r.text
    assert "swordfish" not in r.text and "secret-doc" not in r.text  # the page holds no data
    assert "Bearer" in r.text  # and says how to call the routes
    assert keyed.get("/openapi.json").status_code == 401
    assert keyed.get("/settings").status_code == 401
    assert keyed.get("/search", params={"q": "launch code"}).status_code == 401
    assert keyed.get("/openapi.json", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_the_docs_page_still_checks_the_host(keyed: httpx.Client) -> None:
    assert keyed.get("/docs", headers={"Host": "evil.example"}).status_code == 400
