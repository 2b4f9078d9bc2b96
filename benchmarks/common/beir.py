"""The one loader of the BEIR collections (scifact, arguana, med, cacm, npl and five more) and of their MiniLM vectors.

Every benchmark reads the collections through :func:`read_beir` (the folders under
:data:`~benchmarks.common.paths.DATA`, or a path such as ``benchmarks/data/multilingual``) and takes its vectors
from one of three caches under ``benchmarks/.cache/``, all keyed by a SHA-256 of the texts so a changed corpus never
reuses stale vectors, and all read by every system of a comparison, so each sees the same vectors:

* :func:`load_collection` / :func:`cached_vectors`: the five collections, judged test queries, fp32 MiniLM
  (``coll-all-MiniLM-L6-v2-<n>-<sha256>.npy``); the quality and weak-leg benchmarks;
* :func:`load_bundle`: one collection and split, every query of it, fp32 MiniLM through
  :func:`rrf_retriever.embeddings.cached_embed_documents`; the hybrid quality, sweep and speed benchmarks;
* :func:`load_int8_sample`: the five with int8 MiniLM (the library's default model), at most
  :data:`QUERIES_PER_COLLECTION` judged queries each; the relevance-cutoff benchmark.

:data:`COLLECTIONS` are the five every script runs by default; :data:`MORE_COLLECTIONS` (time, lisa, adi, cosqa,
nfcorpus, rebuilt by ``benchmarks/quality/build_collections.py``, each described by
``benchmarks/data/collections/<name>/SOURCE.md``) are run only where a script is asked for them (``--collections``);
:data:`ALL_COLLECTIONS` is the ten. :func:`load_collection` reads any of them the same way.

Texts: ``doc_text`` (title + "\\n" + text; just the text when there is no title). MED and NPL have no titles;
CACM has titles and ~half its documents are title-only; ArguAna's "titles" are debate topic words. Of the five more,
LISA and ADI have titles; TIME, CoSQA (Python functions) and NFCorpus (the authors' preprocessed text) have none.

It imports only top-level ``rrf_retriever`` names and ``rrf_retriever.evaluation`` / ``.embeddings``, so a move of
the package's internal modules does not break it. ``RRF_SRC=<dir holding rrf_retriever/>`` runs against that copy
of the package (e.g. a ``git archive HEAD`` snapshot while the working tree is being restructured).

Warm the caches: ``.venv/bin/python benchmarks/quality/warm_vectors.py`` (see its ``--help``).

Example:
    >>> c = load_collection("scifact")  # doctest: +SKIP
    >>> c.doc_vectors.shape  # doctest: +SKIP
    (5183, 384)
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SRC = os.environ.get("RRF_SRC")
if _SRC and _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import numpy as np

from benchmarks.common.paths import CACHE, DATA
from rrf_retriever.embeddings import cached_embed_documents
from rrf_retriever.evaluation import BeirDataset, doc_text, load_beir

COLLECTIONS = ("scifact", "arguana", "med", "cacm", "npl")
#: The five rebuilt from pinned public snapshots (``build_collections.py``), smallest corpus first.
MORE_COLLECTIONS = ("adi", "time", "nfcorpus", "lisa", "cosqa")
ALL_COLLECTIONS = COLLECTIONS + MORE_COLLECTIONS
MODEL_ID = "all-MiniLM-L6-v2"
#: ArguAna's fixed query subset (``random.Random(0)``): LangChain's rank_bm25 takes ~1 s per long ArguAna query.
ARGUANA_SUBSET = 300
#: The relevance benchmark's order of the five, and its queries per collection (a fixed sample, seed 0).
INT8_COLLECTIONS = ("med", "cacm", "scifact", "arguana", "npl")
QUERIES_PER_COLLECTION = 200

_MODELS: dict[str, Any] = {}


def read_beir(name: str | Path, split: str = "test") -> BeirDataset:
    """One BEIR folder: a collection's name under :data:`DATA`, or a path to any BEIR folder."""
    return load_beir(name if isinstance(name, Path) else DATA / name, split=split)


def minilm(precision: str = "fp32") -> Any:
    """One MiniLM per process and precision (``"fp32"``: the exact model; ``"int8"``: the library's default)."""
    if precision not in _MODELS:
        from rrf_retriever import MiniLMEmbedding

        if precision == "int8":
            _MODELS[precision] = MiniLMEmbedding(show_progress=False)
        else:
            _MODELS[precision] = MiniLMEmbedding(show_progress=True, precision=precision)
    return _MODELS[precision]


def _key(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return f"coll-{MODEL_ID}-{len(texts)}-{digest.hexdigest()[:24]}.npy"


def cached_vectors(texts: Sequence[str]) -> np.ndarray:
    """MiniLM vectors of ``texts`` (float32, unit length), computed once and cached by a SHA-256 of the texts."""
    target = CACHE / _key(texts)
    if target.is_file():
        return np.load(target)
    CACHE.mkdir(parents=True, exist_ok=True)
    vectors = np.asarray(minilm().embed_documents(list(texts)), dtype=np.float32)
    tmp = target.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(target)
    return vectors


@dataclass
class Collection:
    """One collection as the legs see it: texts, cached vectors, judged queries and their qrels."""

    name: str
    doc_ids: list[str]
    doc_texts: list[str]  # title + text as one string
    titles: list[str]
    doc_vectors: np.ndarray
    query_ids: list[str]  # judged queries only (qrels of the test split)
    query_texts: list[str]
    query_vectors: np.ndarray
    qrels: dict[str, dict[str, int]]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def exclude_self(self) -> bool:
        """ArguAna: a query's own document is dropped (BEIR ``ignore_identical_ids``)."""
        return self.name == "arguana"

    @property
    def has_titles(self) -> bool:
        return any(t.strip() for t in self.titles)

    def excl(self, qid: str) -> list[str] | None:
        return [qid] if self.exclude_self else None


def _texts(ds: BeirDataset) -> tuple[list[str], list[str], list[str]]:
    doc_ids = list(ds.corpus)
    return doc_ids, [doc_text(ds.corpus[i]) for i in doc_ids], [str(ds.corpus[i].get("title") or "") for i in doc_ids]


def load_collection(name: str, *, vectors: bool = True, arguana_subset: bool = True) -> Collection:
    """A collection's test split with fp32 vectors from :func:`cached_vectors` (``vectors=False``: none)."""
    ds = read_beir(name)
    doc_ids, doc_texts, titles = _texts(ds)
    all_qids = list(ds.queries)
    query_ids = all_qids
    if name == "arguana" and arguana_subset:
        # LangChain's rank_bm25 (~1 s per long ArguAna query) and FTS5 over ~100-term OR queries make the full
        # 1,406 slow: every system is scored on the fixed subset bench_hybrid_quality.py uses for its anchors.
        query_ids = [query_ids[i] for i in sorted(random.Random(0).sample(range(len(query_ids)), ARGUANA_SUBSET))]
    query_texts = [ds.queries[q] for q in query_ids]
    qrels = {q: dict(ds.qrels[q]) for q in query_ids}
    if vectors:
        dv = cached_vectors(doc_texts)
        qv_all = cached_vectors([ds.queries[q] for q in all_qids])
        where = {q: i for i, q in enumerate(all_qids)}
        qv = qv_all[[where[q] for q in query_ids]]
    else:
        dv = qv = np.zeros((0, 384), dtype=np.float32)
    return Collection(name, doc_ids, doc_texts, titles, dv, query_ids, query_texts, qv, qrels)


def load_int8_sample(name: str) -> Collection:
    """A collection's judged test queries (at most :data:`QUERIES_PER_COLLECTION`, ``random.Random(0)``) with int8
    MiniLM vectors from :func:`~rrf_retriever.embeddings.cached_embed_documents`."""
    ds = read_beir(name)
    doc_ids, doc_texts, titles = _texts(ds)
    qids = [q for q in ds.queries if ds.qrels.get(q)]
    if len(qids) > QUERIES_PER_COLLECTION:
        qids = [qids[i] for i in sorted(random.Random(0).sample(range(len(qids)), QUERIES_PER_COLLECTION))]
    query_texts = [ds.queries[q] for q in qids]
    dv = cached_embed_documents(minilm("int8"), doc_texts, CACHE)
    qv = cached_embed_documents(minilm("int8"), query_texts, CACHE)
    return Collection(name, doc_ids, doc_texts, titles, dv, qids, query_texts, qv,
                      {q: dict(ds.qrels[q]) for q in qids})


@dataclass
class Bundle:
    """A data set with its texts and the cached MiniLM vectors of its corpus and queries."""

    name: str
    ds: BeirDataset
    doc_ids: list[str]
    doc_texts: list[str]
    doc_vectors: np.ndarray
    query_ids: list[str]
    query_texts: list[str]
    query_vectors: np.ndarray

    @property
    def exclude_self(self) -> bool:
        """ArguAna: a query's own document is dropped (BEIR ``ignore_identical_ids``)."""
        return self.name == "arguana"


def load_bundle(name: str, split: str = "test") -> Bundle:
    """A collection's split and its fp32 vectors from ``cached_embed_documents`` (computed on first use)."""
    ds = read_beir(name, split=split)
    doc_ids, doc_texts, _titles = _texts(ds)
    query_ids = list(ds.queries)
    query_texts = [ds.queries[q] for q in query_ids]
    doc_vectors = cached_embed_documents(minilm(), doc_texts, CACHE)
    query_vectors = cached_embed_documents(minilm(), query_texts, CACHE)
    return Bundle(name, ds, doc_ids, doc_texts, doc_vectors, query_ids, query_texts, query_vectors)
