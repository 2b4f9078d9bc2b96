"""LlamaIndex ``MetadataFilters`` -> our filter tree, so ``retrieve(..)`` / ``invoke(q, filter=...)`` and
``scoped(filter=...)`` take LlamaIndex's filters as they are. Duck-typed: llama-index is never imported here.

Operators (``FilterOperator`` values) and their meaning here, on a key ``k``:

* ``==`` / ``!=``: :class:`Match` / ``Not(Match)`` of one value (typed: ``"42"`` is not ``42``);
* ``>`` ``>=`` ``<`` ``<=``: :class:`Range` on numbers; with an ISO 8601 date (a string, a ``datetime`` or a
  ``date``) a :class:`DateRange`, which compares instants (:mod:`rrf_retriever.scope.dates`); another string bound
  is refused (LlamaIndex stores would compare it as text, ours never do);
* ``in`` / ``nin``: :class:`Match` / ``Not(Match)`` of a list;
* ``any``: the value (or a list element) equals one of the list: :class:`Match`; ``all``: every one of the list
  is among the value's elements: an :class:`AllOf` of :class:`Match`; ``contains``: the list value holds the
  value: :class:`Match` (on a list metadata value; a plain string is compared whole, never as a substring);
* ``is_empty``: the key is missing, None or ``[]``: ``Not(Exists)`` (an empty string is a value here);
* ``text_match`` / ``text_match_insensitive``: :class:`Contains`, a substring of a string value (of a string list
  element too), ``value.lower() in metadata_value.lower()`` for the insensitive one, as LlamaIndex's
  ``SimpleVectorStore`` tests it (where a non-string value raises, here it does not match).

Conditions: ``and`` -> :class:`AllOf`, ``or`` -> :class:`AnyOf`, ``not`` -> ``Not(AnyOf)`` (LlamaIndex: "none of the
filters match"); nested ``MetadataFilters`` nest. Anything else is an :class:`InvalidFilterError`.

Example:
    >>> from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
    >>> as_filter(MetadataFilters(filters=[MetadataFilter(key="n", value=3, operator=">=")]))
    Range(key='n', gt=None, gte=3, lt=None, lte=None)
"""

from __future__ import annotations

from datetime import date
from typing import Any, cast

from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import AllOf, AnyOf, Contains, Exists, FilterNode, Match, Not, Range

__all__ = ["as_filter", "from_llama_index", "is_llama_index_filter"]

_RANGES = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
_TEXT_MATCH = {"text_match": "$contains", "text_match_insensitive": "$icontains"}


def is_llama_index_filter(obj: object) -> bool:
    """Whether ``obj`` is a LlamaIndex ``MetadataFilters`` or ``MetadataFilter`` (by shape, not by import)."""
    if isinstance(obj, (dict, list, tuple, str)):
        return False
    is_filters = hasattr(obj, "filters") and hasattr(obj, "condition")
    is_filter = all(hasattr(obj, a) for a in ("key", "value", "operator"))
    return is_filters or is_filter


def as_filter(obj: Any) -> Any:
    """A LlamaIndex filter translated (see :func:`from_llama_index`); anything else returned as is.

    Example:
        >>> as_filter({"lang": "en"})
        {'lang': 'en'}
    """
    return from_llama_index(obj) if is_llama_index_filter(obj) else obj


def from_llama_index(obj: Any, _depth: int = 0) -> FilterNode:
    """Translate a LlamaIndex ``MetadataFilters`` (or one ``MetadataFilter``) into a validated filter node.

    Raises:
        InvalidFilterError: not a LlamaIndex filter (a dict, a string), a value of the wrong kind (a list for
            ``==``, a string that is not a date for ``>``, a number for ``text_match``), an unknown condition,
            nesting beyond 32 levels.

    Example:
        >>> from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
        >>> from_llama_index(MetadataFilters(filters=[MetadataFilter(key="tag", value="x", operator="!="),
        ...                  MetadataFilter(key="lang", value=["en", "fr"], operator="in")], condition="or"))
        AnyOf(parts=(Not(part=Match(key='tag', values=('x',))), Match(key='lang', values=('en', 'fr'))))
    """
    if _depth > 32:
        msg = "the MetadataFilters are nested more than 32 levels deep"
        raise InvalidFilterError(msg)
    if not is_llama_index_filter(obj):
        msg = f"filters must be a LlamaIndex MetadataFilters or MetadataFilter, not {type(obj).__name__}"
        raise InvalidFilterError(msg)
    if hasattr(obj, "filters") and hasattr(obj, "condition"):
        parts = tuple(from_llama_index(f, _depth + 1) for f in (obj.filters or ()))
        condition = _name(obj.condition) or "and"
        if condition in ("and", "or") and len(parts) == 1:
            node: FilterNode = parts[0]  # one filter: the condition changes nothing
        elif condition == "and":
            node = AllOf(parts)
        elif condition == "or":
            node = AnyOf(parts)
        elif condition == "not":
            node = Not(AnyOf(parts))  # LlamaIndex: "match when none of the filters match"
        else:
            msg = f"unknown MetadataFilters condition {condition!r}; use and, or or not"
            raise InvalidFilterError(msg)
    else:
        node = _one(obj)
    return cast(FilterNode, normalize_filter(node))  # validated; a node never normalizes to None


def _name(value: Any) -> str | None:
    """An enum member's value (``FilterOperator.GT`` -> ``">"``) or the string itself, lower-cased."""
    if value is None:
        return None
    raw = getattr(value, "value", value)
    return raw.lower() if isinstance(raw, str) else str(raw)


def _one(f: Any) -> FilterNode:
    key, value, op = f.key, f.value, _name(f.operator) or "=="
    if op in _TEXT_MATCH:
        return _text_match(key, value, op)
    if op == "is_empty":
        return Not(Exists(key))
    if op in _RANGES:
        if isinstance(value, (str, date)):  # a date: parsed (and a non-date string refused) as our $gte is
            return cast(FilterNode, normalize_filter({key: {f"${_RANGES[op]}": value}}))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            msg = f"MetadataFilter {op!r} on {key!r} needs a number or an ISO 8601 date, not {value!r:.60}"
            raise InvalidFilterError(msg)
        return Range(key, **{_RANGES[op]: value})
    if op in ("==", "!=", "contains"):
        if isinstance(value, (list, tuple)):
            msg = f"MetadataFilter {op!r} on {key!r} takes one value, not a list (use 'in' or 'any')"
            raise InvalidFilterError(msg)
        match = Match(key, (value,))
        return Not(match) if op == "!=" else match
    if op in ("in", "nin", "any", "all"):
        if not isinstance(value, (list, tuple)):
            msg = f"MetadataFilter {op!r} on {key!r} takes a list of values, not {value!r:.60}"
            raise InvalidFilterError(msg)
        if op == "all":
            # LlamaIndex never matches a missing key here: with no values, "all" asks that the key be there
            # (a key holding an empty list counts as missing, as for $exists).
            return AllOf(tuple(Match(key, (v,)) for v in value)) if value else Exists(key)
        match = Match(key, tuple(value))
        return Not(match) if op == "nin" else match
    msg = f"unknown MetadataFilter operator {op!r} on {key!r}"
    raise InvalidFilterError(msg)


def _text_match(key: Any, value: Any, op: str) -> FilterNode:
    """``text_match`` / ``text_match_insensitive`` -> :class:`Contains` (our ``$contains`` / ``$icontains``)."""
    if not isinstance(value, str):
        msg = f"MetadataFilter {op!r} on {key!r} needs a string, not {value!r:.60}"
        raise InvalidFilterError(msg)
    return Contains(key, value, ignore_case=_TEXT_MATCH[op] == "$icontains")
