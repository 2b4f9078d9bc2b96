"""``RRFVectorStore.get_by_filter`` / ``aget_by_filter`` (LangChain): the stored documents a metadata filter matches,
sorted by id, the documents ``get_by_ids`` gives: exactly what a Python filter keeps of the inserted set; our filter
language and PGVector's; bounded by ``limit`` and ``LIST_MAX``.

Real stores (qdrant-edge + BM25, qdrant-client + FTS5), real LangChain documents, the hashing embedder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.documents import Document

from rrf_retriever import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidFilterError, InvalidTypeError
from rrf_retriever.frameworks.listing import LIST_MAX
from rrf_retriever.langchain import LangChainRRFRetriever, RRFVectorStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore

DOCS = [Document(id=f"k{i:02d}", page_content=f"note {i}",
                 metadata={"kind": ["log", "doc"][i % 2], "year": 2018 + i % 6, **({"lang": "en"} if i % 3 else {})})
        for i in range(24)]

CASES: dict[str, tuple[Any, Callable[[dict[str, Any]], bool]]] = {
    "shorthand": ({"kind": "log"}, lambda m: m["kind"] == "log"),
    "any-of": ({"year": [2019, 2021]}, lambda m: m["year"] in (2019, 2021)),
    "range-and": ({"year": {"$gte": 2020}, "kind": "doc"}, lambda m: m["year"] >= 2020 and m["kind"] == "doc"),
    "or-exists": ({"$or": [{"lang": {"$exists": False}}, {"year": 2023}]},
                  lambda m: "lang" not in m or m["year"] == 2023),
    "pgvector": ({"and": [{"year": {"lt": 2021}}, {"kind": {"eq": "doc"}}]},
                 lambda m: m["year"] < 2021 and m["kind"] == "doc"),
    "no-match": ({"kind": "mail"}, lambda m: False),
}


@pytest.fixture(scope="module", params=[("qdrant-edge", "bm25"), ("qdrant", "fts5")], ids="-".join)
def store(request: pytest.FixtureRequest) -> Iterator[RRFVectorStore]:
    dense, keyword = request.param
    s = RRFVectorStore(HashingEmbedding(32), dense=dense, keyword=keyword)
    s.add_documents(list(reversed(DOCS)))
    yield s
    s.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_get_by_filter_lists_what_a_python_filter_keeps(store: RRFVectorStore, name: str) -> None:
    flt, keep = CASES[name]
    want = sorted(d.id for d in DOCS if d.id is not None and keep(d.metadata))
    got = store.get_by_filter(flt)
    assert [d.id for d in got] == want
    assert got == store.get_by_ids(want)  # the same documents get_by_ids gives
    assert got == [d for d in sorted(DOCS, key=lambda d: str(d.id)) if d.id in want]  # as inserted
    assert asyncio.run(store.aget_by_filter(flt)) == got


def test_no_filter_lists_every_document_and_limit_takes_the_first_by_id(store: RRFVectorStore) -> None:
    everything = sorted(str(d.id) for d in DOCS)
    assert [d.id for d in store.get_by_filter()] == everything
    assert [d.id for d in store.get_by_filter(None, limit=4)] == everything[:4]
    assert [d.id for d in store.get_by_filter({"kind": "doc"}, limit=2)] == ["k01", "k03"]
    assert store.get_by_filter({"kind": "doc"}, limit=0) == []


@pytest.mark.parametrize("limit", [-1, LIST_MAX + 1, 2.5, "2"])
def test_a_bad_limit_is_our_error(store: RRFVectorStore, limit: Any) -> None:
    with pytest.raises((InvalidArgumentError, InvalidTypeError), match="limit"):
        store.get_by_filter({"kind": "doc"}, limit=limit)


def test_another_stores_dialect_is_refused_by_name(store: RRFVectorStore) -> None:
    with pytest.raises(InvalidFilterError):
        store.get_by_filter({"must": [{"key": "kind", "match": {"value": "doc"}}]})  # Qdrant's REST shape


def test_more_matches_than_the_bound_without_a_limit_are_refused_not_cut() -> None:
    store = RRFVectorStore(retriever=LangChainRRFRetriever(keyword=FTS5KeywordStore()))
    try:
        ids = [f"m{i:05d}" for i in range(LIST_MAX + 1)]
        store.add_texts([f"t {i}" for i in range(LIST_MAX + 1)], [{"g": i % 2} for i in range(LIST_MAX + 1)], ids=ids)
        with pytest.raises(InvalidArgumentError, match=f"more than {LIST_MAX}"):
            store.get_by_filter()
        assert [d.id for d in store.get_by_filter(limit=LIST_MAX)] == ids[:LIST_MAX]
        assert [d.id for d in store.get_by_filter({"g": 1})] == ids[1::2]
    finally:
        store.close()
