"""Multi-path dense retrieval: more dense legs over the main dense store, each narrowing the query's scope.

One embedding, several filters: ``dense_paths={"recent": {"year": {"$gte": 2024}}}`` adds a leg ``recent`` that
searches the main dense store with the query's filter AND its own, fused with the other legs and tagged in
``rrf_ranks``; ``None`` as a path's filter is the query's scope alone. The query's scope bounds every leg: a path
never reaches outside the caller's filter, so a memory service that scopes by session cannot leak through one.
The query's ``exclude_ids`` always apply. The query vector is shared: every path has the main leg's embedding
model, and the engine embeds once per model.

Single-tenant opt-out: :data:`UNSCOPED` as a path's filter (``dense_paths={"dense_all": UNSCOPED}``) searches
the whole dense store next to the filtered legs. It is a Python object, so no JSON request (POST /search) can
name it: only code the operator writes can.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> from rrf_retriever.engine.legs import as_leg
    >>> from rrf_retriever.stores.qdrant import QdrantDenseStore
    >>> legs = {"dense": as_leg("dense", QdrantDenseStore(HashingEmbedding(8)))}
    >>> [name for name, _ in path_legs(legs, {"dense_all": None})]
    ['dense_all']
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from rrf_retriever.engine.legs import DenseLeg, Leg
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.scope.parse import Scope, normalize_filter
from rrf_retriever.scope.tree import AllOf, FilterSpec, NormalizedFilter
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.types import Hit

__all__ = ["UNSCOPED", "DensePathLeg", "DensePaths", "Unscoped", "main_dense_leg", "path_legs"]


class Unscoped(enum.Enum):
    """The type of :data:`UNSCOPED` (an enum member: one object, picklable, never parsed from JSON)."""

    UNSCOPED = "unscoped"


#: A dense path's filter that searches the whole dense store, outside the query's scope (single-tenant use only).
UNSCOPED = Unscoped.UNSCOPED


class DensePaths(Mapping[str, "FilterSpec | Unscoped | None"]):
    """Validated ``dense_paths`` (:func:`~rrf_retriever.engine.settings.check_dense_paths` makes them): read as the
    mapping given (JSON-able: ``to_dict`` shows it), and ``parsed``, each path's filter tree, parsed once when they
    were validated: a query's :func:`path_legs` searches with those, not parsing them again.

    Example:
        >>> from rrf_retriever.scope.tree import Match
        >>> paths = DensePaths({"recent": {"n": 1}}, {"recent": Match("n", (1,))})
        >>> paths, paths.parsed["recent"]
        ({'recent': {'n': 1}}, Match(key='n', values=(1,)))
    """

    __slots__ = ("_given", "parsed")

    def __init__(self, given: Mapping[str, FilterSpec | Unscoped | None],
                 parsed: Mapping[str, NormalizedFilter | Unscoped | None]) -> None:
        self._given = dict(given)
        self.parsed = MappingProxyType(dict(parsed))

    def __getitem__(self, name: str) -> FilterSpec | Unscoped | None:
        return self._given[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)

    def __repr__(self) -> str:
        return repr(self._given)


class DensePathLeg(Leg):
    """A read-only leg over another dense leg's store: the query's filter AND its own (``scoped``), or its own
    alone (``scoped=False``, the :data:`UNSCOPED` opt-out; ``flt`` None: the whole store)."""

    kind = "dense"

    def __init__(self, base: Leg, flt: NormalizedFilter | None, scoped: bool = True) -> None:
        self.base = base
        self.flt = flt
        self.scoped = scoped
        self.embedding = base.embedding  # the same model object: the query is embedded once for all paths

    def within(self, query_filter: NormalizedFilter | None) -> NormalizedFilter | None:
        """The filter this path searches with, for a query filtered by ``query_filter``."""
        if not self.scoped or query_filter is None:
            return self.flt
        return query_filter if self.flt is None else AllOf((query_filter, self.flt))

    @property
    def holds_gil(self) -> bool:  # type: ignore[override]  # a class attribute on Leg, a property here
        return bool(self.base.holds_gil)

    def scope_for(self, scope: Scope) -> Scope:
        """This path's scope for a query scoped by ``scope``: its filter :meth:`within` the query's, the query's
        exclusions. The engine builds the path's request with it: :meth:`search` hands that on unchanged."""
        return Scope(self.within(scope.filter), scope.exclude_ids)

    def search(self, request: SearchRequest) -> list[Hit]:
        return self.base.search(request)

    async def asearch(self, request: SearchRequest) -> list[Hit]:
        return await self.base.asearch(request)


def main_dense_leg(legs: Mapping[str, Leg]) -> str:
    """The source dense paths search: the dense leg named ``"dense"``, else the only dense store leg.

    Raises:
        InvalidArgumentError: no dense store, or several and none named ``"dense"``.
    """
    dense = [name for name, leg in legs.items() if isinstance(leg, DenseLeg)]
    if "dense" in dense:
        return "dense"
    if len(dense) == 1:
        return dense[0]
    msg = ("dense_paths need the engine's dense store: a dense source named 'dense' or exactly one dense store; "
           f"found {sorted(dense) or 'none'}")
    raise InvalidArgumentError(msg)


def path_legs(
    legs: Mapping[str, Leg], paths: Mapping[str, FilterSpec | Unscoped | None]
) -> list[tuple[str, Leg]]:
    """One :class:`DensePathLeg` per path (``{name: filter, None or UNSCOPED}``, validated), over
    :func:`main_dense_leg`.

    Raises:
        InvalidArgumentError: a path named like a source, or no dense store to search.
        InvalidFilterError: a malformed path filter.
    """
    if not paths:
        return []
    clash = sorted(set(paths) & set(legs))
    if clash:
        msg = f"dense_paths names {clash} are already source names; give each path a name of its own"
        raise InvalidArgumentError(msg)
    base = legs[main_dense_leg(legs)]
    parsed = paths.parsed if isinstance(paths, DensePaths) else None  # validated: parsed when they were
    out: list[tuple[str, Leg]] = []
    for name, flt in paths.items():
        if flt is UNSCOPED:
            out.append((name, DensePathLeg(base, None, scoped=False)))
        else:
            normalized: Any = normalize_filter(flt) if parsed is None else parsed[name]
            out.append((name, DensePathLeg(base, normalized)))
    return out
