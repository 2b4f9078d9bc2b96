"""The payload indexes behind every Qdrant store's filters, and the checks of what a filter may meet.

:class:`PayloadIndexes` is held by each store (every kind, every backend); the filter itself is compiled by
:mod:`rrf_retriever.stores.qdrant.filters` through the backend's model hooks, and assembled with the scope's
exclusions by :class:`~rrf_retriever.stores.qdrant.common.QdrantStore`.

Payload indexes: Qdrant keeps one index per field, and its kind changes what a filter matches (an *integer*
index holds integral floats as integers and drops other floats, so a ``Range`` on it misses ``2.5``). So a key is
indexed once, by what its filters need (:func:`~rrf_retriever.stores.qdrant.filters.index_plan`: ``float`` for
numbers, else ``keyword``, else ``bool``), within ``max_auto_indexes`` on the query path (declared
``index_keys`` on the write path), and an integer index is replaced by a float one before a ``Range`` uses it.

The query path spends that budget only on keys a stored document holds: before indexing a new key it asks Qdrant
for one point holding it (one request; a key no document holds is remembered, and asked again once this store
writes it). An index whose key no document holds, left by an older version on a store whose budget it fills, is
dropped when the store is opened. Another process writing a remembered key to the same server collection gets it
indexed after this store is opened again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rrf_retriever.errors import StoreError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import NormalizedFilter
from rrf_retriever.stores.qdrant.backend import Backend
from rrf_retriever.stores.qdrant.filters import IS_EMPTY, field_key, filter_keys, index_plan
from rrf_retriever.stores.qdrant.ops import Op, Steps
from rrf_retriever.validate import check_list

__all__ = ["PayloadIndexes", "check_index_keys"]

logger = logging.getLogger(__name__)

_NUMERIC_INDEXES = frozenset({"float", "integer"})
#: Flat ranges a Match may list where Qdrant scans payloads (a tree only pays past a few values) and in local mode
#: (a range check in Python per payload per value: a guarding range first stops most points).
_SCAN_FLAT = 8
_LOCAL_FLAT = 1
#: Keys remembered as held by no document; past it the memory starts again (each key costs one more request).
_MAX_ABSENT = 4096


def check_index_keys(index_keys: Sequence[str] | str) -> frozenset[str]:
    """Validate declared ``index_keys`` (metadata field names, as filters name them): one key as a ``str``, else
    a list of them (:func:`~rrf_retriever.validate.check_list`: bytes, a mapping or a non-iterable is our
    TypeError, not split into items or keys).

    Example:
        >>> sorted(check_index_keys(["b", "a"])), check_index_keys("a")
        (['a', 'b'], frozenset({'a'}))
    """
    # One key may be a string; a mapping or bytes is refused (list() would take a mapping's keys as the keys).
    keys = [index_keys] if isinstance(index_keys, str) else check_list(index_keys, "index_keys", "metadata keys")
    return frozenset(filter_keys(normalize_filter({k: [] for k in keys})))


def _kind_name(data_type: Any) -> str:
    """``PayloadSchemaType.INTEGER`` / ``PayloadSchemaType.Integer`` / ``"integer"`` -> ``"integer"``."""
    return str(getattr(data_type, "value", data_type)).rsplit(".", 1)[-1].lower()


class PayloadIndexes:
    """The payload indexes of one collection: those it has, those a filter or a write asks for.

    Args:
        index_keys: Metadata keys indexed on the write path, by the values a batch brings.
        max_auto_indexes: How many more keys a filtered query may index on first use.

    Both are taken as checked: a store's come from its
    :class:`~rrf_retriever.stores.qdrant.settings.StoreSettings`, which checks them once when built.

    Example:
        >>> indexes = PayloadIndexes(["session_id"], 8)
        >>> indexes.learn({"metadata.lang": "keyword", "other": "integer"}); indexes.known
        frozenset({('lang', 'keyword')})
    """

    def __init__(self, index_keys: Iterable[str], max_auto_indexes: int) -> None:
        self.index_keys = frozenset(index_keys)
        self.max_auto_indexes = max_auto_indexes
        self._kinds: dict[str, str] = {}  # metadata key -> index kind, asked for once
        self._absent: set[str] = set()  # keys found held by no document, not indexed on the query path

    @property
    def known(self) -> frozenset[tuple[str, str]]:
        """``(metadata key, kind)`` of each index known: one per key (Qdrant keeps one)."""
        return frozenset(self._kinds.items())

    def learn(self, schema: Mapping[str, Any] | None) -> None:
        """Take the payload indexes a collection already has (``{field: info with .data_type}``)."""
        prefix = field_key("")
        for field, info in (schema or {}).items():
            if isinstance(field, str) and field.startswith(prefix):
                self._kinds[field[len(prefix):]] = _kind_name(getattr(info, "data_type", info))

    def flat_limits(self, flt: NormalizedFilter | None, indexes_payload: bool) -> Callable[[str], int | None]:
        """For each key, how many integers a Match on it lists flat (:func:`~rrf_retriever.stores.qdrant.filters.
        compile_filter`) once :meth:`query_steps` has indexed what ``flt`` asks for: no limit over a numeric index;
        a few where Qdrant scans payloads; 1 in local mode, where Python checks a guarding range first and stops
        there for most points. Read without a lock (before the call takes the store's): a copy of the kinds."""
        if not indexes_payload:
            return lambda key: _LOCAL_FLAT
        kinds = dict(self._kinds)
        kinds.update(self._creations(flt, kinds, frozenset(self._absent)) if flt is not None else [])
        return lambda key: None if kinds.get(key) in _NUMERIC_INDEXES else _SCAN_FLAT

    def _creations(
        self, flt: NormalizedFilter, kinds: Mapping[str, str], absent: frozenset[str]
    ) -> list[tuple[str, str]]:
        """The indexes :meth:`query_steps` may create for ``flt``, given the ``kinds`` known, in order (a key not
        checked yet is created only if a document holds it)."""
        planned: list[tuple[str, str]] = []
        count = len(kinds)
        for key, (kind, has_range) in sorted(index_plan(flt).items()):
            current = kinds.get(key)
            if current is None:
                if key in absent or (key not in self.index_keys and count >= self.max_auto_indexes):
                    continue  # over budget: filtered without an index, never a new index on the query path
                planned.append((key, kind))
                count += 1
            elif current == "integer" and has_range:
                planned.append((key, "float"))
        return planned

    def query_steps(self, backend: Backend, flt: NormalizedFilter) -> Steps[None]:
        """Index each filtered key once, within the ``max_auto_indexes`` budget (declared ``index_keys`` are
        indexed at write time); an integer index under a ``Range`` becomes a float one. Without an index Qdrant
        checks the filter on every point's payload."""
        for key, kind in self._creations(flt, self._kinds, frozenset(self._absent)):
            if key not in self._kinds and key not in self.index_keys:
                if not (yield from self._held_steps(backend, key)):
                    self._remember_absent(key)
                    continue  # no document holds it: the budget is kept for keys that filter something
                if len(self._kinds) >= self.max_auto_indexes:
                    continue  # another call spent the budget meanwhile
            yield from self._create_steps(backend, key, kind)

    def written(self, payloads: Sequence[Mapping[str, Any]]) -> None:
        """Note a batch about to be written: a key it brings is held again (checked on its next search)."""
        if not self._absent:
            return
        for payload in payloads:
            meta = payload.get("metadata")
            if isinstance(meta, Mapping):
                self._absent.difference_update(meta)

    def reclaim_steps(self, backend: Backend) -> Steps[None]:
        """On a store whose budget is spent: drop the automatic indexes whose key no document holds (an older
        version built them for any key a search named), so keys documents hold can be indexed."""
        if len(self._kinds) < self.max_auto_indexes:
            return
        for key in sorted(self._kinds):
            if key in self.index_keys or (yield from self._held_steps(backend, key)):
                continue
            try:
                yield Op(backend.delete_index, (field_key(key),), "deleting a payload index")
            except StoreError as exc:  # the budget stays spent: searches stay correct
                logger.debug("payload index on %s not deleted: %s", key, exc)
                continue
            del self._kinds[key]
            self._remember_absent(key)

    def _held_steps(self, backend: Backend, key: str) -> Steps[bool]:
        """Whether a stored document holds ``key`` (a value other than None or ``[]``): one point asked for."""
        held = backend.filter(must_not=[backend.condition(field_key(key), IS_EMPTY)])
        points, _ = yield Op(backend.scroll, (None, 1, held, True), "checking a filter key")
        return bool(points)

    def _remember_absent(self, key: str) -> None:
        if len(self._absent) >= _MAX_ABSENT:
            self._absent.clear()
        self._absent.add(key)

    def write_steps(self, backend: Backend, payloads: list[dict[str, Any]]) -> Steps[None]:
        """Index the declared keys by the values this batch brings, before its points are written: Qdrant then
        indexes each point as it arrives instead of rebuilding the index over stored ones."""
        for key in sorted(self.index_keys):
            current = self._kinds.get(key)
            if current is not None and current != "integer":
                continue
            found: set[str] = set()
            for payload in payloads:
                meta = payload.get("metadata") or {}
                value = meta.get(key) if isinstance(meta, Mapping) else None
                for v in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(v, bool):
                        found.add("bool")
                    elif isinstance(v, (int, float)):
                        found.add("float")
                    elif isinstance(v, str):
                        found.add("keyword")
            kind = next((k for k in ("float", "keyword", "bool") if k in found), None)
            if kind is not None and (current is None or kind == "float"):  # integer -> float only
                yield from self._create_steps(backend, key, kind)

    def _create_steps(self, backend: Backend, key: str, kind: str) -> Steps[None]:
        try:
            yield Op(backend.create_index, (field_key(key), kind), "creating a payload index")
        except StoreError as exc:  # searches stay correct, slower
            logger.debug("payload index on %s (%s) not created: %s", key, kind, exc)
        self._kinds[key] = kind  # asked once (Qdrant replaces a field's index of another kind)
