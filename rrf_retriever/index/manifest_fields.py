"""The type of every field of an index directory's manifest (``rrf-index.json``), checked when it is read.

A tampered or hand-edited manifest (``"doc_count": "5"``, a list for ``keyword_store``, a number of 400 digits) is
an :class:`~rrf_retriever.errors.IndexDirectoryError` naming the field and what it holds, not a raw ``TypeError``
deep inside an open. Keys this version does not know (``corpus_sha256``, ...) are left alone.

Example:
    >>> fields = {"format": 1, "embedder": None, "collection": "c", "created": "t", "doc_count": "5"}
    >>> check_fields(fields, "corrupt index at /idx: rrf-index.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rrf_retriever.errors.IndexDirectoryError: corrupt index at /idx: rrf-index.json field 'doc_count' must be an ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rrf_retriever.errors import IndexDirectoryError
from rrf_retriever.validate import shown

__all__ = ["MAX_COUNT", "MAX_DIMENSION", "REQUIRED_FIELDS", "check_fields"]

#: The fields every manifest holds (the others are optional).
REQUIRED_FIELDS = ("format", "embedder", "collection", "created", "doc_count")
#: The largest document count a manifest may hold (a signed 64-bit integer, what the stores count in).
MAX_COUNT = 2**63 - 1
#: The largest dense dimension (Qdrant's own limit).
MAX_DIMENSION = 65536


def _integer(low: int, high: int) -> tuple[str, Callable[[Any], bool]]:
    # bool is an int to Python, never a count to us
    return (f"an integer from {low} to {high}",
            lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high)


def _text(optional: bool = False, non_empty: bool = False) -> tuple[str, Callable[[Any], bool]]:
    what = ("a non-empty string" if non_empty else "a string") + (" or null" if optional else "")
    return what, lambda v: (optional and v is None) or (isinstance(v, str) and (not non_empty or bool(v)))


def _mapping(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and all(isinstance(k, str) for k in v))


#: field -> (what it must be, the check). ``analyzer``'s own keys are checked by :data:`_ANALYZER_FIELDS`.
_FIELDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "format": _integer(0, MAX_COUNT),
    "embedder": _text(optional=True, non_empty=True),
    "embedder_class": _text(optional=True),
    "embedder_model": _text(optional=True),
    "dimension": (f"an integer from 1 to {MAX_DIMENSION} or null",
                  lambda v: v is None or _integer(1, MAX_DIMENSION)[1](v)),
    "collection": _text(non_empty=True),
    "keyword_store": _text(non_empty=True),
    "dense_store": _text(non_empty=True),
    "analyzer": ("an object (the analyzer's settings) or null", _mapping),
    "created": _text(),
    "updated": _text(optional=True),
    "doc_count": _integer(0, MAX_COUNT),
    "qdrant_layout": _text(non_empty=True),
    "qdrant_url": _text(optional=True),
    "settings": ("an object (the saved search settings) or null", _mapping),
    "language_detection": ("an object (what the corpus-language detection found) or null", _mapping),
    "leg_strength": ("an object (the legs measured on the corpus) or null", _mapping),
    "index_keys": ("a list of strings (metadata keys)", lambda v: isinstance(v, list) and all(isinstance(k, str)
                                                                                           for k in v)),
}
_ANALYZER_FIELDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "stopwords": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(w, str) for w in v)),
    "stem": _text(optional=True),
    "min_length": _integer(0, MAX_COUNT),
    "fold_diacritics": ("true or false", lambda v: isinstance(v, bool)),
    "language": _text(optional=True),
    "cjk_bigrams": ("true or false", lambda v: isinstance(v, bool)),
}


def check_fields(manifest: Any, where: str) -> dict[str, Any]:
    """Check a parsed manifest: a JSON object holding the required fields, each field of its type.

    Args:
        manifest: What ``json.loads`` made of ``rrf-index.json``.
        where: What the error message starts with (the index directory and the manifest's file name).

    Returns:
        The manifest, unchanged.

    Raises:
        IndexDirectoryError: the manifest is not an object, lacks a required field, or a field holds something
            of the wrong type or out of range (the message names the field, what it must be and what it holds).
    """
    if not isinstance(manifest, dict):
        msg = f"{where} must hold a JSON object, it holds {shown(manifest)}"
        raise IndexDirectoryError(msg)
    missing = [key for key in REQUIRED_FIELDS if key not in manifest]
    if missing:
        msg = f"{where} lacks the field(s) {missing} (every manifest holds {list(REQUIRED_FIELDS)})"
        raise IndexDirectoryError(msg)
    for key, (what, ok) in _FIELDS.items():
        if key in manifest and not ok(manifest[key]):
            msg = f"{where} field {key!r} must be {what}, it holds {shown(manifest[key])}"
            raise IndexDirectoryError(msg)
    for key, (what, ok) in _ANALYZER_FIELDS.items():
        analyzer = manifest.get("analyzer") or {}
        if key in analyzer and not ok(analyzer[key]):
            msg = f"{where} field 'analyzer.{key}' must be {what}, it holds {shown(analyzer[key])}"
            raise IndexDirectoryError(msg)
    return manifest
