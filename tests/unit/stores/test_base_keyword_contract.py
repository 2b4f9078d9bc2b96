"""One contract for every keyword store: FTS5 (memory and file), BM25 with bm25s and with rank_bm25, and BM25 as
Qdrant sparse vectors on qdrant-client local mode (memory and path) and on qdrant-edge.

Each test runs against each store. Store-specific behaviour lives in tests/unit/stores/fts5/,
tests/unit/stores/bm25/ and tests/unit/stores/qdrant/test_keyword.py.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever.errors import FilterError, InvalidArgumentError, InvalidTypeError, RRFRetrieverError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.base import KeywordStore
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore, QdrantKeywordStore
from rrf_retriever.types import Hit
from tests.reliability.hostile import HOSTILE_QUERIES

STORE_KINDS = ["fts5-memory", "fts5-file", "bm25s", "rank_bm25", "qdrant-memory", "qdrant-path", "qdrant-edge"]

# A small corpus with distinct words, so no query term sits in exactly half of the documents (rank_bm25's IDF
# is 0 there, and such a term would match with score 0, which a keyword leg does not return).
CORPUS = {
    "d1": ("How to configure the SQLite database for full text search", {"session_id": 1, "lang": "en"}),
    "d2": ("Qdrant stores dense vectors and payloads", {"session_id": 2, "lang": "en"}),
    "d3": ("Reciprocal rank fusion merges ranked lists", {"session_id": 3, "lang": "en", "flag": True}),
    "d4": ("Configuring database indexes makes search fast", {"session_id": 1, "lang": "de", "flag": 1}),
    "d5": ("Pasta recipes with tomato and basil", {"session_id": 2, "lang": "it", "tags": ["food", "quick"]}),
    "d6": ("BM25 ranks documents by term frequency", {"session_id": 3, "lang": "en", "tags": ["ir"]}),
    "d7": ("Vector search with cosine similarity", {"session_id": 4, "lang": "en", "flag": False}),
    "d8": ("Tomato soup recipe for a cold evening", {"session_id": 4, "lang": "en", "flag": 0}),
}


def make_store(kind: str, tmp_path: Path) -> Any:
    if kind == "fts5-memory":
        return FTS5KeywordStore()
    if kind == "fts5-file":
        return FTS5KeywordStore(tmp_path / "kw.sqlite")
    if kind == "bm25s":
        return BM25KeywordStore()
    if kind == "qdrant-memory":
        return QdrantKeywordStore()
    if kind == "qdrant-path":
        return QdrantKeywordStore(path=tmp_path / "qdrant")
    if kind == "qdrant-edge":
        return QdrantEdgeKeywordStore(tmp_path / "edge")
    return BM25KeywordStore(engine="rank_bm25")


def reopen(kind: str, store: Any, tmp_path: Path) -> Any:
    """The persistence round trip of each store: reopen the file, or save and load the folder."""
    if kind in ("fts5-memory", "qdrant-memory"):
        return store  # nothing to reopen: ":memory:" lives as long as the object
    if kind.startswith(("fts5", "qdrant")):
        store.close()
        return make_store(kind, tmp_path)
    store.save(tmp_path / "bm25")
    return BM25KeywordStore.load(tmp_path / "bm25")


@pytest.fixture(params=STORE_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(kind: str, tmp_path: Path) -> Iterator[Any]:
    s = make_store(kind, tmp_path)
    yield s
    if isinstance(s, (FTS5KeywordStore, QdrantKeywordStore, QdrantEdgeKeywordStore)):
        s.close()


@pytest.fixture
def loaded(store: Any) -> Any:
    ids = list(CORPUS)
    store.add(ids, [CORPUS[i][0] for i in ids], [CORPUS[i][1] for i in ids])
    return store


def ids_of(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


# ---------------------------------------------------------------- protocol, CRUD


def test_store_satisfies_the_keyword_protocol(store: Any) -> None:
    assert isinstance(store, KeywordStore)


def test_count_get_and_upsert(loaded: Any) -> None:
    assert loaded.count() == len(CORPUS)
    loaded.add(["d2", "d9"], ["Lasagne al forno", "New document about kubernetes"], [{"session_id": 9}, None])
    assert loaded.count() == len(CORPUS) + 1
    records = loaded.get(["d9", "missing", "d2"])
    assert [(r.id, r.text, dict(r.metadata)) for r in records] == [
        ("d9", "New document about kubernetes", {}),
        ("d2", "Lasagne al forno", {"session_id": 9}),
    ]
    # The replaced text is gone from the index, the new one is in it.
    assert "d2" not in ids_of(loaded.search("qdrant payloads", 10))
    assert ids_of(loaded.search("lasagne", 10)) == ["d2"]
    assert ids_of(loaded.search("lasagne", 10, filter={"session_id": 2})) == []


def test_delete(loaded: Any) -> None:
    loaded.delete(["d1", "d4", "unknown"])
    assert loaded.count() == len(CORPUS) - 2
    assert loaded.get(["d1", "d4"]) == []
    assert not {"d1", "d4"} & set(ids_of(loaded.search("configure database search", 10)))
    loaded.delete([])
    assert loaded.count() == len(CORPUS) - 2


def test_hits_carry_text_metadata_and_positive_descending_scores(loaded: Any) -> None:
    hits = loaded.search("database search", 10)
    assert hits, "the query shares terms with several documents"
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    by_id = {h.id: h for h in hits}
    assert by_id["d1"].text == CORPUS["d1"][0]
    assert dict(by_id["d1"].metadata) == CORPUS["d1"][1]
    assert set(by_id) <= {"d1", "d4", "d7"}


def test_stemming_agrees_configuring_finds_configure(loaded: Any) -> None:
    assert set(ids_of(loaded.search("configuring", 10))) == {"d1", "d4"}
    assert set(ids_of(loaded.search("configure", 10))) == {"d1", "d4"}
    assert ids_of(loaded.search("recipes", 10)) and set(ids_of(loaded.search("recipe", 10))) == {"d5", "d8"}


def test_only_documents_sharing_a_term_are_returned(loaded: Any) -> None:
    assert set(ids_of(loaded.search("tomato", 10))) == {"d5", "d8"}
    assert loaded.search("zebra unicorn", 10) == []


# ---------------------------------------------------------------- scope


def test_filter_scalar_anyof_several_keys_and_no_match(loaded: Any) -> None:
    q = "database search vector tomato fusion"
    assert set(ids_of(loaded.search(q, 10, filter={"session_id": 1}))) == {"d1", "d4"}
    assert set(ids_of(loaded.search(q, 10, filter={"session_id": [1, 4]}))) == {"d1", "d4", "d7", "d8"}
    assert set(ids_of(loaded.search(q, 10, filter={"session_id": [1, 4], "lang": "en"}))) == {"d1", "d7", "d8"}
    assert loaded.search(q, 10, filter={"session_id": 99}) == []
    assert loaded.search(q, 10, filter={"no_such_key": "x"}) == []
    assert loaded.search(q, 10, filter={"session_id": []}) == []
    assert loaded.search(q, 10, filter={"session_id": "1"}) == [], "the string '1' is not the integer 1"


def test_filter_keeps_bool_and_int_apart(loaded: Any) -> None:
    q = "fusion database vector tomato soup"
    assert ids_of(loaded.search(q, 10, filter={"flag": True})) == ["d3"]
    assert ids_of(loaded.search(q, 10, filter={"flag": 1})) == ["d4"]
    assert ids_of(loaded.search(q, 10, filter={"flag": False})) == ["d7"]
    assert ids_of(loaded.search(q, 10, filter={"flag": 0})) == ["d8"]
    assert set(ids_of(loaded.search(q, 10, filter={"flag": [True, 0]}))) == {"d3", "d8"}
    assert ids_of(loaded.search(q, 10, filter={"flag": 1.0})) == ["d4"], "1.0 is normalised to the integer 1"


def test_filter_on_list_metadata_matches_any_element(loaded: Any) -> None:
    assert ids_of(loaded.search("tomato recipes", 10, filter={"tags": "quick"})) == ["d5"]
    assert ids_of(loaded.search("tomato recipes", 10, filter={"tags": ["nope", "food"]})) == ["d5"]


def test_filter_accepts_an_already_normalized_filter(loaded: Any) -> None:
    raw = {"session_id": [1, 4], "lang": "en"}
    assert ids_of(loaded.search("database search vector", 10, filter=normalize_filter(raw))) == ids_of(
        loaded.search("database search vector", 10, filter=raw)
    )


def test_exclude_ids(loaded: Any) -> None:
    assert set(ids_of(loaded.search("configure", 10, exclude_ids=["d1", "nope"]))) == {"d4"}
    assert loaded.search("configure", 10, exclude_ids={"d1", "d4"}) == []
    assert ids_of(loaded.search("configure", 10, filter={"lang": "en"}, exclude_ids=["d4"])) == ["d1"]


def test_filter_is_applied_before_top_k(loaded: Any) -> None:
    # The best match overall (d1 or d4) is out of scope; the in-scope one must still come back with limit=1.
    hits = loaded.search("configure database", 1, filter={"lang": "de"})
    assert ids_of(hits) == ["d4"]
    hits = loaded.search("configure database", 1, exclude_ids=ids_of(loaded.search("configure database", 1)))
    assert len(hits) == 1


# ---------------------------------------------------------------- edge cases and bad input


def test_limit_zero_empty_store_and_stopword_query(store: Any, kind: str) -> None:
    assert store.search("anything", 10) == []
    assert store.count() == 0
    store.add(["a", "b", "c"], ["the database", "of vectors", "pasta"])
    assert store.search("database", 0) == []
    assert store.search("the of a and", 10) == []
    assert store.search("", 10) == []
    assert store.search("!!! ... ???", 10) == []


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.search("x", -1), InvalidArgumentError),
        (lambda s: s.search("x", 10**9), InvalidArgumentError),
        (lambda s: s.search("x", "3"), InvalidTypeError),
        (lambda s: s.search("x", True), InvalidTypeError),
        (lambda s: s.search(None, 3), InvalidTypeError),
        (lambda s: s.search(b"bytes", 3), InvalidTypeError),
        (lambda s: s.search("x", 3, filter={"bad key": 1}), FilterError),
        (lambda s: s.search("x", 3, filter={"k": 1.5}), FilterError),
        (lambda s: s.search("x", 3, filter={"k": {"nested": 1}}), FilterError),
        (lambda s: s.search("x", 3, filter=["k"]), FilterError),
        (lambda s: s.search("x", 3, exclude_ids="d1"), InvalidTypeError),
        (lambda s: s.search("x", 3, exclude_ids=[1]), InvalidTypeError),
        (lambda s: s.add(["a", "b"], ["one"]), InvalidArgumentError),
        (lambda s: s.add(["a", "a"], ["one", "two"]), InvalidArgumentError),
        (lambda s: s.add(["a"], [None]), InvalidTypeError),
        (lambda s: s.add([1], ["x"]), InvalidTypeError),
        (lambda s: s.add([""], ["x"]), InvalidArgumentError),
        (lambda s: s.add(["a"], ["x"], [{"v": float("nan")}]), InvalidArgumentError),
        (lambda s: s.add(["a"], ["x"], [{"v": object()}]), InvalidArgumentError),
        (lambda s: s.add(["a"], ["lone \ud800"]), InvalidArgumentError),
        (lambda s: s.add(["a"], ["x"], [{"title": "lone \ud800"}]), InvalidArgumentError),
        (lambda s: s.add(["a"], ["x"], [{"k\udfff": "v"}]), InvalidArgumentError),
        (lambda s: s.add("abc", ["x", "y", "z"]), InvalidTypeError),
        (lambda s: s.delete("abc"), InvalidTypeError),
        (lambda s: s.delete([None]), InvalidTypeError),
        (lambda s: s.get("abc"), InvalidTypeError),
    ],
)
def test_bad_input_raises_our_errors(loaded: Any, call: Callable[[Any], Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        call(loaded)
    assert loaded.count() == len(CORPUS)


def test_failing_batch_leaves_the_store_unchanged(loaded: Any) -> None:
    before = [(h.id, h.score) for h in loaded.search("configure database tomato", 10)]
    records_before = loaded.get(list(CORPUS))
    with pytest.raises(InvalidArgumentError):
        # Valid first rows (one of them an upsert of d1), then a bad one: nothing may be written.
        loaded.add(["d1", "new", "bad"], ["replaced", "fresh text", "x"], [{}, {}, {"v": float("inf")}])
    assert loaded.count() == len(CORPUS)
    assert loaded.get(list(CORPUS)) == records_before
    assert loaded.get(["new"]) == []
    assert [(h.id, h.score) for h in loaded.search("configure database tomato", 10)] == before


def test_hostile_queries_never_raise_a_raw_error(loaded: Any) -> None:
    for query in HOSTILE_QUERIES:
        for scope in ({}, {"filter": {"lang": ["en", "de"]}, "exclude_ids": ["d1"]}):
            try:
                hits = loaded.search(query, 5, **scope)
            except RRFRetrieverError:
                continue  # a clear error of ours is allowed; a raw sqlite3/numpy error is not
            assert isinstance(hits, list)
            assert all(isinstance(h, Hit) and h.id in CORPUS for h in hits)


def test_hostile_strings_as_documents_and_filter_values(store: Any) -> None:
    texts = [q for q in HOSTILE_QUERIES if "\ud800" not in q and "\udfff" not in q and len(q) < 20_000]
    ids = [f"h{i}" for i in range(len(texts))]
    metas = [{"s": t} for t in texts]
    store.add(ids, texts, metas)
    assert store.count() == len(texts)
    for text in texts:
        if "\x00" in text:
            continue  # a NUL filter value is refused (FilterError), tested above through the store
        hits = store.search(text, 3, filter={"s": text})
        assert all(h.metadata["s"] == text for h in hits)
    assert ids_of(store.search("DROP TABLE docs", 50, filter={"s": "SELECT * FROM docs; DROP TABLE docs; --"})) == [
        ids[texts.index("SELECT * FROM docs; DROP TABLE docs; --")]
    ]


# ---------------------------------------------------------------- persistence, async, threads


def test_reopen_gives_everything_back(kind: str, loaded: Any, tmp_path: Path) -> None:
    before = [(h.id, h.score, dict(h.metadata)) for h in loaded.search("configure database tomato", 10)]
    again = reopen(kind, loaded, tmp_path)
    assert again.count() == len(CORPUS)
    assert again.get(["d5"])[0].metadata == CORPUS["d5"][1]
    after = [(h.id, h.score, dict(h.metadata)) for h in again.search("configure database tomato", 10)]
    assert [(i, m) for i, _, m in after] == [(i, m) for i, _, m in before]
    assert [s for _, s, _ in after] == pytest.approx([s for _, s, _ in before])
    assert ids_of(again.search("configuring", 10, filter={"lang": "de"})) == ["d4"]
    if isinstance(again, (FTS5KeywordStore, QdrantKeywordStore, QdrantEdgeKeywordStore)):
        again.close()


def test_async_twins(store: Any) -> None:
    async def scenario() -> tuple[list[Hit], int, int, list[str]]:
        # Three documents: with two, rank_bm25's IDF of a term in one of them is exactly 0.
        await store.aadd(["a", "b", "c"], ["async database", "async vectors", "pasta"], [{"s": 1}, {"s": 2}, {}])
        hits = await store.asearch("database", 5, filter={"s": 1})
        await store.adelete(["b"])
        got = await store.aget(["a", "b"])
        return hits, await store.acount(), len(got), ids_of(await store.asearch("vectors", 5))

    hits, count, got, after_delete = asyncio.run(scenario())
    assert ids_of(hits) == ["a"]
    assert (count, got, after_delete) == (2, 1, [])


def test_many_threads_read_while_one_writes(store: Any) -> None:
    store.add([f"seed{i}" for i in range(20)], [f"seed document {i} about search" for i in range(20)])
    errors: list[BaseException] = []
    stop = threading.Event()
    written: list[str] = []

    def writer() -> None:
        try:
            for batch in range(15):
                ids = [f"w{batch}-{j}" for j in range(10)]
                store.add(ids, [f"written search text {batch} {j}" for j in range(10)], [{"b": batch}] * 10)
                written.extend(ids)
                if batch % 5 == 4:
                    store.delete(ids[:2])
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    def reader() -> None:
        try:
            while not stop.is_set():
                for hit in store.search("search document text", 10, filter={"b": [1, 2, 3]}):
                    assert hit.metadata["b"] in (1, 2, 3)
                store.search("seed", 5)
                store.count()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert store.count() == 20 + 15 * 10 - 3 * 2
    assert len(store.search("written", 1000)) == 15 * 10 - 3 * 2


# ---------------------------------------------------------------- property: scope before top-k

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta"]


@st.composite
def corpora_and_scopes(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(min_value=1, max_value=25))
    docs = [
        (
            " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8))),
            {"session_id": draw(st.integers(0, 5)), "lang": draw(st.sampled_from(["en", "de"]))},
        )
        for _ in range(n)
    ]
    sessions = draw(st.lists(st.integers(0, 6), max_size=4, unique=True))
    flt: dict[str, Any] = {"session_id": sessions} if draw(st.booleans()) else {}
    if draw(st.booleans()):
        flt["lang"] = draw(st.sampled_from(["en", "de", ["en", "de"]]))
    excluded = draw(st.lists(st.integers(0, n - 1), max_size=5, unique=True))
    return {
        "docs": docs,
        "filter": flt or None,
        "exclude_ids": [f"d{i}" for i in excluded],
        "query": " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))),
        "limit": draw(st.integers(1, 10)),
    }


@pytest.mark.parametrize("store_kind", ["fts5-memory", "bm25s", "rank_bm25", "qdrant-memory", "qdrant-edge"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=corpora_and_scopes())
def test_property_scoped_result_is_the_best_allowed_documents(
    store_kind: str, case: dict[str, Any], tmp_path: Path
) -> None:
    # Each example its own store (tmp_path is shared by the examples; the edge store persists there).
    store = QdrantEdgeKeywordStore() if store_kind == "qdrant-edge" else make_store(store_kind, tmp_path)
    ids = [f"d{i}" for i in range(len(case["docs"]))]
    store.add(ids, [t for t, _ in case["docs"]], [m for _, m in case["docs"]])
    flt = normalize_filter(case["filter"])
    excluded = set(case["exclude_ids"])
    hits = store.search(case["query"], case["limit"], filter=case["filter"], exclude_ids=case["exclude_ids"])
    metadata = dict(zip(ids, (m for _, m in case["docs"])))
    for hit in hits:
        assert hit.id not in excluded
        assert matches(metadata[hit.id], flt)
    assert len({h.id for h in hits}) == len(hits)
    # The reference: the unscoped ranking of every matching document, scoped afterwards in Python.
    everything = store.search(case["query"], 1000)
    allowed = [h for h in everything if h.id not in excluded and matches(metadata[h.id], flt)]
    assert [h.score for h in hits] == pytest.approx([h.score for h in allowed[: case["limit"]]], rel=1e-6)
    if isinstance(store, (FTS5KeywordStore, QdrantKeywordStore, QdrantEdgeKeywordStore)):
        store.close()


def test_equal_scores_are_ordered_by_id_whatever_the_insertion_order(store: Any) -> None:
    # 30 identical texts, written one at a time in a shuffled order: every score ties, so the id decides, with
    # and without a scope, and the cut at the limit keeps the smallest ids (not the first written).
    ids = [f"m{i:02d}" for i in range(30)]
    order = ids[:]
    random.Random(7).shuffle(order)
    filler = [f"f{i:02d}" for i in range(40)]  # the query's terms in under half the documents: IDF > 0 everywhere
    store.add(filler, [f"pasta recipe number {i}" for i in range(40)], [{"session_id": 2}] * 40)
    for doc_id in order:
        store.add([doc_id], ["memory note about rotating tokens"], [{"session_id": 1}])
    assert ids_of(store.search("rotating tokens", 10)) == ids[:10]
    assert ids_of(store.search("rotating tokens", 10, filter={"session_id": 1}, exclude_ids=["m00"])) == ids[1:11]
    assert ids_of(store.search("rotating tokens", 30)) == ids
