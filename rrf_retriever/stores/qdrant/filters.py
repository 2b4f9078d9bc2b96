"""Our filter tree (:mod:`rrf_retriever.scope.tree`) compiled to a Qdrant filter, exact, for every Qdrant store.

One compiler for both engines (qdrant-client: memory, path, server; qdrant-edge) and for the dense, keyword and
joint stores: it builds the filter through three hooks of the backend (:class:`FilterHooks`),
``condition(field_key, test)`` (a field condition: ``MatchValue`` for a str / int / bool, ``MatchAny`` for a list,
``Range`` for :class:`Bounds`, ``IsEmpty`` for :data:`IS_EMPTY`), ``filter(must=, should=, must_not=)`` and
``boolean(value)``.

What Qdrant does (qdrant-client 1.20 local mode and qdrant-edge 0.9, checked by tests/unit/stores/
test_qdrant_filters.py) and how each node stays exactly :func:`rrf_retriever.scope.tree.matches`:

* ``MatchValue`` / ``MatchAny`` are type-strict: ``"42"`` never matches 42, ``True`` never 1, but the integer 2
  never matches the float 2.0 either (unless the field has an *integer* payload index, which holds integral
  floats as integers). So an integer ``v`` is matched as ``Range(gte=v, lte=v)``: ranges take ints and floats and
  never bools or strings; exact for ``|v| < 2**53`` whatever the field's index. The price is on a field without a
  payload index (past ``max_auto_indexes``): each range costs a payload scan where one ``MatchAny`` cost one, so
  more than 8 integers there become a balanced tree of ranges (about ``2 * log2(n)`` checks a point instead of
  ``n``). A float index, which the stores build, serves a flat list of ranges directly.
* ``Range`` compares in float64 without an index (and with a float index), but exactly with an integer index and
  in local mode: beyond ``2**53`` an integer can round onto a bound. Such bounds are compiled with the integers
  that either reading gets wrong listed: ``(Range and not MatchAny(wrong)) or MatchAny(missed)``. Limit: a list
  value holding one of those integers (within one float64 step of the bound) next to another element that
  matches is missed (``must_not`` sees the whole list); never a leak. An integer payload index also drops
  non-integral floats from ranges: the stores replace it by a float index before a ``Range`` on that field.
* An empty ``should`` is TRUE in Qdrant, an empty ``MatchAny`` false: constants are folded here (``AnyOf(())``
  is false, ``AllOf(())`` true) and never reach Qdrant; a filter that can match nothing is :data:`NOTHING`.
* ``IsEmpty`` is true for a missing key, None and ``[]`` (not for ``{}``, ``[None]``): ``Exists`` is its negation.
* Arrays match when an element does (one level: ``[[2]]`` holds no 2), ``must_not`` is a complement over
  documents (a document without the key matches ``Not(Match)``), as in the reference.
* What no filter can fix: qdrant-edge 0.9 stores about one float in nine that needs 16-17 significant digits one
  float64 step off (see :mod:`rrf_retriever.stores.qdrant.backend_edge`); a range bound within that step of such a value
  may read it on the wrong side.

Example:
    >>> from rrf_retriever.scope.tree import Match
    >>> index_plan(Match("n", (1, "a")))
    {'n': ('float', False)}
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from rrf_retriever.scope.tree import AllOf, AnyOf, Exists, FilterNode, Match, Not, Range
from rrf_retriever.validate import INT64_MAX, INT64_MIN

__all__ = [
    "IS_EMPTY",
    "NOTHING",
    "Bounds",
    "FilterHooks",
    "compile_filter",
    "field_key",
    "filter_keys",
    "index_plan",
]

#: Payload key of the metadata (langchain-qdrant's layout); filters address ``metadata.<key>``.
_METADATA_PREFIX = "metadata."
#: Below this magnitude float64 holds every integer: ranges are exact for ints and floats alike.
_EXACT_INTS = 2**53
#: Leaves of the tree of ranges; see :func:`compile_filter` for when a Match takes that form.
_LEAF = 4


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


class FilterHooks(Protocol):
    """The engine's filter models (implemented by each backend)."""

    def condition(self, field_key: str, test: Any) -> Any: ...

    def filter(self, **parts: Any) -> Any: ...

    def boolean(self, value: bool) -> Any: ...


def field_key(key: str) -> str:
    """The payload path of a metadata key.

    Example:
        >>> field_key("lang")
        'metadata.lang'
    """
    return f"{_METADATA_PREFIX}{key}"


def compile_filter(node: FilterNode | None, hooks: FilterHooks, flat_limit: Callable[[str], int | None]) -> Any:
    """``node`` as an engine condition, or True (no constraint) / False (nothing matches).

    Args:
        node: A normalized filter tree, or None.
        hooks: The engine's models.
        flat_limit: For a key, how many integers a Match may list as a flat ``should`` of ranges before it becomes
            a balanced tree of ranges (None: no limit). A numeric payload index serves a flat list fastest; without
            one every range is checked on every payload; qdrant-client local mode checks each in Python.
    """
    if node is None:
        return True
    return _Compiler(hooks, flat_limit).node(node)


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
    return {leaf.key for leaf in _leaves(node) if isinstance(leaf, (Match, Range, Exists))}


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
    def __init__(self, hooks: FilterHooks, flat_limit: Callable[[str], int | None]) -> None:
        self.hooks = hooks
        self.flat_limit = flat_limit

    def node(self, node: FilterNode) -> Any:
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
        small = [v for v in ints if abs(v) < _EXACT_INTS]
        limit = self.flat_limit(node.key)
        if limit is not None and len(small) > limit:  # guarded by the whole span: most points stop there
            span = self.hooks.condition(fk, Bounds(gte=float(small[0]), lte=float(small[-1])))
            alternatives.append(self.hooks.filter(must=[span, self.tree(fk, small)]))
        else:
            alternatives += [self.hooks.condition(fk, Bounds(gte=float(v), lte=float(v))) for v in small]
        alternatives += [self.range(fk, {"gte": v, "lte": v}) for v in ints if abs(v) >= _EXACT_INTS]
        return self.any_of([a for a in alternatives if a is not False])

    def tree(self, fk: str, values: list[int]) -> Any:
        """Equality with any of the sorted ``values`` (all below 2**53): a balanced tree of ranges, so a scanning
        engine checks about ``2 * log2(n)`` conditions a point instead of ``n``. Exact: every range is."""
        if len(values) <= _LEAF:
            return self.any_of([self.hooks.condition(fk, Bounds(gte=float(v), lte=float(v))) for v in values])
        mid = len(values) // 2
        halves = []
        for half in (values[:mid], values[mid:]):
            span = self.hooks.condition(fk, Bounds(gte=float(half[0]), lte=float(half[-1])))
            halves.append(self.hooks.filter(must=[span, self.tree(fk, half)]))
        return self.hooks.filter(should=halves)

    def range(self, fk: str, bounds: dict[str, float | int]) -> Any:
        """A numeric element within every bound, exact for ints and floats whatever Qdrant's reading."""
        floats = _float_bounds(bounds)
        wrong, missed = _window_errors(bounds, floats)
        branch: Any = False
        if not _empty(floats):
            branch = self.hooks.condition(fk, floats)
            if wrong:
                branch = self.hooks.filter(must=[branch], must_not=[self.hooks.condition(fk, wrong)])
        extra = self.hooks.condition(fk, missed) if missed else False
        return self.any_of([c for c in (branch, extra) if c is not False])


def _float_bounds(bounds: dict[str, float | int]) -> Bounds:
    """Float bounds with ``x op b`` equal to ``x op' b'`` for every float ``x``; the tightest on each side."""
    lower: tuple[float, bool] | None = None  # (value, strict)
    upper: tuple[float, bool] | None = None
    for op, b in bounds.items():
        strict = op in ("gt", "lt")
        f = float(b)
        if isinstance(b, int) and f != b:  # an int float64 cannot hold: floats are beyond it or below it
            below, above = (math.nextafter(f, -math.inf), f) if f > b else (f, math.nextafter(f, math.inf))
            f, strict = (above, False) if op in ("gt", "gte") else (below, False)
        if op in ("gt", "gte"):
            if lower is None or f > lower[0] or (f == lower[0] and strict):
                lower = (f, strict)
        elif upper is None or f < upper[0] or (f == upper[0] and strict):
            upper = (f, strict)
    return Bounds(
        gt=lower[0] if lower and lower[1] else None,
        gte=lower[0] if lower and not lower[1] else None,
        lt=upper[0] if upper and upper[1] else None,
        lte=upper[0] if upper and not upper[1] else None,
    )


def _empty(b: Bounds) -> bool:
    low = b.gt if b.gt is not None else b.gte
    high = b.lt if b.lt is not None else b.lte
    if low is None or high is None:
        return False
    return low > high or (low == high and (b.gt is not None or b.lt is not None))


_OPS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def _window_errors(bounds: dict[str, float | int], floats: Bounds) -> tuple[list[int], list[int]]:
    """The integers near a bound beyond 2**52 that Qdrant's range on ``floats`` gets wrong, read in float64 (no
    index, float index, server) or exactly (local mode, integer index): ``(wrong: matched but outside,
    missed: inside but not matched)``. Elsewhere both readings agree with the exact one: an integer is within
    half a float64 step of its float64 value, and ``floats`` within one step of the bounds."""
    exact = [(_OPS[op], b) for op, b in bounds.items()]
    read = [(_OPS[op], b) for op, b in (("gt", floats.gt), ("gte", floats.gte), ("lt", floats.lt),
                                         ("lte", floats.lte)) if b is not None]
    wrong: set[int] = set()
    missed: set[int] = set()
    for b in bounds.values():
        if abs(b) < 2**52:
            continue
        reach = 2 * int(math.ulp(float(b))) + 2
        centre = int(b)
        for p in range(max(INT64_MIN, centre - reach), min(INT64_MAX, centre + reach) + 1):
            inside = all(op(p, v) for op, v in exact)
            f = float(p)
            if inside != all(op(f, v) for op, v in read) or inside != all(op(p, v) for op, v in read):
                (missed if inside else wrong).add(p)
    return sorted(wrong), sorted(missed)
