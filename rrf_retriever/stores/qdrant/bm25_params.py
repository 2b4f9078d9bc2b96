"""The BM25 settings of a keyword or joint store: those it is asked for (:class:`Bm25Settings`, one frozen value
validated when built), what a new collection saves, and the checks a reopened one passes before a store ranks with
it (pure: no I/O, no Qdrant types). The scheme is :mod:`rrf_retriever.stores.qdrant.keyword`'s.

Example:
    >>> Bm25Settings(k1=1.5).k1, Bm25Settings().k3
    (1.5, inf)
    >>> from rrf_retriever.analysis.analyzer import default_analyzer
    >>> saved = new_params(k1=1.2, b=0.75, avgdl=None, avgdl_fixed=False, title_weight=2.0,
    ...                    analyzer=default_analyzer())
    >>> checked_params(saved, "collection 'kw'")["k1"]
    1.2
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError
from rrf_retriever.stores.qdrant.points import CONTENT_KEY, METADATA_KEY, SPARSE_VECTOR_NAME, SparseValues
from rrf_retriever.stores.qdrant.sparse_values import (
    DEFAULT_K3,
    DEFAULT_SHORT_QUERY_TERMS,
    DocumentTerms,
    analyze_document,
    check_k3,
    check_short_query_terms,
    document_length,
    document_vector,
)

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "PARAMS_FORMAT",
    "TERM_ID_SCHEME",
    "Bm25Options",
    "Bm25Settings",
    "check_param",
    "checked_params",
    "first_avgdl",
    "new_params",
    "terms_of",
    "values_of",
]

#: BM25KeywordStore's (bm25s) defaults, and what FTS5's ``bm25()`` hard-codes.
DEFAULT_K1 = 1.2
DEFAULT_B = 0.75
#: Names the term-id function; saved with the collection so a reader hashing otherwise refuses it.
TERM_ID_SCHEME = "blake2b-4-le-31"
#: Version of the saved settings (1: no title field, read as ``title_weight`` 0; 2: ``title_weight`` saved).
PARAMS_FORMAT = 2
_READABLE_FORMATS = (1, 2)


def check_param(name: str, value: object, upper: float | None) -> float:
    """A BM25 setting as a float: finite, in ``[0, upper]`` (``upper`` None: > 0).

    Example:
        >>> check_param("b", 1, 1.0)
        1.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{name} must be a number, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    value = float(value)
    ok = math.isfinite(value) and (value > 0 if upper is None else 0 <= value <= upper)
    if not ok:
        bounds = "a finite number > 0" if upper is None else f"a number in [0, {upper:g}]"
        msg = f"{name} must be {bounds}, got {value!r}"
        raise InvalidArgumentError(msg)
    return value


@dataclass(frozen=True)
class Bm25Settings:
    """The BM25 settings a keyword or joint store is asked for, validated when built (numbers as floats).

    Attributes:
        analyzer: The analyzer (None: the saved one when reopening, else Lucene stopwords and Porter stems).
        k1, b: BM25 term saturation and length normalisation (None: the saved ones, else 1.2 and 0.75).
        avgdl: The average document length to normalise by, fixed for good; None: frozen at the first write.
        title_weight: The weight of ``metadata["title"]`` as its own field (None: the saved one, else 2.0).
        live_idf: Ask Qdrant for the IDF of the live points where its statistics may count deleted ones.
        auto_reweight: Re-freeze avgdl as the collection grows (never with ``avgdl=``).
        k3: Query-term saturation ``qtf * (k3 + 1) / (qtf + k3)`` (``math.inf``: a repeated query term counts
            again each time; 0: once). Query-time only: not saved, any value on any collection.
        short_query_terms: A query of at most this many distinct terms counts each term once (0: never).
            Query-time only, like ``k3``.

    Raises:
        InvalidTypeError / InvalidArgumentError: a value of the wrong type or out of range.
    """

    analyzer: Analyzer | None = None
    k1: float | None = None
    b: float | None = None
    avgdl: float | None = None
    title_weight: float | None = None
    live_idf: bool = True
    auto_reweight: bool = True
    k3: float = DEFAULT_K3
    short_query_terms: int = DEFAULT_SHORT_QUERY_TERMS

    def __post_init__(self) -> None:
        checked: dict[str, Any] = {"k3": check_k3(self.k3),
                                   "short_query_terms": check_short_query_terms(self.short_query_terms)}
        if self.analyzer is not None and not isinstance(self.analyzer, Analyzer):
            msg = f"analyzer must be an rrf_retriever.analysis.analyzer.Analyzer, not {type(self.analyzer).__name__}"
            raise InvalidTypeError(msg)
        for name, upper in (("k1", 100.0), ("b", 1.0), ("avgdl", None), ("title_weight", 100.0)):
            value = getattr(self, name)
            checked[name] = None if value is None else check_param(name, value, upper)
        checked.update(live_idf=bool(self.live_idf), auto_reweight=bool(self.auto_reweight))
        for name, value in checked.items():
            object.__setattr__(self, name, value)


class Bm25Options(TypedDict, total=False):
    """:class:`Bm25Settings` as keywords (``**options`` of a public keyword or hybrid store class)."""

    analyzer: Analyzer | None
    k1: float | None
    b: float | None
    avgdl: float | None
    title_weight: float | None
    live_idf: bool
    auto_reweight: bool
    k3: float
    short_query_terms: int


def new_params(
    *, k1: float, b: float, avgdl: float | None, avgdl_fixed: bool, title_weight: float, analyzer: Analyzer
) -> dict[str, Any]:
    """The settings a new collection saves."""
    return {
        "format": PARAMS_FORMAT,
        "vector": SPARSE_VECTOR_NAME,
        "term_ids": TERM_ID_SCHEME,
        "k1": k1,
        "b": b,
        "avgdl": avgdl,
        "avgdl_fixed": avgdl_fixed,
        "title_weight": title_weight,
        "analyzer": analyzer.config(),
    }


def checked_params(saved: Any, where: str) -> dict[str, Any]:
    """The settings a collection was written with, checked (the analyzer's config left as saved).

    Raises:
        StoreError: none of ours, another format or term-id scheme, or malformed values.
    """
    if not isinstance(saved, Mapping):
        msg = f"{where} holds no rrf-retriever BM25 settings (not written by a Qdrant keyword store)"
        raise StoreError(msg)
    if saved.get("format") not in _READABLE_FORMATS or saved.get("term_ids") != TERM_ID_SCHEME:
        msg = f"{where} was written with format {saved.get('format')!r}, term ids {saved.get('term_ids')!r}"
        raise StoreError(msg)
    try:
        params = {
            **saved,
            "k1": check_param("k1", saved["k1"], 100.0),
            "b": check_param("b", saved["b"], 1.0),
            "avgdl": None if saved["avgdl"] is None else check_param("avgdl", saved["avgdl"], None),
            # Format 1 (before the title field) indexed the text only: such a store keeps ranking so.
            "title_weight": check_param("title_weight", saved.get("title_weight") or 0.0, 100.0),
            "analyzer": dict(saved["analyzer"]),
        }
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"{where} holds malformed BM25 settings: {exc}"
        raise StoreError(msg) from exc
    return params


def first_avgdl(terms: list[DocumentTerms], title_weight: float, asked: float | None) -> tuple[float | None, int]:
    """The avgdl a batch would freeze (``asked``, else its mean length; None: no term) and its total length.

    Example:
        >>> first_avgdl([(["a", "b"], []), ([], [])], 0.0, None)
        (1.0, 2)
    """
    total = sum(document_length(text, title, title_weight) for text, title in terms)
    return asked or (total / len(terms) if total else None), total


def terms_of(analyzer: Analyzer, payload: Mapping[str, Any] | None) -> DocumentTerms:
    """A stored point's document terms, from its payload (the text and the metadata's title)."""
    text = (payload or {}).get(CONTENT_KEY)
    metadata = (payload or {}).get(METADATA_KEY)
    return analyze_document(
        analyzer, text if isinstance(text, str) else "", metadata if isinstance(metadata, Mapping) else None
    )


def values_of(terms: DocumentTerms, params: Mapping[str, Any]) -> SparseValues:
    """A document's sparse vector with a collection's settings ``params``."""
    return document_vector(
        terms[0], k1=params["k1"], b=params["b"], avgdl=params["avgdl"], title_terms=terms[1],
        title_weight=params["title_weight"],
    )
