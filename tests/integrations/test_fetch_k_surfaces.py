"""``fetch_k`` is a per-call option in every surface: the depth each leg fetches for that call (and the candidates
MMR re-orders, as LangChain means ``fetch_k``), bounded by ``MAX_TOP_K`` and never below ``top_k``, checked once
in ``SearchOptions``. Before, it was a setting only: ``invoke(q, fetch_k=50)`` and ``search_kwargs`` refused it,
``as_retriever(search_type="mmr", search_kwargs={"k": 5, "fetch_k": 50})`` (LangChain's own docstring example)
was refused above 40, LlamaIndex's ``vector_store_kwargs`` dropped it, the CLI and the service had no field.

The corpus is a chain of 60 vectors drifting away from the query one step at a time: dense rank ``i + 1`` is
``item i``. So with fetch_k=50 the ranks 41-50 are reachable (a page at offset 40), and MMR at lambda 0 picks the
top document then the farthest candidate of its pool: ``item 49`` with fetch_k=50, ``item 39`` with the default 40.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.embeddings import Embeddings
from typer.testing import CliRunner

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.apps.cli import app
from rrf_retriever.apps.service import create_app
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.langchain import LangChainRRFRetriever, RRFVectorStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.integrations.server_helpers import running_server

N = 60
TEXTS = [f"item {i}" for i in range(N)]
VECTORS = {t: [1.0, 0.03 * i, 0.0] for i, t in enumerate(TEXTS)}
QUERY = "zzz"  # no keyword matches it: the fused order is the dense one
QUERY_VECTOR = [1.0, 0.0, 0.0]


class ChainEmbeddings(Embeddings):
    """A LangChain embedding over a fixed table (the chain; the query ``zzz`` is the chain's origin)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [VECTORS.get(t, QUERY_VECTOR) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return VECTORS.get(text, QUERY_VECTOR)


def _ids(docs: list[Any]) -> list[str]:
    return [d.page_content for d in docs]


def _legs(trace: Any) -> dict[str, int]:
    return {leg.name: leg.hits for leg in trace.legs if leg.called}


@pytest.fixture(scope="module")
def store() -> Iterator[RRFVectorStore]:
    with RRFVectorStore.from_texts(TEXTS, ChainEmbeddings(), ids=TEXTS) as s:
        yield s


def test_the_options_take_fetch_k_and_refuse_it_out_of_bounds() -> None:
    assert SearchOptions(fetch_k=50).fetch_k == 50 and SearchOptions().fetch_k is None
    assert SearchOptions.from_kwargs(k=5, fetch_k=5).fetch_k == 5
    for bad, error in ((0, InvalidArgumentError), (10_001, InvalidArgumentError), ("50", InvalidTypeError),
                       (True, InvalidTypeError), (2.0, InvalidTypeError)):
        with pytest.raises(error, match="fetch_k"):
            SearchOptions(fetch_k=bad)
    with pytest.raises(InvalidArgumentError, match=r"fetch_k \(3\) is below top_k \(5\)"):
        SearchOptions.from_kwargs(k=5, fetch_k=3)
    with pytest.raises(InvalidArgumentError, match="fetch_k"):
        SearchOptions(fetch_k=10).merged(k=20)  # checked again when merged
    assert "rank_window_size" in SearchOptions.doc("fetch_k")


def test_the_retriever_fetches_fetch_k_per_leg_for_the_call(store: RRFVectorStore) -> None:
    retriever = store.retriever
    default = retriever.search(QUERY, k=10, offset=40)
    assert default.trace.fetch_k == 40 and _legs(default.trace)["dense"] == 40 and default.hits == []
    deeper = retriever.search(QUERY, k=10, offset=40, fetch_k=50)
    assert deeper.trace.fetch_k == 50 and _legs(deeper.trace)["dense"] == 50
    assert [h.id for h in deeper.hits] == TEXTS[40:50]  # dense ranks 41-50, unreachable by default
    assert _ids(retriever.invoke(QUERY, k=10, offset=40, fetch_k=50)) == TEXTS[40:50]
    assert _ids(retriever.scoped(fetch_k=50, k=10, offset=40).invoke(QUERY)) == TEXTS[40:50]
    assert retriever.search(QUERY, k=10, offset=40).hits == []  # per call: the settings did not change
    assert retriever.settings.fetch_k is None
    small = retriever.search(QUERY, k=3, fetch_k=5)
    assert _legs(small.trace)["dense"] == 5 and small.trace.fetch_k == 5


async def test_the_langchain_vector_store_takes_fetch_k_in_every_search(store: RRFVectorStore) -> None:
    assert _ids(store.similarity_search(QUERY, k=10, offset=40, fetch_k=50)) == TEXTS[40:50]
    assert store.similarity_search(QUERY, k=10, offset=40) == []
    assert _ids(await store.asimilarity_search(QUERY, k=10, offset=40, fetch_k=50)) == TEXTS[40:50]
    similar = store.as_retriever(search_kwargs={"k": 10, "offset": 40, "fetch_k": 50})
    assert _ids(similar.invoke(QUERY)) == TEXTS[40:50]


async def test_mmr_fetch_k_is_the_candidate_pool(store: RRFVectorStore) -> None:
    assert _ids(store.max_marginal_relevance_search(QUERY, k=2, lambda_mult=0.0)) == ["item 0", "item 39"]
    assert _ids(store.max_marginal_relevance_search(QUERY, k=2, fetch_k=50, lambda_mult=0.0)) == ["item 0",
                                                                                                 "item 49"]
    assert _ids(store.max_marginal_relevance_search(QUERY, k=2, fetch_k=20, lambda_mult=0.0)) == ["item 0",
                                                                                                 "item 19"]
    assert _ids(await store.amax_marginal_relevance_search(QUERY, k=2, fetch_k=50, lambda_mult=0.0)) == [
        "item 0", "item 49"]
    assert _ids(store.max_marginal_relevance_search_by_vector(QUERY_VECTOR, k=2, fetch_k=50, lambda_mult=0.0)) == [
        "item 0", "item 49"]
    # LangChain's docstring example, then the same at lambda 0: the pool is 50 deep
    mmr = store.as_retriever(search_type="mmr", search_kwargs={"k": 5, "fetch_k": 50})
    assert len(mmr.invoke(QUERY)) == 5
    mmr0 = store.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 50, "lambda_mult": 0.0})
    assert _ids(mmr0.invoke(QUERY)) == ["item 0", "item 49"]
    assert _ids(await mmr0.ainvoke(QUERY)) == ["item 0", "item 49"]
    traced = store.retriever.search(QUERY, k=2, fetch_k=50, diversity=0.0)
    assert traced.trace.stage_counts["diversity_pool"] == 50 and _legs(traced.trace)["dense"] == 50
    with pytest.raises(InvalidArgumentError, match="fetch_k"):
        store.max_marginal_relevance_search(QUERY, k=5, fetch_k=10_001)
    with pytest.raises(InvalidArgumentError, match="fetch_k"):
        store.as_retriever(search_type="mmr", search_kwargs={"k": 5, "fetch_k": 2}).invoke(QUERY)


def test_every_retriever_class_takes_it() -> None:
    for cls in (EnsembleRRFRetriever, LangChainRRFRetriever):
        with cls.from_texts(TEXTS, ChainEmbeddings(), ids=TEXTS) as retriever:
            assert [h.id for h in retriever.search(QUERY, k=10, offset=40, fetch_k=50).hits] == TEXTS[40:50]


def test_llamaindex_surfaces_take_fetch_k() -> None:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from rrf_retriever.llama_index import LlamaIndexRRFRetriever
    from rrf_retriever.llama_index import RRFVectorStore as LlamaStore

    class Chain(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return VECTORS.get(query, QUERY_VECTOR)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return VECTORS.get(query, QUERY_VECTOR)

        def _get_text_embedding(self, text: str) -> list[float]:
            return VECTORS.get(text, QUERY_VECTOR)

    vector_store = LlamaStore()
    try:
        vector_store.add([TextNode(id_=t, text=t, embedding=VECTORS[t]) for t in TEXTS])
        mmr = VectorStoreQuery(query_embedding=QUERY_VECTOR, query_str=QUERY, similarity_top_k=2, mode="mmr")
        assert vector_store.query(mmr, mmr_threshold=0.0).ids == ["item 0", "item 39"]
        assert vector_store.query(mmr, mmr_threshold=0.0, fetch_k=50).ids == ["item 0", "item 49"]
        index = VectorStoreIndex.from_vector_store(vector_store, embed_model=Chain())
        retriever = index.as_retriever(vector_store_query_mode="mmr", similarity_top_k=2,
                                       vector_store_kwargs={"mmr_threshold": 0.0, "fetch_k": 50})
        assert [n.node.node_id for n in retriever.retrieve(QUERY)] == ["item 0", "item 49"]
        with pytest.raises(InvalidArgumentError, match="fetch_k"):
            vector_store.query(mmr, fetch_k=0)
    finally:
        vector_store.close()
    with LlamaIndexRRFRetriever.from_texts(TEXTS, ChainEmbeddings(), ids=TEXTS) as ours:
        nodes = ours.scoped(fetch_k=50, k=10, offset=40).retrieve(QUERY)
        assert [n.node.node_id for n in nodes] == TEXTS[40:50]
        assert ours.scoped(k=10, offset=40).retrieve(QUERY) == []


CLI_DOCS = [{"id": f"d{i}", "text": f"backup restore note {i}"} for i in range(N)]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-fetch-k")
    corpus = root / "docs.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in CLI_DOCS) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["index", str(corpus), "--index-dir", str(root / "idx"),
                                      "--embedder", "hashing:32"])
    assert result.exit_code == 0, result.output
    return root / "idx"


def _cli(index_dir: Path, *flags: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["search", "backup restore", "--index-dir", str(index_dir), "--json", *flags])
    return result.exit_code, result.output


def test_cli_search_fetch_k(index_dir: Path) -> None:
    code, out = _cli(index_dir, "-k", "5")
    assert code == 0, out
    trace = json.loads(out)["trace"]
    assert trace["fetch_k"] == 40 and {leg["name"]: leg["hits"] for leg in trace["legs"]} == {"dense": 40,
                                                                                             "keyword": 40}
    code, out = _cli(index_dir, "-k", "5", "--fetch-k", "55")
    assert code == 0, out
    trace = json.loads(out)["trace"]
    assert trace["fetch_k"] == 55 and {leg["name"]: leg["hits"] for leg in trace["legs"]} == {"dense": 55,
                                                                                             "keyword": 55}
    for flags, message in ((["--fetch-k", "0"], "fetch_k"), (["-k", "10", "--fetch-k", "5"], "top_k (10)")):
        code, out = _cli(index_dir, *flags)
        assert code == 2 and message in out and "Traceback" not in out


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(dim=32)), "keyword": FTS5KeywordStore()})
    engine.add([d["id"] for d in CLI_DOCS], [d["text"] for d in CLI_DOCS])
    with running_server(create_app(engine)) as url:
        yield url
    engine.close()


def test_service_post_search_fetch_k(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        plain = client.post("/search", json={"q": "backup restore", "top_k": 5}).json()["trace"]
        assert plain["fetch_k"] == 40
        deeper = client.post("/search", json={"q": "backup restore", "top_k": 5, "fetch_k": 55})
        assert deeper.status_code == 200, deeper.text
        trace = deeper.json()["trace"]
        assert trace["fetch_k"] == 55 and {leg["name"]: leg["hits"] for leg in trace["legs"]} == {"dense": 55,
                                                                                                 "keyword": 55}
        for body in ({"fetch_k": 0}, {"fetch_k": 10_001}, {"top_k": 10, "fetch_k": 5}):
            bad = client.post("/search", json={"q": "backup restore", **body})
            assert bad.status_code == 422 and "fetch_k" in bad.text, bad.text
        assert client.get("/settings").json()["fetchK"] is None  # per call: the settings did not change
