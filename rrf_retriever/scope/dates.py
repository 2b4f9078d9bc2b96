"""Dates in metadata and in filters: stored as ISO 8601 strings, compared by range as instants.

Writes: a ``datetime.datetime`` or ``datetime.date`` metadata value (also inside a list or a nested mapping) is
stored as ``value.isoformat()``: a naive datetime stays naive (``"2024-05-01T09:30:00"``), an aware one keeps its
offset (``"2024-05-01T09:30:00+02:00"``), a date is ``"2024-05-01"``. What comes back from every store is that
string (as Qdrant gives back the dates it stores), never a ``datetime``.

Ranges: a range whose bounds are dates (an ISO string, a ``datetime`` or a ``date``) compares instants. A stored
string is a date when it has one of the forms :data:`DATE_FORMS` describes (what ``isoformat`` writes, and the
space-separated, minute-precision and ``Z`` forms Qdrant reads); a naive one, and a date (at midnight), is read
as UTC, as Qdrant does. Its instant is counted in microseconds since 1970-01-01T00:00:00Z (:func:`date_micros`),
exact for every ``datetime``. Equality (``$eq``, ``$in``) stays string equality: ``"2024-01-01"`` is not
``"2024-01-01T00:00:00"``, and a date string never equals a number.

Example:
    >>> iso_value(datetime(2024, 5, 1, 9, 30)), iso_value(date(2024, 5, 1))
    ('2024-05-01T09:30:00', '2024-05-01')
    >>> date_micros("1970-01-01T01:00:00+01:00"), date_micros("1970-01-01 00:00:01"), date_micros("yesterday")
    (0, 1000000, None)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import date, datetime, timedelta, timezone
from typing import Any

__all__ = ["DATE_FORMS", "date_micros", "iso_metadata", "iso_value"]

#: The string forms a date range reads: ``YYYY-MM-DD``, optionally followed by ``T`` or a space and
#: ``HH:MM[:SS[.f]]`` (1 to 6 fraction digits) and an optional ``Z`` or ``+HH:MM[:SS[.ffffff]]`` offset.
DATE_FORMS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?"
    r"(Z|[+-]\d{2}:\d{2}(?::\d{2}(?:\.\d{6})?)?)?)?",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The longest string DATE_FORMS matches: 2024-01-01T00:00:00.123456+05:30:00.123456.
_LONGEST_FORM = 42
_MICRO = timedelta(microseconds=1)


def iso_value(value: date) -> str:
    """A date or datetime as the ISO 8601 string stored for it (``isoformat()``: naive stays naive).

    Example:
        >>> iso_value(datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=-5))))
        '2024-01-01T00:00:00-05:00'
    """
    return value.isoformat()


def iso_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` with every date and datetime (in lists and nested mappings too) as its ISO string; the same
    object when it holds none (nothing copied).

    Example:
        >>> iso_metadata({"at": date(2024, 1, 2), "log": [{"t": datetime(2024, 1, 2, 3, 4)}], "n": 1})
        {'at': '2024-01-02', 'log': [{'t': '2024-01-02T03:04:00'}], 'n': 1}
    """
    converted = _converted(metadata, 0)
    return converted if isinstance(converted, dict) else metadata


def _converted(value: Any, depth: int) -> Any:
    """``value`` with its dates as strings, or the same object when none is inside (deeper than 64 levels is
    left as is: the nesting check refuses it)."""
    if isinstance(value, date):
        return iso_value(value)
    if depth > 64:
        return value
    if isinstance(value, Mapping):
        items = {k: _converted(v, depth + 1) for k, v in value.items()}
        return items if any(items[k] is not v for k, v in value.items()) else value
    if isinstance(value, (list, tuple)):
        elements = [_converted(v, depth + 1) for v in value]
        if any(a is not b for a, b in zip(elements, value)):
            return elements if isinstance(value, list) else tuple(elements)
    return value


def date_micros(value: object) -> int | None:
    """The instant of a date value in microseconds since the Unix epoch (UTC); None for what is not a date.

    ``value``: a string in one of :data:`DATE_FORMS` (naive: UTC), a ``datetime`` (naive: UTC) or a ``date``
    (midnight UTC). An impossible date (``2024-02-30``, ``24:00``) is not one.

    Example:
        >>> date_micros("2024-01-01") == date_micros(datetime(2024, 1, 1)) == date_micros("2024-01-01T00:00Z")
        True
        >>> date_micros("2024-02-30"), date_micros(1704067200)
        (None, None)
    """
    if isinstance(value, datetime):
        moment = value if value.utcoffset() is not None else value.replace(tzinfo=timezone.utc)
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    elif isinstance(value, str):
        # only what can be a date reaches the cache: every stored string is asked, and a cache of megabyte
        # strings that are not dates would hold them all (the longest form is 42 characters)
        return _string_micros(value) if len(value) <= _LONGEST_FORM else None
    else:
        return None
    return (moment - _EPOCH) // _MICRO


@functools.lru_cache(maxsize=1 << 16)
def _string_micros(text: str) -> int | None:
    """:func:`date_micros` of a string, remembered: Qdrant's stores test every stored value of a key per query."""
    parsed = _parse(text)
    return None if parsed is None else (parsed - _EPOCH) // _MICRO


def _parse(text: str) -> datetime | None:
    found = DATE_FORMS.fullmatch(text)
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = found.groups()
    try:
        zone = timezone.utc
        if offset is not None and offset != "Z":
            hours, minutes, *rest = offset[1:].split(":")
            seconds, _, micros = rest[0].partition(".") if rest else ("0", "", "")
            delta = timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds),
                              microseconds=int(micros or "0"))
            zone = timezone(-delta if offset[0] == "-" else delta)
        micro = int(fraction.ljust(6, "0")) if fraction else 0
        return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                        micro, tzinfo=zone)
    except ValueError:  # month 13, hour 24, an offset of a day or more
        return None
