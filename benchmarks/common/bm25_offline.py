"""An offline BM25 scorer over one collection, with every factor that separates the sparse leg from FTS5 as a switch.

Public names only (``rrf_retriever.Analyzer``, the sparse leg's public ``term_id``). Used by
``bench_bm25_variants.py``; each variant is checked against the real store it emulates there.

Factors (a :class:`Variant`):
* ``idf``: ``"lucene"`` ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (Qdrant's ``Modifier.IDF``, bm25s "lucene") or
  ``"fts5"`` ``ln((N - n + 0.5) / (n + 0.5))`` clamped to ``1e-6`` (SQLite's ``bm25()``);
* ``length``: ``"terms"`` (the analyzed terms: stopwords and 1-letter tokens dropped, what the sparse leg counts) or
  ``"tokens"`` (every token, what FTS5 counts);
* ``k1``, ``b``; ``avgdl_scale`` (avgdl x this: a frozen, wrong avgdl);
* ``k3``: query-term saturation ``qtf * (k3 + 1) / (qtf + k3)`` (0: each term once, inf: raw counts) and
  ``short_once``: queries of at most this many distinct terms count each term once (else ``k3``);
  ``k3_per_term``: k3 = this x the query's distinct terms (short queries saturate, long ones count);
* ``collide``: term ids as the sparse leg hashes them (distinct terms sharing an id share a posting list).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse

from rrf_retriever import Analyzer
from rrf_retriever.stores.qdrant.sparse_values import term_id

INF = math.inf


@dataclass(frozen=True)
class Variant:
    idf: str = "lucene"
    length: str = "terms"
    k1: float = 1.2
    b: float = 0.75
    k3: float = INF
    short_once: int = 0
    k3_per_term: float = 0.0
    avgdl_scale: float = 1.0
    collide: bool = False

    def but(self, **kw: object) -> Variant:
        return replace(self, **kw)  # type: ignore[arg-type]  # benchmark helper: fields by name


def qtf_weight(qtf: np.ndarray, k3: float) -> np.ndarray:
    """BM25's query-term saturation: ``qtf * (k3 + 1) / (qtf + k3)``; k3 = 0 -> 1, k3 = inf -> qtf."""
    if k3 == INF:
        return qtf.astype(np.float64)
    return qtf * (k3 + 1.0) / (qtf + k3)


class OfflineBM25:
    """The collection's documents analyzed once; :meth:`search` scores every query for a :class:`Variant`."""

    def __init__(self, doc_texts: Sequence[str], query_texts: Sequence[str], analyzer: Analyzer | None = None,
                 max_terms: int = 256) -> None:
        self.analyzer = analyzer or Analyzer()
        a = self.analyzer
        docs = [a.analyze(t) for t in doc_texts]
        self.n_docs = len(docs)
        self.vocab: dict[str, int] = {}
        for terms in docs:
            for t in terms:
                self.vocab.setdefault(t, len(self.vocab))
        self.lengths = {
            "terms": np.array([len(t) for t in docs], dtype=np.float64),
            "tokens": np.array([len(a.tokenize(t)) for t in doc_texts], dtype=np.float64),
        }
        rows, cols, vals = [], [], []
        for i, terms in enumerate(docs):
            for t, c in Counter(terms).items():
                rows.append(i)
                cols.append(self.vocab[t])
                vals.append(c)
        self.tf = sparse.csr_matrix((vals, (rows, cols)), shape=(self.n_docs, len(self.vocab)), dtype=np.float64)
        self.df = np.asarray((self.tf > 0).sum(axis=0)).ravel().astype(np.float64)
        # Hashed ids: the term columns merged by id (what the sparse leg's posting lists hold).
        ids = {t: term_id(t) for t in self.vocab}
        by_id: dict[int, list[int]] = {}
        for t, col in self.vocab.items():
            by_id.setdefault(ids[t], []).append(col)
        self.collisions = [sorted(t for t, c in self.vocab.items() if c in cols_) for cols_ in by_id.values()
                           if len(cols_) > 1]
        self.id_col = {t: min(by_id[ids[t]]) for t in self.vocab}
        self.queries = [a.analyze_query(q)[:max_terms] for q in query_texts]
        self._sat: dict[tuple[str, float, float, float, bool], sparse.csc_matrix] = {}

    def _idf(self, kind: str, df: np.ndarray) -> np.ndarray:
        n = self.n_docs
        if kind == "lucene":
            return np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        if kind == "fts5":
            return np.maximum(np.log((n - df + 0.5) / (df + 0.5)), 1e-6)
        raise ValueError(kind)

    def _saturated(self, v: Variant) -> sparse.csc_matrix:
        key = (v.length, v.k1, v.b, v.avgdl_scale, v.collide)
        if key not in self._sat:
            dl = self.lengths[v.length]
            avgdl = dl.mean() * v.avgdl_scale
            norm = v.k1 * (1.0 - v.b + v.b * dl / avgdl)
            tf = self.tf.tocoo()
            vals = tf.data * (v.k1 + 1.0) / (tf.data + norm[tf.row])
            cols = tf.col
            if v.collide:  # colliding terms: one column (values of one document add up, as the sparse leg does)
                remap = np.arange(len(self.vocab))
                for t, c in self.vocab.items():
                    remap[c] = self.id_col[t]
                cols = remap[cols]
            self._sat[key] = sparse.csc_matrix((vals, (tf.row, cols)), shape=tf.shape)
        return self._sat[key]

    def search_rm3(self, v: Variant, depth: int, exclude: Sequence[int | None] | None, fb_docs: int = 10,
                   fb_terms: int = 20, lam: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
        """RM3 pseudo-relevance feedback over :meth:`search` (as Anserini's): the first pass's top ``fb_docs``
        documents, ``P(t|R) = sum_d score_d * tf(t,d) / dl_d`` (scores normalised to sum 1), its top ``fb_terms``
        terms; the new query is ``(1 - lam) * q / |q| + lam * P(t|R)`` (q: the query's term weights), scored by
        the same BM25 (each weight times IDF times the saturated tf)."""
        first, first_sc = self.search(v, fb_docs, exclude)
        rows = self.tf.tocsr()
        dl = np.maximum(self.lengths["terms"], 1.0)
        weights: list[dict[int, float]] = []
        for qi, terms in enumerate(self.queries):
            base = self._query_weights(v.but(collide=False), terms)
            if not base:
                weights.append({})
                continue
            total = sum(base.values())
            q = {c: (1.0 - lam) * w / total for c, w in base.items()}
            docs = [d for d in first[qi] if d >= 0]
            if docs:
                ds = first_sc[qi, : len(docs)] / first_sc[qi, : len(docs)].sum()
                rel: dict[int, float] = {}
                for d, s in zip(docs, ds):
                    row = rows[d]
                    for col, tf in zip(row.indices, row.data):
                        rel[int(col)] = rel.get(int(col), 0.0) + s * tf / dl[d]
                top = sorted(rel.items(), key=lambda kv: -kv[1])[:fb_terms]
                norm = sum(p for _c, p in top) or 1.0
                for col, p in top:
                    q[col] = q.get(col, 0.0) + lam * p / norm
            weights.append(q)
        return self._score(v, depth, exclude, weights)

    def search(self, v: Variant, depth: int, exclude: Sequence[int | None] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Every query's top ``depth`` (doc indexes padded -1, scores), ties by document index."""
        mat = self._saturated(v)
        if v.collide:
            df = np.asarray((mat > 0).sum(axis=0)).ravel().astype(np.float64)
        else:
            df = self.df
        idf_all = self._idf(v.idf, np.maximum(df, 1.0))
        return self._rank(mat, idf_all, depth, exclude, [self._query_weights(v, terms) for terms in self.queries])

    def _query_weights(self, v: Variant, terms: Sequence[str]) -> dict[int, float]:
        col_of = self.id_col if v.collide else self.vocab
        counts = Counter(col_of[t] for t in terms if t in col_of)
        if not counts:
            return {}
        k3 = v.k3_per_term * len(counts) if v.k3_per_term else v.k3
        if v.short_once and len(counts) <= v.short_once:
            k3 = 0.0
        qtf = np.array(list(counts.values()), dtype=np.float64)
        return dict(zip(counts, qtf_weight(qtf, k3)))

    def _score(self, v: Variant, depth: int, exclude: Sequence[int | None] | None,
               weights: list[dict[int, float]]) -> tuple[np.ndarray, np.ndarray]:
        return self._rank(self._saturated(v), self._idf(v.idf, np.maximum(self.df, 1.0)), depth, exclude, weights)

    def _rank(self, mat: sparse.csc_matrix, idf_all: np.ndarray, depth: int, exclude: Sequence[int | None] | None,
              weights: list[dict[int, float]]) -> tuple[np.ndarray, np.ndarray]:
        nq = len(weights)
        idx = np.full((nq, depth), -1, dtype=np.int32)
        sc = np.zeros((nq, depth), dtype=np.float64)
        for qi, qw in enumerate(weights):
            if not qw:
                continue
            cols = np.fromiter(qw, dtype=np.int64)
            w = np.array([qw[c] for c in cols]) * idf_all[cols]
            scores = np.asarray(mat[:, cols] @ w).ravel()
            if exclude is not None and exclude[qi] is not None:
                scores[exclude[qi]] = 0.0
            hit = np.flatnonzero(scores > 0)
            order = hit[np.lexsort((hit, -scores[hit]))][:depth]
            idx[qi, : len(order)] = order
            sc[qi, : len(order)] = scores[order]
        return idx, sc
