"""LangChain's structured query (what ``SelfQueryRetriever``'s query constructor builds) as our filter language.

``SelfQueryRetriever(query_constructor=..., vectorstore=RRFVectorStore(...), structured_query_translator=
RRFTranslator())`` then filters our hybrid search by what the LLM read out of the question.

Example:
    >>> from langchain_core.structured_query import Comparator, Comparison, Operation, Operator, StructuredQuery
    >>> q = StructuredQuery(query="space", limit=2, filter=Operation(operator=Operator.AND, arguments=[
    ...     Comparison(comparator=Comparator.GTE, attribute="year", value=2020),
    ...     Comparison(comparator=Comparator.IN, attribute="genre", value=["sf", "noir"])]))
    >>> RRFTranslator().visit_structured_query(q)
    ('space', {'filter': {'$and': [{'year': {'$gte': 2020}}, {'genre': {'$in': ['sf', 'noir']}}]}, 'k': 2})
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rrf_retriever.errors import InvalidFilterError, missing_dependency

try:
    from langchain_core.structured_query import (
        Comparator,
        Comparison,
        Operation,
        Operator,
        StructuredQuery,
        Visitor,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("langchain-core", "langchain", "rrf_retriever.langchain") from exc

__all__ = ["RRFTranslator"]

_OPERATORS = tuple(Operator(v) for v in ("and", "or", "not"))
_COMPARATORS = tuple(Comparator(v) for v in ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"))


def _value(value: Any) -> Any:
    """LangChain's date value (``{"date": "2024-01-31", "type": "date"}``) as its ISO string; others unchanged."""
    if isinstance(value, dict) and value.get("type") == "date" and "date" in value:
        return value["date"]
    return value


class RRFTranslator(Visitor):
    """A LangChain ``Visitor`` from ``Comparison`` / ``Operation`` / ``StructuredQuery`` to our Mongo-style filter.

    ``eq ne gt gte lt lte in nin`` map to ``$eq ...``; ``and`` / ``or`` to ``$and`` / ``$or``; ``not`` of one
    argument to ``$not`` (of several: every one negated, ``$and``-ed). ``contain`` and ``like`` (substring
    matches) are refused: our filters match whole values. A date value (``{"date": "2024-01-31", "type":
    "date"}``) becomes its ISO string, which ``gt`` / ``gte`` / ``lt`` / ``lte`` compare as a date
    (:mod:`rrf_retriever.scope.dates`). A query's ``limit`` becomes ``k``.

    Example:
        >>> from langchain_core.structured_query import Comparator, Comparison
        >>> Comparison(comparator=Comparator.NE, attribute="tag", value="draft").accept(RRFTranslator())
        {'tag': {'$ne': 'draft'}}
    """

    allowed_operators: Sequence[Operator] | None = _OPERATORS
    allowed_comparators: Sequence[Comparator] | None = _COMPARATORS

    def _validate_func(self, func: Operator | Comparator) -> None:
        if func not in (*_OPERATORS, *_COMPARATORS):
            msg = (f"the structured query operator {str(func)!r} has no equivalent in our filters; use "
                   f"{', '.join(map(str, _COMPARATORS))} and and / or / not")
            raise InvalidFilterError(msg)

    def visit_operation(self, operation: Operation) -> dict[str, Any]:
        """``and`` / ``or`` / ``not`` of the translated arguments."""
        self._validate_func(operation.operator)
        args = [arg.accept(self) for arg in operation.arguments]
        if operation.operator == Operator.NOT:
            return {"$not": args[0]} if len(args) == 1 else {"$and": [{"$not": a} for a in args]}
        return {f"${operation.operator.value}": args}

    def visit_comparison(self, comparison: Comparison) -> dict[str, Any]:
        """``{attribute: {$op: value}}``."""
        self._validate_func(comparison.comparator)
        value = comparison.value
        value = [_value(v) for v in value] if isinstance(value, list) else _value(value)
        return {comparison.attribute: {f"${comparison.comparator.value}": value}}

    def visit_structured_query(self, structured_query: StructuredQuery) -> tuple[str, dict[str, Any]]:
        """``(query, search kwargs)``: ``filter`` when the query has one, ``k`` when it has a limit."""
        kwargs: dict[str, Any] = {}
        if structured_query.filter is not None:
            kwargs["filter"] = structured_query.filter.accept(self)
        if structured_query.limit is not None:
            kwargs["k"] = structured_query.limit
        return structured_query.query, kwargs
