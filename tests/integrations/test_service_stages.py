"""POST /search's result-stage fields over real HTTP (uvicorn + httpx): diversity, rerank / rerank_k (the reranker
is the server's, set at start; a request can only turn it off), dense_paths, expand_limit; bad values are a 422
with our message."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore
from tests.integrations.server_helpers import running_server

DOCS = [(f"d{i:02d}", f"backup restore snapshot note {i // 4} copy {i % 4}",
         {"session_id": i % 3, "links": [f"d{(i + 5) % 24:02d}"]}) for i in range(24)]


def by_length(query: str, texts: list[str]) -> list[float]:
    return [float(len(t)) + (1.0 if "copy 3" in t else 0.0) for t in texts]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    # qdrant-edge: the same scores call after call, so equal-score ties keep their order between two requests
    dense = QdrantEdgeDenseStore(HashingEmbedding(dim=32), path=str(tmp_path_factory.mktemp("edge")))
    engine = HybridEngine({"dense": dense, "keyword": FTS5KeywordStore()}, links_key="links")
    engine.add([d[0] for d in DOCS], [d[1] for d in DOCS], [d[2] for d in DOCS])
    engine.update_settings(reranker=by_length)  # what `serve --reranker module:attr` does
    with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c
    engine.close()


def post(client: httpx.Client, **body: object) -> dict:
    """The answer, with the 1-hop neighbours (this engine expands every search) split off into "neighbours"."""
    response = client.post("/search", json={"q": "backup snapshot", **body})
    assert response.status_code == 200, response.text
    answer = response.json()
    hits = answer["hits"]
    answer["hits"] = [h for h in hits if "rrf_expanded_from" not in h["metadata"]]
    answer["neighbours"] = [h for h in hits if "rrf_expanded_from" in h["metadata"]]
    return answer


def test_the_servers_reranker_runs_and_a_request_can_turn_it_off(client: httpx.Client) -> None:
    reranked = post(client, top_k=3, rerank_k=24)
    assert all("copy 3" in h["text"] and "rrf_rerank_score" in h["metadata"] for h in reranked["hits"])
    assert reranked["trace"]["stage_counts"]["reranked"] == 24
    plain = post(client, top_k=3, rerank=False)
    assert "reranked" not in plain["trace"]["stage_counts"]
    assert all("rrf_rerank_score" not in h["metadata"] for h in plain["hits"])


def test_diversity_paging_pinned_dense_paths_and_expansion(client: httpx.Client) -> None:
    fused = [h["id"] for h in post(client, top_k=24, rerank=False)["hits"]]
    diverse = post(client, top_k=4, diversity=0.2, rerank=False)
    assert diverse["trace"]["stage_counts"]["diversity_vectors"] > 4
    # Pages slice ONE expanded list: the fused results page 1's neighbours pushed out open page 2.
    first = post(client, top_k=4, offset=0, diversity=1.0, rerank=False)
    page = post(client, top_k=4, offset=4, diversity=1.0, rerank=False)
    page_ids = [h["id"] for h in page["hits"]]
    seeds = [h["id"] for h in first["hits"]] + page_ids
    assert len(page_ids) + len(page["neighbours"]) == 4 and seeds == fused[: len(seeds)]
    pinned = post(client, top_k=3, diversity=0.2, pinned_ids=[fused[-1]])
    assert fused[-1] in [h["id"] for h in pinned["hits"]]
    paths = post(client, top_k=24, filter={"session_id": 1}, dense_paths={"dense_all": None}, rerank=False)
    assert paths["trace"]["weights"]["dense_all"] == 1.0
    assert {h["metadata"]["session_id"] for h in paths["hits"] if set(h["ranks"]) != {"dense_all"}} == {1}
    expanded = post(client, top_k=2, expand_limit=1, rerank=False)
    assert len(expanded["hits"]) == 1 and len(expanded["neighbours"]) == 1  # within top_k
    assert expanded["trace"]["stage_counts"]["expanded"] == 1


@pytest.mark.parametrize(("body", "message"), [
    ({"diversity": 1.5}, "diversity"),
    ({"rerank_k": 0}, "rerank_k"),
    ({"expand_limit": -1}, "expand_limit"),
    ({"dense_paths": {"keyword": None}}, "source names"),
    ({"dense_paths": {"p": {"$bogus": 1}}}, "bogus"),
    ({"rerank": "no"}, "rerank"),
    ({"reranker": "os:system"}, "reranker"),  # a request cannot name code: an unknown field
])
def test_bad_stage_fields_are_a_422_with_our_message(client: httpx.Client, body: dict, message: str) -> None:
    response = client.post("/search", json={"q": "backup", **body})
    assert response.status_code == 422 and message in response.text
