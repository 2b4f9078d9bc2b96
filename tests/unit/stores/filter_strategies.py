"""Shared hypothesis strategies for the filter language, and the exactness check every store runs.

Every store compiles the filter tree of :mod:`rrf_retriever.scope.tree` its own way (SQL, a numpy mask, a Qdrant
``Filter``, a post-filter); :func:`rrf_retriever.scope.tree.matches` is the reference. These strategies draw metadata
and filters over a small key set (so filters hit), with the values that trip typed comparisons: numbers as ints
and floats, strings that look like numbers (``"42"``, ``"1e3"``, ``"0x1"``, ``" 7"``), bools next to 0 and 1,
lists (empty too), None, missing keys. :func:`assert_store_scopes_exactly` is the check.

Use (one store per example, cheap: a fresh ``:memory:`` store or an emptied one)::

    @settings(max_examples=100, deadline=None)
    @given(case=cases())
    def test_my_store(case):
        docs, flt, excluded = case
        assert_store_scopes_exactly(MyStore, docs, flt, excluded)

Public names: :data:`KEYS`, :func:`scalars`, :func:`metadata_values`, :func:`metadatas`, :func:`documents`,
:func:`filter_values`, :func:`range_bounds`, :func:`filters` (the mapping dialect), :func:`filter_nodes` (node
trees, including the ``AllOf(())`` / ``AnyOf(())`` edges the dialect cannot write), :func:`exclusions`,
:func:`values_in`, :func:`cases` (docs + a filter leaning on their values + exclusions: the usual entry),
:func:`doc_text`, :func:`assert_store_scopes_exactly`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import AllOf, AnyOf, Exists, FilterNode, Match, Not, Range, matches, scope_key

__all__ = [
    "KEYS",
    "QUERY_WORD",
    "assert_store_scopes_exactly",
    "cases",
    "doc_text",
    "documents",
    "exclusions",
    "filter_nodes",
    "filter_values",
    "filters",
    "metadata_values",
    "metadatas",
    "range_bounds",
    "scalars",
    "values_in",
]

#: Few keys, so random filters and random metadata meet.
KEYS = ("a", "b", "n", "tags")
#: The word every document text holds (:func:`doc_text`), so a keyword search for it reaches every document.
QUERY_WORD = "alpha"

_INTS = [-1, 0, 1, 2, 7, 42, 1000]
_FLOATS = [-1.5, 0.5, 2.0, 2.5, 42.0, 1e3]
_STRINGS = ["42", "1e3", "0x1", " 7", "1", "true", "en", ""]


def scalars() -> st.SearchStrategy[Any]:
    """A metadata scalar: small ints, floats (integral ones too: ``2.0`` is ``2``), number-like strings, bools."""
    return st.one_of(
        st.sampled_from(_INTS), st.sampled_from(_FLOATS), st.sampled_from(_STRINGS), st.booleans()
    )


def metadata_values() -> st.SearchStrategy[Any]:
    """A metadata value: a scalar, None, a list of 0 to 3 scalars, or (rarely) a mapping, which no value or
    range matches but which is present for ``$exists``."""
    return st.one_of(scalars(), scalars(), st.none(), st.lists(scalars(), max_size=3),
                     st.fixed_dictionaries({"x": scalars()}))


def metadatas() -> st.SearchStrategy[dict[str, Any]]:
    """One document's metadata: some of :data:`KEYS` (a missing key is common)."""
    return st.fixed_dictionaries({}, optional={k: metadata_values() for k in KEYS})


def doc_text(doc_id: str) -> str:
    """The text a check stores for ``doc_id``: the common query word plus a word of its own."""
    return f"{QUERY_WORD} {doc_id}"


def documents(min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[list[tuple[str, dict[str, Any]]]]:
    """``[(id, metadata), ...]`` with unique ids ``d0``, ``d1``, ..."""
    return st.lists(metadatas(), min_size=min_size, max_size=max_size).map(
        lambda metas: [(f"d{i}", m) for i, m in enumerate(metas)]
    )


# The values of the documents of the case being drawn (set by :func:`cases` around its filter draw), so filters
# hit. A module-level pool lets the filter strategies be built once: rebuilding them per draw cost 10x the time.
_POOL: list[Any] = []
_BASE_VALUES = st.one_of(
    st.sampled_from(_INTS), st.sampled_from([2.0, 42.0, 1e3]), st.sampled_from(_STRINGS), st.booleans()
)
_INDEX = st.integers(0, 2**16)


@st.composite
def _value(draw: st.DrawFn) -> Any:
    usable = [v for v in _POOL if not isinstance(v, float) or v.is_integer()]
    if usable and draw(_INDEX) % 3:
        return usable[draw(_INDEX) % len(usable)]
    return draw(_BASE_VALUES)


def filter_values() -> st.SearchStrategy[Any]:
    """A valid equality value (``$eq``, ``$in``, shorthand): ints, integral floats, strings, bools; inside
    :func:`cases`, two times in three one of the values its documents hold."""
    return _value()


_BASE_BOUNDS = st.one_of(st.sampled_from(_INTS), st.sampled_from(_FLOATS), st.sampled_from([-0.0, 6.5, 41.9]))


@st.composite
def _bound(draw: st.DrawFn) -> int | float:
    numbers = [v for v in _POOL if not isinstance(v, (bool, str))]
    if numbers and draw(_INDEX) % 2:
        return numbers[draw(_INDEX) % len(numbers)]  # a bound equal to a stored value: > vs >= matters
    return draw(_BASE_BOUNDS)


def range_bounds() -> st.SearchStrategy[int | float]:
    """A valid range bound: ints and floats (never a bool); inside :func:`cases`, half the time a number the
    documents hold."""
    return _bound()


def _value_lists() -> st.SearchStrategy[list[Any]]:
    return st.lists(filter_values(), max_size=3)


def _operators() -> st.SearchStrategy[dict[str, Any]]:
    """One key's operator mapping: 1 to 3 operators (several mean AND)."""
    single = st.one_of(
        st.fixed_dictionaries({"$eq": filter_values()}),
        st.fixed_dictionaries({"$ne": filter_values()}),
        st.fixed_dictionaries({"$in": _value_lists()}),
        st.fixed_dictionaries({"$nin": _value_lists()}),
        st.fixed_dictionaries({"$exists": st.booleans()}),
        st.sampled_from(["$gt", "$gte", "$lt", "$lte"]).flatmap(lambda op: st.fixed_dictionaries({op: range_bounds()})),
    )

    def merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in parts:
            out.update(p)
        return out

    ops = st.lists(single, min_size=1, max_size=3).map(merge)
    return st.one_of(ops, ops.map(lambda o: {"$not": o}))


def _key_condition() -> st.SearchStrategy[dict[str, Any]]:
    """``{key: shorthand value | shorthand list | operators}`` for 1 or 2 keys."""
    condition = st.one_of(filter_values(), _value_lists(), _operators(), _operators())
    one = st.dictionaries(st.sampled_from(KEYS), condition, min_size=1, max_size=1)
    return one | one | st.dictionaries(st.sampled_from(KEYS), condition, min_size=2, max_size=2)


@functools.cache
def filters(max_leaves: int = 6) -> st.SearchStrategy[dict[str, Any]]:
    """A random filter in the mapping dialect, nested with ``$and`` / ``$or`` / ``$not`` and mixed with keys
    (equality values: :func:`filter_values`)."""

    def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        lists = st.lists(children, min_size=1, max_size=3)
        logic = st.one_of(
            st.fixed_dictionaries({"$and": lists}),
            st.fixed_dictionaries({"$or": lists}),
            st.fixed_dictionaries({"$not": children}),
        )
        # Logic next to plain keys in one mapping: {"lang": "en", "$or": [...]}.
        mixed = st.tuples(logic, _key_condition()).map(lambda lk: {**lk[1], **lk[0]})
        return st.one_of(logic, mixed)

    return st.recursive(_key_condition(), extend, max_leaves=max_leaves)


@functools.cache
def filter_nodes(max_leaves: int = 6) -> st.SearchStrategy[FilterNode]:
    """Normalized trees: :func:`filters` normalized, or built directly (with empty ``AllOf`` / ``AnyOf``)."""
    leaves = st.one_of(
        st.builds(Match, st.sampled_from(KEYS), st.lists(filter_values(), max_size=3).map(
            lambda vs: normalize_filter({"k": vs}).values)),  # type: ignore[union-attr]
        st.builds(Range, st.sampled_from(KEYS), gte=range_bounds(), lt=st.none() | range_bounds()),
        st.builds(Range, st.sampled_from(KEYS), gt=range_bounds(), lte=st.none() | range_bounds()),
        st.builds(Exists, st.sampled_from(KEYS)),
        st.just(AllOf(())),
        st.just(AnyOf(())),
    )
    built = st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=3).map(lambda ps: AllOf(tuple(ps))),
            st.lists(children, max_size=3).map(lambda ps: AnyOf(tuple(ps))),
            children.map(Not),
        ),
        max_leaves=max_leaves,
    )
    return st.one_of(built, filters(max_leaves).map(normalize_filter))  # type: ignore[arg-type]


def values_in(docs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Any]:
    """Every scalar the documents hold (list elements too): a pool for :func:`filters`."""
    out: list[Any] = []
    for _, meta in docs:
        for value in meta.values():
            out.extend(v for v in (value if isinstance(value, list) else [value]) if scope_key(v) is not None)
    return out


_MANY_DOCS = documents(min_size=4, max_size=12)
_CASE_DOCS = st.one_of(documents(max_size=1), *[_MANY_DOCS] * 5)


@st.composite
def cases(draw: st.DrawFn, nodes: bool = True) -> tuple[list[tuple[str, dict[str, Any]]], Any, frozenset[str]]:
    """``(docs, filter, exclude_ids)``: 0 to 12 documents, then a filter (a mapping or, with ``nodes``, a node
    tree half the time) whose values lean on what the documents hold, then some exclusions."""
    docs = draw(_CASE_DOCS)
    _POOL[:] = values_in(docs)
    try:
        flt = draw(filter_nodes() if nodes and draw(st.booleans()) else filters())
    finally:
        _POOL.clear()
    excluded = draw(exclusions([d for d, _ in docs]))
    return docs, flt, excluded


def exclusions(doc_ids: Sequence[str]) -> st.SearchStrategy[frozenset[str]]:
    """Some of ``doc_ids``, maybe with an id that is not stored."""
    pool = [*doc_ids, "not-stored"]
    return st.frozensets(st.sampled_from(pool), max_size=min(4, len(pool)))


def _default_add(store: Any, ids: list[str], texts: list[str], metas: list[dict[str, Any]]) -> None:
    store.add(ids, texts, metas)


def _default_search(store: Any, limit: int, flt: Any, exclude_ids: frozenset[str]) -> list[Any]:
    return store.search(QUERY_WORD, limit, filter=flt, exclude_ids=exclude_ids)


def assert_store_scopes_exactly(
    store_factory: Callable[[], Any],
    docs: Sequence[tuple[str, Mapping[str, Any]]],
    node: Mapping[str, Any] | FilterNode | None,
    exclude_ids: frozenset[str] = frozenset(),
    *,
    add: Callable[[Any, list[str], list[str], list[dict[str, Any]]], None] = _default_add,
    search: Callable[[Any, int, Any, frozenset[str]], list[Any]] = _default_search,
    padding: int = 0,
    close: bool = True,
) -> None:
    """Add ``docs`` to a fresh store and assert its search returns exactly the documents
    :func:`rrf_retriever.scope.tree.matches` accepts, minus ``exclude_ids``; and, if the store has ``ids_matching``,
    that it returns exactly the matching ids, sorted (exclusions do not apply to it).

    Args:
        store_factory: Makes an empty store (called once).
        docs: ``[(id, metadata), ...]``; each is stored with :func:`doc_text` as its text.
        node: The filter as passed to the store: a mapping, a node, or None.
        exclude_ids: Ids the search must leave out.
        add: ``add(store, ids, texts, metadatas)`` (default ``store.add(ids, texts, metadatas)``).
        search: ``search(store, limit, filter, exclude_ids) -> hits`` (default: a keyword search for
            :data:`QUERY_WORD`); it must reach every document it is allowed to, given ``limit`` >= their number.
        padding: Extra documents ``pad0``... with no metadata and a text without the query word (rank-bm25 gives
            a word in every document a negative IDF; padding makes the query word rare enough to score > 0).
            They count for ``ids_matching`` (a ``$ne`` matches them) but never for the search.
        close: Call ``store.close()`` at the end if it has one.
    """
    ids = [doc_id for doc_id, _ in docs]
    metas = [dict(m) for _, m in docs]
    texts = [doc_text(doc_id) for doc_id in ids]
    pads = [f"pad{i}" for i in range(padding)]
    normalized = normalize_filter(node)
    store = store_factory()
    try:
        if ids or pads:
            add(store, ids + pads, texts + ["beta gamma"] * len(pads), metas + [{} for _ in pads])
        limit = max(1, len(ids) + len(pads))
        hits = search(store, limit, node, exclude_ids)
        got = [h.id for h in hits]
        assert len(got) == len(set(got)), f"duplicate hits {got}"
        expected = {i for i, m in zip(ids, metas) if i not in exclude_ids and matches(m, normalized)}
        leaked = set(got) - expected
        missed = expected - set(got)
        assert not leaked and not missed, (
            f"filter {node!r} -> {normalized!r}: leaked {sorted(leaked)}, missed {sorted(missed)}; "
            f"metadata {dict(docs)!r}; excluded {sorted(exclude_ids)}"
        )
        for hit in hits:
            assert matches(hit.metadata, normalized), (hit, normalized)
        if hasattr(store, "ids_matching"):
            everything = list(zip(ids, metas)) + [(p, {}) for p in pads]
            want = sorted(i for i, m in everything if matches(m, normalized))
            assert store.ids_matching(node) == want, (node, normalized, dict(everything))
            if want:
                assert store.ids_matching(node, limit=1) == want[:1]
    finally:
        if close and hasattr(store, "close"):
            store.close()
