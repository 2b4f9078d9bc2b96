"""The BM25 settings saved with a keyword or joint collection: what a new one saves, and the checks a reopened one
passes before a store ranks with it (pure: no I/O, no Qdrant types). The scheme is
:mod:`rrf_retriever.stores.qdrant.keyword`'s.

Example:
    >>> from rrf_retriever.analysis.analyzer import default_analyzer
    >>> saved = new_params(k1=1.2, b=0.75, avgdl=None, avgdl_fixed=False, title_weight=2.0,
    ...                    analyzer=default_analyzer())
    >>> checked_params(saved, "collection 'kw'")["k1"]
    1.2
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError
from rrf_retriever.stores.qdrant.points import CONTENT_KEY, METADATA_KEY, SPARSE_VECTOR_NAME, SparseValues
from rrf_retriever.stores.qdrant.sparse_values import DocumentTerms, analyze_document, document_length, document_vector

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "PARAMS_FORMAT",
    "TERM_ID_SCHEME",
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
