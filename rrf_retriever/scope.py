"""The scope of a search: the metadata filter language and the excluded ids (DESIGN section 5).

One definition for every store: :func:`normalize_filter` validates what users pass, :func:`matches` is the
reference semantics (in-memory stores and post-filtered legs use it; the SQL and Qdrant compilers are tested
against it), :func:`scope_key` the typed comparison (``"42"`` is never ``42``, ``True`` never ``1``).

Example:
    >>> from rrf_retriever.scope import normalize_filter, matches
    >>> normalize_filter({"session_id": [1, 2], "lang": "en"})
    {'lang': ('en',), 'session_id': (1, 2)}
    >>> matches({"session_id": 2, "lang": "en"}, normalize_filter({"session_id": [1, 2]}))
    True
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rrf_retriever.errors import FilterError, InvalidTypeError
from rrf_retriever.validate import check_id, check_str, check_unicode

__all__ = [
    "FilterSpec",
    "FilterValue",
    "NormalizedFilter",
    "matches",
    "normalize_exclude_ids",
    "normalize_filter",
    "normalize_scope",
    "parse_filter_item",
    "parse_filter_values",
    "scope_key",
]

FilterValue = str | int | bool
#: What users pass: ``{"session_id": [1, 2, 3], "lang": "en"}``. A list means any-of; keys must all match.
FilterSpec = Mapping[str, FilterValue | Sequence[FilterValue]]
#: What stores receive: keys sorted, every value a tuple of allowed values.
NormalizedFilter = dict[str, tuple[FilterValue, ...]]

# Keys name metadata fields. Stores bind them as parameters, but a tight pattern also keeps them portable
# (Qdrant payload paths, JSON paths) and readable in errors.
_KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$")
_MAX_FILTER_VALUES = 10_000


def _check_filter_value(key: str, value: object) -> FilterValue:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Qdrant stores integers as int64 and SQLite as 64-bit too: refuse what neither can hold.
        if not -(2**63) <= value < 2**63:
            msg = f"filter value for {key!r} is out of the 64-bit integer range: {value}"
            raise FilterError(msg)
        return value
    if isinstance(value, str):
        if "\x00" in value:
            msg = f"filter value for {key!r} contains a NUL character"
            raise FilterError(msg)
        return check_unicode(value, f"filter value for {key!r}", FilterError)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return _check_filter_value(key, int(value))
        msg = f"filter value for {key!r} must be a string, an integer or a boolean, not the float {value!r}"
        raise FilterError(msg)
    msg = f"filter value for {key!r} must be a string, an integer or a boolean, not {type(value).__name__}"
    raise FilterError(msg)


def normalize_filter(filter: FilterSpec | None) -> NormalizedFilter | None:
    """Validate a metadata filter and bring it to the form every store understands.

    Each key must match; a list (or tuple or set) of values means any-of. An empty list matches nothing.
    ``None`` or ``{}`` means no filter.

    Args:
        filter: ``{"session_id": [1, 2, 3], "lang": "en"}`` or None.

    Returns:
        ``{key: (value, ...)}`` with keys sorted and duplicate values removed, or None.

    Raises:
        FilterError: a key that is not a plain field name, a value that is not str, int or bool.

    Example:
        >>> normalize_filter({"b": 1, "a": ["x", "x", "y"]})
        {'a': ('x', 'y'), 'b': (1,)}
    """
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        msg = f"filter must be a mapping of metadata field to value(s), not {type(filter).__name__}"
        raise FilterError(msg)
    if not filter:
        return None
    out: NormalizedFilter = {}
    for key in sorted(filter, key=str):
        if not isinstance(key, str) or not _KEY_PATTERN.match(key):
            msg = (
                f"filter key {key!r} is not a metadata field name "
                "(letters, digits, '_' and '-', starting with a letter or '_', at most 128 characters)"
            )
            raise FilterError(msg)
        raw = filter[key]
        values: Iterable[object]
        if isinstance(raw, (list, tuple, set, frozenset)):
            values = raw
            if len(raw) > _MAX_FILTER_VALUES:
                msg = f"filter key {key!r} lists {len(raw)} values; at most {_MAX_FILTER_VALUES} are allowed"
                raise FilterError(msg)
        else:
            values = (raw,)
        checked: list[FilterValue] = []
        seen: set[tuple[type, FilterValue]] = set()
        for value in values:
            v = _check_filter_value(key, value)
            tag = (type(v), v)
            if tag not in seen:
                seen.add(tag)
                checked.append(v)
        out[key] = tuple(checked)
    return out


#: The value types of the textual filter syntax (``key:str=42``); ``auto`` (no type) is an integer if it parses.
FILTER_VALUE_TYPES = ("auto", "str", "int", "bool")
_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})


def parse_filter_values(text: str, value_type: str = "auto") -> list[str | int | bool]:
    """The textual form of a filter value list (CLI ``key=1,2``, HTTP ``session_ids=1,2``): comma-separated,
    blanks dropped, each value read as ``value_type``.

    Args:
        text: The comma list.
        value_type: ``"auto"`` (default: an integer if it parses, else a string, so ``42`` is the integer 42),
            ``"str"`` (``"42"`` stays the string "42": the way to ask for a numeric-string id), ``"int"`` or
            ``"bool"`` (``true``/``false``, ``yes``/``no``, ``1``/``0``).

    Raises:
        FilterError: a value that is not of ``value_type``, or an unknown type.

    Example:
        >>> parse_filter_values("1, 2,,en")
        [1, 2, 'en']
        >>> parse_filter_values("42,007", "str")
        ['42', '007']
    """
    if value_type not in FILTER_VALUE_TYPES:
        msg = f"unknown type {value_type!r} in a filter; use one of {', '.join(FILTER_VALUE_TYPES[1:])}"
        raise FilterError(msg)
    values: list[str | int | bool] = []
    for raw in check_str(text, "filter values").split(","):
        item = raw.strip()
        if not item:
            continue
        if value_type == "str":
            values.append(item)
        elif value_type == "bool":
            lowered = item.lower()
            if lowered not in _TRUE | _FALSE:
                msg = f"filter value {item!r} is not a boolean: write true or false"
                raise FilterError(msg)
            values.append(lowered in _TRUE)
        else:
            try:
                values.append(int(item))
            except ValueError:
                if value_type == "int":
                    msg = f"filter value {item!r} is not an integer"
                    raise FilterError(msg) from None
                values.append(item)
    return values


def parse_filter_item(item: str) -> tuple[str, list[str | int | bool]]:
    """One textual filter ``key[:type]=v1,v2`` -> ``(key, values)`` (the CLI's ``--filter``).

    ``type`` is ``str``, ``int`` or ``bool`` (see :func:`parse_filter_values`); without it a value is an integer
    if it parses, else a string. A comma list means any of the values. An empty list (``key=``) is an error, never
    "no filter". Keys cannot hold ``:`` or ``=`` (use a JSON filter for such keys).

    Raises:
        FilterError: no ``=``, no key, no value, an unknown type or a value not of the type.

    Example:
        >>> parse_filter_item("session_id:str=42")
        ('session_id', ['42'])
        >>> parse_filter_item("session_id=42,43")
        ('session_id', [42, 43])
    """
    text = check_str(item, "filter")
    head, sep, raw = text.partition("=")
    key, colon, value_type = head.partition(":")
    key, value_type = key.strip(), value_type.strip()
    if not sep or not key:
        msg = f"bad filter {item!r}: write key=value, key=v1,v2 for any of several values, or key:str=42 for a type"
        raise FilterError(msg)
    try:
        values = parse_filter_values(raw, value_type if colon else "auto")
    except FilterError as exc:
        msg = f"bad filter {item!r}: {exc}"
        raise FilterError(msg) from None
    if not values:
        msg = f"bad filter {item!r}: no value after '=' (an empty list would match nothing; drop the filter instead)"
        raise FilterError(msg)
    return key, values


def normalize_exclude_ids(exclude_ids: Iterable[str] | None) -> frozenset[str]:
    """Validate ``exclude_ids``: an iterable of string ids (a single string is refused, it is not a list).

    Example:
        >>> sorted(normalize_exclude_ids(["a", "b", "a"]))
        ['a', 'b']
    """
    if exclude_ids is None:
        return frozenset()
    if isinstance(exclude_ids, (str, bytes)):
        msg = "exclude_ids must be a list of ids, not a single string"
        raise InvalidTypeError(msg)
    try:
        ids = list(exclude_ids)
    except TypeError as exc:
        msg = f"exclude_ids must be an iterable of ids, not {type(exclude_ids).__name__}"
        raise InvalidTypeError(msg) from exc
    for doc_id in ids:
        check_id(doc_id, field_name="exclude_ids")
    return frozenset(ids)


def matches(metadata: Mapping[str, Any], flt: NormalizedFilter | None) -> bool:
    """Reference semantics of a normalized filter on one metadata mapping (the reference evaluator).

    A value matches when it equals one allowed value, with bools and ints kept apart (``True`` is not ``1``).
    A metadata value that is a list matches when any element matches (as Qdrant does for arrays).

    Example:
        >>> matches({"session_id": 2}, {"session_id": (1, 2)})
        True
    """
    if not flt:
        return True
    for key, allowed in flt.items():
        if key not in metadata:
            return False
        value = metadata[key]
        candidates = value if isinstance(value, (list, tuple)) else (value,)
        if not any(_same_value(c, a) for c in candidates for a in allowed):
            return False
    return True


def _same_value(a: object, b: object) -> bool:
    key = scope_key(a)
    return key is not None and key == scope_key(b)


def scope_key(value: object) -> tuple[str, Any] | None:
    """The typed key by which a filter compares a scalar metadata value; the one definition every store uses.

    ``("b", bool)``, ``("n", number)`` or ``("s", str)``: bools are kept apart from numbers (``True`` is not
    ``1``), ``2`` and ``2.0`` are the same number. None for what no filter can match (NaN, infinity, None,
    containers, objects).

    Example:
        >>> scope_key(True), scope_key(2) == scope_key(2.0), scope_key(float("nan"))
        (('b', True), True, None)
    """
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value) if not isinstance(value, float) or math.isfinite(value) else None
    if isinstance(value, str):
        return ("s", value)
    return None


def normalize_scope(
    filter: FilterSpec | NormalizedFilter | None,
    exclude_ids: Iterable[str] | None,
) -> tuple[NormalizedFilter | None, frozenset[str]]:
    """Validate and normalise a store call's scope (idempotent: normalised input passes through).

    Example:
        >>> normalize_scope({"s": 1}, ["x"])
        ({'s': (1,)}, frozenset({'x'}))
    """
    return normalize_filter(filter), normalize_exclude_ids(exclude_ids)


