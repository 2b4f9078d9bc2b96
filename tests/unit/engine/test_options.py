"""The per-call search options (engine/options.py) are the one definition every surface derives from; the result
stages run in the order engine/stages.py declares; the engine asks stores for capabilities by protocol."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from rrf_retriever import HashingEmbedding
from rrf_retriever.engine import HybridEngine, stages
from rrf_retriever.engine.options import OPTION_ALIASES, OPTION_NAMES, SearchOptions, as_options
from rrf_retriever.engine.stages import STAGES, Stage
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.frameworks.core import SEARCH_KWARGS
from rrf_retriever.stores.base import BatchSearch, WritesThrough
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantHybridStore

TEXTS = {f"d{i}": f"rocket note {i} about {'fuel' if i % 2 else 'orbit'} engines" for i in range(12)}


def _engine(**kwargs: Any) -> HybridEngine:
    e = HybridEngine({"keyword": FTS5KeywordStore()}, **kwargs)
    ids = sorted(TEXTS)
    e.add(ids, [TEXTS[i] for i in ids], [{"n": n, "links": [ids[(n + 5) % len(ids)]]} for n, _ in enumerate(ids)])
    return e


@pytest.fixture
def engine() -> Any:
    with _engine() as e:
        yield e


def test_the_accepted_names_are_derived_from_the_fields() -> None:
    assert {f.name for f in dataclasses.fields(SearchOptions)} == OPTION_NAMES
    assert OPTION_NAMES | set(OPTION_ALIASES) == SEARCH_KWARGS and OPTION_ALIASES["k"] == "top_k"
    assert all(SearchOptions.doc(name) for name in OPTION_NAMES)
    # the engine's search lists no option itself: they come from SearchOptions
    assert list(inspect.signature(HybridEngine.search).parameters) == ["self", "query", "options", "kwargs"]
    assert list(inspect.signature(HybridEngine.asearch).parameters) == ["self", "query", "options", "kwargs"]


def test_keywords_and_an_options_object_give_the_same_result(engine: HybridEngine) -> None:
    by_name = engine.search("rocket engines", top_k=3, filter={"n": {"$gte": 2}}, exclude_ids=["d3"], offset=1)
    options = SearchOptions(top_k=3, filter={"n": {"$gte": 2}}, exclude_ids=["d3"], offset=1)
    assert engine.search("rocket engines", options).ids == by_name.ids
    assert engine.search("rocket engines", options, top_k=2).ids == by_name.ids[:2]  # keywords over the options
    assert engine.search("rocket engines", k=3, filter={"n": {"$gte": 2}}, exclude_ids=["d3"],
                         offset=1).ids == by_name.ids


def test_options_are_validated_when_built_and_unknown_names_refused(engine: HybridEngine) -> None:
    with pytest.raises(InvalidArgumentError, match="top_k must be between"):
        SearchOptions(top_k=0)
    with pytest.raises(InvalidArgumentError, match=r"unknown search argument\(s\) \['topk'\]; accepted: .*'top_k'"):
        engine.search("rocket", topk=3)
    with pytest.raises(InvalidArgumentError, match="k is an alias of top_k"):
        SearchOptions.from_kwargs(k=3, top_k=4)
    with pytest.raises(InvalidTypeError, match="options must be a SearchOptions"):
        engine.search("rocket", 5)  # type: ignore[arg-type]  # the mistake under test
    built = SearchOptions(pinned_ids=["a", "a"], exclude_ids=["x"], filter={"n": 1})
    assert built.pinned_ids == ("a",) and built.scope[1] == frozenset({"x"})
    assert as_options(built) is built and as_options() == SearchOptions()  # nothing given: nothing built again


def test_the_declared_stage_order_is_what_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine(links_key="links")  # 1-hop expansion configured: every stage can apply
    ran: list[str] = []

    def recorded(stage: Stage) -> Stage:
        def run(hits: Any, state: Any) -> Any:
            ran.append(stage.name)
            return stage.run(hits, state)

        return dataclasses.replace(stage, run=run)

    monkeypatch.setattr(stages, "STAGES", tuple(recorded(s) for s in STAGES))
    result = engine.search("rocket engines", top_k=4, offset=1, pinned_ids=["d11"], score_threshold=0.0,
                           diversity=0.5, reranker=lambda q, texts: [len(t) for t in texts])
    # With 1-hop expansion the page of the expanded list is cut by "expand" (one list, page by page), so "page"
    # does not apply; every other stage does, in the declared order.
    assert ran == [s.name for s in STAGES if s.name != "page"]
    assert ran == ["normalize", "pinned", "threshold", "diversity", "rerank", "pinned_first", "expand"]
    assert list(result.trace.stages_ms) == [s.name for s in STAGES if s.timed]
    ran.clear()
    engine.search("rocket engines", top_k=4)  # only the stages that apply run
    assert ran == ["normalize", "expand"]
    engine.close()
    plain = _engine()
    ran.clear()
    plain.search("rocket engines", top_k=4, offset=2)
    assert ran == ["normalize", "page"]
    plain.close()


def test_capabilities_are_protocols(tmp_path: Any) -> None:
    store = QdrantHybridStore(HashingEmbedding(dim=8), path=tmp_path / "q")
    try:
        assert isinstance(store.dense, BatchSearch) and isinstance(store.keyword, BatchSearch)
        assert isinstance(store.keyword, WritesThrough) and store.keyword.writes_through is store.dense
        assert not isinstance(store.dense, WritesThrough)
        assert not isinstance(FTS5KeywordStore(), BatchSearch)
    finally:
        store.close()
