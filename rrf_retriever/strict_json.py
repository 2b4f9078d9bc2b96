"""The one JSON reader of every door (request bodies, the index manifest, corpus / queries files, CLI filters):
``json.loads`` that refuses a repeated key in any object, at any depth.

Python's ``json`` (like most parsers) keeps the LAST of two equal keys and says nothing, so
``{"filter": {"session_id": [0]}, "filter": {}}`` would become an unscoped search. Here it is a
:class:`DuplicateKeyError` naming the key and where it is (``filter.session_id``). Everything else is
``json.loads``'s: a text that is not JSON is its :class:`json.JSONDecodeError`, NaN and Infinity are read as
``json.loads`` reads them.

Example:
    >>> loads('{"a": {"b": 1}, "c": [1, 2]}')
    {'a': {'b': 1}, 'c': [1, 2]}
    >>> loads('{"filter": {"s": [0]}, "filter": {}}', what="the request body")
    Traceback (most recent call last):
    ...
    rrf_retriever.strict_json.DuplicateKeyError: the request body repeats the key 'filter' ...
"""

from __future__ import annotations

import json
from typing import Any

from rrf_retriever.errors import InvalidArgumentError

__all__ = ["DuplicateKeyError", "loads"]


class DuplicateKeyError(InvalidArgumentError):
    """A JSON object repeats a key: refused, since a reader would silently keep only one of the values.

    Attributes:
        key: The repeated key.
        path: Where the object that repeats it is, from the top: keys (str) and list positions (int); the
            repeated key last.
    """

    def __init__(self, message: str, key: str, path: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.key = key
        self.path = path


class _Repeated(Exception):
    """Raised inside the parse at the first repeated key; :func:`loads` then finds where it is."""


class _Marked(dict):  # type: ignore[type-arg]  # a plain dict of JSON values, marked with its repeated key
    __slots__ = ("repeated",)
    repeated: str


def _strict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Repeated
    return out


def _marking(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _Marked(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                out.repeated = key
                break
            seen.add(key)
    return out


def _find(value: Any, path: tuple[str | int, ...]) -> tuple[str, tuple[str | int, ...]] | None:
    """The first marked object in document order: (its repeated key, the path to that key)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, _Marked) and hasattr(node, "repeated"):
            return node.repeated, (*at, node.repeated)
        if isinstance(node, dict):
            stack.extend((v, (*at, k)) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((v, (*at, i)) for i, v in reversed(list(enumerate(node))))
    return None


def _dotted(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def loads(text: str | bytes, *, what: str = "the JSON text") -> Any:
    """Parse JSON as ``json.loads`` does, refusing a repeated key in any object.

    Args:
        text: The JSON text (bytes are decoded as ``json.loads`` decodes them: UTF-8, -16 or -32).
        what: What the text is, for the message (``"the request body"``, ``"corpus.jsonl:3"``).

    Returns:
        The parsed value.

    Raises:
        DuplicateKeyError: an object repeats a key; the message names the key and its path.
        json.JSONDecodeError: the text is not JSON (``json.loads``'s own error).
        RecursionError / ValueError: as ``json.loads`` (nesting beyond the interpreter's limit, an integer past
            4,300 digits).

    Example:
        >>> loads('[{"a": 1}, {"b": {"c": 1, "c": 2}}]')
        Traceback (most recent call last):
        ...
        rrf_retriever.strict_json.DuplicateKeyError: the JSON text repeats the key 'c' at [1].b.c: ...
    """
    try:
        return json.loads(text, object_pairs_hook=_strict)
    except _Repeated:
        pass
    found = _find(json.loads(text, object_pairs_hook=_marking), ())
    key, path = found if found is not None else ("?", ())
    msg = (f"{what} repeats the key {key!r} at {_dotted(path)}: each key may appear once in an object (a JSON "
           "reader would silently keep only one of the values)")
    raise DuplicateKeyError(msg, key, path)
