"""The textual filter syntax of the CLI (``--filter key[:type]=v1,v2``) and the HTTP query string
(``session_ids=1,2``): comma lists of typed values. Re-exported by :mod:`rrf_retriever.scope.tree`.

Example:
    >>> parse_filter_item("session_id=42,43")
    ('session_id', [42, 43])
"""

from __future__ import annotations

from rrf_retriever.errors import FilterError
from rrf_retriever.validate import check_str

__all__ = ["FILTER_VALUE_TYPES", "parse_filter_item", "parse_filter_values"]

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
