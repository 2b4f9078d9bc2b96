"""Dense stores of document windows (``max_windows``): one point per document holding its windows, scored by the
best one, on both Qdrant engines (qdrant-client local mode and qdrant-edge).

Plumbing only: :class:`Truncating` is a hashing model that, like MiniLM, reads the first few words of a text and
cuts the rest into windows of its own (``embed_windows``), so where a text's words lie decides what is found.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from rrf_retriever import EnsembleRRFRetriever, HybridEngine
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.embeddings.windows import window_spans
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore, QdrantEdgeKeywordStore

WORDS = 6  # the model's window, in words
FILLER = " ".join(f"filler{i}" for i in range(40))  # 40 words: 8 windows of 6 sharing 1
QUERY = "zebra quokka narwhal okapi axolotl pangolin"  # one window's worth of words
LONG = f"{FILLER} {QUERY}"  # the fact lies past the first window: exactly the last window


class Truncating(HashingEmbedding):
    """Hashing vectors of a text's first :data:`WORDS` words; its windows of :data:`WORDS` words sharing
    ``overlap`` (the first one is what ``embed_documents`` reads)."""

    def __init__(self) -> None:
        super().__init__(dim=1024)  # wide: filler words hardly ever share a bucket with the query's
        self.window_calls = 0
        self.plain = HashingEmbedding(dim=1024)  # the vector of a span of words

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return [self.plain.embed_query(" ".join(t.split()[:WORDS])) for t in texts]

    def embed_windows(self, texts: Sequence[str], *, max_windows: int, overlap: int, skip_first: bool) -> list[Any]:
        self.window_calls += 1
        out = []
        for text in texts:
            words = text.split()
            spans = window_spans(len(words), WORDS, overlap, max_windows)[1 if skip_first else 0 :]
            out.append([self.plain.embed_query(" ".join(words[s:e])) for s, e in spans])
        return out


Factory = Callable[..., Any]


@pytest.fixture(params=["qdrant", "edge"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    opened: list[Any] = []

    def factory(name: str = "dense", embedding: Any = None, **kwargs: Any) -> Any:
        emb = embedding or Truncating()
        if embedding is None and kwargs.get("max_windows", 1) > 1:
            kwargs.setdefault("window_overlap", 1)
        if request.param == "qdrant":
            store = QdrantDenseStore(emb, path=str(tmp_path / name), **kwargs)
        else:
            store = QdrantEdgeDenseStore(emb, tmp_path / name, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def _fill(store: Any) -> None:
    store.add(["long", "near", "other"], [LONG, "zebra quokka filler1 filler2", "unrelated words here"],
              [{"k": 1}, {"k": 1}, {"k": 2}])


def _search(store: Any, limit: int = 3, **scope: Any) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 4)) for h in store.search(store.embedding.embed_query(QUERY), limit, **scope)]


def test_a_fact_past_the_first_window_is_found_with_windows_and_not_without(make_store: Factory) -> None:
    single, windows = make_store("single"), make_store("windows", max_windows=16)
    _fill(single)
    _fill(windows)
    assert single.max_windows == 1 and windows.max_windows == 16
    assert _search(windows)[0] == ("long", 1.0)  # the last window holds exactly the query's words
    assert _search(single)[0][0] == "near"
    assert dict(_search(single))["long"] < 0.5


def test_max_windows_caps_the_windows_embedded(make_store: Factory) -> None:
    store = make_store(max_windows=3)  # the fact is in window 8
    _fill(store)
    assert _search(store)[0][0] == "near"


def test_top_k_counts_documents_not_windows(make_store: Factory) -> None:
    store = make_store(max_windows=16)
    repeated = " ".join([QUERY] * 20)  # every window of it matches
    store.add(["rep", "long", "x"], [repeated, LONG, "nothing"])
    hits = store.search(store.embedding.embed_query(QUERY), 2)
    assert [h.id for h in hits] == ["long", "rep"]  # both 1.0: ties by id; no id twice
    assert store.count() == 3


def test_filters_and_exclude_ids_apply_to_the_document_of_every_window(make_store: Factory) -> None:
    store = make_store(max_windows=16)
    _fill(store)
    assert "long" not in dict(_search(store, filter={"k": 2}))
    assert _search(store, filter={"k": 1})[0][0] == "long"
    assert "long" not in dict(_search(store, exclude_ids=["long"]))


def test_a_deleted_long_document_returns_no_window(make_store: Factory) -> None:
    store = make_store(max_windows=16)
    _fill(store)
    store.delete(["long"])
    assert "long" not in dict(_search(store))
    assert store.count() == 2


def test_a_document_added_again_replaces_all_its_windows(make_store: Factory) -> None:
    store = make_store(max_windows=16)
    _fill(store)
    store.add(["long"], [FILLER])  # the same id, without the fact
    assert dict(_search(store))["long"] < 0.5
    store.add(["long"], [LONG])
    assert _search(store)[0] == ("long", 1.0)


def test_get_returns_the_first_window_and_restoring_it_recomputes_the_rest(make_store: Factory) -> None:
    store = make_store(max_windows=16)
    _fill(store)
    (record,) = store.get(["long"], with_vectors=True)
    assert record.vector == pytest.approx(store.embedding.embed_documents([LONG])[0])
    assert store.get_vectors(["long"])["long"] == record.vector
    store.delete(["long"])
    store.add([record.id], [record.text], [dict(record.metadata)], vectors=[record.vector])  # the engine's restore
    assert _search(store)[0] == ("long", 1.0)
    assert record.metadata == {"k": 1}


def test_the_window_settings_persist_and_another_value_is_refused(make_store: Factory) -> None:
    store = make_store("w", max_windows=4, window_overlap=2)
    _fill(store)
    store.close()
    again = make_store("w")
    assert (again.max_windows, again.window_overlap) == (4, 2)
    assert _search(again)[0][0] == "near"  # 4 windows do not reach the fact
    again.close()
    for kwargs in ({"max_windows": 8, "window_overlap": 2}, {"max_windows": 1}, {"max_windows": 4, "window_overlap": 3}):
        with pytest.raises(InvalidArgumentError, match="windows"):
            make_store("w", **kwargs)
    single = make_store("s")
    _fill(single)
    single.close()
    with pytest.raises(InvalidArgumentError, match="one vector a document"):
        make_store("s", max_windows=4)
    assert make_store("s", max_windows=1).max_windows == 1


@pytest.mark.parametrize("kwargs", [{"max_windows": 0}, {"max_windows": True}, {"window_overlap": -1},
                                    {"max_windows": 2, "window_overlap": 1.5}])
def test_bad_window_settings_are_refused_at_the_door(make_store: Factory, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        make_store(**kwargs)


def test_a_model_without_windows_of_its_own_is_cut_into_words(make_store: Factory) -> None:
    store = make_store(embedding=HashingEmbedding(dim=64), max_windows=4)
    store.add(["long", "short"], [" ".join(f"w{i}" for i in range(500)), "w1 w2"])
    assert store.count() == 2 and {h.id for h in store.search(store.embedding.embed_query("w450"), 2)} == {
        "long", "short"}


def test_async_twins_write_and_read_windows(make_store: Factory) -> None:
    store = make_store(max_windows=16)

    async def run() -> list[str]:
        await store.aadd(["long", "near"], [LONG, "zebra quokka filler1 filler2"])
        return [h.id for h in await store.asearch(store.embedding.embed_query(QUERY), 2)]

    assert asyncio.run(run()) == ["long", "near"]


def test_the_engine_pages_deletes_and_restores_over_a_store_of_windows(tmp_path: Path) -> None:
    emb = Truncating()
    dense = QdrantEdgeDenseStore(emb, tmp_path / "dense", max_windows=16, window_overlap=1)
    engine = HybridEngine({"dense": dense, "keyword": QdrantEdgeKeywordStore(tmp_path / "kw")})
    ids = [f"d{i:02d}" for i in range(30)]
    texts = [f"d{i} {FILLER} {QUERY}" for i in range(30)]
    engine.add(ids, texts)
    pages = [engine.search(QUERY, top_k=10, offset=10 * p).ids for p in range(3)]
    seen = [i for page in pages for i in page]
    assert sorted(seen) == ids  # disjoint pages, every document once
    dense_ids = [h.id for h in dense.search(emb.embed_query(QUERY), 30)]
    assert dense_ids == ids  # all score 1.0 on their last window: ties by id
    engine.delete(["d00"])
    assert "d00" not in engine.search(QUERY, top_k=30).ids
    engine.close()


def test_the_retriever_takes_a_store_of_windows(tmp_path: Path) -> None:
    emb = Truncating()
    dense = QdrantEdgeDenseStore(emb, max_windows=16, window_overlap=1)
    with EnsembleRRFRetriever.from_texts([LONG, "zebra quokka filler1"], emb, ids=["long", "near"], dense=dense,
                                         weights={"dense": 1.0, "keyword": 0.0}) as retriever:
        assert [d.id for d in retriever.invoke(QUERY, top_k=2)] == ["long", "near"]
    assert emb.window_calls >= 1
