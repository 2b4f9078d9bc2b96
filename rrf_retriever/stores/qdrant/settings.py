"""The settings a Qdrant store is built from, as frozen values validated once when built, and the one mechanism
by which the public classes take them as keywords.

Each group of settings is ONE frozen dataclass (its fields, defaults and checks): :class:`StoreSettings` here (what
every store has), :class:`~rrf_retriever.stores.qdrant.bm25_params.Bm25Settings` (the BM25 leg),
:class:`~rrf_retriever.stores.qdrant.backend_client.ClientConnection` (where a qdrant-client store connects). A
public class takes a group's keywords through ``**options`` typed by the group's ``TypedDict`` (so type checkers
and editors know every keyword), splits them with :func:`split_options` (an unknown keyword is a ``TypeError``,
as for any Python call), and shows them in its signature with :func:`signature_with` (``help()`` and
``inspect.signature`` list each keyword with its default). A keyword and its default are written in one place.

Example:
    >>> given = split_options("Store", {"batch_size": 64}, StoreSettings)
    >>> take(StoreSettings, given)
    StoreSettings(batch_size=64, index_keys=(), max_auto_indexes=8)
    >>> split_options("Store", {"batch_sise": 64}, StoreSettings)
    Traceback (most recent call last):
    ...
    TypeError: Store.__init__() got an unexpected keyword argument 'batch_sise'
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, TypedDict, TypeVar

from rrf_retriever.stores.qdrant.points import MAX_AUTO_INDEXES, UPSERT_BATCH
from rrf_retriever.stores.qdrant.scoping import check_index_keys
from rrf_retriever.validate import check_int

__all__ = ["StoreOptions", "StoreSettings", "signature_with", "split_options", "take"]

S = TypeVar("S")


@dataclass(frozen=True)
class StoreSettings:
    """What every Qdrant store is built with, whatever its kind and backend.

    Attributes:
        batch_size: Points per upsert request (or update operation on qdrant-edge).
        index_keys: Metadata keys to index as documents are written (kept sorted, checked as filter keys).
        max_auto_indexes: How many payload indexes filtered queries may build on first use (0 to 1000).

    Raises:
        InvalidArgumentError / InvalidTypeError / InvalidFilterError: a value out of range or of the wrong type.
    """

    batch_size: int = UPSERT_BATCH
    index_keys: Sequence[str] = ()
    max_auto_indexes: int = MAX_AUTO_INDEXES

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_size", check_int(self.batch_size, "batch_size", 1))
        object.__setattr__(self, "index_keys", tuple(sorted(check_index_keys(self.index_keys))))
        object.__setattr__(self, "max_auto_indexes", check_int(self.max_auto_indexes, "max_auto_indexes", 0, 1000))


class StoreOptions(TypedDict, total=False):
    """:class:`StoreSettings` as keywords (``**options`` of a public store class)."""

    batch_size: int
    index_keys: Sequence[str]
    max_auto_indexes: int


def split_options(owner: str, options: Mapping[str, Any], *groups: type) -> dict[str, Any]:
    """``options`` as a plain dict, once every keyword is known to be a field of one of ``groups`` (dataclasses).

    Raises:
        TypeError: a keyword no group has (worded as Python words it for any call).
    """
    unknown = [name for name in options if not any(name in _names(group) for group in groups)]
    if unknown:
        msg = f"{owner}.__init__() got an unexpected keyword argument {unknown[0]!r}"
        raise TypeError(msg)
    return dict(options)


def take(group: Callable[..., S], options: Mapping[str, Any]) -> S:
    """``group`` (a settings dataclass) built from its own fields' keywords in ``options`` (the rest default)."""
    return group(**{name: options[name] for name in _names(group) if name in options})


@functools.cache
def _names(group: Any) -> frozenset[str]:
    """A settings dataclass's field names (read once per class: a constructor splits its keywords by them)."""
    return frozenset(f.name for f in fields(group))


def signature_with(init: Callable[..., Any], *groups: type, defaults: Mapping[str, Any] | None = None) -> None:
    """Show ``groups``' fields as keyword-only parameters of ``init`` in place of its ``**options`` (for
    ``help()`` and ``inspect.signature``), ``defaults`` overriding a field's default for this class."""
    signature = inspect.signature(init)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    overrides = defaults or {}
    for group in groups:
        for f in fields(group):
            default = overrides.get(f.name, f.default if f.default is not MISSING else inspect.Parameter.empty)
            params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=f.type))
    init.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]  # inspect reads it
