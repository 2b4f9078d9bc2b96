"""The in-memory BM25 index of :class:`~rrf_retriever.stores.bm25.store.BM25KeywordStore`: one immutable snapshot of
its documents, scored by bm25s or rank-bm25, with the scope mask (filter, exclusions) taken before the top-k.

Example:
    >>> from rrf_retriever.stores.bm25.files import Doc
    >>> index = BM25Index(["a", "b"], [Doc("x", {"s": 1}, ("x",)), Doc("y", {"s": 2}, ("y",))], "bm25s", 1.2, 0.75)
    >>> (index.scores(["x"]) > 0).tolist()
    [True, False]
"""

from __future__ import annotations

from typing import Any

from rrf_retriever.errors import missing_dependency
from rrf_retriever.scope.tree import NormalizedFilter
from rrf_retriever.stores.bm25.files import Doc
from rrf_retriever.stores.bm25.scope import ScopeIndex

__all__ = ["BM25Index"]


class BM25Index:
    """An immutable snapshot: ids in index order, the BM25 engine, and the metadata -> positions index."""

    def __init__(self, ids: list[str], docs: list[Doc], engine: str, k1: float, b: float) -> None:
        self.ids = ids
        self.docs = docs
        self.position = {doc_id: i for i, doc_id in enumerate(ids)}
        self.engine = engine
        self.model: Any = None
        self.vocab: frozenset[str] = frozenset()
        corpus = [list(d.tokens) for d in docs]
        if engine == "bm25s":
            try:
                import bm25s
            except ImportError as exc:
                raise missing_dependency("bm25s", "bm25", "BM25KeywordStore(engine='bm25s')") from exc
            if any(corpus):  # bm25s fails on a corpus without one token (e.g. only stopwords)
                model = bm25s.BM25(k1=k1, b=b, method="lucene")
                model.index(corpus, show_progress=False)
                self.model = model
                self.vocab = frozenset(model.vocab_dict)
        else:
            try:
                from rank_bm25 import BM25Okapi
            except ImportError as exc:
                raise missing_dependency("rank-bm25", "bm25", "BM25KeywordStore(engine='rank_bm25')") from exc
            # BM25Okapi divides by the mean length: an index of empty documents can match nothing anyway.
            if any(corpus):
                self.model = BM25Okapi(corpus, k1=k1, b=b)
                self.vocab = frozenset(self.model.idf)
        self.scope = ScopeIndex([d.metadata for d in docs])

    def scores(self, terms: list[str]) -> Any:
        import numpy as np

        if self.model is None:
            return np.zeros(len(self.ids))
        known = [t for t in terms if t in self.vocab]
        if not known:
            return np.zeros(len(self.ids))
        # Both engines take a list of terms: bm25s.BM25.get_scores and rank_bm25.BM25Okapi.get_scores.
        return np.asarray(self.model.get_scores(known), dtype=np.float64)

    def allowed(self, flt: NormalizedFilter | None, excluded: frozenset[str]) -> Any:
        """A boolean mask of the documents the scope allows (None: all)."""
        import numpy as np

        if not flt and not excluded:
            return None
        mask = np.ones(len(self.ids), dtype=bool) if flt is None else self.scope.mask(flt)
        for doc_id in excluded:
            pos = self.position.get(doc_id)
            if pos is not None:
                mask[pos] = False
        return mask
