"""Requests that passed every limit and still cost seconds, or a late check ("Trust, round 4"): each is refused at
the door with our error (a 422 over HTTP) before it costs anything, or is bounded, and nothing stored changes.

* vectors given with documents are checked whole, before the first chunk is written (not per chunk, in the store);
* ``dense_paths`` holds at most ``MAX_DENSE_PATHS`` paths;
* a filter lists at most ``MAX_FILTER_VALUES_TOTAL`` values in all (every store), its paths' filters too;
* a document's links hold at most ``MAX_LINKS`` ids (refused at write), and expansion reads no more of one;
* a query holds at most ``MAX_QUERY_LENGTH`` characters in the library (the service keeps its 10,000).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.settings import MAX_DENSE_PATHS
from rrf_retriever.errors import InvalidArgumentError, InvalidFilterError, InvalidVectorError
from rrf_retriever.scope.parse import MAX_FILTER_VALUES_TOTAL
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeKeywordStore
from rrf_retriever.validate import MAX_LINKS, MAX_QUERY_LENGTH
from tests.integrations.server_helpers import running_server

DIM = 32
IDS = [f"d{i}" for i in range(50)]
TEXTS = [f"note {i} about rockets and orbits" for i in range(50)]


def _engine(tmp_path: Path, stack: str = "fts5", **kwargs: Any) -> HybridEngine:
    dense = QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=tmp_path / "dense")
    keyword = FTS5KeywordStore() if stack == "fts5" else QdrantEdgeKeywordStore(path=tmp_path / "keyword")
    return HybridEngine({"dense": dense, "keyword": keyword}, **kwargs)


@pytest.fixture(params=["fts5", "qdrant-edge"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HybridEngine]:
    made = _engine(tmp_path, request.param, links_key="links")
    made.add(IDS, TEXTS, [{"n": i, "k0": i, "k1": i} for i in range(50)])
    yield made
    made.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    served = _engine(tmp_path_factory.mktemp("served"), "qdrant-edge", links_key="links")
    served.add(IDS, TEXTS, [{"n": i} for i in range(50)])
    with running_server(create_app(served)) as url, httpx.Client(base_url=url, timeout=60) as c:
        yield c
    served.close()


# -- 4. vectors given with documents: checked whole, at the door ------------------------------------------------


def _vectors(n: int, last: list[float]) -> list[list[float]]:
    return [[1.0] + [0.0] * (DIM - 1) for _ in range(n - 1)] + [last]


BAD_LAST = {"dimension": [1.0] * (DIM + 1), "nan": [float("nan")] + [0.0] * (DIM - 1),
            "ten_times": [1.0] * (DIM * 10)}


@pytest.mark.parametrize("bad", sorted(BAD_LAST))
def test_a_bad_last_vector_of_10001_writes_nothing(tmp_path: Path, bad: str) -> None:
    engine = _engine(tmp_path)
    n = 10_001  # one more than a chunk: the 10,000 of the first chunk were written before the store's check
    with pytest.raises(InvalidVectorError, match=r"vectors\[10000\].*nothing was written") as caught:
        engine.add([f"v{i}" for i in range(n)], [f"note {i}" for i in range(n)], vectors=_vectors(n, BAD_LAST[bad]))
    assert isinstance(caught.value, InvalidArgumentError)
    assert engine.count() == {"dense": 0, "keyword": 0}
    engine.close()


def test_given_vectors_must_have_the_index_dimension(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    engine.add(["a"], ["first"], vectors=[[1.0] * DIM])
    with pytest.raises(InvalidVectorError, match=rf"vectors\[0\] has dimension {DIM + 1}, expected {DIM}"):
        engine.add(["b", "c"], ["x", "y"], vectors=[[1.0] * (DIM + 1)] * 2)
    assert engine.count() == {"dense": 1, "keyword": 1}
    engine.close()


def test_llama_index_nodes_with_a_bad_last_embedding_write_nothing() -> None:
    from llama_index.core.schema import TextNode

    from rrf_retriever.llama_index import RRFVectorStore

    store = RRFVectorStore()
    n = 10_001
    vectors = _vectors(n, BAD_LAST["nan"])
    nodes = [TextNode(id_=f"n{i}", text=f"note {i}", embedding=vectors[i]) for i in range(n)]
    with pytest.raises(InvalidArgumentError, match=r"vectors\[10000\] holds NaN"):
        store.add(nodes)
    assert store.get_nodes(["n0", "n9999"]) == []
    store.add(nodes[:2])
    assert [node.node_id for node in store.get_nodes(["n0", "n1"])] == ["n0", "n1"]


# -- 6. dense_paths: a small number of legs --------------------------------------------------------------------


def test_dense_paths_are_bounded(engine: HybridEngine) -> None:
    paths = {f"p{i}": {"n": i} for i in range(MAX_DENSE_PATHS)}
    assert engine.search("rockets", dense_paths=paths).hits
    with pytest.raises(InvalidArgumentError, match=f"5000 paths; at most {MAX_DENSE_PATHS}"):
        engine.search("rockets", dense_paths={f"p{i}": None for i in range(5000)})
    with pytest.raises(InvalidArgumentError, match="dense_paths"):
        engine.update_settings(dense_paths={f"p{i}": None for i in range(MAX_DENSE_PATHS + 1)})


def test_dense_paths_over_http_are_a_422(client: httpx.Client) -> None:
    body = {"q": "rockets", "dense_paths": {f"path{i:05d}": None for i in range(5000)}}  # ~90 KB
    r = client.post("/search", json=body)
    assert r.status_code == 422, r.text
    assert f"at most {MAX_DENSE_PATHS}" in r.json()["detail"]


# -- 7. a filter's values are budgeted in all --------------------------------------------------------------------


def test_eight_lists_of_10000_integers_are_refused_in_every_store(engine: HybridEngine) -> None:
    attack = {f"k{j}": list(range(10_000)) for j in range(8)}
    with pytest.raises(InvalidFilterError, match=f"more than {MAX_FILTER_VALUES_TOTAL} values in all"):
        engine.search("rockets", filter=attack)
    with pytest.raises(InvalidFilterError, match="values in all"):
        engine.delete_where(attack)
    assert engine.count() == {"dense": 50, "keyword": 50}
    one = {"k0": list(range(0, 2 * MAX_FILTER_VALUES_TOTAL, 2))}  # one list of the whole budget still runs
    assert sorted(h.id for h in engine.search("rockets", filter=one, top_k=50).hits) == sorted(
        f"d{i}" for i in range(0, 50, 2))


def test_the_paths_filters_share_one_budget(engine: HybridEngine) -> None:
    half = MAX_FILTER_VALUES_TOTAL // 2 + 1
    paths = {"a": {"k0": list(range(half))}, "b": {"k1": list(range(half))}}
    with pytest.raises(InvalidFilterError, match="values in all"):
        engine.search("rockets", dense_paths=paths)


def test_a_filter_over_the_budget_over_http_is_a_422(client: httpx.Client) -> None:
    attack = {f"k{j}": list(range(6_000)) for j in range(2)}
    r = client.post("/search", json={"q": "rockets", "filter": attack})
    assert r.status_code == 422, r.text
    assert "values in all" in r.json()["detail"]


# -- 8. links: a cap at write, a cap at read --------------------------------------------------------------------


def test_links_past_the_cap_are_refused_at_write(engine: HybridEngine) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"metadatas\[1\]\['links'\] lists {MAX_LINKS + 1}"):
        engine.add(["x0", "x1"], ["a", "b"], [{}, {"links": [f"y{i}" for i in range(MAX_LINKS + 1)]}])
    assert engine.count() == {"dense": 50, "keyword": 50}
    engine.add(["x1"], ["b"], [{"links": [f"y{i}" for i in range(MAX_LINKS)]}])  # the cap itself is taken


def test_expansion_reads_a_documents_first_links_only(engine: HybridEngine) -> None:
    # written to the stores directly, as an index written before the cap holds it: the only stored neighbour is
    # the last of 70,000 ids, past the ids expansion reads
    links = [f"m{i}" for i in range(69_999)] + ["d7"]
    for leg in engine.legs.values():
        leg.add(["seed"], ["seed document zeppelin"], [{"links": links}], None)
    hits = engine.search("zeppelin", top_k=3).hits
    assert hits[0].id == "seed"
    assert not any(h.metadata.get("rrf_expanded_from") for h in hits)
    for leg in engine.legs.values():  # within the first MAX_LINKS ids it is found
        leg.add(["seed"], ["seed document zeppelin"], [{"links": [*links[: MAX_LINKS - 1], "d7"]}], None)
    assert [h.id for h in engine.search("zeppelin", top_k=3).hits if h.metadata.get("rrf_expanded_from")] == ["d7"]


def test_links_past_the_cap_over_http_are_a_422(client: httpx.Client) -> None:
    doc = {"id": "many", "text": "many links", "metadata": {"links": [f"l{i}" for i in range(MAX_LINKS + 1)]}}
    r = client.post("/documents", json={"documents": [doc]})
    assert r.status_code == 422, r.text
    assert f"at most {MAX_LINKS}" in r.json()["detail"]
    assert client.get("/health").json()["documents"] == {"dense": 50, "keyword": 50}


# -- 9. a query's length ----------------------------------------------------------------------------------------


def test_a_query_past_the_cap_is_refused_in_the_engine(engine: HybridEngine) -> None:
    with pytest.raises(InvalidArgumentError, match=f"at most {MAX_QUERY_LENGTH}"):
        engine.search("rockets " * (MAX_QUERY_LENGTH // 8 + 1))
    assert engine.search(("rockets " * MAX_QUERY_LENGTH)[:MAX_QUERY_LENGTH]).hits  # the cap itself is answered


def test_a_query_past_the_cap_is_refused_by_the_retriever_and_both_vector_stores() -> None:
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from rrf_retriever.langchain import LangChainRRFRetriever
    from rrf_retriever.langchain import RRFVectorStore as LangChainStore
    from rrf_retriever.llama_index import RRFVectorStore as LlamaIndexStore

    long = "x" * (MAX_QUERY_LENGTH + 1)
    retriever = LangChainRRFRetriever.from_texts(TEXTS, HashingEmbedding(DIM))
    with pytest.raises(InvalidArgumentError, match="characters long"):
        retriever.invoke(long)
    lc_store = LangChainStore.from_texts(TEXTS, HashingEmbedding(DIM))
    with pytest.raises(InvalidArgumentError, match="characters long"):
        lc_store.similarity_search(long)
    li_store = LlamaIndexStore()
    with pytest.raises(InvalidArgumentError, match="characters long"):
        li_store.query(VectorStoreQuery(query_str=long, query_embedding=[1.0] * DIM, similarity_top_k=2))
    for closing in (retriever, lc_store):
        closing.close()


def test_the_service_keeps_its_own_cap(client: httpx.Client) -> None:
    r = client.post("/search", json={"q": "x" * 10_001})
    assert r.status_code == 422, r.text
