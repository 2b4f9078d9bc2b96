"""The service never widens a search by accident: empty or malformed scopes and unknown parameters are a 422.

Also POST /search (the filter language as JSON) and the fetchK >= topK rule. Real HTTP (uvicorn on 127.0.0.1).
"""

from __future__ import annotations

from collections.abc import Iterator

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
    (f"s{session}-d{i}", f"{TOPICS[i % 4]} note {i} for session {session}",
     {"session_id": session, "lang": "en" if i % 2 else "de"})
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


def _sessions(hits: list[dict]) -> set[int]:
    return {h["metadata"]["session_id"] for h in hits}


# -- GET /search: session_ids --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["session_ids", "sessionIds"])
@pytest.mark.parametrize("raw", ["", " ", ",,,", " , ,"])
def test_an_empty_session_list_is_a_422_not_every_session(client: httpx.Client, name: str, raw: str) -> None:
    r = client.get("/search", params={"q": "backup restore", name: raw})
    assert r.status_code == 422, r.text
    assert "empty" in r.json()["detail"] and name in r.json()["detail"]


@pytest.mark.parametrize("raw", ["1,,2", "1,", ",1"])
def test_a_session_list_with_a_blank_item_is_malformed(client: httpx.Client, raw: str) -> None:
    r = client.get("/search", params={"q": "backup restore", "session_ids": raw})
    assert r.status_code == 422, r.text
    assert "session_ids" in r.json()["detail"]


def test_session_ids_alias_scopes_like_the_seed_client(client: httpx.Client) -> None:
    hits = client.get("/search", params={"q": "backup restore", "top_k": 50, "sessionIds": "1,2"}).json()["hits"]
    assert hits and _sessions(hits) <= {1, 2}


def test_session_ids_and_its_alias_together_are_ambiguous(client: httpx.Client) -> None:
    r = client.get("/search", params={"q": "backup", "session_ids": "1", "sessionIds": "2"})
    assert r.status_code == 422, r.text


def test_repeated_session_ids_are_a_union_never_the_last_one(client: httpx.Client) -> None:
    r = client.get("/search", params=[("q", "backup restore"), ("top_k", "50"), ("session_ids", "1"),
                                      ("session_ids", "3")])
    assert r.status_code == 200, r.text
    assert _sessions(r.json()["hits"]) == {1, 3}


def test_repeated_exclude_ids_exclude_every_one(client: httpx.Client) -> None:
    params = [("q", "backup"), ("session_ids", "2"), ("top_k", "50"), ("exclude_ids", "s2-d0"),
              ("exclude_ids", "s2-d4")]
    ids = {h["id"] for h in client.get("/search", params=params).json()["hits"]}
    assert ids and not ids & {"s2-d0", "s2-d4"}


# -- unknown parameters ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/search", {"q": "backup", "session_id": "1"}),
        ("/search", {"q": "backup", "filter": "session_id=1"}),
        ("/search", {"q": "backup", "topk": "3"}),
        ("/settings", {"verbose": "1"}),
        ("/health", {"x": "1"}),
    ],
)
def test_unknown_query_parameters_are_422(client: httpx.Client, path: str, params: dict[str, str]) -> None:
    r = client.get(path, params=params)
    assert r.status_code == 422, r.text
    unknown = next(k for k in params if k != "q")
    assert unknown in r.json()["detail"]


def test_unknown_query_parameter_on_patch_changes_nothing(client: httpx.Client) -> None:
    r = client.patch("/settings", params={"dry_run": "1"}, json={"topK": 3})
    assert r.status_code == 422, r.text
    assert client.get("/settings").json() == DEFAULTS


# -- POST /search ---------------------------------------------------------------------------------------------


def test_post_search_takes_the_filter_as_json(client: httpx.Client) -> None:
    body = {"q": "backup restore", "top_k": 50, "filter": {"session_id": [2, 4], "lang": "en"}}
    r = client.post("/search", json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["query"] == "backup restore" and data["hits"]
    assert _sessions(data["hits"]) <= {2, 4}
    assert {h["metadata"]["lang"] for h in data["hits"]} == {"en"}
    assert set(data["hits"][0]) >= {"id", "text", "metadata", "score", "normalized_score", "relevance", "ranks", "scores"}


def test_post_search_empty_any_of_list_matches_nothing(client: httpx.Client) -> None:
    r = client.post("/search", json={"query": "backup restore", "filter": {"session_id": []}})
    assert r.status_code == 200, r.text
    assert r.json()["hits"] == []


def test_post_search_typed_equality(client: httpx.Client) -> None:
    r = client.post("/search", json={"q": "backup restore", "filter": {"session_id": "2"}})
    assert r.status_code == 200, r.text
    assert r.json()["hits"] == []  # "2" is not 2


def test_post_search_exclusions_top_k_and_weights(client: httpx.Client) -> None:
    body = {"q": "backup", "top_k": 3, "filter": {"session_id": 2}, "exclude_ids": ["s2-d0"],
            "weights": {"keyword": 0}}
    data = client.post("/search", json=body).json()
    assert len(data["hits"]) == 3 and "s2-d0" not in {h["id"] for h in data["hits"]}
    assert data["trace"]["weights"]["keyword"] == 0
    assert all(set(h["ranks"]) == {"dense"} for h in data["hits"])


def test_post_search_operator_filters_are_scoped_or_refused_never_unscoped(client: httpx.Client) -> None:
    r = client.post("/search", json={"q": "backup", "top_k": 50,
                                      "filter": {"$or": [{"session_id": 1}, {"session_id": 5}]}})
    assert r.status_code in (200, 422), r.text
    if r.status_code == 200:
        assert _sessions(r.json()["hits"]) <= {1, 5}
    else:
        assert r.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"top_k": 3},
        {"q": "x", "query": "y"},
        {"q": "x", "sessionIds": [1]},
        {"q": "x", "filters": {"session_id": 1}},
        {"q": "x", "filter": {"session_id": {"$bogus": 1}}},
        {"q": "x", "filter": {"bad key!": 1}},
        {"q": "x", "filter": [1, 2]},
        {"q": "x", "filter": {"session_id": [[1]]}},
        {"q": "x", "top_k": 0},
        {"q": "x", "top_k": "3"},
        {"q": "x", "exclude_ids": "a,b"},
        {"q": "x", "weights": {"nope": 1.0}},
        {"q": "x", "weights": {"dense": -1}},
        {"q": 5},
        [],
    ],
)
def test_post_search_bad_body_is_422_with_a_message(client: httpx.Client, body: object) -> None:
    r = client.post("/search", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"]


def test_post_search_refuses_query_parameters(client: httpx.Client) -> None:
    r = client.post("/search", params={"session_ids": "1"}, json={"q": "backup"})
    assert r.status_code == 422, r.text


# -- fetchK >= topK -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({}, {"fetchK": 5}),                    # topK 10 stays, fetchK 5 would be ignored
        ({}, {"topK": 20, "fetchK": 10}),
        ({"fetchK": 30}, {"topK": 40}),         # raising topK past a set fetchK
    ],
)
def test_fetch_k_below_top_k_is_422(client: httpx.Client, first: dict, second: dict) -> None:
    client.patch("/settings", json=first).raise_for_status()
    before = client.get("/settings").json()
    r = client.patch("/settings", json=second)
    assert r.status_code == 422, r.text
    assert "fetch_k" in r.json()["detail"] and "top_k" in r.json()["detail"]  # the settings type's message
    assert client.get("/settings").json() == before


def test_fetch_k_equal_to_top_k_or_null_is_fine(client: httpx.Client) -> None:
    assert client.patch("/settings", json={"topK": 20, "fetchK": 20}).status_code == 200
    assert client.patch("/settings", json={"topK": 40, "fetchK": None}).status_code == 200


@pytest.mark.parametrize(
    "params",
    [
        [("q", "backup"), ("q", "password")],
        [("q", "backup"), ("top_k", "1"), ("top_k", "50")],
    ],
)
def test_a_single_valued_parameter_given_twice_is_422_not_the_last_one(
    client: httpx.Client, params: list[tuple[str, str]]
) -> None:
    r = client.get("/search", params=params)
    assert r.status_code == 422, r.text
    assert "more than once" in r.json()["detail"]


def test_post_search_takes_the_result_stages(client: httpx.Client) -> None:
    # The keyword leg alone: this corpus has dozens of identical dense scores, and which tied documents make a leg's
    # cut is the store's choice (the engine orders the ties it gets by id).
    keyword_only = {"dense": 0}
    whole = client.post("/search", json={"query": "certificate", "top_k": 4, "weights": keyword_only}).json()["hits"]
    page = client.post("/search", json={"query": "certificate", "top_k": 2, "offset": 2,
                                        "weights": keyword_only}).json()["hits"]
    assert [h["id"] for h in page] == [h["id"] for h in whole][2:4]
    assert all(0 < h["normalized_score"] <= 1 for h in whole)
    high = client.post("/search", json={"query": "certificate", "score_threshold": 1.0}).json()["hits"]
    assert all(h["normalized_score"] >= 1.0 for h in high)
    bad = client.post("/search", json={"query": "certificate", "score_threshold": 2})
    assert bad.status_code == 422


# -- query_vector of the wrong dimension ----------------------------------------------------------------------


@pytest.mark.parametrize("length", [1, 63, 65])
def test_a_wrong_dimension_query_vector_is_422_not_a_degraded_200(client: httpx.Client, length: int) -> None:
    r = client.post("/search", json={"q": "backup restore", "query_vector": [0.1] * length})
    assert r.status_code == 422, r.text
    assert f"dimension {length}" in r.json()["detail"] and "64" in r.json()["detail"]
    ok = client.post("/search", json={"q": "backup restore", "query_vector": [0.1] * 64})
    assert ok.status_code == 200 and not ok.json()["trace"]["degraded"], ok.text
