"""Maximal Marginal Relevance (MMR): re-order a ranked list so that near-duplicates do not crowd the top.

Pure functions: no I/O, no framework types, inputs never mutated.

Carbonell & Goldstein (1998), "The Use of MMR, Diversity-Based Reranking for Reordering Documents and Producing
Summaries", SIGIR '98. Greedy selection: with ``S`` the candidates chosen so far and ``R`` the rest,

    next = argmax_{d_i in R} [ lambda * rel(d_i) - (1 - lambda) * max_{d_j in S} sim(d_i, d_j) ]

``rel`` is given by the caller (the engine passes the fused score divided by the pool's best fused score, see
:mod:`rrf_retriever.engine.stages`); ``sim`` is the cosine similarity of the two candidates' vectors, and
``max`` over an empty ``S`` is 0. Rules of this implementation:

* The first pick is the most relevant candidate, for every ``lambda`` (at ``lambda = 0`` the formula ties every
  candidate at 0 for the first pick; taking the most relevant is what MMR implementations do).
* ``lambda = 1`` is pure relevance: the candidates come back sorted by ``rel`` (stable), so a list already in
  relevance order is returned unchanged. ``lambda = 0`` is pure novelty after the first pick.
* A candidate without a vector (None), or with a zero vector, has similarity 0 to every other: nothing can show
  it is redundant, so it competes on relevance alone (and does not penalise others).
* Ties go to the earlier candidate (the lower index), so the result is deterministic.

Example:
    >>> rel = [1.0, 0.9, 0.5]
    >>> vecs = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]  # the second is a duplicate of the first
    >>> mmr_order(rel, vecs, 1.0), mmr_order(rel, vecs, 0.5)
    ([0, 1, 2], [0, 2, 1])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import mul
from typing import Any

from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.validate import check_int, check_number

__all__ = ["cosine", "mmr_order"]


def _norm(vector: Sequence[float] | None) -> float:
    return math.sqrt(sum(map(mul, vector, vector))) if vector else 0.0


def cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float:
    """Cosine similarity of two vectors; 0.0 when either is missing or zero.

    Raises:
        InvalidArgumentError: the vectors have different dimensions.

    Example:
        >>> cosine([1.0, 0.0], [1.0, 1.0]) == 1 / math.sqrt(2), cosine(None, [1.0])
        (True, 0.0)
    """
    if a is None or b is None:
        return 0.0
    if len(a) != len(b):
        msg = f"vectors of different dimensions ({len(a)} and {len(b)}) cannot be compared"
        raise InvalidArgumentError(msg)
    na, nb = _norm(a), _norm(b)
    return sum(map(mul, a, b)) / (na * nb) if na > 0 and nb > 0 else 0.0


def mmr_order(
    relevance: Sequence[float],
    vectors: Sequence[Sequence[float] | None],
    lambda_: float,
    limit: int | None = None,
) -> list[int]:
    """The indexes of the candidates in MMR selection order (see the module doc for the formula).

    Args:
        relevance: ``rel(d_i)`` per candidate, finite (higher is more relevant).
        vectors: One vector per candidate (None: no vector; similarity 0 to every other candidate).
        lambda_: The MMR trade-off in [0, 1]: 1 = relevance only, 0 = novelty only.
        limit: Select this many (default: all). Greedy selection is prefix-stable: the first ``m`` of a longer
            selection are the selection of ``m``.

    Returns:
        ``min(limit, len(relevance))`` distinct indexes, the first pick first.

    Raises:
        InvalidArgumentError / InvalidTypeError: ``lambda_`` outside [0, 1], lengths that differ, a relevance that
            is not finite, vectors of different dimensions.

    Example:
        >>> mmr_order([0.9, 0.8, 0.1], [[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]], 0.3, limit=2)
        [0, 2]
    """
    lam = check_number(lambda_, "diversity (the MMR lambda)", high=1.0)
    if len(vectors) != len(relevance):
        msg = f"mmr_order: {len(relevance)} relevance values but {len(vectors)} vectors"
        raise InvalidArgumentError(msg)
    rel = [float(r) for r in relevance]
    if not all(math.isfinite(r) for r in rel):
        msg = "mmr_order: every relevance value must be finite"
        raise InvalidArgumentError(msg)
    n = len(rel)
    want = n if limit is None else min(n, check_int(limit, "limit", 0))
    if lam == 1.0:  # relevance only: a stable sort, exactly (no similarity is even computed)
        return sorted(range(n), key=lambda i: -rel[i])[:want]
    dims = {len(v) for v in vectors if v is not None}
    if len(dims) > 1:
        msg = f"mmr_order: the vectors have different dimensions {sorted(dims)}"
        raise InvalidArgumentError(msg)
    similarities = _similarity_rows(vectors)
    max_sim = [-math.inf] * n  # max similarity of each candidate to the selected ones (read once one is)
    remaining = list(range(n))
    chosen: list[int] = []
    while remaining and len(chosen) < want:
        if chosen:
            best = max(remaining, key=lambda i: (lam * rel[i] - (1.0 - lam) * max_sim[i], -i))
        else:  # S is empty: the formula is lam * rel, so the most relevant (also at lam = 0, where all tie at 0)
            best = max(remaining, key=lambda i: (rel[i], -i))
        chosen.append(best)
        remaining.remove(best)
        row = similarities(best)
        for i in remaining:
            max_sim[i] = max(max_sim[i], row[i])
    return chosen


#: Cosines are compared to this many decimals (float noise below it is no difference).
_DIGITS = 12


def _similarity_rows(vectors: Sequence[Sequence[float] | None]) -> Callable[[int], Sequence[float]]:
    """``row(j)[i]`` = cosine similarity of candidates ``i`` and ``j`` (0 where either has no vector or a zero one).

    With numpy (every install with a dense store has it) the rows are matrix products, much faster than the pure
    loop, which is the fallback.
    """
    n = len(vectors)
    dim = next((len(v) for v in vectors if v is not None), 0)
    np: Any  # the module, or None: the pure loop below
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with every dense store
        np = None
    if np is not None and dim:
        matrix = np.zeros((n, dim), dtype=np.float64)
        for i, v in enumerate(vectors):
            if v is not None:
                matrix[i] = v
        norms = np.linalg.norm(matrix, axis=1)
        matrix[norms > 0] /= norms[norms > 0, None]
        # rounded: two cosines equal in exact arithmetic (0 and 0) must tie, so the earlier candidate wins as
        # documented, not whichever one float noise of 1e-17 favours
        return lambda j: np.round(matrix @ matrix[j], _DIGITS).tolist()
    norms = [_norm(v) for v in vectors]
    unit = [None if v is None or norms[i] == 0 else [x / norms[i] for x in v] for i, v in enumerate(vectors)]

    def row(j: int) -> list[float]:
        picked = unit[j]
        if picked is None:
            return [0.0] * n
        return [0.0 if u is None else round(sum(map(mul, picked, u)), _DIGITS) for u in unit]

    return row
