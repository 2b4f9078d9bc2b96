"""The BM25 sparse values of one document or query (pure: no I/O, no Qdrant types), used by every Qdrant store
holding the ``"bm25"`` vector (the keyword stores and the joint collections). The scheme is described in
:mod:`rrf_retriever.stores.qdrant.keyword`.

A document's ``metadata["title"]`` (a string) counts as its own field, as in
:class:`~rrf_retriever.stores.fts5.store.FTS5KeywordStore`, whose ``bm25()`` sums the column-weighted counts of a term
and normalises by ONE length, the tokens of the row over all its columns, unweighted. So here, with
``title_weight`` w > 0: ``tf(t) = tf_text(t) + w * tf_title(t)`` and ``dl = len(text terms) + len(title terms)``
(:func:`document_length`; ``avgdl`` is the mean of that length). ``w = 0`` is the flat index of the text: the
title counts in neither. A document without a title ranks exactly as in the flat index (its ``dl`` is the same;
only ``avgdl`` is the mean over a corpus whose titled documents are longer, as in FTS5).

Example:
    >>> indices, values = document_vector(["car"], k1=1.2, b=0.75, avgdl=2.0, title_terms=["car"], title_weight=2.0)
    >>> indices == [term_id("car")], round(values[0], 4)  # tf 1 + 2 * 1 = 3, dl 2
    (True, 1.5714)
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError

__all__ = [
    "DEFAULT_K3",
    "DEFAULT_SHORT_QUERY_TERMS",
    "DEFAULT_TITLE_WEIGHT",
    "EMPTY_DOCUMENT_INDEX",
    "TITLE_KEY",
    "DocumentTerms",
    "analyze_document",
    "check_k3",
    "check_short_query_terms",
    "document_length",
    "document_vector",
    "query_term_weight",
    "query_vector",
    "term_id",
]

#: The one index of a document without terms (above every term id): it makes the document count in IDF's ``N``.
EMPTY_DOCUMENT_INDEX = 2**31
#: The metadata key read as the title field.
TITLE_KEY = "title"
#: The title's weight in a new store (FTS5KeywordStore's default: the best of 1-4 on SciFact train).
DEFAULT_TITLE_WEIGHT = 2.0
_TERM_MASK = 0x7FFFFFFF
#: BM25's query-term saturation ``k3`` of a new store: ``inf`` counts a repeated query term again and again (as
#: bm25s and FTS5 do); measured in ``benchmarks/RESULTS.md`` ("Keyword leg: query-term saturation and exact BM25").
DEFAULT_K3 = math.inf
#: A query of at most this many distinct terms counts each term once (k3 = 0), a longer one by ``k3``: the one
#: setting every leave-one-collection-out fold picked for the hybrid (SciFact +0.004, MED +0.010, CACM +0.002, NPL
#: +0.005, ArguAna's long queries unchanged; the keyword leg alone loses CACM 0.030).
DEFAULT_SHORT_QUERY_TERMS = 20

#: A document's analyzed text terms and title terms ([] without a title).
DocumentTerms = tuple[list[str], list[str]]


@lru_cache(maxsize=65536)
def term_id(term: str) -> int:
    """The sparse-vector index of an analyzed term: blake2b's first 4 bytes, little-endian, below ``2**31``.

    Stable forever (changing it orphans every stored vector). Distinct terms may collide (see the module notes).

    Example:
        >>> term_id("qdrant")
        585620190
    """
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "little") & _TERM_MASK


def analyze_document(analyzer: Analyzer, text: str, metadata: Mapping[str, Any] | None) -> DocumentTerms:
    """A document's text terms and the terms of its ``metadata["title"]`` (none unless the title is a string).

    Example:
        >>> from rrf_retriever.analysis.analyzer import default_analyzer
        >>> analyze_document(default_analyzer(), "Cooking pasta", {"title": "Italian food", "n": 1})
        (['cook', 'pasta'], ['italian', 'food'])
    """
    title = (metadata or {}).get(TITLE_KEY)
    return analyzer.analyze(text), (analyzer.analyze(title) if isinstance(title, str) else [])


def document_length(terms: Sequence[str], title_terms: Sequence[str], title_weight: float) -> int:
    """The ``dl`` of BM25: the text's terms plus, when the title counts (``title_weight > 0``), the title's.

    Unweighted, as FTS5's ``bm25()`` counts the tokens of a row over all its columns.

    Example:
        >>> document_length(["a", "b"], ["c"], 2.0), document_length(["a", "b"], ["c"], 0.0)
        (3, 2)
    """
    return len(terms) + (len(title_terms) if title_weight > 0 else 0)


def document_vector(
    terms: Sequence[str],
    *,
    k1: float,
    b: float,
    avgdl: float | None,
    title_terms: Sequence[str] = (),
    title_weight: float = 0.0,
) -> tuple[list[int], list[float]]:
    """A document's BM25 sparse vector: ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` per term.

    ``tf`` is the term's count in ``terms`` plus ``title_weight`` times its count in ``title_terms``; ``dl`` is
    :func:`document_length`. ``title_weight=0`` ignores the title (the flat index). Colliding term ids add their
    values. A document without terms gets the marker :data:`EMPTY_DOCUMENT_INDEX` only.

    Example:
        >>> document_vector([], k1=1.2, b=0.75, avgdl=10.0)
        ([2147483648], [1.0])
    """
    counts: dict[str, float] = dict(Counter(terms))
    if title_weight > 0:
        for term, in_title in Counter(title_terms).items():
            counts[term] = counts.get(term, 0.0) + title_weight * in_title
    if not counts:
        return [EMPTY_DOCUMENT_INDEX], [1.0]
    if avgdl is None or not avgdl > 0:
        msg = "avgdl must be positive once a document has terms"
        raise InvalidArgumentError(msg)
    norm = k1 * (1.0 - b + b * document_length(terms, title_terms, title_weight) / avgdl)
    weights: dict[int, float] = {}
    for term, tf in counts.items():
        index = term_id(term)
        weights[index] = weights.get(index, 0.0) + tf * (k1 + 1.0) / (tf + norm)
    indices = sorted(weights)
    return indices, [weights[i] for i in indices]


def check_k3(value: object) -> float:
    """A query-term saturation ``k3`` as a float: a number >= 0, ``math.inf`` allowed (raw counts).

    Example:
        >>> check_k3(2), check_k3(float("inf"))
        (2.0, inf)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"k3 must be a number, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    value = float(value)
    if math.isnan(value) or value < 0:
        msg = f"k3 must be a number >= 0 (math.inf: raw counts), got {value!r}"
        raise InvalidArgumentError(msg)
    return value


def check_short_query_terms(value: object) -> int:
    """How many distinct terms a query may have and still count each term once: an int >= 0 (0: never).

    Example:
        >>> check_short_query_terms(20)
        20
    """
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"short_query_terms must be an integer, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    if value < 0:
        msg = f"short_query_terms must be >= 0, got {value}"
        raise InvalidArgumentError(msg)
    return value


def query_term_weight(qtf: float, k3: float) -> float:
    """BM25's query-term saturation of a term that occurs ``qtf`` (>= 1) times in the query:
    ``qtf * (k3 + 1) / (qtf + k3)``. ``k3 = 0`` counts each term once (1.0), ``k3 = inf`` is the raw count;
    between, it rises with ``qtf`` towards ``k3 + 1``.

    Example:
        >>> query_term_weight(3, 0.0), query_term_weight(3, math.inf), query_term_weight(3, 1.0)
        (1.0, 3.0, 1.5)
    """
    if math.isinf(k3):
        return float(qtf)
    return qtf * (k3 + 1.0) / (qtf + k3)


def query_vector(
    terms: Iterable[str], *, k3: float = DEFAULT_K3, short_query_terms: int = DEFAULT_SHORT_QUERY_TERMS
) -> tuple[list[int], list[float]]:
    """A query's sparse vector: each term's :func:`query_term_weight` (Qdrant multiplies it by the term's IDF).

    A query of at most ``short_query_terms`` distinct terms counts each term once, whatever ``k3``.

    Example:
        >>> query_vector([])
        ([], [])
        >>> query_vector(["a", "a"])[1], query_vector(["a", "a"], short_query_terms=0)[1]
        ([1.0], [2.0])
    """
    counts = Counter(term_id(t) for t in terms)
    indices = sorted(counts)
    saturation = 0.0 if len(counts) <= short_query_terms else k3
    return indices, [query_term_weight(counts[i], saturation) for i in indices]
