"""Date ranges and substrings (``DateRange``, ``Contains``: ``$gte: "2024-01-01"``, ``$contains`` / ``$icontains``) in
every store kind: FTS5, BM25 (bm25s), and Qdrant's dense / keyword / joint stores on qdrant-client local mode and on
qdrant-edge. Each returns exactly the documents :func:`rrf_retriever.scope.tree.matches` accepts over the metadata as
inserted (``datetime`` / ``date`` objects, ISO strings in every form, offsets, strings that look like dates and are
not, numbers, lists), with logic around them; and the scope is applied before the store's top-k: documents that
score better but are out of scope never take a place.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import (
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    QdrantEdgeHybridStore,
    QdrantEdgeKeywordStore,
    QdrantHybridStore,
    QdrantKeywordStore,
)
from rrf_retriever.stores.qdrant.filters import MAX_RESOLVED_LEAVES
from tests.unit.stores.filter_strategies import QUERY_WORD, assert_store_scopes_exactly

_FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SLOW = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DIM = 16
STORES = ["fts5", "bm25", "local-dense", "edge-dense", "local-keyword", "edge-keyword", "local-joint-dense",
          "edge-joint-keyword"]
KEYS = ("at", "s")


def _make(kind: str, path: Path) -> Any:
    if kind == "fts5":
        return FTS5KeywordStore(":memory:")
    if kind == "bm25":
        return BM25KeywordStore()
    if kind == "local-dense":
        return QdrantDenseStore(HashingEmbedding(dim=DIM))
    if kind == "edge-dense":
        return QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path)
    if kind == "local-keyword":
        return QdrantKeywordStore()
    if kind == "local-joint-dense":
        return QdrantHybridStore(HashingEmbedding(dim=DIM))
    if kind == "edge-joint-keyword":
        return QdrantEdgeHybridStore(HashingEmbedding(dim=DIM), path=path, max_auto_indexes=0)
    return QdrantEdgeKeywordStore(path=path)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    made = {kind: _make(kind, tmp_path_factory.mktemp(kind)) for kind in STORES}
    yield made
    for store in made.values():
        store.close()


def _emptied(store: Any) -> Any:
    ids = store.ids_matching()
    if ids:
        store.delete(ids)
    return store


def _search(kind: str) -> Any:
    def dense(store: Any, limit: int, flt: Any, excluded: frozenset[str]) -> list[Any]:
        return store.search(store.embedding.embed_query(QUERY_WORD), limit, filter=flt, exclude_ids=excluded)

    def joint_keyword(store: Any, limit: int, flt: Any, excluded: frozenset[str]) -> list[Any]:
        return store.keyword_search(QUERY_WORD, limit, filter=flt, exclude_ids=excluded)

    def keyword(store: Any, limit: int, flt: Any, excluded: frozenset[str]) -> list[Any]:
        return store.search(QUERY_WORD, limit, filter=flt, exclude_ids=excluded)

    return joint_keyword if kind == "edge-joint-keyword" else dense if "dense" in kind else keyword


# -- values ------------------------------------------------------------------------------------------------
_OFFSETS = st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-23 * 60 - 59, 23 * 60 + 59))
_ODD_OFFSETS = st.builds(lambda s: timezone(timedelta(seconds=s)), st.integers(-86_399, 86_399))  # "+05:30:15"
_DATETIMES = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                          timezones=st.none() | _OFFSETS | _ODD_OFFSETS)
#: A few instants close together, so ranges cut between stored values (and bounds equal them).
_NEAR = st.sampled_from([datetime(2024, 1, 1), datetime(2024, 1, 1, 0, 0, 0, 1), datetime(2023, 12, 31, 23, 59),
                         datetime(2024, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))),
                         datetime(2024, 1, 1, tzinfo=timezone.utc), datetime(2024, 6, 1, 12, 30)])
_MOMENTS = st.one_of(_NEAR, _NEAR, _DATETIMES)


@st.composite
def _date_string(draw: st.DrawFn) -> str:
    """A moment written in one of the forms dates are read in (ISO with T or space, minutes only, fractions of 1
    to 6 digits, Z), or a string that looks like a date and is not one."""
    moment = draw(_MOMENTS).replace(tzinfo=None)
    head = moment.strftime("%Y-%m-%d")
    sep = draw(st.sampled_from(["T", " "]))
    form = draw(st.integers(0, 5))
    if form == 0:
        return head
    if form == 1:
        return f"{head}{sep}{moment:%H:%M}" + draw(st.sampled_from(["", "Z", "+01:00", "-11:30"]))
    if form == 2:
        digits = draw(st.integers(1, 6))
        return f"{head}{sep}{moment:%H:%M:%S}.{moment.microsecond:06d}"[:len(head) + 10 + digits] + draw(
            st.sampled_from(["", "Z", "+00:00", "+14:00"]))
    if form == 3:
        return moment.isoformat(sep=sep)
    return draw(st.sampled_from(["2024-02-30", "2024-13-01", "2024-1-5", " 2024-01-01", "2024-01-01T24:00",
                                 "2024-01-01T10", "2024-01-01Z", "\u0662\u0660\u0662\u0664-01-01", "20240101",
                                 "2024-01-01T10:00:00.1234567", "2024-01-01T10:00+1:00", "yesterday"]))


_ALPHABET = st.sampled_from(list("aAbBzZ%_'\"\\ \u00e9\u00c9\u0130i\u00df\u03a3\u03c3\u03c2\u2126\U0001f600\x00"))
_TEXTS = st.text(_ALPHABET, max_size=6)
_SCALARS = st.one_of(
    _MOMENTS, _MOMENTS.map(lambda m: m.date()), _MOMENTS.map(lambda m: m.isoformat()), _date_string(),
    _TEXTS, _TEXTS, st.sampled_from([1704067200, 1704067200000000, 0, 2.5, True])
)
_VALUES = st.one_of(_SCALARS, _SCALARS, st.lists(_SCALARS, max_size=3), st.none())
_DOCS = st.lists(st.fixed_dictionaries({}, optional={k: _VALUES for k in KEYS}), max_size=10).map(
    lambda metas: [(f"d{i}", m) for i, m in enumerate(metas)])


def _strings_in(docs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    out = []
    for _, meta in docs:
        for value in meta.values():
            for v in value if isinstance(value, list) else [value]:
                out.append(v.isoformat() if isinstance(v, date) else v if isinstance(v, str) else "")
    return out


@st.composite
def _needle(draw: st.DrawFn, pool: list[str]) -> str:
    """A substring of a stored string (case changed at times), or random text; never NUL (refused)."""
    if pool and draw(st.integers(0, 3)):
        text = draw(st.sampled_from(pool))
        i = draw(st.integers(0, len(text)))
        text = text[i:draw(st.integers(i, len(text)))]
        text = draw(st.sampled_from([text, text.upper(), text.lower(), text.swapcase()]))
    else:
        text = draw(_TEXTS)
    return text.replace("\x00", "")


def _bound(draw: st.DrawFn, pool: list[str]) -> Any:
    stored = [s for s in pool if _is_date(s)]
    if stored and draw(st.booleans()):
        return draw(st.sampled_from(stored))  # a bound equal to a stored value: > vs >= matters
    return draw(st.one_of(_MOMENTS, _MOMENTS.map(lambda m: m.date()), _MOMENTS.map(lambda m: m.isoformat())))


def _is_date(text: str) -> bool:
    try:
        normalize_filter({"k": {"$gte": text}})
    except InvalidFilterError:
        return False
    return True


@st.composite
def _leaf(draw: st.DrawFn, pool: list[str]) -> dict[str, Any]:
    key = draw(st.sampled_from(KEYS))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return {key: {"$contains": draw(_needle(pool))}}
    if kind == 1:
        return {key: {"$icontains": draw(_needle(pool))}}
    if kind == 2:  # typed equality next to them: a date string is never a number
        values = [v for v in pool if "\x00" not in v] or ["x"]  # a NUL is refused in a filter value
        return {key: draw(st.one_of(st.sampled_from([1704067200, 0, True]), st.sampled_from(values)))}
    ops = draw(st.lists(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), min_size=1, max_size=2, unique=True))
    return {key: {op: _bound(draw, pool) for op in ops}}


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any], frozenset[str]]:
    docs = draw(_DOCS)
    pool = _strings_in(docs)
    leaves = st.deferred(lambda: _leaf(pool))
    flt = draw(st.recursive(leaves, lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda fs: {"$and": fs}),
        st.lists(children, min_size=1, max_size=3).map(lambda fs: {"$or": fs}),
        children.map(lambda f: {"$not": f}),
    ), max_leaves=4))
    excluded = draw(st.frozensets(st.sampled_from([d for d, _ in docs] + ["nope"]), max_size=2))
    return docs, flt, excluded


def _check(stores: dict[str, Any], case: tuple[Any, Any, frozenset[str]]) -> None:
    docs, flt, excluded = case
    for kind, store in stores.items():
        try:
            assert_store_scopes_exactly(lambda s=store: _emptied(s), docs, flt, excluded, close=False,
                                        search=_search(kind))
        except AssertionError as exc:
            raise AssertionError(f"{kind}: {exc}") from None


@_FAST
@given(case=_cases())
def test_every_store_scopes_dates_and_substrings_exactly_like_the_reference(
    stores: dict[str, Any], case: tuple[Any, Any, frozenset[str]]
) -> None:
    _check(stores, case)


@pytest.mark.slow
@_SLOW
@given(case=_cases())
def test_every_store_scopes_dates_and_substrings_exactly_like_the_reference_600(
    stores: dict[str, Any], case: tuple[Any, Any, frozenset[str]]
) -> None:
    _check(stores, case)


# -- before the top-k ------------------------------------------------------------------------------------------
_BEFORE_TOP_K = [
    {"at": {"$gte": "2020-01-01", "$lt": datetime(2021, 1, 1)}},
    {"s": {"$contains": "50%_off"}},
    {"s": {"$icontains": "\u00c9T\u00c9"}},
    {"$or": [{"at": {"$lt": date(2000, 1, 1)}}, {"s": {"$contains": "'q'"}}]},
]


@pytest.mark.parametrize("flt", _BEFORE_TOP_K)
def test_the_scope_is_applied_before_each_stores_top_k(stores: dict[str, Any], flt: dict[str, Any]) -> None:
    """60 documents that match the query best are out of scope; the 3 in scope must fill a page of 3."""
    ids = [f"out{i}" for i in range(60)] + ["in0", "in1", "in2"]
    texts = [QUERY_WORD] * 60 + [f"{QUERY_WORD} zeta eta theta iota kappa {i}" for i in range(3)]
    outside = {"at": datetime(2022, 5, 1, 8), "s": "40% off, \u00e9t\u00e8 q"}
    inside = [{"at": datetime(2020, 3, 1, tzinfo=timezone(timedelta(hours=-5))), "s": "50%_off \u00e9t\u00e9 'q'"},
              {"at": "2020-12-31T23:59:59.999999", "s": "x 50%_off \u00c9T\u00c9 'q'"},
              {"at": [date(1999, 1, 1), "2020-06-01 10:00"], "s": ["no", "50%_off", "'q'", "\u00e9t\u00e9"]}]
    metas = [outside] * 60 + inside
    normalized = normalize_filter(flt)
    want = {i for i, m in zip(ids, metas) if matches(m, normalized)}
    assert want == {"in0", "in1", "in2"}
    for kind, store in stores.items():
        store = _emptied(store)
        store.add(ids, texts, metas)
        got = [h.id for h in _search(kind)(store, 3, flt, frozenset())]
        assert set(got) == want, (kind, flt, got)
        assert store.ids_matching(flt) == sorted(want), kind


def test_dates_come_back_as_iso_strings_and_equal_only_strings(stores: dict[str, Any]) -> None:
    naive, aware = datetime(2024, 1, 1, 9, 30), datetime(2024, 1, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    metas = [{"at": naive}, {"at": aware}, {"at": date(2024, 1, 1)}, {"at": 1704101400}, {"at": "2024-01-01"}]
    ids = [f"d{i}" for i in range(len(metas))]
    for kind, store in stores.items():
        store = _emptied(store)
        store.add(ids, [QUERY_WORD] * len(ids), metas)
        got = {r.id: r.metadata["at"] for r in store.get(ids)}
        assert got == {"d0": "2024-01-01T09:30:00", "d1": "2024-01-01T09:30:00+02:00", "d2": "2024-01-01",
                       "d3": 1704101400, "d4": "2024-01-01"}, kind
        assert store.ids_matching({"at": "2024-01-01"}) == ["d2", "d4"], kind  # typed: never the number
        assert store.ids_matching({"at": date(2024, 1, 1)}) == ["d2", "d4"], kind
        assert store.ids_matching({"at": naive}) == ["d0"], kind
        assert store.ids_matching({"at": 1704101400}) == ["d3"], kind  # a number never matches a date string
        # 09:30+02:00 is 07:30 UTC, before the naive 09:30 (read as UTC): instants, not the strings' order.
        assert store.ids_matching({"at": {"$gt": "2024-01-01T08:00:00Z"}}) == ["d0"], kind
        assert store.ids_matching({"at": {"$gte": date(2024, 1, 1), "$lt": naive}}) == ["d1", "d2", "d4"], kind


def test_a_qdrant_store_refuses_more_resolved_leaves_than_it_scans_for(stores: dict[str, Any]) -> None:
    # Each date range or substring costs a Qdrant store a scroll of its key's points and an id list: bounded.
    many = {"$or": [{"s": {"$contains": f"x{i}"}} for i in range(MAX_RESOLVED_LEAVES + 1)]}
    fine = {"$or": [{"s": {"$contains": f"x{i}"}} for i in range(MAX_RESOLVED_LEAVES)]}
    for kind, store in stores.items():
        store = _emptied(store)
        store.add(["a", "b"], [QUERY_WORD] * 2, [{"s": "x7"}, {"s": "y"}])
        assert store.ids_matching(fine) == ["a"], kind
        if kind in ("fts5", "bm25"):
            assert store.ids_matching(many) == ["a"], kind  # no scan per leaf there: no such bound
        else:
            with pytest.raises(InvalidFilterError, match="at most 64"):
                store.ids_matching(many)
