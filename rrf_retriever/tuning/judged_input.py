"""The judged queries :func:`~rrf_retriever.tuning.tune` takes, checked at the door.

* ``queries``: a mapping ``{query_id: text}`` or ``{query_id: {"text": ..., "filter": ..., "exclude_ids": [...]}}``.
* ``qrels``: a mapping ``{query_id: {doc_id: grade}}``.
* Ids (of queries and of documents) are strings; an ``int`` id is accepted and converted with ``str`` (``0`` is the
  query ``"0"``) in both mappings alike, so integer keys from a hand-built dict match; the same id given both as
  ``1`` and ``"1"`` is refused. Any other key type is an :class:`~rrf_retriever.errors.InvalidTypeError`.
* A grade is an ``int`` from 0 to :data:`MAX_GRADE` (``bool``, ``float``, strings and ``None`` are refused: a grade
  ``"1"`` or ``1.0`` is a bug in the loader that made it); a grade > 0 is relevant.

Example:
    >>> specs, qrels = judged_queries({0: "backup policy"}, {0: {"doc-1": 2}})
    >>> specs, qrels
    ([('0', 'backup policy', None, None)], {'0': {'doc-1': 2}})
    >>> judged_queries({"q": "x"}, {"q": {"doc-1": "1"}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rrf_retriever.errors.InvalidTypeError: qrels['q']['doc-1']: a grade must be an int from 0 to 1000000, not '1'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.validate import shown

__all__ = ["MAX_GRADE", "QuerySpec", "judged_queries"]

#: The largest relevance grade accepted (TREC and BEIR grades are 0-3; a huge one would overflow nDCG's gain).
MAX_GRADE = 1_000_000
#: ``(query_id, text, filter, exclude_ids)``.
QuerySpec = tuple[str, str, Any, Any]
_SHAPE = "queries and qrels must be mappings: {query_id: text or {'text', 'filter'}}, {query_id: {doc_id: grade}}"


def _id(value: Any, what: str, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    msg = f"{where}: a {what} id must be a string (or an int), not {shown(value)} ({type(value).__name__})"
    raise InvalidTypeError(msg)


def _keyed(mapping: Mapping[Any, Any], what: str, where: str) -> dict[str, Any]:
    """``mapping`` with its keys as strings; two keys that become the same string are refused."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = _id(key, what, where)
        if name in out:
            msg = f"{where}: the {what} id {name!r} is given twice (as an int and as a string)"
            raise InvalidArgumentError(msg)
        out[name] = value
    return out


def _grade(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        msg = f"{where}: a grade must be an int from 0 to {MAX_GRADE}, not {shown(value)}"
        raise InvalidTypeError(msg)
    if not 0 <= value <= MAX_GRADE:
        msg = f"{where}: a grade must be an int from 0 to {MAX_GRADE}, not {shown(value)}"
        raise InvalidArgumentError(msg)
    return value


def judged_queries(queries: Any, qrels: Any) -> tuple[list[QuerySpec], dict[str, dict[str, int]]]:
    """Check and normalise ``queries`` and ``qrels`` (the rules are the module's).

    Args:
        queries: ``{query_id: text or {"text", "filter", "exclude_ids"}}``; ids not in ``qrels`` are ignored.
        qrels: ``{query_id: {doc_id: grade}}``.

    Returns:
        ``([(query_id, text, filter, exclude_ids)], qrels)`` in qrels order, every id a string.

    Raises:
        InvalidTypeError: not mappings, an id neither a string nor an int, a grade not an int, a query neither text
            nor a mapping with a ``"text"`` string.
        InvalidArgumentError: a grade out of range, an id given twice, a judged query without a text, an unknown
            key in a query, or no document judged relevant at all.
    """
    if not isinstance(queries, Mapping) or not isinstance(qrels, Mapping):
        got = f"got {type(queries).__name__} and {type(qrels).__name__}"
        msg = f"{_SHAPE}; {got}"
        raise InvalidTypeError(msg)
    texts = _keyed(queries, "query", "queries")
    judged: dict[str, dict[str, int]] = {}
    for qid, docs in _keyed(qrels, "query", "qrels").items():
        if not isinstance(docs, Mapping):
            msg = f"qrels[{qid!r}] must be a mapping {{doc_id: grade}}, not {type(docs).__name__}"
            raise InvalidTypeError(msg)
        judged[qid] = {doc: _grade(g, f"qrels[{qid!r}][{doc!r}]")
                       for doc, g in _keyed(docs, "document", f"qrels[{qid!r}]").items()}
    missing = [q for q in judged if q not in texts]
    if missing:
        msg = f"{len(missing)} judged query id(s) have no text in queries: {sorted(missing)[:5]}"
        raise InvalidArgumentError(msg)
    if judged and not any(g > 0 for docs in judged.values() for g in docs.values()):
        msg = "the qrels judge no document relevant (every grade is 0, every score would be 0): nothing to tune"
        raise InvalidArgumentError(msg)
    specs: list[QuerySpec] = []
    for qid in judged:
        spec = texts[qid]
        if isinstance(spec, str):
            specs.append((qid, spec, None, None))
        elif isinstance(spec, Mapping) and isinstance(spec.get("text"), str):
            unknown = sorted(str(k) for k in set(spec) - {"text", "filter", "exclude_ids"})
            if unknown:
                msg = f"query {qid!r}: unknown key(s) {unknown}; a query is text or {{'text', 'filter', 'exclude_ids'}}"
                raise InvalidArgumentError(msg)
            specs.append((qid, spec["text"], spec.get("filter"), spec.get("exclude_ids")))
        else:
            msg = f"query {qid!r} must be a string or a mapping with a 'text' string, not {type(spec).__name__}"
            raise InvalidTypeError(msg)
    return specs, judged
