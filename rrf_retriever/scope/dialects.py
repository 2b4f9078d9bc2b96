"""Other vector stores' filter dialects at the door: PGVector's bare operators translated into ours, the dialects
we cannot read (Weaviate where filters, Qdrant models, Elasticsearch queries, Milvus expressions) refused by name.

Framework-free and pure: :func:`from_dialect` takes what a caller passed as ``filter`` and returns a filter in our
Mongo-style language (:mod:`rrf_retriever.scope.parse`), unchanged when it already is one. A foreign filter is
never read as field names (``{"path": [...], "operator": "Equal"}`` would otherwise match nothing, silently): it is
an :class:`~rrf_retriever.errors.InvalidFilterError` that names the dialect and says what to pass instead.

:func:`refuse_foreign` is what every filter door (the parser, so the engine, the stores and the service) runs
first: the JSON forms of Qdrant (``must`` / ``should`` / ``must_not`` / ``min_should`` with conditions), of
Elasticsearch (``bool`` / ``term`` / ``terms`` / ``range`` / ``match`` clauses), of Weaviate (``path``,
``operator``, ``valueText``...), Milvus expression strings and those stores' filter objects, each refused by name.
Only the dialect's SHAPE is refused, never a key's name: ``{"must": "x"}`` or ``{"path": ["a", "b"]}`` is a field
called ``must`` or ``path``, as before; each shape refused is one our language refuses anyway, but for
Weaviate's (``path`` + one of its operators + a typed ``value*`` key).

Example:
    >>> from_dialect({"and": [{"year": {"gte": 2020}}, {"genre": {"in": ["sf", "noir"]}}]})
    {'$and': [{'year': {'$gte': 2020}}, {'genre': {'$in': ['sf', 'noir']}}]}
    >>> from_dialect({"year": {"$gte": 2020}})
    {'year': {'$gte': 2020}}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rrf_retriever.errors import InvalidFilterError

__all__ = ["PGVECTOR_OPERATORS", "from_dialect", "refuse_foreign"]

#: PGVector's bare comparison operators (langchain_community's ``PGVectorTranslator``) and ours they become.
PGVECTOR_OPERATORS = {op: f"${op}" for op in ("eq", "ne", "lt", "lte", "gt", "gte", "in", "nin")}
_PGVECTOR_LOGIC = {"and": "$and", "or": "$or"}
_PGVECTOR_REFUSED = ("like", "ilike", "contain", "between")
_OURS = "pass our Mongo-style filter instead, e.g. {'year': {'$gte': 2020}, 'genre': {'$in': ['a', 'b']}}"
_WEAVIATE_OPERATORS = frozenset({
    "And", "Or", "Not", "Equal", "NotEqual", "GreaterThan", "GreaterThanEqual", "LessThan", "LessThanEqual", "Like",
    "IsNull", "ContainsAny", "ContainsAll", "WithinGeoRange"})
_ELASTIC_KEYS = frozenset({"bool", "term", "terms", "match", "match_phrase", "range", "exists", "query",
                           "match_all", "wildcard", "prefix"})


def _refuse(dialect: str, hint: str = "") -> InvalidFilterError:
    return InvalidFilterError(f"this looks like {dialect}; {hint or _OURS}")


def _translate(spec: object, depth: int) -> object:
    if not isinstance(spec, Mapping) or depth > 64:  # too deep or not a mapping: the parser says what is wrong
        return spec
    out: dict[Any, Any] = {}
    for key, value in spec.items():
        if key in _PGVECTOR_LOGIC and isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            out[_PGVECTOR_LOGIC[key]] = [_translate(v, depth + 1) for v in value]
        elif isinstance(key, str) and key.startswith("$"):
            out[key] = [_translate(v, depth + 1) for v in value] if isinstance(value, list) else (
                _translate(value, depth + 1))
        elif isinstance(value, Mapping):
            out[key] = _operators(key, value, depth)
        else:
            out[key] = value
    return out


def _operators(key: object, ops: Mapping[Any, Any], depth: int) -> object:
    out: dict[Any, Any] = {}
    for op, arg in ops.items():
        if op in PGVECTOR_OPERATORS:
            out[PGVECTOR_OPERATORS[op]] = arg
        elif isinstance(op, str) and op.lstrip("$") in _PGVECTOR_REFUSED:
            msg = f"the PGVector operator {op!r} on {key!r} is not supported; use $eq, $ne, $in, $nin or a range"
            raise InvalidFilterError(msg)
        elif op == "$not":
            out[op] = _operators(key, arg, depth + 1) if isinstance(arg, Mapping) else arg
        else:
            out[op] = arg
    return out


def from_dialect(spec: object) -> object:
    """A filter in our language from ours or PGVector's; a dialect we cannot read refused by name.

    Args:
        spec: What a caller passed as ``filter``: our mapping (returned as is, or an equal copy), PGVector's
            (``{"field": {"eq": 1}}``, ``{"and": [...]}``, ``{"or": [...]}``), a parsed filter node (returned as
            is), or anything else (returned as is for the parser to refuse with its own message).

    Returns:
        The filter in our Mongo-style language (``$eq``, ``$in``, ``$and``, ...).

    Raises:
        InvalidFilterError: a Weaviate where filter, an Elasticsearch query, a Qdrant model, an expression
            string (Milvus), or PGVector's ``like`` / ``ilike`` / ``contain`` / ``between``.

    Example:
        >>> from_dialect({"path": ["genre"], "operator": "Equal", "valueText": "sf"})
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidFilterError: this looks like a Weaviate where filter ...
    """
    refuse_foreign(spec)  # the parser's own test: a filter means one thing whichever door it comes through
    return _translate(spec, 0)


# -- the JSON forms of the dialects, at the parser's door ---------------------------------------------------------

_QDRANT_CLAUSES = ("must", "should", "must_not")
#: The keys of a Qdrant condition in JSON (a field condition, a nested filter, has_id, is_empty, ...).
_QDRANT_CONDITION = frozenset({
    "key", "match", "range", "geo_bounding_box", "geo_radius", "geo_polygon", "values_count", "datetime_range",
    "is_empty", "is_null", "has_id", "has_vector", "nested", "filter", "must", "should", "must_not", "min_should"})
_QDRANT_FIELD = frozenset({"match", "range", "geo_bounding_box", "geo_radius", "geo_polygon", "values_count",
                           "datetime_range"})
_QDRANT = "a Qdrant filter in JSON (must / should / must_not conditions)"
_MILVUS = re.compile(r"==|!=|<=|>=|[<>]|\bin\s*\[|\bnot\s+in\b|\blike\b|&&|\|\|")
_OBJECTS = (("qdrant_client", "a Qdrant filter model (qdrant_client.models)"),
            ("weaviate", "a Weaviate filter object"),
            ("elasticsearch", "an Elasticsearch query object"),
            ("pymilvus", "a Milvus expression object"))
_WALK_LIMIT = 10_000
#: The keys a mapping of some dialect holds at least one of (a mapping with none of them is not looked at further).
_WORDS = frozenset({*_QDRANT_CLAUSES, "min_should", "key", "operator", *_ELASTIC_KEYS})


def _is_plain(value: object) -> bool:
    """A non-empty mapping none of whose keys is one of our operators (which start with ``$``)."""
    return isinstance(value, Mapping) and bool(value) and not any(
        isinstance(k, str) and k.startswith("$") for k in value)


def _is_qdrant_condition(value: object) -> bool:
    """A JSON Qdrant condition: a plain mapping (:func:`_is_plain`) holding one of Qdrant's condition keys."""
    return isinstance(value, Mapping) and _is_plain(value) and any(k in _QDRANT_CONDITION for k in value)


def _is_qdrant(spec: Mapping[Any, Any]) -> bool:
    """``{"must": [{"key": ..., "match": ...}]}``, ``{"min_should": {"conditions": [...], "min_count": 1}}``, a lone
    field condition ``{"key": "genre", "match": {"value": "sf"}}``: never a field named ``must`` with a value."""
    for clause in _QDRANT_CLAUSES:
        value = spec.get(clause)
        if _is_qdrant_condition(value) or (isinstance(value, list) and any(isinstance(v, Mapping) for v in value)):
            return True
    least = spec.get("min_should")
    if isinstance(least, Mapping) and isinstance(least.get("conditions"), list):
        return True
    return isinstance(spec.get("key"), str) and any(_is_plain(spec.get(k)) for k in _QDRANT_FIELD)


def _is_weaviate_json(spec: Mapping[Any, Any]) -> bool:
    """Weaviate's where filter: one of its operators with ``operands`` (a list of filters), or with ``path`` and a
    typed ``value*`` key (``valueText``, ``valueInt``, ...). ``path`` and ``operator`` alone stay field names."""
    operator = spec.get("operator")
    if not isinstance(operator, str) or operator not in _WEAVIATE_OPERATORS:
        return False
    operands = spec.get("operands")
    if isinstance(operands, list) and operands and all(isinstance(o, Mapping) for o in operands):
        return True
    typed = any(isinstance(k, str) and k.startswith("value") and k[5:6].isupper() for k in spec)
    return typed and "path" in spec


def _is_elastic_json(spec: Mapping[Any, Any]) -> bool:
    """An Elasticsearch clause under any key of the mapping (``{"bool": {"must": [...]}}``, ``{"term": {"x": 1}}``):
    a mapping value holding a key that is none of our operators (ours start with ``$``; PGVector's stay the
    parser's to name)."""
    ops = set(PGVECTOR_OPERATORS) | set(_PGVECTOR_REFUSED)
    for key in _ELASTIC_KEYS:
        value = spec.get(key)
        if isinstance(value, Mapping) and value and not all(
                isinstance(k, str) and (k.startswith("$") or k in ops) for k in value):
            return True
    return False


def _dialect_of(spec: object) -> InvalidFilterError | None:
    """The error naming the dialect ``spec`` (one filter, not its sub-filters) is written in, or None."""
    if type(spec) is dict:  # the common case first: a mapping without a dialect's word is looked at no further
        if spec.keys().isdisjoint(_WORDS):
            return None
    else:
        package = type(spec).__module__.split(".")[0]
        for prefix, dialect in _OBJECTS:
            if package == prefix:
                qdrant = prefix == "qdrant_client"
                return _refuse(dialect, ("Qdrant models are compiled by our stores from our language: " if qdrant
                                         else "") + _OURS)
    if isinstance(spec, str):
        if _MILVUS.search(spec):
            return _refuse("a Milvus boolean expression", "expression strings are not parsed: " + _OURS)
        return _refuse("a filter written as a string", "a filter is a mapping, not a string: " + _OURS)
    if not isinstance(spec, Mapping):
        return None
    if _is_qdrant(spec):
        return _refuse(_QDRANT, "Qdrant's filters are compiled by our stores from our language: " + _OURS)
    if _is_weaviate_json(spec):
        return _refuse("a Weaviate where filter ({'path': [...], 'operator': 'Equal', 'valueText': ...})")
    if _is_elastic_json(spec):
        return _refuse("an Elasticsearch query (bool / term / terms / range / match clauses)")
    return None


def refuse_foreign(spec: object) -> None:
    """Refuse a filter written in another store's dialect, naming it; return for anything else (ours included).

    Looks at the filter and at the filters inside its ``$and`` / ``$or`` / ``$not`` (a bounded walk: a hostile
    filter is the parser's to refuse by its own limits). A list of clauses given as the filter is named by its
    first foreign element.

    Raises:
        InvalidFilterError: the JSON form of a Qdrant, Elasticsearch or Weaviate filter, a Milvus expression (or
            any string), or a Qdrant / Weaviate / Elasticsearch / Milvus filter object; the message names the
            dialect and shows ours.

    Example:
        >>> refuse_foreign({"must": "a field named must"})
        >>> refuse_foreign({"must": [{"key": "lang", "match": {"value": "en"}}]})
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidFilterError: this looks like a Qdrant filter in JSON ...
    """
    stack: list[tuple[object, int]] = [(spec, 0)]
    seen = 0
    while stack and seen < _WALK_LIMIT:
        node, depth = stack.pop()
        seen += 1
        if depth == 0 and isinstance(node, list):  # a list of clauses as the filter: the parser refuses lists
            stack.extend((v, 1) for v in reversed(node[:_WALK_LIMIT]))
            continue
        refused = _dialect_of(node)
        if refused is not None:
            raise refused
        if isinstance(node, Mapping) and depth < 64:
            for op in ("$and", "$or"):
                parts = node.get(op)
                if isinstance(parts, list):
                    stack.extend((p, depth + 1) for p in parts[:_WALK_LIMIT])
            if "$not" in node:
                stack.append((node["$not"], depth + 1))
