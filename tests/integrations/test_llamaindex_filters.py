"""LlamaIndex ``MetadataFilters`` through the retriever: translated at the edge into our filter tree, so
``scoped(filter=MetadataFilters(...))`` and ``invoke(q, filter=MetadataFilters(...))`` scope every leg before its
top-k, with exactly the meaning of :func:`rrf_retriever.scope.tree.matches`; operators without a faithful meaning are
an InvalidFilterError, never an unscoped search."""

from __future__ import annotations

import pytest
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from rrf_retriever import EnsembleRRFRetriever, InvalidFilterError
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.llama_index.filters import from_llama_index
from rrf_retriever.scope.tree import AllOf, AnyOf, Contains, DateRange, Exists, Match, Not, Range, matches

META = {
    "a": {"n": 1, "tags": ["x", "y"], "lang": "en"},
    "b": {"n": 5, "tags": ["y"], "lang": "fr"},
    "c": {"n": 9, "tags": [], "lang": "en"},
    "d": {"n": "5", "lang": None},
    "e": {"at": "2024-03-01T10:00:00"},
}


def F(key: str, value: object, op: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=op)


@pytest.fixture
def retriever() -> EnsembleRRFRetriever:
    return EnsembleRRFRetriever.from_texts(
        [f"alpha note {i}" for i in META], HashingEmbedding(32), metadatas=list(META.values()), ids=list(META),
        top_k=10,
    )


CASES = [
    (MetadataFilters(filters=[F("n", 5)]), Match("n", (5,))),
    (MetadataFilters(filters=[F("n", 5, FilterOperator.NE)]), Not(Match("n", (5,)))),
    (MetadataFilters(filters=[F("n", 2, FilterOperator.GT), F("n", 9, FilterOperator.LT)]),
     AllOf((Range("n", gt=2), Range("n", lt=9)))),
    (MetadataFilters(filters=[F("n", 5, FilterOperator.GTE), F("n", 1, FilterOperator.LTE)],
                     condition=FilterCondition.OR), AnyOf((Range("n", gte=5), Range("n", lte=1)))),
    (MetadataFilters(filters=[F("lang", ["en", "de"], FilterOperator.IN)]), Match("lang", ("en", "de"))),
    (MetadataFilters(filters=[F("lang", ["en"], FilterOperator.NIN)]), Not(Match("lang", ("en",)))),
    (MetadataFilters(filters=[F("tags", ["x", "z"], FilterOperator.ANY)]), Match("tags", ("x", "z"))),
    (MetadataFilters(filters=[F("tags", ["x", "y"], FilterOperator.ALL)]),
     AllOf((Match("tags", ("x",)), Match("tags", ("y",))))),
    (MetadataFilters(filters=[F("tags", "y", FilterOperator.CONTAINS)]), Match("tags", ("y",))),
    # LlamaIndex never matches a missing key with "all": an empty list asks only that the key be there.
    (MetadataFilters(filters=[F("tags", [], FilterOperator.ALL)]), Exists("tags")),
    (MetadataFilters(filters=[F("lang", [], FilterOperator.ALL)]), Exists("lang")),
    (MetadataFilters(filters=[F("tags", None, FilterOperator.IS_EMPTY)]), Not(Exists("tags"))),
    (MetadataFilters(filters=[F("lang", "e", FilterOperator.TEXT_MATCH)]), Contains("lang", "e")),
    (MetadataFilters(filters=[F("lang", "FR", FilterOperator.TEXT_MATCH_INSENSITIVE)]),
     Contains("lang", "FR", ignore_case=True)),
    (MetadataFilters(filters=[F("tags", "x", FilterOperator.TEXT_MATCH)]), Contains("tags", "x")),
    (MetadataFilters(filters=[F("at", "2024-01-01", FilterOperator.GTE)]), DateRange("at", gte="2024-01-01")),
    (MetadataFilters(filters=[F("lang", "en"), F("n", 9)], condition=FilterCondition.NOT),
     Not(AnyOf((Match("lang", ("en",)), Match("n", (9,)))))),
    (MetadataFilters(filters=[F("lang", "en"), MetadataFilters(filters=[F("n", 1), F("n", 9)],
                                                                condition=FilterCondition.OR)]),
     AllOf((Match("lang", ("en",)), AnyOf((Match("n", (1,)), Match("n", (9,))))))),
]


@pytest.mark.parametrize(("filters", "node"), CASES)
def test_each_operator_translates_and_scopes_the_search(
    retriever: EnsembleRRFRetriever, filters: MetadataFilters, node: object
) -> None:
    assert from_llama_index(filters) == node
    expected = sorted(i for i, m in META.items() if matches(m, node))  # type: ignore[arg-type]
    scoped = retriever.scoped(filter=filters)
    assert sorted(n.node.node_id for n in scoped.retrieve("alpha note")) == expected
    assert sorted(d.id for d in retriever.invoke("alpha note", filter=filters)) == expected


@pytest.mark.parametrize("filters", [
    MetadataFilters(filters=[F("lang", 5, FilterOperator.TEXT_MATCH)]),  # a substring is a string
    MetadataFilters(filters=[F("lang", ["e"], FilterOperator.TEXT_MATCH_INSENSITIVE)]),
    MetadataFilters(filters=[F("n", "5", FilterOperator.GT)]),  # a string bound that is no date compares as text
    MetadataFilters(filters=[F("n", [1, 2])]),  # == takes one value
    MetadataFilters(filters=[F("n", 1, FilterOperator.IN)]),  # in takes a list
    MetadataFilters(filters=[F("n", 1.5)]),  # a fraction is no equality value
    MetadataFilters(filters=[F("bad key", 1)]),
])
def test_operators_without_a_faithful_meaning_are_refused(
    retriever: EnsembleRRFRetriever, filters: MetadataFilters
) -> None:
    with pytest.raises(InvalidFilterError):
        retriever.invoke("alpha note", filter=filters)
    with pytest.raises(InvalidFilterError):
        retriever.scoped(filter=filters)
