"""What a filter may cost a Qdrant store, bounded by construction: integers past 2**53 (equality and range bounds)
compile with a bounded number of listed integers, exactly as :func:`rrf_retriever.scope.tree.matches` reads them,
and no store lock is held while a filter compiles (a huge filter never stalls another caller's search).

Work is counted (conditions built, integers listed in ``MatchAny``), never timed.
"""

from __future__ import annotations

import math
import operator
import random
import threading
from typing import Any

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeKeywordStore, QdrantKeywordStore
from rrf_retriever.stores.qdrant.filters import MAX_LISTED_INTEGERS, compile_filter
from rrf_retriever.stores.qdrant.int_runs import FilterWork, float_bounds, range_errors

DIM = 8
BASE = 2**62  # float64 steps of 1024 above it, 512 below
ATTACK = {"n": {"$in": [BASE + i for i in range(2000)]}}
#: What the 2000-value ``$in`` may list at most: its 2000 integers, and one float64 step (1024) of integers
#: around each of the two values float64 holds (``BASE`` and ``BASE + 1024``).
ATTACK_LISTED = 2000 + 2 * 1024

DOCS: dict[str, dict[str, Any]] = {
    "base": {"n": BASE}, "base_float": {"n": float(BASE)}, "below1": {"n": BASE - 1}, "below256": {"n": BASE - 256},
    "below257": {"n": BASE - 257}, "plus1": {"n": BASE + 1}, "plus511": {"n": BASE + 511},
    "plus1023": {"n": BASE + 1023}, "plus1024": {"n": BASE + 1024}, "plus1024_float": {"n": float(BASE + 1024)},
    "plus1999": {"n": BASE + 1999}, "plus2000": {"n": BASE + 2000}, "plus2047": {"n": BASE + 2047},
    "plus2048_float": {"n": float(BASE + 2048)}, "neg": {"n": -BASE}, "small": {"n": 3}, "str": {"n": str(BASE)},
    "list": {"n": [1, BASE + 5]}, "missing": {},
}

FILTERS: list[Any] = [
    ATTACK, {"n": BASE}, {"n": BASE + 1}, {"n": float(BASE)}, {"n": {"$nin": [BASE + i for i in range(2000)]}},
    {"n": {"$gt": BASE}}, {"n": {"$gte": BASE + 1}}, {"n": {"$lt": BASE + 1000}}, {"n": {"$lte": BASE - 1}},
    {"n": {"$gt": BASE - 300, "$lt": BASE + 1500}}, {"n": {"$gte": float(BASE), "$lte": BASE + 2000}},
    {"$or": [{"n": {"$in": [BASE + 1024, BASE + 2047]}}, {"n": 3}]}, {"n": {"$in": [-BASE, BASE - 256, 3]}},
]


class CountingHooks:
    """A backend's filter models, counting what a compile builds; past ``max_listed`` listed integers it raises
    (so a compile that would list without bound fails at once, not after minutes)."""

    def __init__(self, backend: Any, max_listed: int) -> None:
        self.backend = backend
        self.max_listed = max_listed
        self.conditions = 0
        self.listed = 0

    def condition(self, field_key: str, test: Any) -> Any:
        self.conditions += 1
        if isinstance(test, list):
            self.listed += len(test)
            assert self.listed <= self.max_listed, f"more than {self.max_listed} integers listed"
        return self.backend.condition(field_key, test)

    def filter(self, **parts: Any) -> Any:
        return self.backend.filter(**parts)

    def boolean(self, value: bool) -> Any:
        return self.backend.boolean(value)


def _add(store: Any) -> None:
    store.add(list(DOCS), [f"alpha {i}" for i in DOCS], list(DOCS.values()))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = {
        "edge-keyword": QdrantEdgeKeywordStore(path=tmp_path_factory.mktemp("kw")),
        "edge-keyword-noindex": QdrantEdgeKeywordStore(path=tmp_path_factory.mktemp("kw0"), max_auto_indexes=0),
        "edge-dense": QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=tmp_path_factory.mktemp("dense")),
        "local-keyword": QdrantKeywordStore(),
    }
    for store in made.values():
        _add(store)
    yield made
    for store in made.values():
        store.close()


def test_the_2000_value_in_compiles_with_bounded_work(stores: Any) -> None:
    store = stores["edge-keyword"]
    hooks = CountingHooks(store.backend, ATTACK_LISTED)
    work = FilterWork()
    compile_filter(normalize_filter(ATTACK), hooks, lambda key: None, work)
    assert hooks.listed == work.listed <= ATTACK_LISTED
    assert hooks.conditions <= 16  # a few conditions, not one (or three) per value
    assert work.examined <= 4 * 2  # two float64 checks a run end, for the two values float64 holds


@pytest.mark.parametrize("bounds", [{"$gt": BASE + 1}, {"$gte": -BASE - 7, "$lt": 2**63 - 1}, {"$lte": 2**53 + 1},
                                    {"$gt": float(BASE), "$lte": BASE + 5000.0}])
def test_a_range_past_2_52_costs_a_few_checks_a_bound(stores: Any, bounds: Any) -> None:
    hooks = CountingHooks(stores["edge-keyword"].backend, 4 * 2048)
    work = FilterWork()
    compile_filter(normalize_filter({"n": bounds}), hooks, lambda key: None, work)
    assert work.examined <= 8 * len(bounds)  # two readings, two checks a run end: never one check per integer
    assert work.listed <= 2 * 2048 * len(bounds)  # at most one float64 step on each side of each bound


@pytest.mark.parametrize("flt", [
    {"n": {"$in": [BASE + 1024 * i for i in range(100)]}},  # each held by float64: ~1023 neighbours listed each
    {"$or": [{"n": {"$gte": BASE + 1024 * i + 1}} for i in range(100)]},
])
def test_a_filter_that_would_list_too_many_integers_is_refused(stores: Any, flt: Any) -> None:
    hooks = CountingHooks(stores["edge-keyword"].backend, MAX_LISTED_INTEGERS + 2048)
    with pytest.raises(InvalidFilterError, match=str(MAX_LISTED_INTEGERS)):
        compile_filter(normalize_filter(flt), hooks, lambda key: None)
    with pytest.raises(InvalidFilterError):
        stores["edge-keyword"].search("alpha", 5, filter=flt)


@pytest.mark.parametrize("kind", ["edge-keyword", "edge-keyword-noindex", "edge-dense", "local-keyword"])
@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: repr(f)[:50])
def test_integers_around_2_62_match_exactly(stores: Any, kind: str, flt: Any) -> None:
    store = stores[kind]
    expected = sorted(i for i, meta in DOCS.items() if matches(meta, normalize_filter(flt)))
    assert store.ids_matching(flt) == expected


def test_the_runs_are_the_integers_either_reading_gets_wrong() -> None:
    # Against the brute force (every integer within three float64 steps of each bound, both readings).
    ops = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}
    rng = random.Random(7)
    for _ in range(60):
        bounds: dict[str, float | int] = {}
        for op in rng.sample(sorted(ops), rng.randint(1, 2)):
            e = rng.choice([53, 54, 60, 62, 63])
            b = rng.choice([2**e, 2**e - 1, 2**e + 1, rng.randrange(2 ** (e - 1), 2**e)]) * rng.choice([1, -1])
            b = max(-(2**63), min(2**63 - 1, b))
            bounds[op] = float(b) if rng.random() < 0.3 else b
        read = [(ops[op], v) for op, v in float_bounds(bounds).items()]
        wrong: set[int] = set()
        missed: set[int] = set()
        for b in bounds.values():
            reach = 3 * int(math.ulp(float(b))) + 3
            for p in range(max(-(2**63), int(b) - reach), min(2**63 - 1, int(b) + reach) + 1):
                inside = all(ops[op](p, v) for op, v in bounds.items())
                if inside != all(op(float(p), v) for op, v in read) or inside != all(op(p, v) for op, v in read):
                    (missed if inside else wrong).add(p)
        got = range_errors(bounds, FilterWork())
        assert [{p for a, z in runs for p in range(a, z + 1)} for runs in got] == [wrong, missed], bounds
@pytest.mark.parametrize("kind", ["edge-keyword", "edge-dense"])
def test_no_store_lock_is_held_while_a_filter_compiles(stores: Any, kind: str, monkeypatch: Any) -> None:
    store = stores[kind]
    backend = store.backend
    seen: list[tuple[bool, list[str]]] = []
    started: list[bool] = []
    real = backend.condition

    def other_caller() -> None:
        # Another thread: may it take the store's lock (as its own search would) while the compile runs?
        acquired = backend.lock.acquire(blocking=False)
        found: list[str] = []
        if acquired:
            try:
                found = store.ids_matching({"n": 3})
            finally:
                backend.lock.release()
        seen.append((acquired, found))

    def probing(field_key: str, test: Any) -> Any:
        if not started:  # once, in the first compile (the other caller's own compile probes nothing)
            started.append(True)
            thread = threading.Thread(target=other_caller)
            thread.start()
            thread.join()
        return real(field_key, test)

    monkeypatch.setattr(backend, "condition", probing)
    flt = {"n": {"$in": [BASE + 3 * i for i in range(300)]}}
    expected = sorted(i for i, meta in DOCS.items() if matches(meta, normalize_filter(flt)))
    assert store.ids_matching(flt) == expected
    assert seen == [(True, ["small"])]


