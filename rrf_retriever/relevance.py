"""A relevance score whose LEVEL means something: the normalized fused score times how well the hit matches at all.

The fused score (RRF) and its normalized form (the fused score over the best the active weights allow) are
rank-based: the first hit of a dense-only query is 1.0 whatever the query, so a similarity cutoff keeps an
unrelated query's hits. The relevance keeps the fused order and adds the one raw signal whose level says how well a
document matches: its dense cosine, measured against the corpus's own cosine scale (so it holds for any embedder,
without the model declaring anything):

.. math:: z_i = \\frac{c_i - \\mu}{\\sigma}, \\qquad
          \\mathrm{level}_i = \\frac{1}{1 + e^{-(z_i - z_0)/s}}, \\qquad
          \\mathrm{relevance}_i = \\min_{j \\le i} \\mathrm{level}_j \\cdot \\mathrm{normalized}_j

over the fused order (the running minimum keeps it non-increasing), with :math:`c_i` hit i's dense cosine (a hit
the dense leg did not return: the lowest cosine it returned, an upper bound of its own), :math:`\\mu, \\sigma` the
mean and standard deviation of the cosine between two random stored documents (:func:`cosine_background`, from a
sample of the stored vectors), :math:`z_0` = :data:`LEVEL_Z_MIDPOINT` and :math:`s` = :data:`LEVEL_Z_SCALE`. A
document far above the cosine two unrelated documents share (a relevant top hit's median z is 3.4-5.6 with MiniLM
on the five shared collections) gets a level near 1; an unrelated query's top hit (z of 1-2.5) a level near 0.
``benchmarks/quality/bench_relevance.py`` measures it leave-one-collection-out.

No level evidence (no dense leg ran: keyword-only modes, a failed embedding; no background: fewer than
:data:`MIN_BACKGROUND_VECTORS` stored vectors, or a dense store that cannot give its vectors back) gives level 1.0:
the relevance is then the normalized fused score, rank-based as before.

Pure functions; the engine keeps the background per index (:mod:`rrf_retriever.engine.background`).

Example:
    >>> bg = CosineBackground(mean=0.13, sd=0.125, vectors=256)
    >>> round(query_level(0.80, bg), 3), round(query_level(0.30, bg), 3)  # a strong match, an unrelated query
    (0.999, 0.034)
    >>> [round(r, 3) for r in relevance_scores([1.0, 0.984], [query_level(0.80, bg), query_level(0.30, bg)])]
    [0.999, 0.033]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "LEVEL_Z_MIDPOINT",
    "LEVEL_Z_SCALE",
    "MIN_BACKGROUND_VECTORS",
    "NEAR_DUPLICATE_COSINE",
    "CosineBackground",
    "cosine_background",
    "query_level",
    "relevance_scores",
]

#: The z (top cosine over the corpus's random-pair cosines, in standard deviations) where the level is 0.5: the
#: cutoff between unrelated and relevant top hits that minimises both errors on the five shared collections with
#: MiniLM (2.69-2.92 chosen on any four of them, with a 256-vector sample; ``benchmarks/quality/bench_relevance.py``).
LEVEL_Z_MIDPOINT = 2.7
#: The logistic's scale in z: level 0.7 at z = 3.04, 0.9 at z = 3.58 (a relevant MiniLM top hit's median z is 3.4-5.6).
LEVEL_Z_SCALE = 0.4
#: Fewer stored vectors than this: no background, level 1.0 (the normalized fused score). A handful of documents
#: says nothing about a scale: five notes of one template and one other memory gave that memory, a strong match
#: (cosine 0.75), level 0.005, since the notes' own pairs (0.93-0.98) set the "unrelated" mean. 12 give 66 pairs.
MIN_BACKGROUND_VECTORS = 12
#: Pairs of stored vectors above this cosine are near-duplicates (a chunk stored twice, a toy embedding that maps
#: several texts to one vector): left out of the background, which measures how UNRELATED documents score.
NEAR_DUPLICATE_COSINE = 0.98


@dataclass(frozen=True, slots=True)
class CosineBackground:
    """The cosine between two random stored documents of one index: its mean and standard deviation.

    Attributes:
        mean: The mean cosine of two distinct sampled documents.
        sd: Its standard deviation (> 0).
        vectors: How many stored vectors the sample held.
    """

    mean: float
    sd: float
    vectors: int


def _unit(vector: Sequence[float]) -> list[float] | None:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 and math.isfinite(norm) else None


def cosine_background(vectors: Sequence[Sequence[float]]) -> CosineBackground | None:
    """The mean and spread of the cosine over every pair of distinct ``vectors`` (a sample of the stored ones),
    near-duplicate pairs (above :data:`NEAR_DUPLICATE_COSINE`) left out.

    Returns None with fewer than :data:`MIN_BACKGROUND_VECTORS` usable (non-zero, finite) vectors, fewer pairs left
    than those vectors give without duplicates, or when every pair left has the same cosine (no scale to measure
    against).

    Example:
        >>> units = [[float(i == k) for k in range(12)] for i in range(12)]  # 12 orthogonal documents
        >>> bg = cosine_background(units + [[1.0] * 12])  # and one close to none of them (cosine 0.29 to each)
        >>> round(bg.mean, 3), round(bg.sd, 3), bg.vectors
        (0.044, 0.104, 13)
        >>> cosine_background([[1.0, 0.0]] * 20) is None  # duplicates only: no scale
        True
        >>> cosine_background(units[:11]) is None  # fewer than MIN_BACKGROUND_VECTORS: no scale either
        True
    """
    import numpy as np

    units = [u for u in (_unit(v) for v in vectors) if u is not None]
    if len(units) < MIN_BACKGROUND_VECTORS:
        return None
    matrix = np.asarray(units, dtype=np.float64)
    pairs = (matrix @ matrix.T)[np.triu_indices(len(units), k=1)]
    pairs = pairs[pairs <= NEAR_DUPLICATE_COSINE]
    if len(pairs) < MIN_BACKGROUND_VECTORS * (MIN_BACKGROUND_VECTORS - 1) // 2:
        return None
    sd = float(pairs.std())
    if not sd > 1e-9:
        return None
    return CosineBackground(mean=float(pairs.mean()), sd=sd, vectors=len(units))


def query_level(top_cosine: float | None, background: CosineBackground | None) -> float:
    """How strongly the corpus matches the query at all, in [0, 1], from the dense leg's best cosine.

    None for either (no dense evidence, no background) gives 1.0: the relevance is then the normalized score.

    Example:
        >>> query_level(None, CosineBackground(0.1, 0.1, 10)), query_level(0.9, None)
        (1.0, 1.0)
    """
    if top_cosine is None or background is None or not math.isfinite(top_cosine):
        return 1.0
    z = (top_cosine - background.mean) / background.sd
    x = (z - LEVEL_Z_MIDPOINT) / LEVEL_Z_SCALE
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def relevance_scores(normalized: Sequence[float], levels: Sequence[float]) -> list[float]:
    """Each hit's relevance, in the fused order: its normalized fused score times its level, clipped to [0, 1], and
    never above the relevance of a hit before it (a running minimum), so the order is the fused one.

    Args:
        normalized: The hits' normalized fused scores, best first.
        levels: Each hit's level (:func:`query_level` of its own dense cosine), same length.

    Example:
        >>> relevance_scores([1.0, 0.98, 0.97, 0.5], [0.9, 0.1, 0.95, 1.0])
        [0.9, 0.098, 0.098, 0.098]
    """
    out: list[float] = []
    ceiling = 1.0
    for value, level in zip(normalized, levels):
        ceiling = min(ceiling, max(0.0, value * min(1.0, max(0.0, level))))
        out.append(ceiling)
    return out
