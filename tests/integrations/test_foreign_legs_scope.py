"""A foreign retriever leg (a LangChain BM25Retriever) under a filter: it is asked for enough results to fill the
page after the post-filter (within a documented bound), and the trace says what it returned."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_community.retrievers import BM25Retriever

from rrf_retriever import EnsembleRRFRetriever, FTS5KeywordStore

# The word "alpha" is in every text; the filtered documents (session 9) say it least, so BM25 ranks them last.
TEXTS = [f"alpha alpha alpha alpha note {i}" for i in range(12)] + [f"alpha memo {i} other words" for i in range(3)]
METAS = [{"session_id": 1} for _ in range(12)] + [{"session_id": 9} for _ in range(3)]
IDS = [f"a{i}" for i in range(12)] + [f"s{i}" for i in range(3)]


def _bm25() -> BM25Retriever:
    from langchain_core.documents import Document

    docs = [Document(page_content=t, metadata=m, id=i) for t, m, i in zip(TEXTS, METAS, IDS)]
    return BM25Retriever.from_documents(docs, k=4)


def test_a_filtered_foreign_leg_is_asked_for_enough_to_fill_the_page() -> None:
    bm25 = _bm25()
    assert {d.id for d in bm25.invoke("alpha")} <= {f"a{i}" for i in range(12)}  # its own top 4: none in session 9
    r = EnsembleRRFRetriever(keyword=FTS5KeywordStore(), sources={"bm25": bm25}, weights={"keyword": 0.0},
                             top_k=3)
    result = r.search("alpha", filter={"session_id": 9})
    assert sorted(result.ids) == ["s0", "s1", "s2"]
    leg = next(leg for leg in result.trace.legs if leg.name == "bm25")
    assert leg.hits == 3 and leg.note is not None and "returned" in leg.note
    assert bm25.k == 4  # the user's retriever is not changed: a copy is asked


def _llama_bm25(top_k: int = 4) -> Any:
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever as LlamaBM25Retriever

    nodes = [TextNode(id_=i, text=t, metadata=m) for t, m, i in zip(TEXTS, METAS, IDS)]
    return LlamaBM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)


def test_a_filtered_llama_index_leg_is_asked_for_enough_to_fill_the_page() -> None:
    bm25 = _llama_bm25()
    assert {n.node.node_id for n in bm25.retrieve("alpha")} <= {f"a{i}" for i in range(12)}  # none in session 9
    r = EnsembleRRFRetriever(keyword=FTS5KeywordStore(), sources={"bm25": bm25}, weights={"keyword": 0.0},
                             top_k=3)
    result = r.search("alpha", filter={"session_id": 9})
    assert sorted(result.ids) == ["s0", "s1", "s2"]
    leg = next(leg for leg in result.trace.legs if leg.name == "bm25")
    assert leg.hits == 3 and leg.note is not None and "returned 15" in leg.note  # its whole corpus, not more
    assert bm25.similarity_top_k == 4  # the user's retriever is not changed: a copy is asked
    assert sorted(asyncio.run(r.asearch("alpha", filter={"session_id": 9})).ids) == ["s0", "s1", "s2"]


def test_a_vector_index_retriever_leg_is_sized_through_a_copy() -> None:
    from llama_index.core import MockEmbedding, VectorStoreIndex
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_=i, text=t, metadata=m) for t, m, i in zip(TEXTS, METAS, IDS)]
    vector = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=4)).as_retriever(similarity_top_k=2)
    r = EnsembleRRFRetriever(keyword=FTS5KeywordStore(), sources={"vec": vector}, weights={"keyword": 0.0},
                             top_k=3)
    assert sorted(r.search("alpha", filter={"session_id": 9}).ids) == ["s0", "s1", "s2"]
    assert vector.similarity_top_k == 2


def test_a_leg_that_cannot_be_sized_says_so_in_the_trace() -> None:
    from llama_index.core.retrievers import BaseRetriever as LlamaBaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class FirstFour(LlamaBaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_=i, text=t, metadata=m), score=1.0)
                    for t, m, i in list(zip(TEXTS, METAS, IDS))[:4]]

    r = EnsembleRRFRetriever(keyword=FTS5KeywordStore(), sources={"four": FirstFour()}, weights={"keyword": 0.0},
                             top_k=3)
    result = r.search("alpha", filter={"session_id": 9})
    assert result.ids == []
    (leg,) = [leg for leg in result.trace.legs if leg.name == "four"]
    assert leg.note is not None and "returned 4" in leg.note and "cannot be asked" in leg.note
