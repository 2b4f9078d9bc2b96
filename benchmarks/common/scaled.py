"""Real MiniLM vectors scaled to N documents: jittered copies of the cached vectors of the BEIR collections.

Embedding 1M texts is out of reach here (~111-200 passages/s on 2 cores), so a large corpus of real vectors is made
of copies: the first copy of each document is its real cached vector, each later copy the same vector jittered
(``v + 0.3 g / sqrt(384)``, ``g`` standard normal, renormalized: cosine ~0.96 to the original), so copies are near
their source but never exact ties. ``bench_scale_curve`` scales ArguAna this way; ``bench_filtered_recall`` scales
all five collections (:func:`five_collections`), with each row's source document and collection, for filter
scopes that are whole documents' groups or whole collections.

Example:
    >>> import numpy as np
    >>> out = jittered_copies(np.eye(2, 384, dtype=np.float32), 5, np.random.default_rng(0))
    >>> out.shape, round(float(out[2] @ out[0]), 1)
    ((5, 384), 1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The jitter's scale per dimension (times ``1 / sqrt(dim)``): cosine ~0.96 between a copy and its source.
JITTER = 0.3


def jittered_copies(vectors: np.ndarray, n: int, rng: np.random.Generator, jitter: float = JITTER) -> np.ndarray:
    """``n`` rows: ``vectors`` as given, then copies of them, each jittered and renormalized (float32).

    The copies are drawn one whole copy of ``vectors`` at a time, in order (a fixed ``rng`` gives the same rows
    whatever ``n``), into one preallocated array: 1M rows of 384 floats is 1.5 GB, built once.
    """
    base = np.asarray(vectors, dtype=np.float32)
    m, dim = base.shape
    out = np.empty((n, dim), dtype=np.float32)
    out[: min(n, m)] = base[: min(n, m)]
    scale = jitter / np.sqrt(dim)
    for start in range(m, n, m):
        j = base + scale * rng.normal(size=base.shape).astype(np.float32)
        j /= np.linalg.norm(j, axis=1, keepdims=True)
        out[start : min(n, start + m)] = j[: min(m, n - start)]
    return out


def five_collections(n: int, n_queries: int, seed: int = 3) -> dict[str, Any]:
    """The five BEIR collections' real fp32 MiniLM vectors (``common/beir.py``'s cache) copied to ``n`` rows.

    Returns a dict: ``vectors`` (n x 384, unit), ``groups`` (each row's source document, a row of the five
    collections' concatenation: a document and its copies share it), ``collections`` (each row's collection index),
    ``names`` (the collections), ``queries`` (``n_queries`` real query vectors, taken round-robin from the five
    collections' judged test queries, a fixed sample) and ``query_collections``.
    """
    from benchmarks.common.beir import COLLECTIONS, load_collection

    docs, queries, doc_coll, q_coll = [], [], [], []
    for i, name in enumerate(COLLECTIONS):
        c = load_collection(name)
        docs.append(c.doc_vectors)
        queries.append(c.query_vectors)
        doc_coll.append(np.full(len(c.doc_vectors), i))
        q_coll.append(np.full(len(c.query_vectors), i))
    base = np.concatenate(docs)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    coll = np.concatenate(doc_coll)
    rng = np.random.default_rng(seed)
    vectors = jittered_copies(base, n, rng)
    rows = np.arange(n) % len(base)
    picked: list[int] = []
    q_all = np.concatenate(queries)
    q_of = np.concatenate(q_coll)
    order = [rng.permutation(np.flatnonzero(q_of == i)).tolist() for i in range(len(COLLECTIONS))]
    while len(picked) < min(n_queries, len(q_all)):
        for lst in order:
            if lst and len(picked) < n_queries:
                picked.append(lst.pop())
    qv = q_all[picked]
    qv = qv / np.linalg.norm(qv, axis=1, keepdims=True)
    return {"vectors": vectors, "groups": rows, "collections": coll[rows], "names": list(COLLECTIONS),
            "queries": qv.astype(np.float32), "query_collections": q_of[picked], "base_docs": len(base)}
