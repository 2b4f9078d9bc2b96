""":class:`KeywordKind`: BM25 as Qdrant sparse vectors, the keyword store kind on any backend; and the scheme every
store holding the ``"bm25"`` vector follows (keyword and joint).

The scheme (one analyzer for every keyword store: ours, client-side):

* a document is analyzed with :meth:`~rrf_retriever.analysis.analyzer.Analyzer.analyze` (stopwords dropped,
  Porter stems), a query with :meth:`~rrf_retriever.analysis.analyzer.Analyzer.analyze_query` (also
  without the conversational words), exactly as :class:`~rrf_retriever.stores.bm25.store.BM25KeywordStore` does;
* each term becomes a sparse-vector index, :func:`~rrf_retriever.stores.qdrant.sparse_values.term_id`: the first
  4 bytes of ``blake2b(term)`` masked below ``2**31`` (stable across processes, machines and versions; no
  vocabulary to store or share);
* a document's value for term ``t`` is BM25's saturated term frequency
  (:func:`~rrf_retriever.stores.qdrant.sparse_values.document_vector`)
  ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``, ``dl`` the document's analyzed length; a string
  ``metadata["title"]`` is a field of weight ``title_weight`` (default 2, as FTS5KeywordStore's):
  ``tf = tf_text + title_weight * tf_title``, ``dl`` the text's and the title's terms
  (:mod:`rrf_retriever.stores.qdrant.sparse_values`; a collection saved before the title field keeps the text only);
* a query's value for ``t`` is BM25's saturated query-term count ``qtf * (k3 + 1) / (qtf + k3)``
  (:func:`~rrf_retriever.stores.qdrant.sparse_values.query_vector`): by default a query of at most 20 distinct
  terms counts each term once, a longer one (a pasted paragraph) counts a repeated term again (``k3 = inf``, as
  bm25s and FTS5 count it); ``k3`` and ``short_query_terms`` are the stores' query-time settings;
* the sparse vector (named ``"bm25"``) is declared with ``Modifier.IDF``: at query time Qdrant multiplies each
  query value by ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene's IDF, bm25s ``method="lucene"``),
  ``N`` the points holding the vector, ``df`` those holding ``t``. Both engines apply it (qdrant-client 1.20
  local mode, qdrant-edge 0.9): no IDF is computed client-side.

So ``score(q, d) = sum over t in q of qtf(t) * idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b*dl/avgdl))``:
BM25 (Robertson's form; bm25s's "lucene" form drops the constant factor ``k1 + 1``, so its scores are ours
divided by ``k1 + 1`` and the rankings are the same). Equal scores are returned in id order on both engines.

Where it differs from exact BM25 (``benchmarks/quality/bench_sparse_parity.py``,
``benchmarks/results/sparse_parity.json``):

1. ``avgdl`` is a constant saved with the collection, not the mean of today's corpus. It is frozen at the first
   write (the mean analyzed length of the first batch with any term, its term-less documents included as bm25s
   counts them), or given (``avgdl=``, then never changed). With ``auto_reweight`` (default) it is re-frozen each
   time the documents this store has written double and their mean length has moved by more than 10 %
   (:meth:`~rrf_retriever.stores.qdrant.bm25_store.Bm25Store.reweight`: every point rewritten; amortised, about
   two rewrites per document over the life of a growing collection); between those checks, documents are
   normalised by the frozen value.
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
   (``SearchParams(idf=IdfParams(corpus=<points holding "bm25">))``). Measured after deleting 30 % of SciFact:
   mean top-10 overlap with bm25s 1.000 with it (99.7 % of the lists identical), 0.984 without (47 % identical)
   (``live_idf=False``, e.g. for a server without ``SearchParams.idf``).
5. A document with no term at all gets one marker index
   (:data:`~rrf_retriever.stores.qdrant.sparse_values.EMPTY_DOCUMENT_INDEX`, outside the term space) so that it
   counts in ``N`` as it does in bm25s; no query ever holds that index.

Payload layout and point ids are those of the dense stores (:mod:`rrf_retriever.stores.qdrant.points`:
``page_content``, ``metadata``, ``doc_id``; :func:`~rrf_retriever.stores.qdrant.points.point_id`), so one collection
can hold both legs' vectors; filters and ``exclude_ids`` go through the same translation, inside Qdrant's search.

The functions are :mod:`~rrf_retriever.stores.qdrant.sparse_values`'s; the settings checks
:mod:`~rrf_retriever.stores.qdrant.bm25_params`'s; the write path, search and reweight
:class:`~rrf_retriever.stores.qdrant.bm25_store.Bm25Store`'s. Public classes:
:class:`~rrf_retriever.stores.qdrant.QdrantKeywordStore` (qdrant-client) and
:class:`~rrf_retriever.stores.qdrant.QdrantEdgeKeywordStore` (qdrant-edge).

Example:
    >>> from rrf_retriever.stores.qdrant.sparse_values import document_vector, query_vector, term_id
    >>> term_id("configur") == term_id("configur") < 2**31
    True
    >>> indices, values = document_vector(["red", "red", "car"], k1=1.2, b=0.75, avgdl=3.0)
    >>> dict(zip(indices, [round(v, 4) for v in values])) == {term_id("red"): 1.375, term_id("car"): 1.0}
    True
    >>> query_vector(["red", "car", "red"], short_query_terms=0) == (sorted([term_id("red"), term_id("car")]),
    ...     [2.0 if i == term_id("red") else 1.0 for i in sorted([term_id("red"), term_id("car")])])
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rrf_retriever.scope.tree import FilterSpec
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.stores.qdrant.bm25_store import Bm25Store
from rrf_retriever.stores.qdrant.common import B
from rrf_retriever.stores.qdrant.ops import Steps
from rrf_retriever.stores.qdrant.points import ExcludeIds, Metadatas, make_payload
from rrf_retriever.stores.qdrant.sparse_values import DocumentTerms, analyze_document
from rrf_retriever.types import Hit
from rrf_retriever.validate import validate_batch

__all__ = ["KeywordKind"]


class KeywordKind(Bm25Store[B]):
    """The keyword store kind (a :class:`~rrf_retriever.stores.base.KeywordStore`): points carry the BM25 sparse
    vector only. Settings: as for :class:`~rrf_retriever.stores.qdrant.bm25_store.Bm25Store`."""

    def add(self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None) -> None:
        """Upsert documents (an existing id is replaced). A bad batch raises and nothing is written.

        Raises:
            StoreError: Qdrant failed.
        """
        self.backend.check_open()
        self._run(self._add_steps(ids, texts, metadatas))

    async def aadd(self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None) -> None:
        """Async :meth:`add` (native with an async client)."""
        if self.backend.async_api is None:
            return await super().aadd(ids, texts, metadatas)
        return await self._arun(self._add_steps(ids, texts, metadatas))

    def search(
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
        return self.search_request(SearchRequest.checked("keyword", query, None, limit, filter, exclude_ids))

    async def asearch(
        self, query: str, limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`search`."""
        return await self._arun_or_thread(
            lambda: self._bm25_search_steps(SearchRequest.checked("keyword", query, None, limit, filter, exclude_ids)),
            self.search, query, limit, filter, exclude_ids)

    def search_request(self, request: SearchRequest) -> list[Hit]:
        """:meth:`search` of a validated request (the engine's legs call it; nothing is checked again)."""
        return self._run(self._bm25_search_steps(request))

    async def asearch_request(self, request: SearchRequest) -> list[Hit]:
        """Async :meth:`search_request`."""
        return await self._arun_or_thread(lambda: self._bm25_search_steps(request), self.search_request, request)

    def _add_steps(self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas) -> Steps[None]:
        """Validate and analyze a batch now (a bad one raises before anything is written); the steps write it."""
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        terms: list[DocumentTerms] = [analyze_document(self.analyzer, t, m) for t, m in zip(text_list, meta_list)]
        payloads: list[dict[str, Any]] = [make_payload(i, t, m) for i, t, m in zip(id_list, text_list, meta_list)]
        return self._write_steps(id_list, payloads, terms)
