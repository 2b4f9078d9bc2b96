"""One request value from the door to the store: a query's filter is parsed once (when its ``SearchOptions`` are
built), its weights are validated once (there too), and each store receives the very ``SearchRequest`` object the
engine built for its leg, through the legs, the runners and a joint collection's ``search_batch``.

The counts are read with a profiler hook over real engines (FTS5, qdrant-edge, the hashing embedding): it records
which functions of ``scope/parse.py`` and ``validate.py`` run, and who called them; nothing is replaced.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import rrf_retriever.scope.parse as parse_module
import rrf_retriever.validate as validate_module
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.query import Query
from rrf_retriever.scope.tree import AllOf
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeHybridStore

DIM = 32
WORDS = "rocket fuel orbit engine nozzle thrust valve pump tank sensor".split()
IDS = [f"d{i}" for i in range(40)]
TEXTS = [f"{WORDS[i % 10]} note {i} {WORDS[(i * 7) % 10]}" for i in range(40)]
METAS = [{"session_id": i % 4, "n": i} for i in range(40)]
FILTER = {"session_id": [1, 3], "n": {"$gte": 2}}
PARSE_FILE = parse_module.__file__
VALIDATE_FILE = validate_module.__file__


class Calls:
    """The calls into ``scope/parse.py`` from outside it (``entries``: the function entered and the file of its
    caller), and the weight checks of ``validate.py`` (``weights``: the function and the name it checks)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str]] = []
        self.parses = 0
        self.weights: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.weights.clear()
            self.parses = 0

    def hook(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename == PARSE_FILE:
            caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
            with self.lock:
                self.parses += code.co_name == "parse"
                if caller != PARSE_FILE:
                    self.entries.append((code.co_name, caller))
        elif code.co_filename == VALIDATE_FILE:
            name = frame.f_locals.get("name")
            checked = (code.co_name in ("check_weights", "check_weight_values")
                       or (code.co_name == "check_mapping" and name == "weights")
                       or (code.co_name == "check_number" and str(name).startswith("weight of")))
            if checked:
                with self.lock:
                    self.weights.append((code.co_name, str(name)))


@contextmanager
def counted() -> Iterator[Calls]:
    """Profile every thread started from now on (the engine's pool and asyncio's workers included)."""
    calls = Calls()
    sys.setprofile(calls.hook)
    threading.setprofile(calls.hook)  # type: ignore[arg-type]  # the hook's signature is sys.setprofile's
    try:
        yield calls
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]  # None removes it


@contextmanager
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SearchRequest]]:
    """The requests the engine built, each as :meth:`Query.request` returned it."""
    built: list[SearchRequest] = []
    real = Query.request

    def request(self: Query, leg: Any, vector: Any) -> SearchRequest:
        out = real(self, leg, vector)
        built.append(out)
        return out

    monkeypatch.setattr(Query, "request", request)
    yield built


def _received(store: Any, method: str, into: list[SearchRequest]) -> None:
    """Record the requests ``store.method`` receives (one request, or a batch's list) and run the real method."""
    real = getattr(store, method)

    def spy(arg: Any) -> Any:
        into.extend(arg if isinstance(arg, list) else [arg])
        return real(arg)

    setattr(store, method, spy)


def _separate(tmp_path: Path) -> tuple[HybridEngine, list[SearchRequest]]:
    keyword, dense = FTS5KeywordStore(), QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp_path / "dense")
    received: list[SearchRequest] = []
    for store in (keyword, dense):
        _received(store, "search_request", received)
        _received(store, "asearch_request", received)
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    engine.add(IDS, TEXTS, METAS)
    return engine, received


def _joint(tmp_path: Path) -> tuple[HybridEngine, list[SearchRequest]]:
    store = QdrantEdgeHybridStore(HashingEmbedding(DIM), path=tmp_path / "joint")
    received: list[SearchRequest] = []
    _received(store, "search_batch", received)
    _received(store, "asearch_batch", received)
    engine = HybridEngine({"dense": store.dense, "keyword": store.keyword})
    engine.add(IDS, TEXTS, METAS)
    return engine, received


def _search(engine: HybridEngine, mode: str, **options: Any) -> Any:
    if mode == "async":
        return asyncio.run(engine.asearch("rocket orbit", **options))
    return engine.search("rocket orbit", **options)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("build", [_separate, _joint], ids=["fts5+edge", "edge-joint"])
def test_the_filter_is_parsed_once_per_query_and_only_at_the_door(
    tmp_path: Path, build: Any, mode: str
) -> None:
    with counted() as calls:
        engine, _ = build(tmp_path)
        with engine:
            _search(engine, mode)  # the corpus's cosine background is listed once after a write: not per query
            for _ in range(3):
                calls.clear()
                result = _search(engine, mode, filter=FILTER, exclude_ids=["d1"])
                assert result.ids and all(h.metadata["session_id"] in (1, 3) and h.id != "d1" for h in result.hits)
                assert calls.parses == 1  # the filter parsed once, for both legs
                entered = {(name, Path(caller).name) for name, caller in calls.entries}
                # the only door into the parser: the options, when they are built (filter, then exclude_ids)
                assert entered == {("normalize_filter", "options.py"), ("normalize_exclude_ids", "options.py")}
                assert len(calls.entries) == 2


def test_a_store_called_directly_parses_its_filter_once_at_its_own_door() -> None:
    store = FTS5KeywordStore()
    store.add(IDS, TEXTS, METAS)
    with counted() as calls:
        hits = store.search("fuel", 10, FILTER, ["d1"])
    assert hits and all(h.metadata["session_id"] in (1, 3) for h in hits)
    assert calls.parses == 1
    assert {name for name, _ in calls.entries} == {"normalize_scope"}  # the door; it calls the parser itself


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("build", [_separate, _joint], ids=["fts5+edge", "edge-joint"])
def test_weights_are_validated_once_per_query(tmp_path: Path, build: Any, mode: str) -> None:
    with counted() as calls:
        engine, _ = build(tmp_path)
        with engine:
            _search(engine, mode)
            calls.clear()
            given = _search(engine, mode, weights={"keyword": 2.0})
            assert given.trace.weights["keyword"] == 2.0
            # one check of the mapping and one of its one value, where the options are built; none after
            assert calls.weights == [("check_weight_values", "None"), ("check_mapping", "weights"),
                                     ("check_number", "weight of source 'keyword'")]
            calls.clear()
            assert _search(engine, mode).ids
            assert calls.weights == []  # the settings' weights were validated when the settings were built


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("build", [_separate, _joint], ids=["fts5+edge", "edge-joint"])
def test_each_store_receives_the_request_the_engine_built(
    tmp_path: Path, build: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, received = build(tmp_path)
    with engine, recorded(monkeypatch) as built:
        received.clear()
        assert _search(engine, mode, filter=FILTER, exclude_ids=["d1"], top_k=3).ids
        assert sorted(r.kind for r in built) == ["dense", "keyword"]
        # the same objects, not copies (an async entry without a native client runs the sync one: seen twice)
        assert {id(r) for r in received} == {id(r) for r in built} and len(built) == 2
        scope = built[0].scope
        assert all(r.scope is scope for r in built)  # one scope for every leg, as the options parsed it
        assert scope.exclude_ids == frozenset({"d1"}) and scope.filter is not None


def test_a_dense_path_gets_its_own_request_within_the_query_scope(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    engine, received = _separate(tmp_path)
    with engine, recorded(monkeypatch) as built:
        engine.search("rocket orbit")
        received.clear()
        with counted() as calls:
            result = engine.search("rocket orbit", filter={"session_id": [1, 3]}, exclude_ids=["d1"],
                                   dense_paths={"recent": {"n": {"$gte": 30}}})
        assert calls.parses == 2  # the query's filter and the path's, each once (when the options were built)
        del built[:-3]  # the warm-up's requests
        assert [h.id for h in result.hits if "recent" in h.ranks]
        assert len(built) == len(received) == 3 and {id(r) for r in received} == {id(r) for r in built}
        query_scope = next(r.scope for r in built if r.kind == "keyword")
        narrowed = [r for r in built if r.scope is not query_scope]  # the path's: its filter AND the query's
        assert len(narrowed) == 1 and narrowed[0].kind == "dense"
        assert isinstance(narrowed[0].scope.filter, AllOf) and narrowed[0].scope.filter.parts[0] is query_scope.filter
        assert narrowed[0].scope.exclude_ids == query_scope.exclude_ids == frozenset({"d1"})


def test_the_settings_dense_paths_are_parsed_when_set_not_per_query(tmp_path: Path) -> None:
    engine, _ = _separate(tmp_path)
    with engine:
        engine.update_settings(dense_paths={"recent": {"n": {"$gte": 30}}})
        engine.search("rocket orbit")
        with counted() as calls:
            result = engine.search("rocket orbit", filter={"session_id": [1, 3]})
        assert [h.id for h in result.hits if "recent" in h.ranks]
        assert calls.parses == 1  # the query's filter; the path's was parsed when the settings took it
