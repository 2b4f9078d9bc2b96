"""Bad inputs at every entry point: NaN / inf / negative weights, negative rrf_k, top_k 0 or 10**9, a query that
is not a string (None, bytes, int), through the engine, the retriever (invoke kwargs, constructor,
update_settings) and the stores. Each gives our ValueError / TypeError subclass with a message naming the field,
and a refused settings change leaves the settings as they were.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, RRFRetrieverError
from rrf_retriever.retriever import EnsembleRRFRetriever
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from tests.reliability.hostile import HOSTILE_QUERIES
from tests.reliability.workloads import DIM

BAD_SETTINGS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"weights": {"dense": math.nan}}, InvalidArgumentError, "dense"),
    ({"weights": {"keyword": math.inf}}, InvalidArgumentError, "keyword"),
    ({"weights": {"dense": -0.5}}, InvalidArgumentError, "dense"),
    ({"weights": {"dense": "1"}}, InvalidTypeError, "dense"),
    ({"weights": {"nosuch": 1.0}}, InvalidArgumentError, "nosuch"),
    ({"weights": [1.0, 2.0]}, InvalidTypeError, "weights"),
    ({"rrf_k": -1}, InvalidArgumentError, "rrf_k"),
    ({"rrf_k": math.nan}, InvalidArgumentError, "rrf_k"),
    ({"rrf_k": math.inf}, InvalidArgumentError, "rrf_k"),
    ({"top_k": 0}, InvalidArgumentError, "top_k"),
    ({"top_k": -3}, InvalidArgumentError, "top_k"),
    ({"top_k": 10**9}, InvalidArgumentError, "top_k"),
    ({"top_k": 2.5}, InvalidTypeError, "top_k"),
    ({"top_k": True}, InvalidTypeError, "top_k"),
    ({"k": 0}, InvalidArgumentError, "top_k"),
    ({"fetch_k": 0}, InvalidArgumentError, "fetch_k"),
    ({"leg_timeout": -1.0}, InvalidArgumentError, "leg_timeout"),
    ({"leg_timeout": math.nan}, InvalidArgumentError, "leg_timeout"),
    ({"on_error": "ignore"}, InvalidArgumentError, "on_error"),
    ({"fusion": "max"}, InvalidArgumentError, "fusion"),
]
BAD_SEARCH: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"weights": {"dense": math.nan}}, InvalidArgumentError, "dense"),
    ({"weights": {"keyword": -math.inf}}, InvalidArgumentError, "keyword"),
    ({"weights": {"keyword": -1}}, InvalidArgumentError, "keyword"),
    ({"top_k": 0}, InvalidArgumentError, "top_k"),
    ({"top_k": 10**9}, InvalidArgumentError, "top_k"),
    ({"k": -1}, InvalidArgumentError, "top_k"),
    ({"k": 3, "top_k": 4}, InvalidArgumentError, "top_k"),
    ({"top_k": "10"}, InvalidTypeError, "top_k"),
    ({"filter": "session_id=1"}, InvalidArgumentError, "filter"),
    ({"filter": {"session_id": math.nan}}, InvalidArgumentError, "session_id"),
    ({"filter": {"a b": 1}}, InvalidArgumentError, "filter key"),
    ({"exclude_ids": "d1"}, InvalidTypeError, "exclude_ids"),
    ({"exclude_ids": [None]}, InvalidTypeError, "exclude_ids"),
    ({"rrf_k": 10}, InvalidArgumentError, "rrf_k"),
]
BAD_QUERIES: list[tuple[Any, str]] = [(None, "NoneType"), (b"bytes", "bytes"), (42, "int"), (["a"], "list")]


@pytest.fixture(scope="module")
def retriever() -> EnsembleRRFRetriever:
    return EnsembleRRFRetriever.from_texts(["reset your password", "token expired"], HashingEmbedding(DIM),
                                           metadatas=[{"session_id": 1}, {"session_id": 2}], ids=["d1", "d2"])


@pytest.mark.parametrize(("change", "error", "field"), BAD_SETTINGS)
def test_bad_settings_are_refused_everywhere_and_change_nothing(
    retriever: EnsembleRRFRetriever, change: dict[str, Any], error: type[Exception], field: str
) -> None:
    before = retriever.settings
    with pytest.raises(error, match=field):
        retriever.update_settings(**change)
    assert retriever.settings is before
    engine_change = {("top_k" if k == "k" else k): v for k, v in change.items()}
    with pytest.raises(error, match=field):
        retriever.engine.update_settings(**engine_change)
    assert retriever.engine.settings is before
    with pytest.raises(error, match=field):
        EnsembleRRFRetriever(dense=retriever.engine.legs["dense"].store,  # type: ignore[attr-defined]
                             keyword=retriever.engine.legs["keyword"].store, **change)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("kwargs", "error", "field"), BAD_SEARCH)
def test_bad_search_arguments_are_refused_on_every_path(
    retriever: EnsembleRRFRetriever, kwargs: dict[str, Any], error: type[Exception], field: str
) -> None:
    calls = [
        lambda: retriever.invoke("password", **kwargs),
        lambda: asyncio.run(retriever.ainvoke("password", **kwargs)),
        lambda: retriever.scoped(**kwargs).retrieve("password"),
    ]
    if "k" not in kwargs and "rrf_k" not in kwargs:
        calls.append(lambda: retriever.engine.search("password", **kwargs))
    for call in calls:
        with pytest.raises(error, match=field):
            call()


@pytest.mark.parametrize(("query", "type_name"), BAD_QUERIES)
def test_a_query_that_is_not_a_string_is_our_type_error(
    retriever: EnsembleRRFRetriever, query: Any, type_name: str
) -> None:
    for call in (lambda: retriever.invoke(query), lambda: asyncio.run(retriever.ainvoke(query)),
                 lambda: retriever.engine.search(query), lambda: asyncio.run(retriever.engine.asearch(query))):
        with pytest.raises(InvalidTypeError, match=f"query must be a str, not {type_name}"):
            call()


@pytest.mark.parametrize("store_kind", ["fts5", "bm25"])
@pytest.mark.parametrize(("query", "limit", "error", "field"), [
    (None, 5, InvalidTypeError, "query"), (b"x", 5, InvalidTypeError, "query"), (7, 5, InvalidTypeError, "query"),
    ("x", -1, InvalidArgumentError, "limit"), ("x", 10**9, InvalidArgumentError, "limit"),
    ("x", 2.0, InvalidTypeError, "limit"), ("x", None, InvalidTypeError, "limit"),
])
def test_keyword_stores_refuse_bad_queries_and_limits(
    store_kind: str, query: Any, limit: Any, error: type[Exception], field: str
) -> None:
    store: Any = FTS5KeywordStore() if store_kind == "fts5" else BM25KeywordStore()
    store.add(["d1"], ["x marks the spot"])
    with pytest.raises(error, match=field):
        store.search(query, limit)


@pytest.mark.parametrize(("vector", "limit", "field"), [
    ([math.nan] * DIM, 5, "NaN"), ([math.inf] * DIM, 5, "NaN"), ([0.1] * (DIM + 1), 5, "dimension"),
    ("not a vector", 5, "vector"), (None, 5, "vector"), ([0.1] * DIM, -1, "limit"), ([0.1] * DIM, 10**9, "limit"),
])
def test_the_dense_store_refuses_bad_vectors_and_limits(vector: Any, limit: Any, field: str) -> None:
    store = QdrantDenseStore(HashingEmbedding(DIM), location=":memory:")
    store.add(["d1"], ["x marks the spot"])
    with pytest.raises(RRFRetrieverError, match=field) as info:
        store.search(vector, limit)
    assert isinstance(info.value, (ValueError, TypeError))


@pytest.mark.parametrize(("ids", "texts", "metadatas", "error", "field"), [
    (["a"], [None], None, InvalidTypeError, "texts"),
    (["a"], [b"bytes"], None, InvalidTypeError, "texts"),
    ([None], ["x"], None, InvalidTypeError, "ids"),
    (["a", "a"], ["x", "y"], None, InvalidArgumentError, "ids"),
    (["a"], ["\ud800"], None, InvalidArgumentError, "texts"),
    (["a"], ["x"], [{"v": math.nan}], InvalidArgumentError, "metadatas"),
    (["a"], ["x"], [{1: "v"}], InvalidTypeError, "metadatas"),
    ("a", ["x"], None, InvalidTypeError, "ids"),
])
def test_bad_batches_are_refused_before_anything_is_written(
    retriever: EnsembleRRFRetriever, ids: Any, texts: Any, metadatas: Any, error: type[Exception], field: str
) -> None:
    before = retriever.engine.count()
    with pytest.raises(error, match=field):
        retriever.engine.add(ids, texts, metadatas)
    assert retriever.engine.count() == before


# Any string, lone surrogates, NUL and FTS5 syntax included (hypothesis' default text leaves surrogates out).
_ANY_TEXT = st.one_of(st.text(st.characters(blacklist_categories=()), max_size=30), st.sampled_from(HOSTILE_QUERIES))
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _ANY_TEXT)
_METADATA = st.one_of(
    st.none(),
    st.dictionaries(st.one_of(_ANY_TEXT, st.sampled_from(["title", "session_id"])),
                    st.one_of(_SCALAR, st.lists(_SCALAR, max_size=3)), max_size=4),
)


@pytest.fixture(scope="module")
def default_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The embedded default stack on disk: FTS5 (title field) + qdrant-edge, journaled, hashing vectors."""
    path = tmp_path_factory.mktemp("default-stack")
    retriever = EnsembleRRFRetriever.from_texts(["seed document"], HashingEmbedding(DIM), ids=["seed"], path=path)
    yield retriever.engine
    retriever.engine.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(st.tuples(_ANY_TEXT, _ANY_TEXT, _METADATA), min_size=1, max_size=4))
def test_any_write_is_stored_whole_or_refused_with_our_error(default_stack: Any, batch: list[Any]) -> None:
    ids, texts, metadatas = ([row[i] for row in batch] for i in range(3))
    before = default_stack.count()
    try:
        default_stack.add(ids, texts, metadatas)
    except RRFRetrieverError:
        event("refused")
        assert default_stack.count() == before  # refused: nothing written to either store
        return
    event("stored")
    stored = {r.id: r for r in default_stack.get(ids)}
    assert set(stored) == set(ids)
    for doc_id, text in zip(ids, texts):
        assert stored[doc_id].text == text
    counts = default_stack.count()
    assert counts["dense"] == counts["keyword"]
    default_stack.delete(ids)
