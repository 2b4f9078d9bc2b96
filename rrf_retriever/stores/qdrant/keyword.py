"""BM25 as Qdrant sparse vectors: what both Qdrant keyword stores share (term ids, weights, every operation).

The scheme (one analyzer for every keyword store: ours, client-side):

* a document is analyzed with :meth:`Analyzer.analyze <rrf_retriever.analysis.analyzer.Analyzer.analyze>` (stopwords dropped,
  Porter stems), a query with :meth:`Analyzer.analyze_query <rrf_retriever.analysis.analyzer.Analyzer.analyze_query>` (also
  without the conversational words), exactly as :class:`~rrf_retriever.stores.bm25.store.BM25KeywordStore` does;
* each term becomes a sparse-vector index, :func:`term_id`: the first 4 bytes of ``blake2b(term)`` masked below
  ``2**31`` (stable across processes, machines and versions; no vocabulary to store or share);
* a document's value for term ``t`` is BM25's saturated term frequency (:func:`document_vector`)
  ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``, ``dl`` the document's analyzed length; a string
  ``metadata["title"]`` is a field of weight ``title_weight`` (default 2, as FTS5KeywordStore's):
  ``tf = tf_text + title_weight * tf_title``, ``dl`` the text's and the title's terms
  (:mod:`rrf_retriever.stores.qdrant.sparse_values`; a collection saved before the title field keeps the text only);
* a query's value for ``t`` is how often ``t`` occurs in the query (1.0 for most terms; a repeated term counts
  again, as bm25s and FTS5 count it), :func:`query_vector`;
* the sparse vector (named ``"bm25"``) is declared with ``Modifier.IDF``: at query time Qdrant multiplies each
  query value by ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene's IDF, bm25s ``method="lucene"``),
  ``N`` the points holding the vector, ``df`` those holding ``t``. Both engines apply it (qdrant-client 1.20
  local mode, qdrant-edge 0.9): no IDF is computed client-side.

So ``score(q, d) = sum over t in q of qtf(t) * idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b*dl/avgdl))``:
BM25 (Robertson's form; bm25s's "lucene" form drops the constant factor ``k1 + 1``, so its scores are ours
divided by ``k1 + 1`` and the rankings are the same). Equal scores are returned in id order on both engines.

Where it differs from exact BM25 (``benchmarks/bench_sparse_parity.py``, results/sparse_parity.json):

1. ``avgdl`` is a constant saved with the collection, not the mean of today's corpus. It is frozen at the first
   write (the mean analyzed length of the first batch with any term, its term-less documents included as bm25s
   counts them), or given (``avgdl=``, then never changed). With ``auto_reweight`` (default) it is re-frozen each
   time the documents this store has written double and their mean length has moved by more than 10 %
   (:meth:`~QdrantKeywordStoreBase.reweight`: every point rewritten; amortised, about two rewrites per document
   over the life of a growing collection); between those checks, documents are normalised by the frozen value.
   Measured with 100 documents per ``add``: without re-freezing CACM loses 0.070 nDCG@10 (avgdl frozen at its
   first 100 documents: 13.6 terms, the corpus mean is 35.0), NPL 0.008; with it, within 0.0021 of exact on the
   five collections. A wrong avgdl (x0.5 / x2) moves nDCG@10 by -0.045..+0.027 and the mean top-10 overlap with
   bm25s down to 0.78..0.91. Written in one ``add``, the store's nDCG@10 equals bm25s's on all five.
2. Term ids are hashed: two distinct terms with the same 31-bit id share a posting list (a query for one matches
   the other and their document frequencies add up). Expected colliding pairs in a vocabulary of V terms:
   ``V**2 / 2**32`` (~0.2 at 26k terms, 2.3 at 100k, 230 at 1M); the five benchmark collections have none.
   Within one document (or query) colliding terms add their values.
3. Values are stored as float32: scores agree with float64 BM25 to ~1e-6 relative (near-ties may swap).
4. IDF statistics: qdrant-client local mode counts live points. Qdrant's own index (qdrant-edge, a server) keeps
   counting deleted points until their segment is vacuumed; the stores ask for the IDF of the live points instead
   (``SearchParams(idf=IdfParams(corpus=<points holding "bm25">))``, ~0.07 ms more a query on qdrant-edge).
   Measured after deleting 30 % of SciFact: mean top-10 overlap with bm25s 1.000 with it (99.7 % of the lists
   identical), 0.984 without (47 % identical) (``live_idf=False``, e.g. for a server without ``SearchParams.idf``).
5. A document with no term at all gets one marker index (:data:`EMPTY_DOCUMENT_INDEX`, outside the term space)
   so that it counts in ``N`` as it does in bm25s; no query ever holds that index.

Payload layout and point ids are those of the dense stores (:mod:`rrf_retriever.stores.qdrant.base`:
``page_content``, ``metadata``, ``doc_id``; :func:`~rrf_retriever.stores.qdrant.base.point_id`), so one collection
can hold both legs' vectors; filters and ``exclude_ids`` go through the same translation, inside Qdrant's search.

Example:
    >>> term_id("configur") == term_id("configur") < 2**31
    True
    >>> indices, values = document_vector(["red", "red", "car"], k1=1.2, b=0.75, avgdl=3.0)
    >>> dict(zip(indices, [round(v, 4) for v in values])) == {term_id("red"): 1.375, term_id("car"): 1.0}
    True
    >>> query_vector(["red", "car", "red"]) == (sorted([term_id("red"), term_id("car")]),
    ...     [2.0 if i == term_id("red") else 1.0 for i in sorted([term_id("red"), term_id("car")])])
    True
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer, default_analyzer, saved_config
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError
from rrf_retriever.progress import progress_bar
from rrf_retriever.scope.parse import normalize_scope
from rrf_retriever.scope.tree import FilterSpec
from rrf_retriever.stores.base import StoreBase
from rrf_retriever.stores.fts5.match import DEFAULT_MAX_TERMS
from rrf_retriever.stores.qdrant.base import (
    CONTENT_KEY,
    DOC_ID_KEY,
    METADATA_KEY,
    ExcludeIds,
    Metadatas,
    QdrantStoreBase,
    check_batch_size,
    point_id,
)
from rrf_retriever.stores.qdrant.filters import NOTHING
from rrf_retriever.stores.qdrant.scoping import check_index_keys, check_payload_ints
from rrf_retriever.stores.qdrant.sparse_values import (
    DEFAULT_TITLE_WEIGHT,
    EMPTY_DOCUMENT_INDEX,
    DocumentTerms,
    analyze_document,
    document_length,
    document_vector,
    query_vector,
    term_id,
)
from rrf_retriever.stores.qdrant.steps import Steps
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import check_int, check_limit, check_str, validate_batch

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "DEFAULT_TITLE_WEIGHT",
    "EMPTY_DOCUMENT_INDEX",
    "PARAMS_FORMAT",
    "SPARSE_VECTOR_NAME",
    "TERM_ID_SCHEME",
    "QdrantKeywordStoreBase",
    "document_vector",
    "query_vector",
    "term_id",
]

#: The named sparse vector holding BM25 (a collection may also hold the dense leg's unnamed vector).
SPARSE_VECTOR_NAME = "bm25"
#: BM25KeywordStore's (bm25s) defaults, and what FTS5's ``bm25()`` hard-codes.
DEFAULT_K1 = 1.2
DEFAULT_B = 0.75
#: Names the term-id function; saved with the collection so a reader hashing otherwise refuses it.
TERM_ID_SCHEME = "blake2b-4-le-31"
#: Version of the saved settings (1: no title field, read as ``title_weight`` 0; 2: ``title_weight`` saved).
PARAMS_FORMAT = 2
_READABLE_FORMATS = (1, 2)
_SCROLL_PAGE = 512
#: Auto re-freeze: check when the documents written have doubled; rewrite when the mean moved by more than this.
REWEIGHT_DRIFT = 0.10


def _check_param(name: str, value: object, upper: float | None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{name} must be a number, not {type(value).__name__}"
        raise InvalidTypeError(msg)
    value = float(value)
    ok = math.isfinite(value) and (value > 0 if upper is None else 0 <= value <= upper)
    if not ok:
        bounds = "a finite number > 0" if upper is None else f"a number in [0, {upper:g}]"
        msg = f"{name} must be {bounds}, got {value!r}"
        raise InvalidArgumentError(msg)
    return value


class QdrantKeywordStoreBase(QdrantStoreBase):
    """Every check, conversion and operation of the Qdrant keyword stores, as steps over engine primitives.

    Besides the dense stores' primitives (``_upsert``, ``_delete``, ``_retrieve``, ``_count``, ``_create_index``
    and the filter models) an engine supplies ``_exists``, ``_read_params``, ``_create(params)``,
    ``_save_params(params)``, ``_sparse_search(indices, values, limit, filter)``, ``_scroll(offset, limit)`` and
    ``_sparse(indices, values)`` (the engine's vector for a point).
    """

    analyzer: Analyzer

    def __init__(
        self,
        *,
        analyzer: Analyzer | None,
        k1: float | None,
        b: float | None,
        avgdl: float | None,
        live_idf: bool,
        auto_reweight: bool,
        batch_size: int,
        index_keys: Sequence[str],
        max_auto_indexes: int,
        title_weight: float | None = None,
    ) -> None:
        # QdrantStoreBase.__init__ wants an embedding: a keyword store has none (so it is not a DenseStore).
        if analyzer is not None and not isinstance(analyzer, Analyzer):
            msg = f"analyzer must be an rrf_retriever.analysis.analyzer.Analyzer, not {type(analyzer).__name__}"
            raise InvalidTypeError(msg)
        self._asked: dict[str, Any] = {
            "k1": None if k1 is None else _check_param("k1", k1, 100.0),
            "b": None if b is None else _check_param("b", b, 1.0),
            "avgdl": None if avgdl is None else _check_param("avgdl", avgdl, None),
            "title_weight": None if title_weight is None else _check_param("title_weight", title_weight, 100.0),
            "analyzer": analyzer,
        }
        self.analyzer = analyzer or default_analyzer()
        self.k1 = DEFAULT_K1 if k1 is None else self._asked["k1"]
        self.b = DEFAULT_B if b is None else self._asked["b"]
        #: The weight of ``metadata["title"]`` as its own field (0: text only); a reopened store's saved one.
        self.title_weight = DEFAULT_TITLE_WEIGHT if title_weight is None else self._asked["title_weight"]
        self.live_idf = bool(live_idf)
        #: Re-freeze avgdl when the documents written have doubled and their mean length moved (never with avgdl=).
        self.auto_reweight = bool(auto_reweight) and avgdl is None
        # What this store has written (documents, analyzed length) and the document count at the last drift check.
        self._written: list[int] | None = None
        self._checked_at = 0
        self.batch_size = check_batch_size(batch_size)
        self.index_keys = check_index_keys(index_keys)
        self.max_auto_indexes = check_int(max_auto_indexes, "max_auto_indexes", 0, 1000)
        self._dimension = None
        self._params: dict[str, Any] | None = None  # the collection's saved settings; None: no collection yet
        self._lock = threading.RLock()
        self._indexed: dict[str, str] = {}

    # -- settings ----------------------------------------------------------------------------------------
    @property
    def avgdl(self) -> float | None:
        """The average document length the stored values were computed with (None before the first term)."""
        return None if self._params is None else self._params["avgdl"]

    @property
    def params(self) -> dict[str, Any] | None:
        """The settings saved with the collection (k1, b, avgdl, analyzer, term ids), None before the first add."""
        return None if self._params is None else dict(self._params)

    def _new_params(self, avgdl: float | None) -> dict[str, Any]:
        return {
            "format": PARAMS_FORMAT,
            "vector": SPARSE_VECTOR_NAME,
            "term_ids": TERM_ID_SCHEME,
            "k1": self.k1,
            "b": self.b,
            "avgdl": avgdl,
            "avgdl_fixed": self._asked["avgdl"] is not None,
            "title_weight": self.title_weight,
            "analyzer": self.analyzer.config(),
        }

    def _adopt(self, saved: Any, where: str) -> dict[str, Any]:
        """Check the settings a collection was written with and take them (explicit settings must agree)."""
        if not isinstance(saved, Mapping):
            msg = f"{where} holds no rrf-retriever BM25 settings (not written by a Qdrant keyword store)"
            raise StoreError(msg)
        if saved.get("format") not in _READABLE_FORMATS or saved.get("term_ids") != TERM_ID_SCHEME:
            msg = f"{where} was written with format {saved.get('format')!r}, term ids {saved.get('term_ids')!r}"
            raise StoreError(msg)
        try:
            params = {
                **saved,
                "k1": _check_param("k1", saved["k1"], 100.0),
                "b": _check_param("b", saved["b"], 1.0),
                "avgdl": None if saved["avgdl"] is None else _check_param("avgdl", saved["avgdl"], None),
                # Format 1 (before the title field) indexed the text only: such a store keeps ranking so.
                "title_weight": _check_param("title_weight", saved.get("title_weight") or 0.0, 100.0),
            }
            analyzer_config = dict(saved["analyzer"])
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"{where} holds malformed BM25 settings: {exc}"
            raise StoreError(msg) from exc
        for name in ("k1", "b", "avgdl", "title_weight"):
            asked = self._asked[name]
            if asked is not None and asked != params[name]:
                msg = f"{where} holds BM25 values written with {name}={params[name]!r}, not {asked!r}"
                raise InvalidArgumentError(msg)
        asked_analyzer = self._asked["analyzer"]
        if asked_analyzer is None:
            self.analyzer = Analyzer.from_config(analyzer_config)
        elif asked_analyzer.config() != saved_config(analyzer_config):
            msg = f"{where} was indexed with another analyzer ({analyzer_config})"
            raise InvalidArgumentError(msg)
        self.k1, self.b, self.title_weight = params["k1"], params["b"], params["title_weight"]
        if params.get("avgdl_fixed"):  # an avgdl given by the user is never re-frozen
            self.auto_reweight = False
        return params

    # -- public operations ---------------------------------------------------------------------------
    def add(  # type: ignore[override]
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None
    ) -> None:
        """Upsert documents (an existing id is replaced). A bad batch raises and nothing is written.

        Raises:
            StoreError: Qdrant failed.
        """
        self._check_usable()
        self._run(self._kw_add_steps(*self._prepare_kw_add(ids, texts, metadatas)))

    async def aadd(  # type: ignore[override]
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None
    ) -> None:
        """Async :meth:`add` (native with an async client)."""
        if self._api(asynchronous=True) is None:
            return await StoreBase.aadd(self, ids, texts, metadatas)
        return await self._arun(self._kw_add_steps(*self._prepare_kw_add(ids, texts, metadatas)))

    def get(self, ids: Sequence[str]) -> list[Record]:  # type: ignore[override]
        """The stored documents among ``ids``, in the order asked; unknown ids are skipped."""
        return self._run(self._get_steps(ids, False))

    async def aget(self, ids: Sequence[str]) -> list[Record]:  # type: ignore[override]
        """Async :meth:`get`."""
        return await self._arun_or_thread(self._get_steps(ids, False), super(QdrantStoreBase, self).aget, ids)

    def search(  # type: ignore[override]
        self, query: str, limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """The top ``limit`` documents by BM25 among those the scope allows (score > 0: sharing a term).

        Returns:
            Hits, best first; [] when no query term survives the analyzer.

        Raises:
            InvalidTypeError / InvalidArgumentError: a bad query or limit.
            FilterError: a malformed filter or ``exclude_ids``.
            StoreError: Qdrant failed, or the store is closed.
        """
        return self._run(self._kw_search_steps(query, limit, filter, exclude_ids))

    async def asearch(  # type: ignore[override]
        self, query: str, limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`search`."""
        steps = self._kw_search_steps(query, limit, filter, exclude_ids)
        default = super(QdrantStoreBase, self).asearch
        return await self._arun_or_thread(steps, default, query, limit, filter, exclude_ids)

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
            avgdl = _check_param("avgdl", avgdl, None)
        self._check_usable()
        new = self._run(self._reweight_steps(avgdl))
        self._written = None  # the next add recounts from the collection
        return new

    # -- the operations, as steps --------------------------------------------------------------------
    def _ready_steps(self) -> Steps[bool]:
        """Whether the collection exists (its settings read from the engine the first time)."""
        if self._params is None and (yield ("exists", ())):
            saved = yield ("read_params", ())
            self._params = self._adopt(saved, self._where())
        return self._params is not None

    def _prepare_kw_add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas
    ) -> tuple[list[str], list[dict[str, Any]], list[DocumentTerms]]:
        """Validate and analyze a batch before anything is written."""
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        check_payload_ints(meta_list)
        terms = [analyze_document(self.analyzer, text, meta) for text, meta in zip(text_list, meta_list)]
        payloads = [
            {CONTENT_KEY: text, METADATA_KEY: meta, DOC_ID_KEY: doc_id}
            for doc_id, text, meta in zip(id_list, text_list, meta_list)
        ]
        return id_list, payloads, terms

    def _kw_add_steps(
        self, ids: list[str], payloads: list[dict[str, Any]], terms: list[DocumentTerms]
    ) -> Steps[None]:
        if not ids:
            return
        created = False
        if not (yield from self._ready_steps()):
            params = self._new_params(self._first_avgdl(terms, self.title_weight)[0])
            try:
                yield ("create", (params,))
                self._params, created = params, True
            except StoreError:
                if not (yield from self._ready_steps()):  # else another writer created it meanwhile
                    raise
        assert self._params is not None
        first_avgdl, total = self._first_avgdl(terms, self._params["title_weight"])
        if self._params["avgdl"] is None and first_avgdl is not None:  # the first terms ever: freeze avgdl now
            params = {**self._params, "avgdl": first_avgdl}
            yield ("save_params", (params,))
            self._params = params
        if self._written is None:  # first write of this store object: start from what the collection holds
            count = 0 if created else int((yield ("count", ())))
            avgdl_now = self._params["avgdl"] or 0.0
            self._written, self._checked_at = [count, round(count * avgdl_now)], count
        if self.index_keys and self.indexes_payload:  # before the points: see QdrantScoping._declared_index_steps
            yield from self._declared_index_steps(payloads)
        settings = self._params  # one set of settings for the whole batch
        pids = [point_id(i) for i in ids]
        with progress_bar(len(pids), f"upserting into {self.engine_name}", unit="doc") as bar:
            for start in range(0, len(pids), self.batch_size):
                chunk = slice(start, start + self.batch_size)
                points = [
                    (pid, self._sparse(*self._values(t, settings)), payload)
                    for pid, t, payload in zip(pids[chunk], terms[chunk], payloads[chunk])
                ]
                yield ("upsert", (points,))
                bar.update(len(points))
        superseded = yield from self._fallback_points_steps(ids)
        if superseded:
            yield ("delete", (superseded,))
        with self._lock:
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
        with self._lock:  # one writer thread takes each check
            docs, length = self._written
            if not self.auto_reweight or avgdl is None or docs < 2 * self._checked_at or docs == 0:
                return
            self._checked_at = docs
        if abs(length / docs - avgdl) > REWEIGHT_DRIFT * avgdl:
            new = yield from self._reweight_steps(None)
            count = int((yield ("count", ())))
            self._written, self._checked_at = [count, round(count * (new or 0.0))], count

    def _kw_search_steps(
        self, query: str, limit: int, filter: FilterSpec | None, exclude_ids: ExcludeIds
    ) -> Steps[list[Hit]]:
        check_str(query, "query")
        limit = check_limit(limit)
        flt, excluded = normalize_scope(filter, exclude_ids)
        if limit == 0:
            return []
        terms = self.analyzer.analyze_query(query)[:DEFAULT_MAX_TERMS]
        if not terms or not (yield from self._ready_steps()):
            return []
        query_filter = yield from self._scope_steps(flt, excluded)
        if query_filter is NOTHING:
            return []  # e.g. an empty any-of: nothing can match
        indices, values = query_vector(terms)
        points = yield ("sparse_search", (indices, values, limit, query_filter))
        hits = [self._hit(p.id, p.payload, p.score) for p in points if p.score > 0]
        # Equal scores in id order: both engines then give the same list (Qdrant orders ties by its internal ids).
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits

    def _reweight_steps(self, avgdl: float | None) -> Steps[float | None]:
        if not (yield from self._ready_steps()):
            return None
        assert self._params is not None
        fixed = avgdl is not None
        if avgdl is None:  # pass 1: the mean analyzed length (documents without terms count, as in bm25s)
            total = count = 0
            offset = None
            while True:
                points, offset = yield ("scroll", (offset, _SCROLL_PAGE))
                for p in points:
                    total += document_length(*self._terms_of(p.payload), self._params["title_weight"])
                    count += 1
                if offset is None:
                    break
            avgdl = total / count if total else None
        params = {**self._params, "avgdl": avgdl, "avgdl_fixed": fixed}
        offset = None
        while True:  # pass 2: every point's values anew (same id, same payload)
            points, offset = yield ("scroll", (offset, _SCROLL_PAGE))
            rewritten = []
            for p in points:
                vector = self._sparse(*self._values(self._terms_of(p.payload), params))
                rewritten.append((str(p.id), vector, dict(p.payload or {})))
            if rewritten:
                yield ("upsert", (rewritten,))
            if offset is None:
                break
        yield ("save_params", (params,))
        self._params = params
        self.auto_reweight = self.auto_reweight and not fixed
        return avgdl

    # -- a document's values: the one place the keyword and joint stores compute them ------------------------
    def _first_avgdl(self, terms: list[DocumentTerms], title_weight: float) -> tuple[float | None, int]:
        """The avgdl a batch would freeze (the one asked, else its mean length; None: no term) and its length."""
        total = sum(document_length(text, title, title_weight) for text, title in terms)
        return self._asked["avgdl"] or (total / len(terms) if total else None), total

    def _values(self, terms: DocumentTerms, params: Mapping[str, Any] | None = None) -> tuple[list[int], list[float]]:
        """A document's sparse vector with the collection's settings (or ``params``, e.g. a new avgdl)."""
        p = self._params if params is None else params
        assert p is not None
        return document_vector(
            terms[0], k1=p["k1"], b=p["b"], avgdl=p["avgdl"], title_terms=terms[1], title_weight=p["title_weight"]
        )

    def _terms_of(self, payload: Mapping[str, Any] | None) -> DocumentTerms:
        """A stored point's document terms, from its payload (the text and the metadata's title)."""
        text = (payload or {}).get(CONTENT_KEY)
        metadata = (payload or {}).get(METADATA_KEY)
        return analyze_document(
            self.analyzer, text if isinstance(text, str) else "", metadata if isinstance(metadata, Mapping) else None
        )

    # -- what an engine supplies (besides the dense stores' primitives) ---------------------------------------
    def _where(self) -> str:
        """Names the collection in errors."""
        raise NotImplementedError

    def _sparse(self, indices: list[int], values: list[float]) -> Any:
        """The engine's vector of a point: ``{"bm25": SparseVector(indices, values)}``."""
        raise NotImplementedError

