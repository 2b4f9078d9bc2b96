"""Our retriever as a member of LlamaIndex's ``QueryFusionRetriever`` next to LlamaIndex's ``BM25Retriever`` over the
same nodes. The fusion keys nodes by ``node.hash`` (text + metadata), then ``retrieve`` drops repeated node ids: our
node must hash like the user's own node, whatever the query, or a shared hit is never fused (one member's share of
the score, and fewer nodes than asked)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core import Document
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import QUERY_GEN_PROMPT
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.retrievers.bm25 import BM25Retriever

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.llama_index import LlamaIndexRRFRetriever

TEXTS = [
    "The indexer crashed with error E42.",
    "The indexer restarts after a crash.",
    "Uploads pause when the disk is full.",
    "Error E4012 means the sync token expired.",
    "Fusion by reciprocal rank keeps both legs.",
    "BM25 finds exact error codes such as E42.",
    "Dense vectors find paraphrases of a question.",
    "The sync client retries five times.",
]
NODES = [TextNode(id_=f"d{i}", text=t, metadata={"n": i, "team": "infra"}) for i, t in enumerate(TEXTS)]
QUERY = "indexer error E42"
TOP = 5


@pytest.fixture(params=["nodes", "texts", "llama-index-only"])
def ours(request: pytest.FixtureRequest) -> Iterator[LlamaIndexRRFRetriever]:
    if request.param == "nodes":
        r = EnsembleRRFRetriever.from_documents(NODES, HashingEmbedding(64), k=4)
    elif request.param == "texts":  # written as plain texts: the node is built from the stored metadata
        r = EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(64), metadatas=[n.metadata for n in NODES],
                                            ids=[n.node_id for n in NODES], k=4)
    else:
        r = LlamaIndexRRFRetriever.from_documents(NODES, HashingEmbedding(64), k=4)
    yield r
    r.close()


@pytest.fixture
def bm25() -> BM25Retriever:
    return BM25Retriever.from_defaults(nodes=NODES, similarity_top_k=5)


def _expected_rrf(members: list[list[NodeWithScore]], top: int) -> list[tuple[str, float]]:
    """LlamaIndex's reciprocal_rerank arithmetic, by node id: 1 / (60 + 0-based rank) per member, summed."""
    fused: dict[str, float] = {}
    for nodes in members:
        for rank, nws in enumerate(sorted(nodes, key=lambda n: n.score or 0.0, reverse=True)):
            fused[nws.node.node_id] = fused.get(nws.node.node_id, 0.0) + 1.0 / (rank + 60.0)
    return sorted(fused.items(), key=lambda kv: kv[1], reverse=True)[:top]


def test_our_node_hashes_like_the_users_node_whatever_the_query(ours: LlamaIndexRRFRetriever) -> None:
    first = {n.node.node_id: n.node for n in ours.retrieve(QUERY)}
    second = {n.node.node_id: n.node for n in ours.retrieve("exact error codes")}
    originals = {n.node_id: n for n in NODES}
    assert first.keys() & second.keys()
    for node_id in first.keys() & second.keys():
        assert first[node_id].hash == second[node_id].hash == originals[node_id].hash
        assert "rrf_ranks" in first[node_id].metadata  # the scoring stays readable


@pytest.mark.parametrize("use_async", [False, True])
def test_reciprocal_rerank_fuses_a_hit_both_members_return(
    ours: LlamaIndexRRFRetriever, bm25: BM25Retriever, use_async: bool
) -> None:
    fusion = QueryFusionRetriever([ours, bm25], mode="reciprocal_rerank", num_queries=1, llm=MockLLM(),
                                  similarity_top_k=TOP, use_async=use_async)
    got = [(n.node.node_id, n.score) for n in fusion.retrieve(QUERY)]
    members = [ours.retrieve(QUERY), bm25.retrieve(QUERY)]
    shared = {n.node.node_id for n in members[0]} & {n.node.node_id for n in members[1]}
    union = {n.node.node_id for m in members for n in m}
    assert shared and len(union) >= TOP  # the case: some hits shared, enough hits to fill the page
    assert len(got) == TOP  # was fewer: duplicates cut at the top, then dropped by node id
    assert [i for i, _ in got] == [i for i, _ in _expected_rrf(members, TOP)]
    assert [s for _, s in got] == pytest.approx([s for _, s in _expected_rrf(members, TOP)])
    assert got[0] == ("d0", pytest.approx(2 / 60))  # first in both members: 2/60, not 1/60


async def test_reciprocal_rerank_async_retrieve(ours: LlamaIndexRRFRetriever, bm25: BM25Retriever) -> None:
    fusion = QueryFusionRetriever([ours, bm25], mode="reciprocal_rerank", num_queries=1, llm=MockLLM(),
                                  similarity_top_k=TOP)
    got = [(n.node.node_id, n.score) for n in await fusion.aretrieve(QUERY)]
    assert len(got) == TOP and got[0] == ("d0", pytest.approx(2 / 60))


@pytest.mark.parametrize("mode", ["relative_score", "dist_based_score", "simple"])
def test_score_modes_do_not_duplicate_shared_hits(
    ours: LlamaIndexRRFRetriever, bm25: BM25Retriever, mode: str
) -> None:
    fusion = QueryFusionRetriever([ours, bm25], mode=mode, num_queries=1, llm=MockLLM(), similarity_top_k=TOP,
                                  use_async=False)
    ids = [n.node.node_id for n in fusion.retrieve(QUERY)]
    assert len(ids) == len(set(ids)) == TOP, ids  # a shared hit twice in the top: one slot lost


def test_generated_queries_fuse_our_own_nodes(ours: LlamaIndexRRFRetriever) -> None:
    """num_queries=3: MockLLM echoes the prompt, whose first two lines become the extra queries."""
    fusion = QueryFusionRetriever([ours], mode="reciprocal_rerank", num_queries=3, llm=MockLLM(),
                                  similarity_top_k=10, use_async=False)
    prompt = QUERY_GEN_PROMPT.format(num_queries=2, query=QUERY)
    queries = [QUERY, *[line.strip() for line in prompt.split("\n") if line.strip()][:2]]
    union = {n.node.node_id for q in queries for n in ours.retrieve(q)}
    got = fusion.retrieve(QUERY)
    assert len(got) == len(union) and len(union) < 3 * 4  # the queries share hits
    best = max(got, key=lambda n: n.score or 0.0)
    assert best.score == pytest.approx(sum(1.0 / (60 + r) for r in _ranks(ours, queries, best.node.node_id)))


def _ranks(ours: LlamaIndexRRFRetriever, queries: list[str], node_id: str) -> list[int]:
    out = []
    for q in queries:
        ids = [n.node.node_id for n in ours.retrieve(q)]
        if node_id in ids:
            out.append(ids.index(node_id))
    return out


def test_chunks_of_a_document_hash_like_the_splitters_nodes() -> None:
    """The usual pipeline: a SentenceSplitter's chunks (SOURCE / PREV / NEXT relationships, the document's metadata)
    inserted into ours and given to BM25Retriever: fused, not doubled."""
    doc = Document(id_="manual", text=" ".join(TEXTS * 3), metadata={"source": "manual.pdf"})
    chunks = SentenceSplitter(chunk_size=40, chunk_overlap=0).get_nodes_from_documents([doc])
    assert len(chunks) > 3
    with EnsembleRRFRetriever.from_documents(chunks, HashingEmbedding(64), k=3) as hybrid:
        bm25 = BM25Retriever.from_defaults(nodes=chunks, similarity_top_k=3)
        originals = {c.node_id: c.hash for c in chunks}
        assert all(n.node.hash == originals[n.node.node_id] for n in hybrid.retrieve(QUERY))
        fusion = QueryFusionRetriever([hybrid, bm25], mode="reciprocal_rerank", num_queries=1, llm=MockLLM(),
                                      similarity_top_k=10, use_async=False)
        got = fusion.retrieve(QUERY)
        union = {n.node.node_id for r in (hybrid, bm25) for n in r.retrieve(QUERY)}
        assert sorted(n.node.node_id for n in got) == sorted(union)
