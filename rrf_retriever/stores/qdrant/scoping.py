"""The scope side of every Qdrant store: the filter a search sends, the payload indexes behind it, ``ids_matching``.

:class:`QdrantScoping` is a mixin of :class:`~rrf_retriever.stores.qdrant.base.QdrantStoreBase` (dense, keyword
and hybrid stores, both engines). The filter itself is compiled by :mod:`rrf_retriever.stores.qdrant.filters`
through the engine's model hooks (``_condition``, ``_filter``, ``_has_ids``, ``_bool``).

Payload indexes: Qdrant keeps one index per field, and its kind changes what a filter matches (an *integer*
index holds integral floats as integers and drops other floats, so a ``Range`` on it misses ``2.5``). So a key is
indexed once, by what its filters need (:func:`~rrf_retriever.stores.qdrant.filters.index_plan`: ``float`` for
numbers, else ``keyword``, else ``bool``), within ``max_auto_indexes`` on the query path (declared
``index_keys`` on the write path), and an integer index is replaced by a float one before a ``Range`` uses it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rrf_retriever.errors import InvalidArgumentError, StoreError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import FilterNode, FilterSpec, NormalizedFilter
from rrf_retriever.stores.qdrant.filters import NOTHING, compile_filter, field_key, filter_keys, index_plan
from rrf_retriever.stores.qdrant.steps import Steps
from rrf_retriever.validate import check_limit

__all__ = ["QdrantScoping", "check_index_keys", "check_payload_ints"]

logger = logging.getLogger(__name__)

#: Points per scroll page (``ids_matching``, ``reweight``).
SCROLL_PAGE = 512
_INT64 = (-(2**63), 2**63)
_NUMERIC_INDEXES = frozenset({"float", "integer"})
#: Flat ranges a Match may list where Qdrant scans payloads (20k points on qdrant-edge: ~35 ms a range, a tree
#: of 3 cost 156 ms against 108 ms flat) and in local mode (a range check in Python per payload per value).
_SCAN_FLAT = 8
_LOCAL_FLAT = 1


def check_index_keys(index_keys: Sequence[str] | str) -> frozenset[str]:
    """Validate declared ``index_keys`` (metadata field names, as filters name them).

    Example:
        >>> sorted(check_index_keys(["b", "a"])), check_index_keys("a")
        (['a', 'b'], frozenset({'a'}))
    """
    if isinstance(index_keys, str):
        index_keys = [index_keys]
    return frozenset(filter_keys(normalize_filter({k: [] for k in index_keys})))


def check_payload_ints(metadatas: Sequence[Mapping[str, Any]]) -> None:
    """Refuse an integer beyond 64 bits anywhere in a batch's metadata, before anything is written.

    Qdrant holds integers as int64 (qdrant-edge turns a larger one into a float, a server too, local mode keeps it):
    a range would then match a value that no filter may match (:func:`rrf_retriever.scope.tree.scope_key`).

    Raises:
        InvalidArgumentError: naming the document and key; store such a number as a string.

    Example:
        >>> check_payload_ints([{"n": [1, 2**63 - 1]}])
    """
    for i, meta in enumerate(metadatas):
        stack: list[tuple[str, Any]] = [(str(k), v) for k, v in meta.items()]
        while stack:
            key, value = stack.pop()
            if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value < _INT64[1]:
                msg = (f"metadatas[{i}][{key!r}] holds {value}, beyond Qdrant's 64-bit integers: "
                       "store it as a string or a float")
                raise InvalidArgumentError(msg)
            if isinstance(value, Mapping):
                stack.extend((key, v) for v in value.values())
            elif isinstance(value, (list, tuple)):
                stack.extend((key, v) for v in value)


def _kind_name(data_type: Any) -> str:
    """``PayloadSchemaType.INTEGER`` / ``PayloadSchemaType.Integer`` / ``"integer"`` -> ``"integer"``."""
    return str(getattr(data_type, "value", data_type)).rsplit(".", 1)[-1].lower()


class QdrantScoping:
    """Filters, payload indexes and ``ids_matching`` of the Qdrant stores (a mixin of ``QdrantStoreBase``, whose
    ``_run``, ``_ready_steps``, ``_excluded_pids_steps`` and ``_doc_id`` it uses)."""

    index_keys: frozenset[str]
    max_auto_indexes: int
    indexes_payload: bool
    _indexed: dict[str, str]

    # -- public ------------------------------------------------------------------------------------
    def ids_matching(self, filter: FilterSpec | FilterNode | None = None, limit: int | None = None) -> list[str]:
        """Every stored id whose metadata matches ``filter`` (all ids for None), sorted; the first ``limit``.

        Example:
            >>> store.add(["a", "b"], ["x", "y"], [{"ref": 1}, {"ref": 2}])  # doctest: +SKIP
            >>> store.ids_matching({"ref": {"$ne": 2}})  # doctest: +SKIP
            ['a']

        Raises:
            InvalidFilterError: a malformed filter.
            StoreError: Qdrant failed, or the store is closed.
        """
        return self._run(self._ids_matching_steps(filter, limit))  # type: ignore[attr-defined]

    async def aids_matching(self, filter: FilterSpec | FilterNode | None = None, limit: int | None = None) -> list[str]:
        """Async :meth:`ids_matching`."""
        steps = self._ids_matching_steps(filter, limit)
        if self._api(asynchronous=True) is None:  # type: ignore[attr-defined]
            import asyncio

            steps.close()
            return await asyncio.to_thread(self.ids_matching, filter, limit)
        return await self._arun(steps)  # type: ignore[attr-defined]

    @property
    def indexed_keys(self) -> frozenset[tuple[str, str]]:
        """The payload indexes this store knows of, ``(metadata key, kind)``: one per key (Qdrant keeps one)."""
        return frozenset(self._indexed.items())

    # -- steps -------------------------------------------------------------------------------------
    def _ids_matching_steps(self, filter: FilterSpec | FilterNode | None, limit: int | None) -> Steps[list[str]]:
        flt = normalize_filter(filter)
        if limit is not None:
            limit = check_limit(limit)  # as the other stores
        if limit == 0 or not (yield from self._ready_steps()):  # type: ignore[attr-defined]
            return []
        query_filter = yield from self._scope_steps(flt, frozenset())
        if query_filter is NOTHING:
            return []
        ids: set[str] = set()
        offset = None
        while True:
            points, offset = yield ("scroll", (offset, SCROLL_PAGE, query_filter, True))
            ids.update(self._doc_id(p.id, p.payload) for p in points)  # type: ignore[attr-defined]
            if offset is None:
                break
        return sorted(ids)[:limit]

    def _scope_steps(self, flt: NormalizedFilter | None, excluded: frozenset[str]) -> Steps[Any]:
        """The filter a call sends for its scope: None when unscoped, :data:`NOTHING` when no document can match
        (the call is not sent). Indexes what the filter needs first (engines that use payload indexes)."""
        if flt is not None and self.indexes_payload:
            yield from self._index_steps(flt)
        compiled = self._compile(flt)
        if compiled is False:
            return NOTHING
        excluded_pids = yield from self._excluded_pids_steps(excluded)  # type: ignore[attr-defined]
        return self._assemble(compiled, excluded_pids)

    def _build_filter(self, flt: NormalizedFilter | None, excluded_pids: frozenset[str]) -> Any:
        """Our scope as a Qdrant filter, for both engines (no index steps): None when nothing is scoped, a filter
        matching nothing when no document can match."""
        compiled = self._compile(flt)
        if compiled is False:
            return self._filter(must=[self._has_ids(frozenset())])  # HasId of no id: matches nothing
        return self._assemble(compiled, excluded_pids)

    def _compile(self, flt: NormalizedFilter | None) -> Any:
        return compile_filter(flt, self, self._flat_limit)

    def _flat_limit(self, key: str) -> int | None:
        """How many integers a Match on ``key`` lists flat (:func:`~rrf_retriever.stores.qdrant.filters.
        compile_filter`): no limit over a numeric index; 8 where Qdrant scans payloads; 1 in local mode (Python
        checks a guarding range first and stops there for most points: 3 close values on 2k points 92 -> 29 ms,
        3 values spanning every point 113 ms; 1,000 values 15 s -> 0.7 s, where ``MatchAny`` took 0.5 s)."""
        if not self.indexes_payload:
            return _LOCAL_FLAT
        return None if self._indexed.get(key) in _NUMERIC_INDEXES else _SCAN_FLAT

    def _assemble(self, compiled: Any, excluded_pids: frozenset[str]) -> Any:
        must_not = [self._has_ids(excluded_pids)] if excluded_pids else None
        if compiled is True:
            return self._filter(must_not=must_not) if must_not else None
        return self._filter(must=[compiled], must_not=must_not)

    def _index_steps(self, flt: NormalizedFilter) -> Steps[None]:
        """Index each filtered key once, within the ``max_auto_indexes`` budget (declared ``index_keys`` are
        indexed at write time); an integer index under a ``Range`` becomes a float one. Without an index Qdrant
        checks the filter on every point's payload: measured at 20k points (qdrant-edge), a 10 % filter took
        ~36 ms, and ~0.3 ms with one."""
        for key, (kind, has_range) in sorted(index_plan(flt).items()):
            current = self._indexed.get(key)
            if current is None:
                if key not in self.index_keys and len(self._indexed) >= self.max_auto_indexes:
                    continue  # over budget: filtered without an index, never a new index on the query path
                yield from self._create_index_steps(key, kind)
            elif current == "integer" and has_range:
                yield from self._create_index_steps(key, "float")

    def _declared_index_steps(self, payloads: list[dict[str, Any]]) -> Steps[None]:
        """Index the declared keys by the values this batch brings (on the write path), before its points are
        written: Qdrant then indexes each point as it arrives instead of rebuilding the index over stored ones."""
        for key in sorted(self.index_keys):
            current = self._indexed.get(key)
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
                yield from self._create_index_steps(key, kind)

    def _create_index_steps(self, key: str, kind: str) -> Steps[None]:
        try:
            yield ("create_index", (field_key(key), kind))
        except StoreError as exc:  # searches stay correct, slower
            logger.debug("payload index on %s (%s) not created: %s", key, kind, exc)
        self._indexed[key] = kind  # asked once (Qdrant replaces a field's index of another kind)

    def _learn_indexes(self, schema: Mapping[str, Any] | None) -> None:
        """Take the payload indexes a collection already has (``{field: info with .data_type}``)."""
        prefix = field_key("")
        for field, info in (schema or {}).items():
            if isinstance(field, str) and field.startswith(prefix):
                self._indexed[field[len(prefix):]] = _kind_name(getattr(info, "data_type", info))

    # -- the engine's filter models ------------------------------------------------------------------
    def _condition(self, field_key: str, test: Any) -> Any:
        """A field condition: ``MatchValue`` for a str / int / bool, ``MatchAny`` for a list, ``Range`` for
        :class:`~rrf_retriever.stores.qdrant.filters.Bounds`, ``IsEmpty`` for ``IS_EMPTY``."""
        raise NotImplementedError

    def _filter(self, **parts: Any) -> Any:
        raise NotImplementedError

    def _has_ids(self, pids: Iterable[str]) -> Any:
        """A condition matching these point ids (none: matches nothing)."""
        raise NotImplementedError

    def _bool(self, value: bool) -> Any:
        return value
