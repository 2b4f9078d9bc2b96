""":class:`Bm25Store`: what the two kinds holding the BM25 sparse vector share (the keyword kind, and the joint kind
whose points also carry a dense vector): the settings, the write path (avgdl frozen at the first terms, re-frozen
as the collection grows), the BM25 search and :meth:`~Bm25Store.reweight`. The scheme is
:mod:`rrf_retriever.stores.qdrant.keyword`'s.
"""

from __future__ import annotations

from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer, default_analyzer, saved_config
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.stores.fts5.match import DEFAULT_MAX_TERMS
from rrf_retriever.stores.qdrant.backend import Saved, SparseQuery
from rrf_retriever.stores.qdrant.bm25_params import (
    DEFAULT_B,
    DEFAULT_K1,
    Bm25Settings,
    check_param,
    checked_params,
    first_avgdl,
    new_params,
    values_of,
)
from rrf_retriever.stores.qdrant.common import B, PreparedScope, QdrantStore
from rrf_retriever.stores.qdrant.filters import NOTHING
from rrf_retriever.stores.qdrant.ops import Op, Steps
from rrf_retriever.stores.qdrant.points import Point, point_id
from rrf_retriever.stores.qdrant.reweight import mean_length_steps, rewrite_steps
from rrf_retriever.stores.qdrant.settings import StoreSettings
from rrf_retriever.stores.qdrant.sparse_values import DEFAULT_TITLE_WEIGHT, DocumentTerms, query_vector
from rrf_retriever.types import Hit
from rrf_retriever.vectors import VectorRows, rows_as_lists

__all__ = ["REWEIGHT_DRIFT", "Bm25Store"]

#: Auto re-freeze: check when the documents written have doubled; rewrite when the mean moved by more than this.
REWEIGHT_DRIFT = 0.10


class Bm25Store(QdrantStore[B]):
    """The BM25 side of the keyword and joint kinds, on any backend.

    Args:
        bm25: The BM25 settings asked for (:class:`~rrf_retriever.stores.qdrant.bm25_params.Bm25Settings`; None
            values: the saved ones when reopening, else the defaults).
        settings: What every Qdrant store has (:class:`~rrf_retriever.stores.qdrant.settings.StoreSettings`).
    """

    analyzer: Analyzer

    def __init__(self, bm25: Bm25Settings, settings: StoreSettings) -> None:
        #: Query-term saturation (query time only; see :class:`~rrf_retriever.stores.qdrant.bm25_params.Bm25Settings`).
        self.k3 = bm25.k3
        #: Queries of at most this many distinct terms count each term once (query time only).
        self.short_query_terms = bm25.short_query_terms
        self._asked = bm25
        self.analyzer = bm25.analyzer or default_analyzer()
        self.k1 = DEFAULT_K1 if bm25.k1 is None else bm25.k1
        self.b = DEFAULT_B if bm25.b is None else bm25.b
        #: The weight of ``metadata["title"]`` as its own field (0: text only); a reopened store's saved one.
        self.title_weight = DEFAULT_TITLE_WEIGHT if bm25.title_weight is None else bm25.title_weight
        self.live_idf = bm25.live_idf
        #: Re-freeze avgdl when the documents written have doubled and their mean length moved (never with avgdl=).
        self.auto_reweight = bm25.auto_reweight and bm25.avgdl is None
        # What this store has written (documents, analyzed length) and the document count at the last drift check.
        self._written: list[int] | None = None
        self._checked_at = 0
        self._params: dict[str, Any] | None = None  # the collection's saved settings; None: no collection yet
        super().__init__(settings)

    # -- settings ----------------------------------------------------------------------------------------
    @property
    def avgdl(self) -> float | None:
        """The average document length the stored values were computed with (None before the first term)."""
        return None if self._params is None else self._params["avgdl"]

    @property
    def params(self) -> dict[str, Any] | None:
        """The settings saved with the collection (k1, b, avgdl, analyzer, term ids), None before the first add."""
        return None if self._params is None else dict(self._params)

    def reweight(self, avgdl: float | None = None) -> float | None:
        """Freeze ``avgdl`` anew (the mean analyzed length of the documents stored now, or the value given) and
        rewrite every document's values with it: the store then ranks as exact BM25 over today's corpus.

        Reads and rewrites every point (two passes); run it when nobody else writes to the collection. A store
        with ``auto_reweight`` (the default unless ``avgdl=`` was given) does this by itself when the documents it
        has written double and their mean length has moved by more than 10 %; ``reweight(avgdl=x)`` fixes avgdl
        at ``x`` for good (no automatic re-freeze after it).

        Returns:
            The new ``avgdl`` (None: the collection holds no term yet).
        """
        if avgdl is not None:
            avgdl = check_param("avgdl", avgdl, None)
        self.backend.check_open()
        new = self._run(self._reweight_steps(avgdl))
        self._written = None  # the next add recounts from the collection
        return new

    def _describe(self) -> str:
        return (f"k1={self.k1:g}, b={self.b:g}, avgdl={self.avgdl}, k3={self.k3:g}, "
                f"short_query_terms={self.short_query_terms}")

    # -- what the collection holds -----------------------------------------------------------------------
    def _known(self) -> bool:
        return self._params is not None

    def _take(self, saved: Saved) -> None:
        self._params = self._adopt(saved.params)

    def _created(self, dimension: int | None, params: dict[str, Any] | None) -> None:
        self._params = params

    def _adopt(self, saved: Any) -> dict[str, Any]:
        """Check the settings a collection was written with and take them (explicit settings must agree)."""
        where = self.backend.where
        params = checked_params(saved, where)
        for name in ("k1", "b", "avgdl", "title_weight"):
            asked = getattr(self._asked, name)
            if asked is not None and asked != params[name]:
                msg = f"{where} holds BM25 values written with {name}={params[name]!r}, not {asked!r}"
                raise InvalidArgumentError(msg)
        asked_analyzer = self._asked.analyzer
        if asked_analyzer is None:
            self.analyzer = Analyzer.from_config(params["analyzer"])
        elif asked_analyzer.config() != saved_config(params["analyzer"]):
            msg = f"{where} was indexed with another analyzer ({params['analyzer']})"
            raise InvalidArgumentError(msg)
        self.k1, self.b, self.title_weight = params["k1"], params["b"], params["title_weight"]
        if params.get("avgdl_fixed"):  # an avgdl given by the user is never re-frozen
            self.auto_reweight = False
        return params

    def _new_params(self, avgdl: float | None) -> dict[str, Any]:
        return new_params(k1=self.k1, b=self.b, avgdl=avgdl, avgdl_fixed=self._asked.avgdl is not None,
                          title_weight=self.title_weight, analyzer=self.analyzer)

    # -- the write path ----------------------------------------------------------------------------------
    def _rewrite_op(self, points: list[Point]) -> Op:
        """The op that rewrites points' BM25 values (reweight): a keyword collection upserts them whole."""
        return Op(self.backend.upsert, (points,), "upsert")

    def _write_steps(
        self,
        ids: list[str],
        payloads: list[dict[str, Any]],
        terms: list[DocumentTerms],
        vectors: VectorRows | None = None,
        dimension: int | None = None,
    ) -> Steps[None]:
        """Write a validated, analyzed batch (``vectors``: the joint kind's dense vectors, of ``dimension``)."""
        if not ids:
            return
        created = False
        if not (yield from self._ready_steps()):
            params = self._new_params(first_avgdl(terms, self.title_weight, self._asked.avgdl)[0])
            created = yield from self._create_steps(dimension, params)
        if dimension is not None:
            self._check_dimension(dimension)  # before anything is written
        assert self._params is not None
        frozen, total = first_avgdl(terms, self._params["title_weight"], self._asked.avgdl)
        if self._params["avgdl"] is None and frozen is not None:  # the first terms ever: freeze avgdl now
            params = {**self._params, "avgdl": frozen}
            yield Op(self.backend.save_params, (params,), "save_params")
            self._params = params
        if self._written is None:  # first write of this store object: start from what the collection holds
            count = 0 if created else int((yield Op(self.backend.count, (), "count")))
            self._written, self._checked_at = [count, round(count * (self._params["avgdl"] or 0.0))], count
        if self.index_keys and self.backend.indexes_payload:  # before the points: see PayloadIndexes.write_steps
            yield from self.indexes.write_steps(self.backend, payloads)
        settings = self._params  # one set of settings for the whole batch
        pids = [point_id(i) for i in ids]

        def chunk_points(chunk: slice) -> list[Point]:
            dense = rows_as_lists(vectors, chunk) if vectors is not None else [None] * len(pids[chunk])
            return [Point(pid, vec, values_of(t, settings), payload)
                    for pid, vec, t, payload in zip(pids[chunk], dense, terms[chunk], payloads[chunk])]

        yield from self._upsert_steps(pids, chunk_points)
        yield from self._replace_fallback_steps(ids)
        with self.backend.lock:
            self._written[0] += len(ids)
            self._written[1] += total
        yield from self._drift_steps()

    def _drift_steps(self) -> Steps[None]:
        """Auto re-freeze: each time the documents written double, if their mean length has moved from avgdl by
        more than :data:`REWEIGHT_DRIFT`, :meth:`reweight`. Amortised: every point is rewritten at most about twice
        over the life of a growing collection (a collection added to one document at a time starts with the
        first document's length as avgdl, and converges as it grows)."""
        assert self._written is not None and self._params is not None
        avgdl = self._params["avgdl"]
        with self.backend.lock:  # one writer thread takes each check
            docs, length = self._written[0], self._written[1]
            if not self.auto_reweight or avgdl is None or docs < 2 * self._checked_at or docs == 0:
                return
            self._checked_at = docs
        if abs(length / docs - avgdl) > REWEIGHT_DRIFT * avgdl:
            new = yield from self._reweight_steps(None)
            count = int((yield Op(self.backend.count, (), "count")))
            self._written, self._checked_at = [count, round(count * (new or 0.0))], count

    def _reweight_steps(self, avgdl: float | None) -> Steps[float | None]:
        if not (yield from self._ready_steps()):
            return None
        assert self._params is not None
        fixed = avgdl is not None
        if avgdl is None:
            avgdl = yield from mean_length_steps(self.backend, self.analyzer, self._params["title_weight"])
        params = {**self._params, "avgdl": avgdl, "avgdl_fixed": fixed}
        yield from rewrite_steps(self.backend, self.analyzer, params, self._rewrite_op)
        yield Op(self.backend.save_params, (params,), "save_params")
        self._params = params
        self.auto_reweight = self.auto_reweight and not fixed
        return avgdl

    # -- the BM25 search ---------------------------------------------------------------------------------
    def _bm25_search_steps(self, request: SearchRequest) -> Steps[list[Hit]]:
        """The BM25 search's steps of a validated request; the scope is compiled now, by the caller, before they
        run under the lock."""
        return self._bm25_query_steps(request.query, request.limit, self._compile_scope(request.scope))

    def _bm25_query_steps(self, query: str, limit: int, scope: PreparedScope) -> Steps[list[Hit]]:
        if limit == 0:
            return []
        terms = self.analyzer.analyze_query(query)[:DEFAULT_MAX_TERMS]
        if not terms or not (yield from self._ready_steps()):
            return []
        query_filter = yield from self._scope_steps(scope)
        if query_filter is NOTHING:
            return []  # e.g. an empty any-of: nothing can match
        indices, values = query_vector(terms, k3=self.k3, short_query_terms=self.short_query_terms)
        sparse = SparseQuery(indices, values, limit, query_filter, self.live_idf)
        return (yield from self._top_steps(sparse, limit, positive=True))
