"""Value checks shared by every layer: scalars, ids, vectors and write batches.

Each check returns the value (converted where it says so) or raises our error naming the field, so a bad
argument is refused at the door with a clear message, never deep inside SQLite or Qdrant.

Example:
    >>> from rrf_retriever.validate import check_int, validate_batch
    >>> check_int(10, "top_k", 1, 10_000)
    10
    >>> validate_batch(["a"], ["text"], None)
    (['a'], ['text'], [{}])
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rrf_retriever.errors import FilterError, InvalidArgumentError, InvalidTypeError
from rrf_retriever.scope.dates import iso_metadata

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_LEG_TIMEOUT",
    "MAX_LIMIT",
    "MAX_LINKS",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_QUERY_LENGTH",
    "MAX_RRF_K",
    "MAX_TOP_K",
    "MAX_WEIGHT",
    "RESERVED_METADATA_PREFIX",
    "WEIGHTS_ARE",
    "CheckedList",
    "check_id",
    "check_ids",
    "check_int",
    "check_limit",
    "check_links",
    "check_list",
    "check_mapping",
    "check_number",
    "check_query",
    "check_str",
    "check_top_k",
    "check_unicode",
    "check_weight_values",
    "check_weights",
    "shown",
    "validate_batch",
]

_MAX_ID_LENGTH = 1024
#: Metadata keys with this prefix are the retriever's own (a result's scores and markers): refused on every write,
#: so a stored document can never carry a marker such as ``rrf_pinned``.
RESERVED_METADATA_PREFIX = "rrf_"
#: The integers every store holds exactly (SQLite INTEGER, Qdrant's int64 payload index).
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: The largest ``limit`` a store accepts; beyond it a caller has made a mistake (``top_k=10**9``).
MAX_LIMIT = 100_000
#: The largest ``top_k`` accepted; a bigger one is a caller's mistake (``top_k=10**9``), not a request.
MAX_TOP_K = 10_000
#: The largest source weight. Weights are relative (the seeds' settings use 0-5); a huge finite one (1.7e308) would
#: make fused scores infinite.
MAX_WEIGHT = 1_000.0
#: How a ``weights`` mapping is described in its error messages (one wording, every door).
WEIGHTS_ARE = "source name to weight"
#: The largest RRF constant: past it every rank contributes the same, and scores underflow to nothing useful.
MAX_RRF_K = 1_000_000.0
#: How deep metadata may nest (mappings and lists). Deeper values broke Qdrant's search for every query (depth
#: 130-900) or Python's JSON encoder (RecursionError at ~990); real metadata is a few levels deep.
MAX_METADATA_DEPTH = 20
#: The largest metadata of one document, as UTF-8 JSON.
MAX_METADATA_BYTES = 1_048_576
#: The longest query, in characters (~15,000 words; the service takes 10,000). Longer ones are refused: a 10 MB
#: query was answered after 68 s, nearly all of it spent tokenizing text no leg reads (the embedder reads 256 word
#: pieces, the keyword legs 256 terms).
MAX_QUERY_LENGTH = 100_000
#: The most neighbour ids one document's links (``links_key``, ``"links"`` by default) may hold: a longer list is
#: refused at write, and 1-hop expansion reads no more of a document (one holding 70,000 made every query whose page
#: held it take 2.3-4 s instead of 0.03 s, though at most ``expand_limit`` neighbours are used).
MAX_LINKS = 1_000
#: The longest ``leg_timeout`` (a day): longer ones overflow the thread and asyncio timers (``OverflowError``).
MAX_LEG_TIMEOUT = 86_400.0


def shown(value: Any) -> str:
    """``repr(value)`` shortened for a message: a hostile value may be a number of thousands of digits (whose
    ``repr`` Python refuses past 4,300 digits) or a huge list.

    Example:
        >>> shown(10**50), shown(10**5000)
        ('an integer of 51 digits', 'an integer of about 5001 digits')
        >>> len(shown("x" * 100))
        60
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        if value.bit_length() > 14_000:  # past what str() may convert: count from the bits instead
            return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_unicode(value: str, what: str, error: type[Exception] = InvalidArgumentError) -> str:
    """A string that SQLite and Qdrant can store: valid UTF-8 (no lone surrogate), or ``error`` saying ``what`` it is.

    Example:
        >>> check_unicode("caf\u00e9", "texts[0]")
        'café'
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = f"{what} is not valid Unicode (lone surrogate?)"
        raise error(msg) from exc
    return value


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


def check_number(value: object, name: str, *, allow_zero: bool = True, high: float | None = None) -> float:
    """A finite number >= 0 (> 0 with ``allow_zero=False``; <= ``high`` if given) as a float, or our error naming
    the field.

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
    if high is not None and number > high:
        msg = f"{name} must be at most {high:g}, got {value!r}"
        raise InvalidArgumentError(msg)
    return number


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
    return check_unicode(doc_id, f"{field_name}: document id {doc_id!r:.60}", FilterError)


def check_ids(ids: object, field_name: str = "ids") -> list[str]:
    """Document ids (any iterable but a single string, bytes or a mapping: :func:`check_list`), each checked by
    :func:`check_id`, duplicates dropped.

    Example:
        >>> check_ids(("a", "b", "a"))
        ['a', 'b']
    """
    if type(ids) is CheckedList:  # the ids of a checked batch: unique, each checked
        return ids
    return list(dict.fromkeys(check_id(i, field_name=field_name) for i in check_list(ids, field_name, "ids")))


def check_list(value: object, name: str, what: str) -> list[Any]:
    """Caller input that is a list of values, as a list: any iterable but one value that iterates (a string,
    bytes or a mapping, which ``list()`` would split into characters, byte values or keys), or our TypeError naming
    the argument.

    Example:
        >>> check_list(("a", "b"), "ids", "ids")
        ['a', 'b']
        >>> check_list("ab", "ids", "ids")
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidTypeError: ids must be a list of ids, not str
    """
    if isinstance(value, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(value, Iterable):
        msg = f"{name} must be a list of {what}, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    return list(value)


def check_mapping(value: object, name: str, what: str) -> Mapping[Any, Any]:
    """A mapping, or our TypeError: ``"{name} must be a mapping of {what}, not list"``.

    Example:
        >>> check_mapping({"dense": 1.0}, "weights", "source name to weight")
        {'dense': 1.0}
    """
    if not isinstance(value, Mapping):
        msg = f"{name} must be a mapping of {what}, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    return value


def check_weight_values(weights: object) -> dict[str, float]:
    """Each value of a ``weights`` mapping checked (a finite number, 0 to :data:`MAX_WEIGHT`; the message names its
    source), once, where the mapping enters (options, settings); which names are sources is the reader's to resolve.

    Example:
        >>> check_weight_values({"keyword": 2})
        {'keyword': 2.0}
    """
    given = check_mapping(weights, "weights", WEIGHTS_ARE)
    return {name: check_number(value, f"weight of source {name!r}", high=MAX_WEIGHT) for name, value in given.items()}


def check_weights(sources: Sequence[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    """Resolve weights (``{source: weight}`` or None) for ``sources``: missing means 1.0; not a mapping, a weight for
    a source not among ``sources``, NaN, infinite or negative are our errors (naming the source).

    Example:
        >>> check_weights(["dense", "keyword"], {"keyword": 0.5})
        {'dense': 1.0, 'keyword': 0.5}
    """
    weights = check_mapping(weights or {}, "weights", WEIGHTS_ARE)
    unknown = sorted(set(weights) - set(sources), key=str)
    if unknown:
        msg = f"weights given for unknown source(s) {unknown}; the sources are {sorted(sources)}"
        raise InvalidArgumentError(msg)
    return {s: check_number(weights.get(s, 1.0), f"weight of source {s!r}", high=MAX_WEIGHT) for s in sources}


def check_query(query: object) -> str:
    """A query must be a ``str`` (bytes, None and numbers are refused with our TypeError) of at most
    :data:`MAX_QUERY_LENGTH` characters.

    Example:
        >>> check_query("hello")
        'hello'
    """
    text = check_str(query, "query")
    if len(text) > MAX_QUERY_LENGTH:
        msg = (f"the query is {len(text)} characters long; at most {MAX_QUERY_LENGTH} are allowed (the legs read "
               "its first 256 word pieces or terms)")
        raise InvalidArgumentError(msg)
    return text


def check_top_k(top_k: object, name: str = "top_k") -> int:
    """``top_k`` (or ``fetch_k``) must be an integer from 1 to :data:`MAX_TOP_K`.

    Example:
        >>> check_top_k(4)
        4
    """
    return check_int(top_k, name, 1, MAX_TOP_K)


def check_limit(limit: object) -> int:
    """Validate a store ``limit``: an int from 0 to :data:`MAX_LIMIT` (0 gives an empty result).

    Example:
        >>> check_limit(10)
        10
    """
    return check_int(limit, "limit", 0, MAX_LIMIT)


def check_links(metadatas: Sequence[Mapping[str, Any]], key: str) -> None:
    """Refuse a document whose ``metadata[key]`` lists more than :data:`MAX_LINKS` neighbour ids.

    Raises:
        InvalidArgumentError: the first such document, by its position.

    Example:
        >>> check_links([{"links": ["a", "b"]}, {}], "links")
    """
    for i, metadata in enumerate(metadatas):
        links = metadata.get(key)
        if isinstance(links, (list, tuple)) and len(links) > MAX_LINKS:
            msg = (f"metadatas[{i}][{key!r}] lists {len(links)} neighbour ids; at most {MAX_LINKS} are allowed "
                   "(1-hop expansion reads no more of a document); nothing was written")
            raise InvalidArgumentError(msg)


def _check_metadata(i: int, metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        msg = f"metadatas[{i}] must be a mapping, not {type(metadata).__name__}"
        raise InvalidTypeError(msg)
    out = dict(metadata)
    for key in out:
        if not isinstance(key, str):
            msg = f"metadatas[{i}]: metadata keys must be strings, got {key!r}"
            raise InvalidTypeError(msg)
        if key.startswith(RESERVED_METADATA_PREFIX):
            msg = (f"metadatas[{i}]: the key {key[:80]!r} is reserved: the {RESERVED_METADATA_PREFIX!r} prefix marks "
                   "how a result was scored (rrf_score, rrf_pinned, ...), never stored data; rename the key")
            raise InvalidArgumentError(msg)
    out = iso_metadata(out)  # dates and datetimes are stored as ISO 8601 strings (scope.dates)
    try:
        depth = _nesting_depth(out)
    except InvalidArgumentError as exc:
        msg = f"metadatas[{i}]: {exc}"
        raise InvalidArgumentError(msg) from None
    if depth > MAX_METADATA_DEPTH:
        msg = f"metadatas[{i}] is nested more than {MAX_METADATA_DEPTH} levels deep (mappings and lists)"
        raise InvalidArgumentError(msg)
    try:
        # Stores write the JSON as UTF-8 (SQLite, Qdrant payloads): a lone surrogate must fail here, not there.
        size = len(json.dumps(out, allow_nan=False, ensure_ascii=False).encode("utf-8"))
    except UnicodeEncodeError as exc:
        msg = f"metadatas[{i}] is not valid Unicode (lone surrogate?)"
        raise InvalidArgumentError(msg) from exc
    except (TypeError, ValueError) as exc:
        msg = f"metadatas[{i}] must be JSON-serialisable (no NaN, no objects): {exc}"
        raise InvalidArgumentError(msg) from exc
    if size > MAX_METADATA_BYTES:
        msg = f"metadatas[{i}] is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are allowed"
        raise InvalidArgumentError(msg)
    return out


def _nesting_depth(value: object) -> int:
    """How many mappings and lists are nested in ``value`` (iterative: no recursion limit to hit).

    Raises:
        InvalidArgumentError: an integer outside int64 anywhere in ``value`` (no store holds it exactly).
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            if isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
                msg = f"integer {item:.3g} is outside int64, which no store holds exactly (store it as a string)"
                raise InvalidArgumentError(msg)
            continue
        deepest = max(deepest, depth)
        if depth > MAX_METADATA_DEPTH:
            break  # already too deep: no need to walk the rest
        stack.extend((child, depth + 1) for child in children)
    return deepest


class CheckedList(list):  # type: ignore[type-arg]  # ids, texts or metadata: the element type varies
    """A list :func:`validate_batch` made: the three lists of one checked batch pass it again unchecked.

    The engine checks a write at its door; the stores it writes to take the checked lists as they are (a store
    called directly with plain lists still checks at its own door). So the list cannot be changed once checked:
    every method that would change it raises ``TypeError`` (copy it with ``list(...)`` to edit). The metadata
    mappings inside are the caller's: do not change them between the check and the write.
    """

    def _refuse(self, *args: object, **kwargs: object) -> None:
        msg = "a checked batch cannot be changed (copy it with list(...) to edit it)"
        raise TypeError(msg)

    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]  # they raise instead


def validate_batch(
    ids: Sequence[str],
    texts: Sequence[str],
    metadatas: Sequence[Mapping[str, Any] | None] | None,
) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Check an ``add`` batch before anything is written, so a bad batch changes nothing.

    Ids must be unique non-empty strings, texts strings (valid Unicode), metadata JSON-serialisable
    mappings with string keys (none starting with ``rrf_``, no integer outside int64; a ``date`` or ``datetime``
    becomes its ISO 8601 string, :mod:`rrf_retriever.scope.dates`); the three sequences have
    the same length. The lists returned are :class:`CheckedList`: given back together, they pass unchecked.

    Example:
        >>> batch = validate_batch(["a", "b"], ["x", "y"], [{"n": 1}, None])
        >>> batch
        (['a', 'b'], ['x', 'y'], [{'n': 1}, {}])
        >>> all(a is b for a, b in zip(validate_batch(*batch), batch))
        True
    """
    if (type(ids) is CheckedList and type(texts) is CheckedList and type(metadatas) is CheckedList
            and len(ids) == len(texts) == len(metadatas)):
        return ids, texts, metadatas
    for name, seq in (("ids", ids), ("texts", texts)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence):
            msg = f"{name} must be a list, not {type(seq).__name__}"
            raise InvalidTypeError(msg)
    id_list = [check_id(doc_id, field_name="ids") for doc_id in ids]
    if len(set(id_list)) != len(id_list):
        msg = "ids must be unique within one batch"
        raise InvalidArgumentError(msg)
    if len(texts) != len(id_list):
        msg = f"got {len(id_list)} ids but {len(texts)} texts"
        raise InvalidArgumentError(msg)
    text_list: list[str] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            msg = f"texts[{i}] must be a str, not {type(text).__name__}"
            raise InvalidTypeError(msg)
        text_list.append(check_unicode(text, f"texts[{i}]"))
    if metadatas is None:
        meta_list: list[dict[str, Any]] = [{} for _ in id_list]
    else:
        if isinstance(metadatas, (str, bytes, Mapping)) or not isinstance(metadatas, Sequence):
            msg = f"metadatas must be a list of mappings, not {type(metadatas).__name__}"
            raise InvalidTypeError(msg)
        if len(metadatas) != len(id_list):
            msg = f"got {len(id_list)} ids but {len(metadatas)} metadatas"
            raise InvalidArgumentError(msg)
        meta_list = [_check_metadata(i, m) for i, m in enumerate(metadatas)]
    return CheckedList(id_list), CheckedList(text_list), CheckedList(meta_list)
