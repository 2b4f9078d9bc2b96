"""The parser and validator of the filter language (the tree it builds is :mod:`rrf_retriever.scope.tree`'s):
a filter mapping (shorthand, ``$`` operators, logic) or a node tree -> a validated, canonical node tree.

Canonical: a mapping's keys in sorted order, a key's operators in sorted order with its range bounds merged into
one :class:`~rrf_retriever.scope.tree.Range`, equality values deduplicated (``2.0`` is ``2``), so equal filters give
equal trees and a tree given back passes through unchanged (the same object).

Example:
    >>> parse({"n": {"$lt": 5, "$gte": 1}})
    Range(key='n', gt=None, gte=1, lt=5, lte=None)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import date
from typing import NamedTuple

from rrf_retriever.errors import InvalidArgumentError, InvalidFilterError, InvalidTypeError
from rrf_retriever.scope.dates import date_micros, iso_value
from rrf_retriever.scope.dialects import refuse_foreign
from rrf_retriever.scope.tree import (
    AllOf,
    AnyOf,
    Contains,
    DateRange,
    Exists,
    FilterNode,
    FilterSpec,
    FilterValue,
    Match,
    Not,
    Range,
)
from rrf_retriever.validate import INT64_MAX, INT64_MIN, check_ids, check_unicode

__all__ = [
    "MAX_DEPTH",
    "MAX_FILTER_VALUES",
    "MAX_FILTER_VALUES_TOTAL",
    "MAX_NODES",
    "Scope",
    "normalize_exclude_ids",
    "normalize_filter",
    "normalize_scope",
    "parse",
]

# Keys name metadata fields. Stores bind them as parameters, but a tight pattern also keeps them portable
# (Qdrant payload paths, JSON paths) and readable in errors.
_KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$")
#: At most this many values in one list (``$in``, shorthand), conditions in one filter, levels of nesting.
MAX_FILTER_VALUES = 10_000
MAX_NODES = 10_000
MAX_DEPTH = 32
#: At most this many values in all the lists of one filter together: each is work for every store (a range
#: condition in Qdrant, a bound parameter in SQLite). 8 lists of 10,000 small integers (471 KB) took ~21 s on a
#: 50-document index and slowed every other query meanwhile.
MAX_FILTER_VALUES_TOTAL = 10_000
_RANGE_OPS = ("$gt", "$gte", "$lt", "$lte")
#: Substring operators: ``$contains`` (case-sensitive) and ``$icontains`` (``str.lower()`` on both sides).
_TEXT_OPS = ("$contains", "$icontains")
_KEY_OPS = frozenset({"$eq", "$ne", "$in", "$nin", "$exists", "$not", *_RANGE_OPS, *_TEXT_OPS})
_LOGIC_OPS = frozenset({"$and", "$or", "$not"})
_LISTS = (list, tuple, set, frozenset)
_NODES = (Match, Range, DateRange, Contains, Exists, AllOf, AnyOf, Not)


def _fail(msg: str) -> InvalidFilterError:
    return InvalidFilterError(msg)


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not _KEY_PATTERN.match(key):
        msg = (
            f"filter key {key!r} is not a metadata field name "
            "(letters, digits, '_' and '-', starting with a letter or '_', at most 128 characters)"
        )
        raise _fail(msg)
    return key


def _check_filter_value(key: str, value: object) -> FilterValue:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Qdrant stores integers as int64 and SQLite as 64-bit too: refuse what neither can hold.
        if not INT64_MIN <= value <= INT64_MAX:
            msg = f"filter value for {key!r} is out of the 64-bit integer range: {value}"
            raise _fail(msg)
        return value
    if isinstance(value, date):
        return iso_value(value)  # compared as the ISO 8601 string a date is stored as
    if isinstance(value, str):
        if "\x00" in value:
            msg = f"filter value for {key!r} contains a NUL character"
            raise _fail(msg)
        return check_unicode(value, f"filter value for {key!r}", InvalidFilterError)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return _check_filter_value(key, int(value))
        msg = (f"filter value for {key!r} must be a string, an integer or a boolean, not the float {value!r} "
               "(compare fractions with $gte / $lte)")
        raise _fail(msg)
    if value is None:
        msg = f"filter value for {key!r} is None: use {{{key!r}: {{'$exists': False}}}} for a missing value"
        raise _fail(msg)
    msg = f"filter value for {key!r} must be a string, an integer or a boolean, not {type(value).__name__}"
    raise _fail(msg)


def _check_values(key: str, raw: Iterable[object], size: int, budget: _Budget) -> tuple[FilterValue, ...]:
    if size > MAX_FILTER_VALUES:
        msg = f"filter key {key!r} lists {size} values; at most {MAX_FILTER_VALUES} are allowed"
        raise _fail(msg)
    budget.take_values(key, size)
    checked: list[FilterValue] = []
    seen: set[tuple[type, FilterValue]] = set()
    for value in raw:
        v = _check_filter_value(key, value)
        tag = (type(v), v)
        if tag not in seen:  # duplicates dropped, first order kept: equal filters compare equal
            seen.add(tag)
            checked.append(v)
    return tuple(checked)


def _check_bound(key: str, op: str, value: object) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{op} on {key!r} needs a number, not {type(value).__name__} {value!r:.60}"
        raise _fail(msg)
    if isinstance(value, float) and not math.isfinite(value):
        msg = f"{op} on {key!r} needs a finite number, not {value!r}"
        raise _fail(msg)
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        msg = f"{op} on {key!r}: {value} is out of the 64-bit integer range"
        raise _fail(msg)
    return value


class _Budget:
    """Counts nodes and listed values across one filter so a hostile one is refused before it costs anything."""

    def __init__(self) -> None:
        self.nodes = 0
        self.values = 0

    def take_values(self, key: str, count: int) -> None:
        self.values += count
        if self.values > MAX_FILTER_VALUES_TOTAL:
            msg = (f"the filter lists more than {MAX_FILTER_VALUES_TOTAL} values in all (the list on {key!r} "
                   "passes it); filter on fewer values")
            raise _fail(msg)

    def take(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            msg = f"the filter has more than {MAX_NODES} conditions"
            raise _fail(msg)
        if depth > MAX_DEPTH:
            msg = f"the filter is nested more than {MAX_DEPTH} levels deep"
            raise _fail(msg)


def _parts(op: str, raw: object, budget: _Budget, depth: int) -> tuple[FilterNode, ...]:
    if not isinstance(raw, (list, tuple)):
        msg = f"{op} takes a list of filters, not {type(raw).__name__}"
        raise _fail(msg)
    if not raw:
        # Mongo refuses it too: an empty $or would silently match nothing, an empty $and everything.
        msg = f"{op} needs at least one filter, got an empty list"
        raise _fail(msg)
    if len(raw) > MAX_FILTER_VALUES:
        msg = f"{op} lists {len(raw)} filters; at most {MAX_FILTER_VALUES} are allowed"
        raise _fail(msg)
    return tuple(_parse(f, budget, depth + 1, f"an element of {op}") for f in raw)


def _parse(spec: object, budget: _Budget, depth: int, where: str = "filter") -> FilterNode:
    """A non-empty filter mapping (or a node) -> one node."""
    if isinstance(spec, _NODES):
        return _check_node(spec, budget, depth)
    if not isinstance(spec, Mapping):
        msg = f"{where} must be a mapping of metadata field to value(s), not {type(spec).__name__}"
        raise _fail(msg)
    if not spec:
        msg = f"{where} is an empty filter {{}}; drop it instead"
        raise _fail(msg)
    budget.take(depth)
    if len(spec) > MAX_NODES:  # refused before sorting a hostile mapping's keys
        msg = f"{where} has {len(spec)} keys; a filter holds at most {MAX_NODES} conditions"
        raise _fail(msg)
    nodes: list[FilterNode] = []
    for key in sorted(spec, key=str):
        raw = spec[key]
        if isinstance(key, str) and key.startswith("$"):
            if key not in _LOGIC_OPS:
                msg = f"unknown filter operator {key!r}; use $and, $or or $not here, or a field name"
                raise _fail(msg)
            if key == "$not":
                nodes.append(Not(_parse(raw, budget, depth + 1, "$not")))
            else:
                parts = _parts(key, raw, budget, depth)
                nodes.append(AllOf(parts) if key == "$and" else AnyOf(parts))
        else:
            nodes.append(_parse_key(_check_key(key), raw, budget, depth + 1))
    return nodes[0] if len(nodes) == 1 else AllOf(tuple(nodes))


def _parse_key(key: str, raw: object, budget: _Budget, depth: int) -> FilterNode:
    budget.take(depth)
    if isinstance(raw, _LISTS):
        return Match(key, _check_values(key, raw, len(raw), budget))
    if not isinstance(raw, Mapping):
        return Match(key, (_check_filter_value(key, raw),))
    if not raw:
        msg = f"filter for {key!r} is an empty mapping: name an operator ($eq, $in, $gt, ...)"
        raise _fail(msg)
    nodes: list[FilterNode] = []
    bounds: dict[str, object] = {}
    for op in sorted(raw, key=str):
        arg = raw[op]
        if not isinstance(op, str) or op not in _KEY_OPS:
            msg = (f"unknown filter operator {op!r} on {key!r}; use one of "
                   f"{', '.join(sorted(_KEY_OPS))} (a plain mapping is not a filter value)")
            raise _fail(msg)
        if op in _RANGE_OPS:
            bounds[op[1:]] = arg  # checked by _range_node: numbers, or dates
        elif op in _TEXT_OPS:
            nodes.append(_contains_node(key, op, arg))
        elif op in ("$eq", "$ne"):
            if isinstance(arg, (*_LISTS, Mapping)):
                msg = f"{op} on {key!r} takes one value, not a {type(arg).__name__} (use $in / $nin for several)"
                raise _fail(msg)
            node: FilterNode = Match(key, (_check_filter_value(key, arg),))
            nodes.append(node if op == "$eq" else Not(node))
        elif op in ("$in", "$nin"):
            if not isinstance(arg, _LISTS):
                msg = f"{op} on {key!r} takes a list of values, not {type(arg).__name__}"
                raise _fail(msg)
            node = Match(key, _check_values(key, arg, len(arg), budget))
            nodes.append(node if op == "$in" else Not(node))
        elif op == "$exists":
            if not isinstance(arg, bool):
                msg = f"$exists on {key!r} takes true or false, not {arg!r:.60}"
                raise _fail(msg)
            nodes.append(Exists(key) if arg else Not(Exists(key)))
        else:  # "$not": the operators of this key, negated
            if not isinstance(arg, Mapping) or not arg:
                msg = f"$not on {key!r} takes a mapping of operators, e.g. {{'$gt': 5}}, not {arg!r:.60}"
                raise _fail(msg)
            nodes.append(Not(_parse_key(key, arg, budget, depth + 1)))
    if bounds:
        nodes.append(_range_node(key, bounds))
    return nodes[0] if len(nodes) == 1 else AllOf(tuple(nodes))


def _check_node(node: FilterNode, budget: _Budget, depth: int) -> FilterNode:
    """Validate a node tree; returns it unchanged (the same object) unless a value needed canonicalizing."""
    budget.take(depth)
    if isinstance(node, Match):
        key = _check_key(node.key)
        if not isinstance(node.values, tuple):
            msg = f"Match.values for {key!r} must be a tuple, not {type(node.values).__name__}"
            raise _fail(msg)
        values = _check_values(key, node.values, len(node.values), budget)
        return node if values == node.values and all(map(_same_type, values, node.values)) else Match(key, values)
    if isinstance(node, Range):
        key = _check_key(node.key)
        bounds = {op: getattr(node, op) for op in ("gt", "gte", "lt", "lte") if getattr(node, op) is not None}
        if not bounds:
            msg = f"Range on {key!r} has no bound"
            raise _fail(msg)
        for op, value in bounds.items():
            _check_bound(key, f"${op}", value)
        return node
    if isinstance(node, DateRange):
        key = _check_key(node.key)
        dated = {op: getattr(node, op) for op in ("gt", "gte", "lt", "lte") if getattr(node, op) is not None}
        checked = _range_node(key, dated)
        if not isinstance(checked, DateRange):
            msg = f"DateRange on {key!r} needs ISO 8601 date bounds, not {dated!r:.60}"
            raise _fail(msg)
        return node if checked == node else checked
    if isinstance(node, Contains):
        key = _check_key(node.key)
        if not isinstance(node.ignore_case, bool):
            msg = f"Contains.ignore_case on {key!r} must be a bool, not {node.ignore_case!r:.60}"
            raise _fail(msg)
        checked_text = _contains_node(key, "$icontains" if node.ignore_case else "$contains", node.text)
        return node if checked_text == node else checked_text
    if isinstance(node, Exists):
        _check_key(node.key)
        return node
    if isinstance(node, Not):
        part = _check_node(node.part, budget, depth + 1)
        return node if part is node.part else Not(part)
    if isinstance(node, (AllOf, AnyOf)):
        if not isinstance(node.parts, tuple) or len(node.parts) > MAX_FILTER_VALUES:
            msg = f"{type(node).__name__}.parts must be a tuple of at most {MAX_FILTER_VALUES} nodes"
            raise _fail(msg)
        parts = tuple(_check_node(p, budget, depth + 1) for p in node.parts)
        return node if all(a is b for a, b in zip(parts, node.parts)) else type(node)(parts)
    msg = (f"a filter node must be Match, Range, DateRange, Contains, Exists, AllOf, AnyOf or Not, not "
           f"{type(node).__name__}")
    raise _fail(msg)


def _range_node(key: str, bounds: dict[str, object]) -> Range | DateRange:
    """``{"gte": bound, ...}`` -> a :class:`Range` of numbers, or a :class:`DateRange` when a bound is a date (an
    ISO 8601 string, a ``datetime`` or a ``date``; every bound must be one then)."""
    if not any(isinstance(v, (str, date)) for v in bounds.values()):
        return Range(key, **{op: _check_bound(key, f"${op}", v) for op, v in bounds.items()})
    dated: dict[str, str] = {}
    for op, value in bounds.items():
        text = iso_value(value) if isinstance(value, date) else value
        if not isinstance(text, str) or date_micros(text) is None:
            need = "a number or an ISO 8601 date" if isinstance(text, str) else "an ISO 8601 date like its other bounds"
            msg = (f"${op} on {key!r} needs {need} (e.g. '2024-01-31', '2024-01-31T08:00:00', "
                   f"'2024-01-31T08:00:00+02:00', a datetime or a date), not {value!r:.60}")
            raise _fail(msg)
        dated[op] = text
    return DateRange(key, **dated)


def _contains_node(key: str, op: str, arg: object) -> Contains:
    """``{"$contains": "text"}`` / ``{"$icontains": "text"}`` -> :class:`Contains` (one string, checked as a filter
    value is: it counts as one)."""
    if not isinstance(arg, str):
        msg = f"{op} on {key!r} takes one string (a substring of the value), not {type(arg).__name__} {arg!r:.60}"
        raise _fail(msg)
    text = _check_filter_value(key, arg)
    return Contains(key, str(text), ignore_case=op == "$icontains")


def _same_type(a: object, b: object) -> bool:
    return type(a) is type(b)


def parse(spec: object) -> FilterNode:
    """A non-empty filter mapping or a node tree -> the validated, canonical node tree.

    Raises:
        InvalidFilterError: see :func:`normalize_filter`.

    Example:
        >>> parse({"b": 1, "a": ["x", "x"]})
        AllOf(parts=(Match(key='a', values=('x',)), Match(key='b', values=(1,))))
    """
    refuse_foreign(spec)  # another store's dialect is named, never misread as field names
    return _parse(spec, _Budget(), 1)


def normalize_filter(filter: FilterSpec | FilterNode | None) -> FilterNode | None:
    """Validate a metadata filter and bring it to the node tree every store compiles.

    Args:
        filter: A filter mapping (shorthand, ``$`` operators, ``$and`` / ``$or`` / ``$not``), a
            :data:`FilterNode` (validated, then returned unchanged), or None.

    Returns:
        The node, or None for no filter (``None`` or ``{}``). A mapping with several keys becomes an
        :class:`AllOf` of their nodes in sorted key order; with one key, that key's node.

    Raises:
        InvalidFilterError: an unknown operator, a bound that is not a finite number (a bool is not one) or an
            ISO 8601 date, a value that is not str, int, bool, date or datetime (None included), a ``$contains``
            / ``$icontains`` that is not one string, a key that is not a field name, an empty ``$and`` /
            ``$or`` list or nested ``{}``, more than 32 levels, 10,000 conditions, 10,000 values in one list or
            :data:`MAX_FILTER_VALUES_TOTAL` (10,000) in all the lists together.

    Example:
        >>> normalize_filter({"b": 1, "a": ["x", "x", "y"]})
        AllOf(parts=(Match(key='a', values=('x', 'y')), Match(key='b', values=(1,))))
        >>> normalize_filter({"n": {"$gte": 1, "$lt": 5}, "$not": {"tag": "draft"}})
        AllOf(parts=(Not(part=Match(key='tag', values=('draft',))), Range(key='n', gt=None, gte=1, lt=5, lte=None)))
    """
    if filter is None:
        return None
    if isinstance(filter, Mapping) and not filter:
        return None
    return parse(filter)


def normalize_exclude_ids(exclude_ids: Iterable[str] | None) -> frozenset[str]:
    """Validate ``exclude_ids``: an iterable of string ids (a single string is refused, it is not a list).

    Example:
        >>> sorted(normalize_exclude_ids(["a", "b", "a"]))
        ['a', 'b']
    """
    if exclude_ids is None:
        return frozenset()
    return frozenset(check_ids(exclude_ids, "exclude_ids"))


#: The classes of a parsed filter tree's nodes (a hand-built :class:`Scope` is checked against them).
_NODES = (Match, Range, DateRange, Contains, Exists, AllOf, AnyOf, Not)


class Scope(NamedTuple):
    """A validated scope: the parsed filter and the excluded ids. Only :func:`normalize_scope` makes one.

    The engine validates a query's scope once, at the door (its ``SearchOptions``), and each leg's
    :class:`~rrf_retriever.stores.base.SearchRequest` carries it to the store's typed entry, which reads it as it is:
    the filter is parsed once per query, not once per leg. A store's ``search`` door (:func:`normalize_scope`)
    passes one through unchecked.

    Example:
        >>> scope = normalize_scope({"s": [1, 2]}, ["x"])
        >>> normalize_scope(scope) is scope
        True
    """

    filter: FilterNode | None
    exclude_ids: frozenset[str]


def normalize_scope(
    filter: FilterSpec | FilterNode | Scope | None,
    exclude_ids: Iterable[str] | None = None,
) -> Scope:
    """Validate and normalise a store call's scope; a :class:`Scope` (already validated) passes through.

    Raises:
        InvalidFilterError: a malformed filter.
        InvalidTypeError: ``exclude_ids`` is not a list of ids; a :class:`Scope` built by hand of other parts than
            a parsed filter (or None) and a frozenset of string ids (a check of their types, not a second parse).
        InvalidArgumentError: ``exclude_ids`` beside a :class:`Scope` (it holds its own).

    Example:
        >>> normalize_scope({"s": 1}, ["x"])
        Scope(filter=Match(key='s', values=(1,)), exclude_ids=frozenset({'x'}))
    """
    if isinstance(filter, Scope):
        if exclude_ids:  # an empty list beside it is no second list
            msg = "exclude_ids cannot be given beside a Scope: it holds its own"
            raise InvalidArgumentError(msg)
        parsed, excluded = filter
        if (not (parsed is None or isinstance(parsed, _NODES)) or not isinstance(excluded, frozenset)
                or not all(isinstance(i, str) for i in excluded)):  # an int id would exclude nothing, silently
            msg = (f"a Scope holds a parsed filter (or None) and a frozenset of string ids, not "
                   f"{type(parsed).__name__} and {type(excluded).__name__}: make one with normalize_scope(filter, "
                   f"exclude_ids)")
            raise InvalidTypeError(msg)
        return filter
    return Scope(normalize_filter(filter), normalize_exclude_ids(exclude_ids))
