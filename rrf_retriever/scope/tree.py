"""The scope of a search: the metadata filter language and the excluded ids.

One definition for every store: :func:`normalize_filter` validates what users pass and brings it to a tree of
frozen nodes (:class:`Match`, :class:`Range`, :class:`Exists`, :class:`AllOf`, :class:`AnyOf`, :class:`Not`);
:func:`matches` is the reference semantics of that tree (in-memory stores and post-filtered legs use it; the
SQL, numpy and Qdrant compilers are tested against it); :func:`scope_key` is the typed comparison (``"42"`` is
never ``42``, ``True`` never ``1``, ``2`` is ``2.0``).

The language (Mongo-style, the dialect LangChain vector stores use):

* shorthand ``{"session_id": [1, 2], "lang": "en"}``: every key must match; a list means any of its values;
* per key ``{"$eq": v}``, ``{"$ne": v}``, ``{"$in": [...]}``, ``{"$nin": [...]}``, ``{"$gt" | "$gte" | "$lt" |
  "$lte": number}``, ``{"$exists": bool}``, ``{"$not": {ops}}``; several operators on one key mean AND;
* logic ``{"$and": [f, ...]}``, ``{"$or": [f, ...]}``, ``{"$not": f}``, mixing freely with keys;
* dates: ``{"$gte" | ...: "2024-01-01T00:00:00"}`` (or a ``datetime`` / ``date``) is a :class:`DateRange` over ISO
  8601 strings, compared as instants (:mod:`rrf_retriever.scope.dates`);
* substrings: ``{"$contains": "err"}`` / ``{"$icontains": "ERR"}``, a :class:`Contains` (LlamaIndex's
  ``text_match`` / ``text_match_insensitive``).

``$ne`` / ``$nin`` / ``$exists: false`` / ``$not`` are complements over documents: they match a document that
lacks the key (as Mongo and Qdrant's ``must_not`` do), and a list ``[1, 2]`` does not match ``{"$ne": 1}``.

Example:
    >>> from rrf_retriever.scope.parse import normalize_filter
    >>> normalize_filter({"session_id": [1, 2], "lang": "en"})
    AllOf(parts=(Match(key='lang', values=('en',)), Match(key='session_id', values=(1, 2))))
    >>> matches({"n": 3, "lang": "en"}, normalize_filter({"lang": "en", "n": {"$gte": 1, "$lt": 5}}))
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Union

from rrf_retriever.errors import InvalidTypeError
from rrf_retriever.scope.dates import date_micros, iso_value
from rrf_retriever.validate import INT64_MAX, INT64_MIN

__all__ = [
    "AllOf",
    "AnyOf",
    "Contains",
    "DateRange",
    "Exists",
    "FilterNode",
    "FilterSpec",
    "FilterValue",
    "Match",
    "NormalizedFilter",
    "Not",
    "Range",
    "date_bounds",
    "matches",
    "merged_equalities",
    "scope_key",
    "text_test",
]

FilterValue = str | int | bool
#: What users pass: shorthand ``{"session_id": [1, 2], "lang": "en"}``, operators, logic (module docstring).
FilterSpec = Mapping[str, Any]


@dataclass(frozen=True)
class Match:
    """The key's value, or any element when the value is a list, equals one of ``values`` (typed, see
    :func:`scope_key`). ``values == ()`` matches nothing."""

    key: str
    values: tuple[FilterValue, ...]


@dataclass(frozen=True)
class Range:
    """The key's numeric value (or any numeric list element) is within every given bound; bools, strings and a
    missing key never match."""

    key: str
    gt: float | int | None = None
    gte: float | int | None = None
    lt: float | int | None = None
    lte: float | int | None = None


@dataclass(frozen=True)
class DateRange:
    """The key's value (or any list element) is a date string (:data:`~rrf_retriever.scope.dates.DATE_FORMS`)
    whose instant is within every bound; bounds are such strings too. Naive values and bounds are UTC; numbers,
    bools, other strings and a missing key never match."""

    key: str
    gt: str | None = None
    gte: str | None = None
    lt: str | None = None
    lte: str | None = None


@dataclass(frozen=True)
class Contains:
    """The key's string value (or any string element of a list) contains ``text`` as a substring; with
    ``ignore_case``, ``text.lower() in value.lower()`` (LlamaIndex's ``text_match_insensitive``). ``""`` is in
    every string; numbers, bools and a missing key never match."""

    key: str
    text: str
    ignore_case: bool = False


@dataclass(frozen=True)
class Exists:
    """The key is present with a value that is not None and not an empty list (Qdrant's "not IsEmpty")."""

    key: str


@dataclass(frozen=True)
class AllOf:
    """Every part matches; ``()`` is true."""

    parts: tuple[FilterNode, ...]


@dataclass(frozen=True)
class AnyOf:
    """At least one part matches; ``()`` is false."""

    parts: tuple[FilterNode, ...]


@dataclass(frozen=True)
class Not:
    """The part does not match (complement over documents)."""

    part: FilterNode


FilterNode = Union[Match, Range, DateRange, Contains, Exists, AllOf, AnyOf, Not]  # noqa: UP007 (a runtime alias of classes above)
#: What stores receive: the validated tree (the name stores imported when the form was ``{key: (values)}``).
NormalizedFilter = FilterNode

_NODES = (Match, Range, DateRange, Contains, Exists, AllOf, AnyOf, Not)


def merged_equalities(node: AllOf | AnyOf) -> tuple[FilterNode, ...]:
    """The parts of ``node`` with the equalities on one key merged, the same filter in fewer parts: in an
    :class:`AnyOf`, the :class:`Match` parts on one key as one ``Match`` of all their values (``x = a OR x = b`` is
    ``x IN (a, b)``); in an :class:`AllOf`, the ``Not(Match)`` parts on one key as one ``Not`` of one ``Match``
    (``NOT a AND NOT b`` is ``NOT (a OR b)``). A merged part stands where its key first did; the rest keep their
    order. A store whose cost grows with the parts (FTS5: one subquery each) compiles these instead.

    Example:
        >>> merged_equalities(AnyOf((Match("n", (1,)), Range("m", gt=0), Match("n", (2,)))))
        (Match(key='n', values=(1, 2)), Range(key='m', gt=0, gte=None, lt=None, lte=None))
    """
    negated = isinstance(node, AllOf)

    def key_of(part: FilterNode) -> str | None:
        inner = part.part if negated and isinstance(part, Not) else (None if negated else part)
        return inner.key if isinstance(inner, Match) else None

    keys = [key_of(part) for part in node.parts]
    present = [key for key in keys if key is not None]
    if len(present) == len(set(present)):
        return node.parts  # no key repeats: nothing to merge
    values: dict[str, list[FilterValue]] = {}
    for part, key in zip(node.parts, keys):
        if key is not None:
            inner = part.part if isinstance(part, Not) else part
            values.setdefault(key, []).extend(inner.values)  # type: ignore[union-attr]  # key_of: a Match
    out: list[FilterNode] = []
    placed: set[str] = set()
    for part, key in zip(node.parts, keys):
        if key is None:
            out.append(part)
        elif key not in placed:
            placed.add(key)
            merged = Match(key, tuple(values[key]))
            out.append(Not(merged) if negated else merged)
    return tuple(out)


def matches(metadata: Mapping[str, Any], flt: FilterNode | None) -> bool:
    """Reference semantics of a filter on one metadata mapping: THE spec every store's compiler is tested against.

    ``flt`` is a parsed tree (:func:`rrf_retriever.scope.parse.normalize_filter`). A metadata value that is a list
    matches :class:`Match` / :class:`Range` when any element does (as Qdrant does for arrays).

    Example:
        >>> matches({"session_id": 2}, Match("session_id", (1, 2))), matches({}, Not(Match("k", (1,))))
        (True, True)
    """
    if flt is None:
        return True
    if not isinstance(flt, _NODES):
        msg = f"matches takes a parsed filter (scope.parse.normalize_filter), not {type(flt).__name__}"
        raise InvalidTypeError(msg)
    return _eval(metadata, flt)


def _eval(metadata: Mapping[str, Any], node: FilterNode) -> bool:
    if isinstance(node, Match):
        if node.key not in metadata:
            return False
        allowed = {scope_key(v) for v in node.values}
        return any(k is not None and k in allowed for k in map(scope_key, _elements(metadata[node.key])))
    if isinstance(node, Range):
        if node.key not in metadata:
            return False
        return any(_in_range(k, node) for k in map(scope_key, _elements(metadata[node.key])))
    if isinstance(node, (DateRange, Contains)):
        return node.key in metadata and any(map(text_test(node), _elements(metadata[node.key])))
    if isinstance(node, Exists):
        value = metadata.get(node.key)
        return value is not None and not (isinstance(value, (list, tuple)) and not value)
    if isinstance(node, AllOf):
        return all(_eval(metadata, p) for p in node.parts)
    if isinstance(node, AnyOf):
        return any(_eval(metadata, p) for p in node.parts)
    return not _eval(metadata, node.part)


def _elements(value: object) -> Sequence[object]:
    return value if isinstance(value, (list, tuple)) else (value,)


def _in_range(key: tuple[str, Any] | None, node: Range) -> bool:
    if key is None or key[0] != "n":
        return False
    v = key[1]  # Python compares int and float exactly, as SQLite does (numpy stores mirror it)
    return ((node.gt is None or v > node.gt) and (node.gte is None or v >= node.gte)
            and (node.lt is None or v < node.lt) and (node.lte is None or v <= node.lte))


def date_bounds(node: DateRange) -> dict[str, int]:
    """The bounds of a :class:`DateRange` as microseconds since the epoch, ``{"gte": ..., ...}`` (set ones only).

    Example:
        >>> date_bounds(DateRange("d", gte="1970-01-01T00:00:01"))
        {'gte': 1000000}
    """
    out: dict[str, int] = {}
    for op in ("gt", "gte", "lt", "lte"):
        bound = getattr(node, op)
        if bound is None:
            continue
        micros = date_micros(bound)
        if micros is None:  # the parser lets only dates through: a node built otherwise fails, never widens
            msg = f"the {op} bound of a date range on {node.key!r} is not a date: {bound!r}"
            raise InvalidTypeError(msg)
        out[op] = micros
    return out


def text_test(node: DateRange | Contains) -> Callable[[object], bool]:
    """The test of one scalar metadata value (a list element) for a :class:`DateRange` or :class:`Contains`: the
    reference every store's compiler of these nodes follows (Qdrant's stores run it on the payloads).

    Example:
        >>> test = text_test(Contains("k", "Ab", ignore_case=True))
        >>> test("xaBy"), test(["ab"]), test(12)
        (True, False, False)
    """
    if isinstance(node, Contains):
        needle = node.text.lower() if node.ignore_case else node.text

        def contains(value: object) -> bool:
            text = iso_value(value) if isinstance(value, date) else value
            if not isinstance(text, str):
                return False
            return needle in (text.lower() if node.ignore_case else text)

        return contains
    bounds = date_bounds(node)
    gt, gte, lt, lte = (bounds.get(op) for op in ("gt", "gte", "lt", "lte"))

    def within(value: object) -> bool:
        v = date_micros(value)
        return v is not None and ((gt is None or v > gt) and (gte is None or v >= gte)
                                  and (lt is None or v < lt) and (lte is None or v <= lte))

    return within


def scope_key(value: object) -> tuple[str, Any] | None:
    """The typed key by which a filter compares a scalar metadata value; the one definition every store uses.

    ``("b", bool)``, ``("n", number)`` or ``("s", str)``: bools are kept apart from numbers (``True`` is not
    ``1``), ``2`` and ``2.0`` are the same number; a date or datetime is the ISO string it is stored as. None
    for what no filter can match (NaN, infinity, None, containers, other objects, an integer beyond 64 bits,
    which neither SQLite nor Qdrant holds exactly).

    Example:
        >>> scope_key(True), scope_key(2) == scope_key(2.0), scope_key(float("nan")), scope_key(2**64)
        (('b', True), True, None, None)
    """
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return ("n", value) if INT64_MIN <= value <= INT64_MAX else None
    if isinstance(value, float):
        return ("n", value) if math.isfinite(value) else None
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, date):
        return ("s", iso_value(value))  # a date is compared as the string stored for it
    return None
