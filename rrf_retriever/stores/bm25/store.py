"""In-memory BM25 keyword store (bm25s or rank-bm25), for notebooks, tests and small corpora.

Documents are analyzed once, on ``add``, with the same :class:`~.analysis.analyzer.Analyzer` the FTS5 store uses
(stopwords dropped, Porter stems), so both keyword stores agree on what matches ("configuring" finds
"configure"). The BM25 index is rebuilt lazily: ``add`` and ``delete`` only mark it stale, and the next
``search`` rebuilds it once, however many writes came before.

Engines:

* ``"bm25s"`` (default): sparse-matrix BM25 (Lucene's variant), fast; ``k1=1.2``, ``b=0.75`` by default: the
  best of (0.9, 0.4), (1.2, 0.75), (1.5, 0.75) on SciFact train (differences < 0.003 nDCG@10), and the values
  FTS5's ``bm25()`` hard-codes, so both keyword stores rank alike.
* ``"rank_bm25"``: ``rank_bm25.BM25Okapi`` with its defaults (k1=1.5, b=0.75, epsilon=0.25): the scores
  LangChain's ``BM25Retriever`` computes, for parity. It scores every document in Python: slow past ~10k.

Scope (filter, exclusions) is a mask applied to the score vector BEFORE the top-k is taken, so a filtered-out
document is never returned, not even with score 0 (LlamaIndex's BM25Retriever filters after its top-k and can
leak them). Only documents with a score > 0, i.e. sharing at least one term with the query, are returned: a
keyword leg proposes only keyword matches. A query with no surviving term returns ``[]``.

``save(dir)`` / ``load(dir)`` use JSON and ``.npy`` arrays (loaded with ``allow_pickle=False``): never pickle.

Persistent: ``BM25KeywordStore(path=DIR)`` loads ``DIR`` if it holds a store and saves after every write
(``add``, ``delete``), atomically: the new snapshot is written to a fresh folder ``DIR/snapshot-<n>/`` and fsynced,
then the one-line pointer ``DIR/CURRENT`` is replaced (``os.replace``) and the old snapshot removed, so a crash at
any moment leaves the previous or the new store, never half of one. If a save fails the write is undone in memory
and raises :class:`~rrf_retriever.errors.StoreError` (the engine then rolls the other stores back). Every write
rewrites the whole snapshot (the store is meant for small corpora; use the FTS5 store for large or busy indexes).
One store may open a directory at a time (an ``flock`` on ``DIR/.lock``; a second opener gets
:class:`~rrf_retriever.errors.StoreLockedError`). An index directory keeps it in ``keyword-bm25/``.

Example:
    >>> store = BM25KeywordStore()
    >>> store.add(["a", "b"], ["Configure the database", "Cooking pasta"], [{"s": 1}, {"s": 2}])
    >>> [h.id for h in store.search("configuring databases", 5)]
    ['a']
    >>> store.search("configuring", 5, filter={"s": 2})
    []
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from rrf_retriever.analysis.analyzer import Analyzer, default_analyzer
from rrf_retriever.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
)
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import FilterSpec, NormalizedFilter
from rrf_retriever.stores.base import SearchRequest, StoreBase
from rrf_retriever.stores.bm25.files import (
    LOCK_FILE,
    Doc,
    live_folder,
    read_folder,
    save_snapshot,
    saved_settings,
    write_folder,
)
from rrf_retriever.stores.bm25.index import BM25Index
from rrf_retriever.stores.fts5.match import DEFAULT_MAX_TERMS
from rrf_retriever.stores.lockfile import lock_directory, release
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import check_ids, check_limit, validate_batch

__all__ = ["BM25KeywordStore", "Engine"]

Engine = Literal["bm25s", "rank_bm25"]

_DEFAULT_PARAMS: dict[str, dict[str, float]] = {
    "bm25s": {"k1": 1.2, "b": 0.75},
    "rank_bm25": {"k1": 1.5, "b": 0.75},
}


class BM25KeywordStore(StoreBase):
    """An in-memory BM25 keyword store over the shared analyzer.

    Args:
        engine: ``"bm25s"`` (default, fast) or ``"rank_bm25"`` (LangChain BM25Retriever's scores).
        analyzer: The analyzer (default: Lucene stopwords, Porter stems), the same as the FTS5 store's.
        k1: BM25 term-frequency saturation (default 1.2 for bm25s, 1.5 for rank_bm25 as LangChain uses it).
        b: BM25 length normalisation (default 0.75).

    Raises:
        InvalidArgumentError: an unknown engine, or k1 / b out of range.
        MissingDependencyError: the engine's package is not installed (extra ``bm25``), on first search.

    Example:
        >>> store = BM25KeywordStore(engine="rank_bm25")
        >>> store.add(["d1", "d2", "d3"], ["sqlite full text search", "qdrant vectors", "pasta"])
        >>> store.search("searching sqlite", 2)[0].id
        'd1'
    """

    def __init__(
        self,
        *,
        engine: Engine | None = None,
        analyzer: Analyzer | None = None,
        k1: float | None = None,
        b: float | None = None,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        if engine is not None and engine not in _DEFAULT_PARAMS:
            msg = f"engine must be 'bm25s' or 'rank_bm25', got {engine!r}"
            raise InvalidArgumentError(msg)
        if analyzer is not None and not isinstance(analyzer, Analyzer):
            msg = f"analyzer must be an rrf_retriever.analysis.analyzer.Analyzer, not {type(analyzer).__name__}"
            raise InvalidTypeError(msg)
        self.path: Path | None = None if path is None else Path(path)
        self._lock_fh: Any = None
        self._closed = False
        saved: tuple[dict[str, Any], dict[str, Doc]] | None = None
        if self.path is not None:
            self._acquire_lock()
            try:
                folder = live_folder(self.path)
                saved = None if folder is None else read_folder(folder)
                if saved is not None:
                    engine, analyzer, k1, b = saved_settings(self.path, saved[0], engine, analyzer, k1, b)
            except BaseException:
                self._release_lock()
                raise
        engine = engine or "bm25s"
        defaults = _DEFAULT_PARAMS[engine]
        k1 = defaults["k1"] if k1 is None else k1
        b = defaults["b"] if b is None else b
        for name, value, upper in (("k1", k1, 100.0), ("b", b, 1.0)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= upper:
                self._release_lock()
                msg = f"{name} must be a number in [0, {upper:g}], got {value!r}"
                raise InvalidArgumentError(msg)
        self.engine: Engine = engine
        self.analyzer = analyzer or default_analyzer()
        self.k1 = float(k1)
        self.b = float(b)
        self._docs: dict[str, Doc] = {} if saved is None else saved[1]
        self._lock = threading.RLock()
        self._index: BM25Index | None = None  # None: stale, rebuilt by the next search
        self._builds = 0
        if self.path is not None and saved is None:
            try:
                self._save_snapshot(self.path)  # a new store records its settings at once
            except BaseException:
                self._release_lock()
                raise

    # ------------------------------------------------------------------ lifecycle

    def _acquire_lock(self) -> None:
        if self.path is None:  # an in-memory store has no directory to lock
            return
        self._lock_fh = lock_directory(self.path / LOCK_FILE, f"the BM25 store at {self.path}")

    def _release_lock(self) -> None:
        fh, self._lock_fh = self._lock_fh, None
        release(fh)

    def close(self) -> None:
        """Release the directory lock of a persistent store (its files are always up to date). Reads still work
        from memory; a write after close raises :class:`~rrf_retriever.errors.StoreError`."""
        self._closed = True
        self._release_lock()

    def __repr__(self) -> str:
        where = "" if self.path is None else f", path={str(self.path)!r}"
        return (f"BM25KeywordStore(engine={self.engine!r}, k1={self.k1:g}, b={self.b:g}, count={len(self._docs)}"
                f"{where})")

    # ------------------------------------------------------------------ writes

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Insert or replace documents; the index is rebuilt on the next search, not now.

        A bad batch is refused before anything changes.

        Example:
            >>> s = BM25KeywordStore(); s.add(["a"], ["one"]); s.add(["a"], ["two"]); s.get(["a"])[0].text
            'two'
        """
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        # Analyze (and deep-copy metadata through JSON) before touching the store, so a failure changes nothing.
        new_docs = [
            Doc(text, json.loads(json.dumps(meta)), tuple(self.analyzer.analyze(text)))
            for text, meta in zip(text_list, meta_list)
        ]
        with self._lock:
            before = self._before_write()
            for doc_id, doc in zip(id_list, new_docs):
                self._docs.pop(doc_id, None)  # a replaced document moves to the end, as in the FTS5 store
                self._docs[doc_id] = doc
            if id_list:
                self._index = None
                self._commit(before)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id (unknown ids are ignored).

        Example:
            >>> s = BM25KeywordStore(); s.add(["a", "b"], ["x", "y"]); s.delete(["a", "zz"]); s.count()
            1
        """
        id_list = check_ids(ids)
        with self._lock:
            before = self._before_write()
            removed = [self._docs.pop(doc_id, None) for doc_id in id_list]
            if any(r is not None for r in removed):
                self._index = None
                self._commit(before)

    # ------------------------------------------------------------------ reads

    @property
    def index_version(self) -> int:
        """How many times the BM25 index has been built (it is rebuilt lazily, on the first search after a write).

        Example:
            >>> store = BM25KeywordStore()
            >>> store.add(["a"], ["hello"]); store.index_version
            0
            >>> store.search("hello", 1) and store.index_version
            1
        """
        return self._builds

    @property
    def index_is_current(self) -> bool:
        """False when a write has marked the index stale (the next search rebuilds it)."""
        return self._index is not None

    def count(self) -> int:
        """Number of stored documents.

        Example:
            >>> BM25KeywordStore().count()
            0
        """
        return len(self._docs)

    def get(self, ids: Sequence[str]) -> list[Record]:
        """The stored documents for ``ids``, in that order; unknown ids are skipped.

        Example:
            >>> s = BM25KeywordStore(); s.add(["a"], ["x"], [{"k": 1}]); s.get(["a", "nope"])
            [Record(id='a', text='x', metadata={'k': 1}, vector=None)]
        """
        id_list = check_ids(ids)
        with self._lock:
            found = [(doc_id, self._docs.get(doc_id)) for doc_id in id_list]
        return [Record(doc_id, d.text, json.loads(json.dumps(d.metadata))) for doc_id, d in found if d is not None]

    def _snapshot(self) -> BM25Index:
        with self._lock:
            if self._index is None:
                ids = list(self._docs)
                self._index = BM25Index(ids, [self._docs[i] for i in ids], self.engine, self.k1, self.b)
                self._builds += 1
            return self._index

    def ids_matching(
        self, filter: FilterSpec | NormalizedFilter | None = None, limit: int | None = None
    ) -> list[str]:
        """Every stored id whose metadata matches ``filter`` (None: every id), sorted; at most ``limit``.

        Example:
            >>> s = BM25KeywordStore(); s.add(["b", "a", "c"], ["x", "y", "z"], [{"n": 1}, {"n": 5}, {}])
            >>> s.ids_matching({"n": {"$gte": 1}}), s.ids_matching({"n": {"$exists": False}}, limit=1)
            (['a', 'b'], ['c'])
        """
        import numpy as np

        flt = normalize_filter(filter)
        cap = None if limit is None else check_limit(limit)
        index = self._snapshot()
        ids = index.ids if flt is None else [index.ids[i] for i in np.flatnonzero(index.scope.mask(flt)).tolist()]
        return sorted(ids)[:cap]

    def search(
        self,
        query: str,
        limit: int,
        filter: FilterSpec | NormalizedFilter | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]:
        """The top ``limit`` documents by BM25 among those the scope allows, score > 0 only.

        Returns:
            Hits, best first (equal scores: by id); [] when no query term survives the analyzer.

        Example:
            >>> s = BM25KeywordStore(); s.add(["a", "b"], ["hello world", "bye"]); [h.id for h in s.search("world", 5)]
            ['a']
        """
        return self.search_request(SearchRequest.checked("keyword", query, None, limit, filter, exclude_ids))

    def search_request(self, request: SearchRequest) -> list[Hit]:
        """:meth:`search` of a validated request (the engine's legs call it): nothing is checked again.

        Example:
            >>> s = BM25KeywordStore(); s.add(["a"], ["hello world"])
            >>> [h.id for h in s.search_request(SearchRequest("keyword", "world", None, 5))]
            ['a']
        """
        import numpy as np

        limit = request.limit
        flt, excluded = request.scope
        if limit == 0:
            return []
        terms = self.analyzer.analyze_query(request.query)[:DEFAULT_MAX_TERMS]
        if not terms:
            return []
        index = self._snapshot()
        if not index.ids:
            return []
        try:
            scores = index.scores(terms)
        except (ValueError, KeyError, IndexError, FloatingPointError) as exc:
            msg = f"BM25 scoring failed: {exc}"
            raise StoreError(msg) from exc
        mask = index.allowed(flt, excluded)
        # Only keyword matches (score > 0); the scope mask applies before the top-k.
        eligible = scores > 0
        if mask is not None:
            eligible &= mask
        candidates = np.flatnonzero(eligible)
        if candidates.size == 0:
            return []
        if candidates.size > limit:
            cand_scores = scores[candidates]
            # Keep every candidate tied with the limit-th score, then order exactly (score desc, id asc).
            kth = np.partition(cand_scores, candidates.size - limit)[candidates.size - limit]
            candidates = candidates[cand_scores >= kth]
        top = sorted(candidates.tolist(), key=lambda pos: (-scores[pos], index.ids[pos]))[:limit]
        hits = []
        for pos in top:
            doc = index.docs[pos]
            hits.append(Hit(index.ids[pos], doc.text, json.loads(json.dumps(doc.metadata)), float(scores[pos])))
        return hits

    # ------------------------------------------------------------------ persistence

    def _before_write(self) -> dict[str, Doc] | None:
        """What a persistent store restores if saving a write fails (None: an in-memory store)."""
        if self.path is None:
            return None
        if self._closed:
            msg = f"the BM25 store at {self.path} is closed"
            raise StoreError(msg)
        return dict(self._docs)

    def _commit(self, before: dict[str, Doc] | None) -> None:
        """Save the store after a write (persistent stores only); on failure undo the write in memory."""
        if self.path is None or before is None:
            return
        try:
            self._save_snapshot(self.path)
        except BaseException:
            self._docs = before
            self._index = None
            raise

    def _save_snapshot(self, root: Path) -> None:
        """Write a new snapshot folder, then switch ``CURRENT`` to it atomically (see :mod:`.bm25_files`)."""
        save_snapshot(root, lambda target: self.save(target, durable=True))

    def save(self, directory: str | Path, *, durable: bool = False) -> None:
        """Write the store to ``directory`` as JSON (documents, settings, vocabulary) and ``.npy`` token arrays.

        ``durable=True`` fsyncs every file and the folder. (A store built with ``path=`` saves itself after every
        write; this is for a one-off copy.)

        Example:
            >>> import tempfile; d = tempfile.mkdtemp(); s = BM25KeywordStore(); s.add(["a"], ["x y"])
            >>> s.save(d); BM25KeywordStore.load(d).count()
            1
        """
        with self._lock:
            ids = list(self._docs)
            docs = [self._docs[i] for i in ids]
        settings = {"engine": self.engine, "k1": self.k1, "b": self.b, "analyzer": self.analyzer.config()}
        write_folder(Path(directory), ids, docs, settings, durable=durable)

    @classmethod
    def load(cls, directory: str | Path, *, analyzer: Analyzer | None = None) -> BM25KeywordStore:
        """Load a store written by :meth:`save` or kept by a persistent store (no pickle: JSON and
        ``np.load(allow_pickle=False)``). The result is an in-memory copy; to keep writing to the folder, open it
        with ``BM25KeywordStore(path=directory)``.

        Args:
            directory: The folder given to :meth:`save` (or ``path=``).
            analyzer: Needed only if the store was saved with a custom (callable) stemmer; must match.

        Raises:
            StoreError: missing or malformed files.
            InvalidArgumentError: an analyzer different from the saved one.
        """
        root = Path(directory)
        meta, docs = read_folder(live_folder(root) or root)
        engine, analyzer, k1, b = saved_settings(root, meta, None, analyzer, None, None)
        store = cls(engine=engine, analyzer=analyzer, k1=k1, b=b)
        store._docs = docs
        return store
