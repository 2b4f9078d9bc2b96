"""Our retriever inside LangChain's wrappers that compare documents: ``MultiQueryRetriever`` (drops a document equal
to one it already has, ``doc not in documents[:i]``) and ``EnsembleRetriever(id_key=...)`` (fuses by
``metadata[id_key]``). Real langchain_classic objects, a fake LLM giving fixed alternative queries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_classic.retrievers import EnsembleRetriever
from langchain_classic.retrievers.multi_query import MultiQueryRetriever
from langchain_community.retrievers import BM25Retriever
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.langchain import LangChainRRFRetriever

TEXTS = [
    "The indexer crashed with error E42.",
    "The indexer restarts after a crash.",
    "Uploads pause when the disk is full.",
    "Error E4012 means the sync token expired.",
    "Fusion by reciprocal rank keeps both legs.",
    "BM25 finds exact error codes such as E42.",
]
IDS = [f"d{i}" for i in range(len(TEXTS))]
ALTERNATIVES = "indexer error E42\ndisk full uploads\nexact error codes"


@pytest.fixture(params=[EnsembleRRFRetriever, LangChainRRFRetriever])
def ours(request: pytest.FixtureRequest) -> Iterator[LangChainRRFRetriever]:
    r = request.param.from_texts(TEXTS, HashingEmbedding(64), metadatas=[{"n": i} for i in range(len(TEXTS))],
                                 ids=IDS, k=4)
    yield r
    r.close()


def test_the_same_stored_document_is_equal_whatever_the_query(ours: LangChainRRFRetriever) -> None:
    first = {d.id: d for d in ours.invoke("indexer error E42")}
    second = {d.id: d for d in ours.invoke("exact error codes")}
    shared = first.keys() & second.keys()
    assert shared
    for doc_id in shared:
        a, b = first[doc_id], second[doc_id]
        assert a == b  # what MultiQueryRetriever and every `doc in docs` relies on
        assert a.metadata["rrf_score"] != b.metadata["rrf_score"] or a.metadata["rrf_ranks"] != b.metadata["rrf_ranks"]
        assert a.metadata["n"] == b.metadata["n"]  # the user's metadata is there as stored
    plain = Document(id="d0", page_content=TEXTS[0], metadata={"n": 0})
    assert first["d0"] == plain and plain == first["d0"]  # the document as the user wrote it
    assert first["d0"] != Document(id="d0", page_content=TEXTS[0], metadata={"n": 1})
    assert first["d0"] in [plain] and plain in list(first.values())


def test_multi_query_retriever_deduplicates_our_documents(ours: LangChainRRFRetriever) -> None:
    multi = MultiQueryRetriever.from_llm(retriever=ours, llm=FakeListLLM(responses=[ALTERNATIVES]))
    docs = multi.invoke("what broke?")
    ids = [d.id for d in docs]
    union = {d.id for q in ALTERNATIVES.splitlines() for d in ours.invoke(q)}
    assert len(ids) == len(set(ids)), ids
    assert set(ids) == union and len(union) < 3 * 4  # the queries overlap: duplicates were there to drop
    assert all("rrf_ranks" in d.metadata for d in docs)  # the scoring stays readable


async def test_multi_query_retriever_deduplicates_async(ours: LangChainRRFRetriever) -> None:
    multi = MultiQueryRetriever.from_llm(retriever=ours, llm=FakeListLLM(responses=[ALTERNATIVES]),
                                         include_original=True)
    ids = [d.id for d in await multi.ainvoke("indexer crash")]
    assert ids and len(ids) == len(set(ids)), ids


def test_ensemble_retriever_with_id_key_fuses_ours_with_another_member(ours: LangChainRRFRetriever) -> None:
    keyed = type(ours)(engine=ours.engine, id_key="doc_id", k=4)
    bm25 = BM25Retriever.from_texts(TEXTS, metadatas=[{"doc_id": i, "n": n} for n, i in enumerate(IDS)], k=4)
    ensemble = EnsembleRetriever(retrievers=[keyed, bm25], weights=[0.5, 0.5], id_key="doc_id")
    docs = ensemble.invoke("indexer error E42")  # raised KeyError('doc_id'): our id was in Document.id only
    ids = [d.metadata["doc_id"] for d in docs]
    assert len(ids) == len(set(ids)) and set(ids) == {d.id for d in keyed.invoke("indexer error E42")} | {
        d.metadata["doc_id"] for d in bm25.invoke("indexer error E42")}
    assert all(d.metadata["doc_id"] == d.id for d in keyed.invoke("crash"))


def test_id_key_keeps_the_users_own_value_and_survives_scoped(ours: LangChainRRFRetriever) -> None:
    keyed = type(ours)(engine=ours.engine, id_key="n")  # the user's metadata has this key: theirs is kept
    assert {d.metadata["n"] for d in keyed.invoke("indexer")} <= set(range(len(TEXTS)))
    scoped = type(ours)(engine=ours.engine, id_key="doc_id").scoped(k=2)
    assert [d.metadata["doc_id"] for d in scoped.invoke("indexer")] == [d.id for d in scoped.invoke("indexer")]
    assert "doc_id" not in ours.invoke("indexer")[0].metadata  # no id_key: metadata as stored


@pytest.mark.parametrize(("id_key", "error"), [("", InvalidArgumentError), ("rrf_id", InvalidArgumentError),
                                               (3, InvalidTypeError)])
def test_a_bad_id_key_is_refused_at_the_door(ours: LangChainRRFRetriever, id_key: object, error: type) -> None:
    with pytest.raises(error, match="id_key"):
        type(ours)(engine=ours.engine, id_key=id_key)


def test_retrieved_results_can_be_added_again_without_their_scoring(ours: LangChainRRFRetriever) -> None:
    results = ours.invoke("indexer error E42")
    other = EnsembleRRFRetriever.from_texts(["seed"], HashingEmbedding(64), ids=["seed"], k=10)
    try:
        other.add_documents(results)  # refused before: "reserved key rrf_score"
        again = {d.id: d for d in other.invoke("indexer error E42")}
        for doc in results:
            assert again[doc.id].metadata["n"] == doc.metadata["n"]
        stored = other.get_by_ids([d.id for d in results])
        assert all(not any(k.startswith("rrf_") for k in d.metadata) for d in stored)
    finally:
        other.close()


def test_a_user_key_with_the_reserved_prefix_is_still_refused(ours: LangChainRRFRetriever) -> None:
    with pytest.raises(InvalidArgumentError, match="rrf_"):
        ours.add_documents([Document(id="x", page_content="text", metadata={"rrf_mine": 1})])
