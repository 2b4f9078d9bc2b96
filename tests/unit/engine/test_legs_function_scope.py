"""A foreign retriever leg (FunctionLeg) cannot take our filter: it is asked for headroom, post-filtered by the
reference semantics, and the trace says so."""

from __future__ import annotations

import asyncio

from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.legs import POST_FILTER_HEADROOM, FunctionLeg
from rrf_retriever.scope.parse import normalize_scope
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.types import Hit

DOCS = [Hit(f"d{i}", f"text {i}", {"n": i, "odd": bool(i % 2)}, 1.0 / (i + 1)) for i in range(50)]


class Recorder:
    def __init__(self) -> None:
        self.asked: list[int] = []

    def __call__(self, query: str, limit: int) -> list[Hit]:
        self.asked.append(limit)
        return DOCS[:limit]

    async def acall(self, query: str, limit: int) -> list[Hit]:
        return self(query, limit)


def test_headroom_only_when_a_scope_is_set() -> None:
    rec = Recorder()
    leg = FunctionLeg(rec)
    assert [h.id for h in leg.search(SearchRequest("retriever", "q", None, 4))] == ["d0", "d1", "d2", "d3"]
    scope = normalize_scope({"odd": True, "n": {"$gte": 3}}, ["d5"])
    hits = leg.search(SearchRequest("retriever", "q", None, 4, scope))
    assert [h.id for h in hits] == ["d3", "d7", "d9", "d11"]
    assert rec.asked == [4, 4 * POST_FILTER_HEADROOM + 1]


def test_async_twin_filters_the_same() -> None:
    rec = Recorder()
    leg = FunctionLeg(rec, rec.acall)
    scope = normalize_scope({"$not": {"odd": True}}, ["d0"])
    hits = asyncio.run(leg.asearch(SearchRequest("retriever", "q", None, 3, scope)))
    assert [h.id for h in hits] == ["d2", "d4", "d6"]


def test_the_trace_says_the_leg_was_post_filtered() -> None:
    engine = HybridEngine({"f": FunctionLeg(Recorder())})
    scoped = engine.search("q", top_k=3, filter={"n": {"$lt": 10}, "odd": False})
    assert scoped.ids == ["d0", "d2", "d4"]
    note = scoped.trace.legs[0].note or ""
    assert note.startswith("post-filtered") and "asked for" in note
    assert engine.search("q", top_k=3).trace.legs[0].note is None  # no scope, nothing to say
