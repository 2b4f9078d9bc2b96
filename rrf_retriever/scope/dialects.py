"""Other vector stores' filter dialects at the door: PGVector's bare operators translated into ours, the dialects
we cannot read (Weaviate where filters, Qdrant models, Elasticsearch queries, Milvus expressions) refused by name.

Framework-free and pure: :func:`from_dialect` takes what a caller passed as ``filter`` and returns a filter in our
Mongo-style language (:mod:`rrf_retriever.scope.parse`), unchanged when it already is one. A foreign filter is
never read as field names (``{"path": [...], "operator": "Equal"}`` would otherwise match nothing, silently): it is
an :class:`~rrf_retriever.errors.InvalidFilterError` that names the dialect and says what to pass instead.

Example:
    >>> from_dialect({"and": [{"year": {"gte": 2020}}, {"genre": {"in": ["sf", "noir"]}}]})
    {'$and': [{'year': {'$gte': 2020}}, {'genre': {'$in': ['sf', 'noir']}}]}
    >>> from_dialect({"year": {"$gte": 2020}})
    {'year': {'$gte': 2020}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rrf_retriever.errors import InvalidFilterError

__all__ = ["PGVECTOR_OPERATORS", "from_dialect"]

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


def _is_weaviate(spec: Mapping[Any, Any]) -> bool:
    """Weaviate's operator name (``Equal``, ``And``, ...) with a path list, operands or a typed ``value*`` key."""
    if spec.get("operator") not in _WEAVIATE_OPERATORS:
        return False
    keys = {k for k in spec if isinstance(k, str)}
    typed = any(k.startswith("value") and k[5:6].isupper() for k in keys)  # valueText, valueInt, ...
    return isinstance(spec.get("path"), list) or isinstance(spec.get("operands"), list) or typed


def _is_elastic(spec: Mapping[Any, Any]) -> bool:
    """``{"bool": {"must": [...]}}``, ``{"term": {"metadata.x": 1}}``: a query clause over non-operator keys."""
    if len(spec) != 1:
        return False
    key, value = next(iter(spec.items()))
    if key not in _ELASTIC_KEYS or not isinstance(value, Mapping) or not value:
        return False
    ops = set(PGVECTOR_OPERATORS) | set(_PGVECTOR_REFUSED)
    return not all(isinstance(k, str) and (k.startswith("$") or k in ops) for k in value)


def _foreign_object(spec: object) -> InvalidFilterError | None:
    module = type(spec).__module__
    if module.startswith("qdrant_client"):
        return _refuse("a Qdrant filter model (qdrant_client.models)",
                       "Qdrant models are compiled by our stores from our language: " + _OURS)
    if isinstance(spec, (list, tuple)) and spec and all(isinstance(c, Mapping) and _is_elastic(c) for c in spec):
        return _refuse("an Elasticsearch filter (a list of bool / term / range clauses)")
    if isinstance(spec, str):
        return _refuse("a Milvus (or other) boolean expression string",
                       "expression strings are not parsed: " + _OURS)
    return None


def _translate(spec: object, depth: int) -> object:
    if not isinstance(spec, Mapping) or depth > 64:  # too deep or not a mapping: the parser says what is wrong
        return spec
    if _is_weaviate(spec):
        msg = ("this looks like a Weaviate where filter ({'path': [...], 'operator': 'Equal', 'valueText': ...}); "
               + _OURS)
        raise InvalidFilterError(msg)
    if _is_elastic(spec):
        raise _refuse("an Elasticsearch query (bool / term / range clauses)")
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
    refused = _foreign_object(spec)
    if refused is not None:
        raise refused
    return _translate(spec, 0)
