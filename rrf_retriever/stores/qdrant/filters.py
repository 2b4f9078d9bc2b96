"""Our filter tree (:mod:`rrf_retriever.scope.tree`) compiled to a Qdrant filter, exact, for every Qdrant store.

One compiler for both engines (qdrant-client: memory, path, server; qdrant-edge) and for the dense, keyword and
joint stores: it builds the filter through three hooks of the backend (:class:`FilterHooks`),
``condition(field_key, test)`` (a field condition: ``MatchValue`` for a str / int / bool, ``MatchAny`` for a list,
``Range`` for :class:`Bounds`, ``IsEmpty`` for :data:`IS_EMPTY`), ``filter(must=, should=, must_not=)`` and
``boolean(value)``.

What Qdrant does (qdrant-client 1.20 local mode and qdrant-edge 0.9, checked by
tests/unit/stores/qdrant/test_filters.py) and how each node stays exactly :func:`rrf_retriever.scope.tree.matches`:

* ``MatchValue`` / ``MatchAny`` are type-strict: ``"42"`` never matches 42, ``True`` never 1, but the integer 2
  never matches the float 2.0 either (unless the field has an *integer* payload index, which holds integral
  floats as integers). So an integer ``v`` is matched as ``Range(gte=v, lte=v)``: ranges take ints and floats and
  never bools or strings; exact for ``|v| < 2**53`` whatever the field's index. The price is on a field without a
  payload index (past ``max_auto_indexes``): each range costs a payload scan where one ``MatchAny`` cost one, so
  more than 8 integers there become a tree of ranges (binary: about ``2 * log2(n)`` checks a point instead of
  ``n``; on qdrant-edge, whose filters copy their parts, 16 children a node). A float index, which the stores
  build, serves a flat list of ranges directly. Integers past 2**53 are matched by one ``MatchAny`` (exact in
  int64 on every engine, whatever the index) and the floats equal to them (only those float64 holds) by ranges
  that exclude the integers rounding onto them.
* ``Range`` compares in float64 without an index (and with a float index), but exactly with an integer index and
  in local mode: beyond ``2**53`` an integer can round onto a bound. Such bounds are compiled with the integers
  that either reading gets wrong listed: ``(Range and not MatchAny(wrong)) or MatchAny(missed)``; they are runs
  within about one float64 step of a bound, found in closed form (:mod:`rrf_retriever.stores.qdrant.int_runs`),
  and a filter lists at most :data:`MAX_LISTED_INTEGERS` integers in all. Limit: a list
  value holding one of those integers (within one float64 step of the bound) next to another element that
  matches is missed (``must_not`` sees the whole list); never a leak. An integer payload index also drops
  non-integral floats from ranges: the stores replace it by a float index before a ``Range`` on that field.
* An empty ``should`` is TRUE in Qdrant, an empty ``MatchAny`` false: constants are folded here (``AnyOf(())``
  is false, ``AllOf(())`` true) and never reach Qdrant; a filter that can match nothing is :data:`NOTHING`.
* ``IsEmpty`` is true for a missing key, None and ``[]`` (not for ``{}``, ``[None]``): ``Exists`` is its negation.
* Arrays match when an element does (one level: ``[[2]]`` holds no 2), ``must_not`` is a complement over
  documents (a document without the key matches ``Not(Match)``), as in the reference.
* ``DateRange`` and ``Contains`` have no exact Qdrant condition (``DatetimeRange`` parses more string forms than
  :data:`~rrf_retriever.scope.dates.DATE_FORMS` on one engine than on the other, ``MatchText`` is token-based,
  not a substring): their points are resolved first (:mod:`rrf_retriever.stores.qdrant.resolve`: the reference
  test on the payloads of the points holding the key) and compiled as ``HasId`` of those points.
* What no filter can fix: qdrant-edge 0.9 stores about one float in nine that needs 16-17 significant digits one
  float64 step off (see :mod:`rrf_retriever.stores.qdrant.backend_edge`); a range bound within that step of such a value
  may read it on the wrong side.

Example:
    >>> from rrf_retriever.scope.tree import Match
    >>> index_plan(Match("n", (1, "a")))
    {'n': ('float', False)}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol

from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.scope.tree import AllOf, AnyOf, Contains, DateRange, Exists, FilterNode, Match, Not, Range
from rrf_retriever.stores.qdrant.int_runs import (
    FilterWork,
    Run,
    float_bounds,
    range_errors,
    rounding_run,
    run_size,
    subtract_values,
)

__all__ = [
    "IS_EMPTY",
    "MAX_LISTED_INTEGERS",
    "MAX_RESOLVED_LEAVES",
    "NOTHING",
    "RESOLVE",
    "Bounds",
    "FilterHooks",
    "compile_filter",
    "field_key",
    "filter_keys",
    "index_plan",
    "resolved_leaves",
]

#: Payload key of the metadata (langchain-qdrant's layout); filters address ``metadata.<key>``.
_METADATA_PREFIX = "metadata."
#: Below this magnitude float64 holds every integer: ranges are exact for ints and floats alike.
_EXACT_INTS = 2**53
#: Leaves of the tree of ranges; see :func:`compile_filter` for when a Match takes that form.
_LEAF = 4
#: The most integers one filter may list in ``MatchAny`` conditions (its integers past 2**53 and those float64
#: reads wrong next to them, at most 2048 around each such value or bound): past it the filter is refused.
MAX_LISTED_INTEGERS = 65_536


@dataclass(frozen=True)
class Bounds:
    """A ``Range`` condition's bounds, as floats (None: no bound)."""

    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


class _IsEmpty:
    def __repr__(self) -> str:
        return "IS_EMPTY"


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


#: The ``test`` of an ``IsEmpty`` field condition.
IS_EMPTY: Any = _IsEmpty()
#: What a store's scope compiles to when no document can match (the search is not sent).
NOTHING: Any = _Nothing()


class _Resolve:
    def __repr__(self) -> str:
        return "RESOLVE"


#: What :func:`compile_filter` answers for a filter with ``DateRange`` / ``Contains`` leaves and no ``resolved``
#: points for them: resolve them (:mod:`rrf_retriever.stores.qdrant.resolve`), then compile again.
RESOLVE: Any = _Resolve()
#: The leaves resolved to point ids before a filter is compiled.
RESOLVED_NODES = (DateRange, Contains)
#: The most distinct ``DateRange`` / ``Contains`` leaves one filter may hold in a Qdrant store: each costs a scroll
#: of the points holding its key (shared by the leaves of one key) and a ``HasId`` as long as its matches.
MAX_RESOLVED_LEAVES = 64


class FilterHooks(Protocol):
    """The engine's filter models (implemented by each backend); a backend may also say how many children a node
    of the tree of ranges holds (``tree_fanout``, 2 if it does not: see ``_Compiler.tree``)."""

    def condition(self, field_key: str, test: Any) -> Any: ...

    def filter(self, **parts: Any) -> Any: ...

    def boolean(self, value: bool) -> Any: ...

    def has_ids(self, pids: Iterable[str]) -> Any: ...


def field_key(key: str) -> str:
    """The payload path of a metadata key.

    Example:
        >>> field_key("lang")
        'metadata.lang'
    """
    return f"{_METADATA_PREFIX}{key}"


def compile_filter(
    node: FilterNode | None,
    hooks: FilterHooks,
    flat_limit: Callable[[str], int | None],
    work: FilterWork | None = None,
    resolved: Mapping[FilterNode, frozenset[str]] | None = None,
) -> Any:
    """``node`` as an engine condition, or True (no constraint) / False (nothing matches), or :data:`RESOLVE`.

    The work is bounded by the filter's size (at most ``MAX_FILTER_VALUES_TOTAL`` values, checked by the parser):
    an integer costs one range (copied into at most ``log16(n)`` levels of a tree on qdrant-edge); integers past
    2**53 cost a few float64 checks each (never one per integer near them) and at most
    :data:`MAX_LISTED_INTEGERS` listed integers in all.

    Args:
        node: A normalized filter tree, or None.
        hooks: The engine's models.
        flat_limit: For a key, how many integers a Match may list as a flat ``should`` of ranges before it becomes
            a tree of ranges (None: no limit). A numeric payload index serves a flat list fastest; without
            one every range is checked on every payload; qdrant-client local mode checks each in Python.
        work: Counts what the compile does (a fresh one if None).
        resolved: The point ids matching each of the filter's :func:`resolved_leaves`; without them a filter
            that has such leaves compiles to :data:`RESOLVE`.

    Raises:
        InvalidFilterError: the filter would list more than :data:`MAX_LISTED_INTEGERS` integers, or holds more
            than :data:`MAX_RESOLVED_LEAVES` date ranges and substrings.
    """
    if node is None:
        return True
    if resolved is None and (leaves := resolved_leaves(node)):
        if len(leaves) > MAX_RESOLVED_LEAVES:
            msg = (f"the filter holds {len(leaves)} date ranges and substrings ($contains, $icontains); a Qdrant "
                   f"store resolves at most {MAX_RESOLVED_LEAVES} per filter (each scans the points holding its "
                   "key); combine them or use equality")
            raise InvalidFilterError(msg)
        return RESOLVE
    return _Compiler(hooks, flat_limit, work if work is not None else FilterWork(), resolved or {}).node(node)


def resolved_leaves(node: FilterNode | None) -> list[DateRange | Contains]:
    """The ``DateRange`` and ``Contains`` leaves of a filter (each once), which Qdrant's stores resolve to point
    ids first.

    Example:
        >>> from rrf_retriever.scope.parse import normalize_filter
        >>> resolved_leaves(normalize_filter({"a": 1, "b": {"$contains": "x"}}))
        [Contains(key='b', text='x', ignore_case=False)]
    """
    leaves = [leaf for leaf in _leaves(node) if isinstance(leaf, RESOLVED_NODES)]
    return list(dict.fromkeys(leaves))


def index_plan(node: FilterNode | None) -> dict[str, tuple[str, bool]]:
    """The payload index each filtered key wants, ``{key: (kind, has_range)}``: ``"float"`` for numbers (it serves
    ranges and integer matches, which are ranges; an integer index would drop non-integral floats from ranges),
    else ``"keyword"`` for strings, else ``"bool"``. ``has_range``: the key is in a
    :class:`~rrf_retriever.scope.tree.Range`.

    Example:
        >>> from rrf_retriever.scope.parse import normalize_filter
        >>> index_plan(normalize_filter({"n": {"$gt": 1}, "lang": ["en", "fr"], "ok": True}))
        {'lang': ('keyword', False), 'n': ('float', True), 'ok': ('bool', False)}
    """
    kinds: dict[str, set[str]] = {}
    for leaf in _leaves(node):
        if isinstance(leaf, Range):
            kinds.setdefault(leaf.key, set()).add("range")
        elif isinstance(leaf, Match):
            found = kinds.setdefault(leaf.key, set())
            for v in leaf.values:
                found.add("bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "str")
    plan: dict[str, tuple[str, bool]] = {}
    for key, found in sorted(kinds.items()):
        kind = "float" if found & {"range", "int"} else "keyword" if "str" in found else "bool" if found else ""
        if kind:
            plan[key] = (kind, "range" in found)
    return plan


def filter_keys(node: FilterNode | None) -> set[str]:
    """The metadata keys a filter names.

    Example:
        >>> from rrf_retriever.scope.parse import normalize_filter
        >>> sorted(filter_keys(normalize_filter({"a": 1, "$or": [{"b": []}, {"c": {"$exists": True}}]})))
        ['a', 'b', 'c']
    """
    return {leaf.key for leaf in _leaves(node) if isinstance(leaf, (Match, Range, Exists, *RESOLVED_NODES))}


def _leaves(node: FilterNode | None) -> Iterator[FilterNode]:
    stack = [node] if node is not None else []
    while stack:
        item = stack.pop()
        if isinstance(item, (AllOf, AnyOf)):
            stack.extend(item.parts)
        elif isinstance(item, Not):
            stack.append(item.part)
        else:
            yield item


class _Compiler:
    def __init__(self, hooks: FilterHooks, flat_limit: Callable[[str], int | None], work: FilterWork,
                 resolved: Mapping[FilterNode, frozenset[str]]) -> None:
        self.hooks = hooks
        self.flat_limit = flat_limit
        self.work = work
        self.resolved = resolved
        self.fanout = max(2, int(getattr(hooks, "tree_fanout", 2)))

    def node(self, node: FilterNode) -> Any:
        if isinstance(node, RESOLVED_NODES):
            pids = self.resolved.get(node)
            return self.hooks.has_ids(pids) if pids else False
        if isinstance(node, Match):
            return self.match(node)
        if isinstance(node, Range):
            bounds = {op: getattr(node, op) for op in ("gt", "gte", "lt", "lte") if getattr(node, op) is not None}
            return self.range(field_key(node.key), bounds)
        if isinstance(node, Exists):
            return self.hooks.filter(must_not=[self.hooks.condition(field_key(node.key), IS_EMPTY)])
        if isinstance(node, Not):
            part = self.node(node.part)
            return (not part) if isinstance(part, bool) else self.hooks.filter(must_not=[part])
        if isinstance(node, AllOf):
            return self.combine(node.parts, "must", absorbing=False)
        return self.combine(node.parts, "should", absorbing=True)

    def combine(self, parts: tuple[FilterNode, ...], clause: str, *, absorbing: bool) -> Any:
        """AllOf (``absorbing`` False: a false part makes it false) or AnyOf (a true part makes it true)."""
        conditions = []
        for part in parts:
            compiled = self.node(part)
            if compiled is absorbing:
                return absorbing
            if compiled is not (not absorbing):
                conditions.append(compiled)
        if not conditions:
            return not absorbing  # all of nothing is true, any of nothing false (never an empty should)
        return conditions[0] if len(conditions) == 1 else self.hooks.filter(**{clause: conditions})

    def any_of(self, conditions: list[Any]) -> Any:
        if not conditions:
            return False
        return conditions[0] if len(conditions) == 1 else self.hooks.filter(should=conditions)

    def match(self, node: Match) -> Any:
        fk = field_key(node.key)
        strs = [v for v in node.values if isinstance(v, str)]
        ints = sorted({v for v in node.values if isinstance(v, int) and not isinstance(v, bool)})
        bools = [v for v in node.values if isinstance(v, bool)]
        alternatives = [self.hooks.condition(fk, strs if len(strs) > 1 else strs[0])] if strs else []
        alternatives += [self.hooks.condition(fk, self.hooks.boolean(b)) for b in bools]
        alternatives.append(self.points(node.key, [float(v) for v in ints if abs(v) < _EXACT_INTS]))
        big = [v for v in ints if abs(v) >= _EXACT_INTS]
        if big:
            alternatives += self.big_ints(node.key, big)
        return self.any_of([a for a in alternatives if a is not False])

    def points(self, key: str, values: list[float]) -> Any:
        """Equality with any of the sorted integral ``values``, as ranges (exact below 2**53)."""
        fk = field_key(key)
        limit = self.flat_limit(key)
        if limit is not None and len(values) > limit:  # guarded by the whole span: most points stop there
            span = self.hooks.condition(fk, Bounds(gte=values[0], lte=values[-1]))
            return self.hooks.filter(must=[span, self.tree(fk, values)])
        return self.any_of([self.hooks.condition(fk, Bounds(gte=v, lte=v)) for v in values])

    def big_ints(self, key: str, big: list[int]) -> list[Any]:
        """Equality with any of the sorted integers ``big`` (past 2**53): integers by ``MatchAny``, exact in
        int64 on every engine; floats equal to one of them (only those float64 holds) by ranges, which also take
        the integers rounding onto them: those not in ``big`` are excluded, listed (one run each, merged)."""
        fk = field_key(key)
        self.listed(len(big))
        alternatives = [self.hooks.condition(fk, big)]
        held = [float(v) for v in big if float(v) == v]  # floats past 2**53 are integers: no other float equals
        if held:
            runs = subtract_values([rounding_run(f, self.work) for f in held], big)
            ranges = self.points(key, held)
            wrong = self.integers(runs)
            alternatives.append(self.hooks.filter(must=[ranges], must_not=[self.hooks.condition(fk, wrong)])
                                if wrong else ranges)
        return alternatives

    def tree(self, fk: str, values: list[float]) -> Any:
        """Equality with any of the sorted integral ``values``: a tree of ranges, each node guarding its children
        (up to the engine's ``tree_fanout``, 2 by default) by their span, so a scanning engine checks about
        ``fanout * log_fanout(n)`` conditions a point instead of ``n``. qdrant-edge copies a filter's parts when
        it is built, so a binary tree copied every range ``log2(n)`` times (10,000 integers: ~0.3 s to compile;
        strings, one ``MatchAny``: 1 ms); its shallow tree (16) copies each about 4 times. Exact below 2**53:
        every range is."""
        if len(values) <= _LEAF:
            return self.any_of([self.hooks.condition(fk, Bounds(gte=v, lte=v)) for v in values])
        parts = min(self.fanout, -(-len(values) // _LEAF))
        cuts = [len(values) * i // parts for i in range(parts + 1)]
        children: list[Any] = []
        for low, high in pairwise(cuts):
            part = values[low:high]
            span = self.hooks.condition(fk, Bounds(gte=part[0], lte=part[-1]))
            children.append(self.hooks.filter(must=[span, self.tree(fk, part)]))
        return self.hooks.filter(should=children)

    def range(self, fk: str, bounds: dict[str, float | int]) -> Any:
        """A numeric element within every bound, exact for ints and floats whatever Qdrant's reading."""
        floats = Bounds(**float_bounds(bounds))
        wrong_runs, missed_runs = range_errors(bounds, self.work)
        wrong, missed = self.integers(wrong_runs), self.integers(missed_runs)
        branch: Any = False
        if not _empty(floats):
            branch = self.hooks.condition(fk, floats)
            if wrong:
                branch = self.hooks.filter(must=[branch], must_not=[self.hooks.condition(fk, wrong)])
        extra = self.hooks.condition(fk, missed) if missed else False
        return self.any_of([c for c in (branch, extra) if c is not False])

    def integers(self, runs: list[Run]) -> list[int]:
        """The integers of ``runs``, counted against the filter's cap before any is listed."""
        self.listed(sum(map(run_size, runs)))
        return [p for first, last in runs for p in range(first, last + 1)]

    def listed(self, count: int) -> None:
        self.work.listed += count
        if self.work.listed > MAX_LISTED_INTEGERS:
            msg = (f"the filter needs more than {MAX_LISTED_INTEGERS} integers listed to be exact past 2**53 (its "
                   "integers beyond 2**53 and those float64 rounds onto them); use fewer such values or bounds")
            raise InvalidFilterError(msg)


def _empty(b: Bounds) -> bool:
    low = b.gt if b.gt is not None else b.gte
    high = b.lt if b.lt is not None else b.lte
    if low is None or high is None:
        return False
    return low > high or (low == high and (b.gt is not None or b.lt is not None))
