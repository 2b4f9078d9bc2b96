"""The FTS5 MATCH builder: the one place FTS5 query syntax is written.

User text becomes an FTS5 query in which every term is a double-quoted string joined by ``OR``. Since a term
only ever holds letters and digits (the analyzer's guarantee), no user character can reach FTS5's query parser
as syntax: ``OR``, ``NEAR(``, ``*``, ``"``, ``-``, ``:``, ``^`` are just text.

Example:
    >>> build_match_query('NEAR(db x) AND "fts5* -col:y')
    '"near" OR "db" OR "fts5" OR "col"'
"""

from __future__ import annotations

from collections.abc import Sequence

from rrf_retriever.analysis.analyzer import Analyzer, default_analyzer
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.validate import check_int, check_str

__all__ = ["DEFAULT_MAX_TERMS", "build_match_query", "match_expression"]

#: Long inputs (a pasted document) keep their first terms only: an OR of thousands of phrases costs a
#: doclist scan each and does not rank better.
DEFAULT_MAX_TERMS = 256


def build_match_query(
    text: str, analyzer: Analyzer | None = None, *, max_terms: int = DEFAULT_MAX_TERMS
) -> str | None:
    """Build a safe FTS5 MATCH expression: every surviving term double-quoted, joined with ``OR``.

    Terms are the analyzer's :meth:`Analyzer.terms` (unstemmed: FTS5's porter tokenizer stems both the
    index and the quoted query terms). A term only holds Unicode letters and digits, so no user character is
    ever parsed as FTS5 syntax. Repeated terms are kept (as Lucene's bag-of-words queries weight them) up to
    ``max_terms`` terms in all.

    Args:
        text: The user's query, any string.
        analyzer: The keyword store's analyzer (default: :func:`default_analyzer`).
        max_terms: At most this many terms, in order of appearance.

    Returns:
        The MATCH string, or None when no term survives (the keyword leg then sits out).

    Raises:
        InvalidTypeError: ``text`` is not a string.
        InvalidArgumentError: ``max_terms`` < 1.

    Example:
        >>> build_match_query("fts5 OR config*")
        '"fts5" OR "config"'
        >>> build_match_query("the a of") is None
        True
    """
    check_str(text, "query")
    check_int(max_terms, "max_terms", 1)
    return match_expression((analyzer or default_analyzer()).query_terms(text)[:max_terms])


def match_expression(terms: Sequence[str], operator: str = "OR") -> str | None:
    """Quote analyzer terms and join them with ``OR`` or ``AND``: the one place FTS5 query syntax is written.

    Every term must be what the analyzer makes (Unicode letters and digits only), so none can hold a ``"``;
    anything else is refused rather than escaped, so a caller cannot pass raw user text by mistake.

    Returns:
        The MATCH string, or None for no terms.

    Example:
        >>> match_expression(["fts5", "index"], "AND")
        '"fts5" AND "index"'
    """
    if operator not in ("OR", "AND"):
        msg = f"operator must be 'OR' or 'AND', got {operator!r}"
        raise InvalidArgumentError(msg)
    for term in terms:
        if not isinstance(term, str) or not term.isalnum():
            msg = f"not an analyzer term (letters and digits only): {term!r:.60}"
            raise InvalidArgumentError(msg)
    return f" {operator} ".join(f'"{t}"' for t in terms) or None
