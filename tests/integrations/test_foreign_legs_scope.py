"""A foreign retriever leg (a LangChain BM25Retriever) under a filter: it is asked for enough results to fill the
page after the post-filter (within a documented bound), and the trace says what it returned."""

from __future__ import annotations

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
