"""Small value types shared by every layer: hits, fused hits, and the scope (filter + exclusions).

All of them are frozen dataclasses: a hit that leaves a store is never changed in place.

Example:
    >>> from rrf_retriever.types import Hit, normalize_filter
    >>> Hit(id="a", text="hello", score=1.5).id
    'a'
    >>> normalize_filter({"session_id": [1, 2], "lang": "en"})
    {'lang': ('en',), 'session_id': (1, 2)}
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rrf_retriever.errors import DimensionMismatchError, FilterError, InvalidArgumentError, InvalidTypeError

__all__ = [
    "FilterSpec",
    "FilterValue",
    "FusedHit",
    "Hit",
    "LegTrace",
    "NormalizedFilter",
    "Record",
    "SearchResult",
    "Trace",
    "check_int",
    "check_number",
    "check_str",
    "normalize_exclude_ids",
    "normalize_filter",
    "parse_filter_values",
    "scope_key",
    "to_float_vector",
    "to_float_vectors",
]

FilterValue = str | int | bool
#: What users pass: ``{"session_id": [1, 2, 3], "lang": "en"}``. A list means any-of; keys must all match.
FilterSpec = Mapping[str, FilterValue | Sequence[FilterValue]]
#: What stores receive: keys sorted, every value a tuple of allowed values.
NormalizedFilter = dict[str, tuple[FilterValue, ...]]

# Keys name metadata fields. Stores bind them as parameters, but a tight pattern also keeps them portable
# (Qdrant payload paths, JSON paths) and readable in errors.
_KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,127}$")
_MAX_FILTER_VALUES = 10_000
_MAX_ID_LENGTH = 1024


@dataclass(frozen=True, slots=True)
class Hit:
    """One result of one store (a "leg").

    Attributes:
        id: The document id, the same in every store.
        text: The document text.
        metadata: The user's metadata.
        score: The store's own score, higher is better (cosine similarity, BM25 as a positive number).
    """

    id: str
    text: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class FusedHit:
    """One result of a fusion.

    Attributes:
        id: The document id.
        text: The document text (taken from the source that ranked it best).
        metadata: The user's metadata (from the same source).
        score: The fused score.
        ranks: ``{source: 1-based rank}`` for every source with weight > 0 that returned the document.
        scores: ``{source: raw score}`` for the same sources.
    """

    id: str
    text: str
    metadata: Mapping[str, Any]
    score: float
    ranks: Mapping[str, int]
    scores: Mapping[str, float]


def _check_filter_value(key: str, value: object) -> FilterValue:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Qdrant stores integers as int64 and SQLite as 64-bit too: refuse what neither can hold.
        if not -(2**63) <= value < 2**63:
            msg = f"filter value for {key!r} is out of the 64-bit integer range: {value}"
            raise FilterError(msg)
        return value
    if isinstance(value, str):
        if "\x00" in value:
            msg = f"filter value for {key!r} contains a NUL character"
            raise FilterError(msg)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            msg = f"filter value for {key!r} is not valid Unicode (lone surrogate?)"
            raise FilterError(msg) from exc
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return _check_filter_value(key, int(value))
        msg = f"filter value for {key!r} must be a string, an integer or a boolean, not the float {value!r}"
        raise FilterError(msg)
    msg = f"filter value for {key!r} must be a string, an integer or a boolean, not {type(value).__name__}"
    raise FilterError(msg)


def normalize_filter(filter: FilterSpec | None) -> NormalizedFilter | None:
    """Validate a metadata filter and bring it to the form every store understands.

    Each key must match; a list (or tuple or set) of values means any-of. An empty list matches nothing.
    ``None`` or ``{}`` means no filter.

    Args:
        filter: ``{"session_id": [1, 2, 3], "lang": "en"}`` or None.

    Returns:
        ``{key: (value, ...)}`` with keys sorted and duplicate values removed, or None.

    Raises:
        FilterError: a key that is not a plain field name, a value that is not str, int or bool.

    Example:
        >>> normalize_filter({"b": 1, "a": ["x", "x", "y"]})
        {'a': ('x', 'y'), 'b': (1,)}
    """
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        msg = f"filter must be a mapping of metadata field to value(s), not {type(filter).__name__}"
        raise FilterError(msg)
    if not filter:
        return None
    out: NormalizedFilter = {}
    for key in sorted(filter, key=str):
        if not isinstance(key, str) or not _KEY_PATTERN.match(key):
            msg = (
                f"filter key {key!r} is not a metadata field name "
                "(letters, digits, '_' and '-', starting with a letter or '_', at most 128 characters)"
            )
            raise FilterError(msg)
        raw = filter[key]
        values: Iterable[object]
        if isinstance(raw, (list, tuple, set, frozenset)):
            values = raw
            if len(raw) > _MAX_FILTER_VALUES:
                msg = f"filter key {key!r} lists {len(raw)} values; at most {_MAX_FILTER_VALUES} are allowed"
                raise FilterError(msg)
        else:
            values = (raw,)
        checked: list[FilterValue] = []
        seen: set[tuple[type, FilterValue]] = set()
        for value in values:
            v = _check_filter_value(key, value)
            tag = (type(v), v)
            if tag not in seen:
                seen.add(tag)
                checked.append(v)
        out[key] = tuple(checked)
    return out


def parse_filter_values(text: str) -> list[str | int]:
    """The textual form of a filter value list (CLI ``key=1,2``, HTTP ``session_ids=1,2``): comma-separated,
    blanks dropped, integers parsed, anything else kept as a string.

    Example:
        >>> parse_filter_values("1, 2,,en")
        [1, 2, 'en']
    """
    values: list[str | int] = []
    for raw in check_str(text, "filter values").split(","):
        item = raw.strip()
        if item:
            try:
                values.append(int(item))
            except ValueError:
                values.append(item)
    return values


def normalize_exclude_ids(exclude_ids: Iterable[str] | None) -> frozenset[str]:
    """Validate ``exclude_ids``: an iterable of string ids (a single string is refused, it is not a list).

    Example:
        >>> sorted(normalize_exclude_ids(["a", "b", "a"]))
        ['a', 'b']
    """
    if exclude_ids is None:
        return frozenset()
    if isinstance(exclude_ids, (str, bytes)):
        msg = "exclude_ids must be a list of ids, not a single string"
        raise InvalidTypeError(msg)
    try:
        ids = list(exclude_ids)
    except TypeError as exc:
        msg = f"exclude_ids must be an iterable of ids, not {type(exclude_ids).__name__}"
        raise InvalidTypeError(msg) from exc
    for doc_id in ids:
        check_id(doc_id, field_name="exclude_ids")
    return frozenset(ids)


def check_str(value: object, name: str) -> str:
    """A ``str`` or our TypeError naming the field (bytes, None and numbers are refused).

    Example:
        >>> check_str("hello", "query")
        'hello'
    """
    if not isinstance(value, str):
        msg = f"{name} must be a str, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    return value


def check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    """An ``int`` (not a bool) from ``low`` to ``high`` inclusive, or our error naming the field.

    Example:
        >>> check_int(10, "top_k", 1, 10_000)
        10
    """
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an integer, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    if value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"between {low} and {high}"
        msg = f"{name} must be {bounds}, got {value}"
        raise InvalidArgumentError(msg)
    return value


def check_number(value: object, name: str, *, allow_zero: bool = True) -> float:
    """A finite number >= 0 (> 0 with ``allow_zero=False``) as a float, or our error naming the field.

    Example:
        >>> check_number(60, "rrf_k")
        60.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{name} must be a number, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        msg = f"{name} must be finite and {'>= 0' if allow_zero else '> 0'}, got {value!r}"
        raise InvalidArgumentError(msg)
    return number


def to_float_vector(value: object, name: str, *, type_error: type[Exception] = InvalidTypeError) -> list[float]:
    """One vector (list, tuple, numpy array, tensor) as a list of finite floats.

    Args:
        value: The vector.
        name: What it is, for messages ("the query vector", "vectors[3]").
        type_error: The error for a value that is not a sequence of numbers (``EmbeddingError`` when a model
            returned it, ``InvalidTypeError`` when a caller passed it).

    Raises:
        DimensionMismatchError: an empty vector, NaN or infinity.

    Example:
        >>> to_float_vector((1, 2.5), "v")
        [1.0, 2.5]
    """
    if hasattr(value, "tolist"):  # numpy arrays, torch tensors: one C-level conversion
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{name} must be a sequence of floats, not {type(value).__name__}"
        raise type_error(msg)
    try:
        out = [float(x) for x in value]
    except (TypeError, ValueError) as exc:
        msg = f"{name} must hold numbers only"
        raise type_error(msg) from exc
    if not out:
        msg = f"{name} is empty"
        raise DimensionMismatchError(msg)
    if not all(math.isfinite(x) for x in out):
        msg = f"{name} holds NaN or infinity"
        raise DimensionMismatchError(msg)
    return out


def to_float_vectors(
    value: object,
    count: int,
    name: str,
    *,
    type_error: type[Exception] = InvalidTypeError,
    count_error: type[Exception] = DimensionMismatchError,
) -> list[list[float]]:
    """``count`` vectors (a list of vectors or a 2-D array) as lists of finite floats; see :func:`to_float_vector`.

    Example:
        >>> to_float_vectors([[1, 2], (3, 4)], 2, "vectors")
        [[1.0, 2.0], [3.0, 4.0]]
    """
    if hasattr(value, "tolist") and not isinstance(value, Sequence):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{name} must be a list of vectors, not {type(value).__name__}"
        raise type_error(msg)
    if len(value) != count:
        msg = f"{name}: {len(value)} vectors for {count} texts"
        raise count_error(msg)
    return [to_float_vector(v, f"{name}[{i}]", type_error=type_error) for i, v in enumerate(value)]


def check_id(doc_id: object, *, field_name: str = "id") -> str:
    """Check one document id: a non-empty string without NUL, valid Unicode, at most 1024 characters.

    Example:
        >>> check_id("doc-1")
        'doc-1'
    """
    if not isinstance(doc_id, str):
        msg = f"{field_name}: document ids are strings, got {type(doc_id).__name__}"
        raise InvalidTypeError(msg)
    if not doc_id or len(doc_id) > _MAX_ID_LENGTH or "\x00" in doc_id:
        msg = f"{field_name}: a document id must be 1 to {_MAX_ID_LENGTH} characters without NUL, got {doc_id!r:.60}"
        raise FilterError(msg)
    try:
        doc_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = f"{field_name}: document id {doc_id!r:.60} is not valid Unicode (lone surrogate?)"
        raise FilterError(msg) from exc
    return doc_id


def matches_filter(metadata: Mapping[str, Any], flt: NormalizedFilter | None) -> bool:
    """Reference semantics of a normalized filter on one metadata mapping (used by in-memory stores).

    A value matches when it equals one allowed value, with bools and ints kept apart (``True`` is not ``1``).
    A metadata value that is a list matches when any element matches (as Qdrant does for arrays).

    Example:
        >>> matches_filter({"session_id": 2}, {"session_id": (1, 2)})
        True
    """
    if not flt:
        return True
    for key, allowed in flt.items():
        if key not in metadata:
            return False
        value = metadata[key]
        candidates = value if isinstance(value, (list, tuple)) else (value,)
        if not any(_same_value(c, a) for c in candidates for a in allowed):
            return False
    return True


def _same_value(a: object, b: object) -> bool:
    key = scope_key(a)
    return key is not None and key == scope_key(b)


def scope_key(value: object) -> tuple[str, Any] | None:
    """The typed key by which a filter compares a scalar metadata value; the one definition every store uses.

    ``("b", bool)``, ``("n", number)`` or ``("s", str)``: bools are kept apart from numbers (``True`` is not
    ``1``), ``2`` and ``2.0`` are the same number. None for what no filter can match (NaN, infinity, None,
    containers, objects).

    Example:
        >>> scope_key(True), scope_key(2) == scope_key(2.0), scope_key(float("nan"))
        (('b', True), True, None)
    """
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value) if not isinstance(value, float) or math.isfinite(value) else None
    if isinstance(value, str):
        return ("s", value)
    return None


@dataclass(frozen=True, slots=True)
class Record:
    """A stored document as a store gives it back (``get``), with its vector where the store keeps one.

    Example:
        >>> Record("a", "text", {"k": 1}).vector is None
        True
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    vector: Sequence[float] | None = None


@dataclass(frozen=True, slots=True)
class LegTrace:
    """What one leg (one source) did for one query.

    Attributes:
        name: The source name ("dense", "keyword", ...).
        kind: "dense", "keyword" or "retriever" (a LangChain/LlamaIndex retriever used as a source).
        weight: The weight used for this query.
        called: False when the leg sat out (weight 0, no keyword term survived, embedding failed).
        latency_ms: Wall time of the leg's search (0 when not called).
        hits: How many hits it returned.
        error: The error message when it failed or timed out, else None.
        note: Why it sat out, when it did ("weight 0", "no keyword terms", ...).
    """

    name: str
    kind: str
    weight: float
    called: bool
    latency_ms: float = 0.0
    hits: int = 0
    error: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    """How a hybrid query was answered: per-leg traces, timings and the settings used.

    Example:
        >>> Trace(legs=(), weights={}, rrf_k=60.0, top_k=10, fetch_k=20).degraded
        False
    """

    legs: tuple[LegTrace, ...]
    weights: Mapping[str, float]
    rrf_k: float
    top_k: int
    fetch_k: int
    fusion: str = "rrf"
    embed_ms: float = 0.0
    fusion_ms: float = 0.0
    total_ms: float = 0.0
    warnings: tuple[str, ...] = ()

    @property
    def degraded(self) -> bool:
        """True when a leg that should have run failed, timed out or lost its embedding."""
        return any(leg.error is not None for leg in self.legs)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The answer of a hybrid search: fused hits (best first) and the trace.

    Example:
        >>> SearchResult(hits=[], trace=Trace((), {}, 60.0, 10, 20)).ids
        []
    """

    hits: list[FusedHit]
    trace: Trace

    @property
    def ids(self) -> list[str]:
        """The ids of the hits, best first."""
        return [h.id for h in self.hits]
