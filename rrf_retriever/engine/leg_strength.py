"""Legs measured on the corpus, not declared: a label-free estimate of each leg's strength, and the weights it implies.

The weak-leg rule (:mod:`~rrf_retriever.engine.weak_legs`) acts on what an embedder declares. This module measures
instead, from the corpus alone, with pseudo-queries: a bounded sample of documents (:data:`SAMPLE`, a seeded
random order; documents of at least two sentences), from each one sentence held out at random as the query (at
least :data:`MIN_CHARS` characters; sentences split at ``. ! ? ؟`` followed by a space, after ``。 ！ ？``, and at line
breaks, so a title line is a sentence; a text of one sentence is cut into spans of :data:`SPAN_WORDS` words), its
remainder put in the document's place in the index. Each leg searches
each pseudo-query; a leg that finds the source document often is strong on this corpus, whatever its embedder says.

Formula (:func:`leg_strength`, :func:`strength_weights`), over the ``n`` pseudo-queries::

    mrr[leg]   = mean over the pseudo-queries of 1 / rank of the source document in the leg's top TOP_N (0: absent)
    ratio[leg] = (mrr[leg] + EPS) / (max over the legs of mrr + EPS)
    weight[leg] * WEAK_FACTOR  when ratio[leg] < MIN_RATIO and n >= MIN_PSEUDO, else weight[leg]

The strongest leg has ratio 1, so never every leg is weighted down. Measured through the engine
(:mod:`~rrf_retriever.engine.leg_probe`; benchmarks/quality/bench_leg_probe.py, benchmarks/RESULTS.md "The legs
measured at build time", 18 collections): with an embedder that declares nothing, the rule gives the declared rule's
result where an English MiniLM meets Russian or Arabic text (ratio 0.06-0.18: +0.31, +0.40 nDCG@10). On Chinese
text (0.36) it does not fire; on long documents the ratio lies near the threshold (0.20-0.31) whether the answer
is at a document's start or end, so the decision there is luck. It changes nothing on the ten judged collections,
nor where the embedder declares (a leg is weighted down once, whichever reason).

Everything here is pure: no I/O, inputs never mutated; the searching is the caller's.

Example:
    >>> texts = ["Cats purr when they are content. They also purr when hurt, oddly.", "One sentence only."]
    >>> [(p.index, p.query) for p in pseudo_queries(texts)]
    [(0, 'They also purr when hurt, oddly.')]
    >>> s = leg_strength({"dense": [["x", "a"]] * 40, "keyword": [["a"]] * 40}, ["a"] * 40)
    >>> s.mrr, s.n
    ({'dense': 0.5, 'keyword': 1.0}, 40)
    >>> strength_weights(s, {"dense": 1.0, "keyword": 1.25})[0]
    {'dense': 1.0, 'keyword': 1.25}
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rrf_retriever.engine.weak_legs import WEAK_FACTOR

__all__ = [
    "BM25_B", "BM25_K1", "BUDGET", "EPS", "MIN_CHARS", "MIN_PSEUDO", "MIN_RATIO", "SAMPLE", "SPAN_WORDS",
    "TOP_N", "LegStrength", "PseudoQuery", "bm25_rankings", "bm25_scores", "leg_strength", "pseudo_queries",
    "reciprocal_rank", "sentences", "strength_reasons", "strength_weights", "within_budget",
]

#: Pseudo-queries drawn at most (the estimate's cost is about this many documents embedded twice).
SAMPLE = 200
#: Fewer pseudo-queries than this and the estimate says nothing (every weight kept).
MIN_PSEUDO = 30
#: A held-out sentence (and a remainder) has at least this many characters.
MIN_CHARS = 25
#: A text of one sentence is cut into spans of this many words (texts without punctuation, e.g. NPL's abstracts),
#: when it has at least two of them.
SPAN_WORDS = 12
#: The estimate's embedding work is at most this share of the corpus' (the build embeds every document once): 7%
#: in tokens keeps the whole measurement (its store reads, BM25 and cosines too) near 10% of a build's time with the
#: int8 MiniLM on short-document corpora (benchmarks/quality/bench_leg_probe.py --real-build).
BUDGET = 0.07
#: The rank depth at which a leg must find the source document.
TOP_N = 10
#: Added to both MRRs of a ratio: a corpus where no leg finds anything is not a reason to weight one down.
EPS = 0.01
#: BM25's parameters in :func:`bm25_rankings` (the keyword leg's defaults).
BM25_K1 = 1.2
BM25_B = 0.75
#: A leg whose pseudo MRR is below this share of the strongest leg's is weighted down. Chosen
#: leave-one-collection-out over 18 collections with the engine's own estimate (benchmarks/quality/
#: bench_leg_probe.py --analyze): 0.2 in every fold, the largest threshold that loses at most 0.005 on every other
#: collection with an undeclared embedder (0.25 fires on med-long4-first, ratio 0.234: -0.078).
MIN_RATIO = 0.2

_SPLIT = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？])|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (module doc), stripped, empty ones dropped; a text of one sentence and at least
    ``2 * SPAN_WORDS`` words: its spans of :data:`SPAN_WORDS` words.

    Example:
        >>> sentences("Title\\nFirst one. Second one!  第一。第二")
        ['Title', 'First one.', 'Second one!', '第一。', '第二']
        >>> len(sentences("word " * 30))
        3
    """
    parts = [s.strip() for s in _SPLIT.split(text) if s and s.strip()]
    if len(parts) == 1:
        words = parts[0].split()
        if len(words) >= 2 * SPAN_WORDS:
            return [" ".join(words[i : i + SPAN_WORDS]) for i in range(0, len(words), SPAN_WORDS)]
    return parts


@dataclass(frozen=True)
class PseudoQuery:
    """One pseudo-query.

    Attributes:
        index: The source document's position in the texts given.
        query: The held-out sentence.
        remainder: The document without it (what the index holds in its place while the legs are measured).
    """

    index: int
    query: str
    remainder: str


def pseudo_queries(texts: Sequence[str], n: int = SAMPLE, seed: int = 0) -> list[PseudoQuery]:
    """Up to ``n`` pseudo-queries from ``texts`` (module doc): deterministic for a seed.

    Args:
        texts: The corpus' texts.
        n: At most this many (>= 0).
        seed: The sample's seed (``random.Random(seed)``: the documents' order, then each held-out sentence).

    Returns:
        The pseudo-queries, in the sample's order (the first ``k`` are the sample of size ``k``).

    Raises:
        ValueError: ``n`` is negative.

    Example:
        >>> pseudo_queries(["Short.", "Alone in its document, a sentence."])
        []
    """
    if n < 0:
        msg = f"n must be >= 0, got {n}"
        raise ValueError(msg)
    rng = random.Random(seed)
    order = list(range(len(texts)))
    rng.shuffle(order)
    out: list[PseudoQuery] = []
    for j in order:
        if len(out) >= n:
            break
        parts = sentences(texts[j])
        choices = [i for i, s in enumerate(parts) if len(s) >= MIN_CHARS]
        if len(parts) < 2 or not choices:
            continue
        k = rng.choice(choices)
        rest = " ".join(parts[:k] + parts[k + 1:])
        if len(rest) < MIN_CHARS:
            continue
        out.append(PseudoQuery(j, parts[k], rest))
    return out


def reciprocal_rank(ranked: Sequence[str], target: str, depth: int = TOP_N) -> float:
    """``1 / rank`` of ``target`` in the first ``depth`` of ``ranked`` (0.0 when absent).

    Example:
        >>> reciprocal_rank(["a", "b", "c"], "b"), reciprocal_rank(["a"], "z")
        (0.5, 0.0)
    """
    for r, i in enumerate(ranked[:depth]):
        if i == target:
            return 1.0 / (r + 1)
    return 0.0


@dataclass(frozen=True)
class LegStrength:
    """Each leg's measured strength on one corpus.

    Attributes:
        n: The pseudo-queries measured.
        mrr: ``{leg: MRR@TOP_N}`` of the source documents.
        success: ``{leg: share of the pseudo-queries whose source document is in the leg's top TOP_N}``.
    """

    n: int
    mrr: dict[str, float]
    success: dict[str, float]

    def ratios(self) -> dict[str, float]:
        """``{leg: (mrr + EPS) / (best mrr + EPS)}`` (the module doc's formula).

        Example:
            >>> LegStrength(40, {"dense": 0.09, "keyword": 0.49}, {}).ratios()
            {'dense': 0.2, 'keyword': 1.0}
        """
        best = max(self.mrr.values(), default=0.0)
        return {leg: round((m + EPS) / (best + EPS), 12) for leg, m in self.mrr.items()}


def leg_strength(ranked: Mapping[str, Sequence[Sequence[str]]], targets: Sequence[str]) -> LegStrength:
    """Each leg's strength from its answers to the pseudo-queries.

    Args:
        ranked: ``{leg: [ids best first, one list per pseudo-query]}``, each as long as ``targets``.
        targets: The source document's id of each pseudo-query.

    Returns:
        The legs' MRR and success at :data:`TOP_N` (0.0 for a leg when there are no pseudo-queries).

    Raises:
        ValueError: a leg's answers are not one per pseudo-query.

    Example:
        >>> leg_strength({"k": [["a", "b"], ["c"]]}, ["b", "z"]).mrr
        {'k': 0.25}
    """
    for leg, per in ranked.items():
        if len(per) != len(targets):
            msg = f"leg {leg!r}: {len(per)} answers for {len(targets)} pseudo-queries"
            raise ValueError(msg)
    n = len(targets)
    mrr: dict[str, float] = {}
    success: dict[str, float] = {}
    for leg, per in ranked.items():
        rr = [reciprocal_rank(ids, t) for ids, t in zip(per, targets)]
        mrr[leg] = sum(rr) / n if n else 0.0
        success[leg] = sum(1 for v in rr if v > 0) / n if n else 0.0
    return LegStrength(n, mrr, success)


def within_budget(costs: Sequence[float], corpus_cost: float, share: float = BUDGET) -> int:
    """How many of the pseudo-queries to measure: the longest prefix of ``costs`` (each pseudo-query's embedding
    work, e.g. the tokens of its query and remainder) within ``share`` of ``corpus_cost``, and at least
    :data:`MIN_PSEUDO` (a small corpus' build takes seconds: the floor, not the share, bounds it), at most all.

    Example:
        >>> within_budget([10] * 200, 10_000), within_budget([10] * 200, 100), within_budget([10] * 5, 100)
        (70, 30, 5)
    """
    total = 0.0
    fit = 0
    for c in costs:
        total += c
        if total > share * corpus_cost:
            break
        fit += 1
    return min(len(costs), max(MIN_PSEUDO, fit))


def strength_reasons(strength: LegStrength) -> dict[str, str]:
    """``{leg: reason}`` for each leg the measured strength weights down (module doc's rule): pure.

    Example:
        >>> strength_reasons(LegStrength(200, {"dense": 0.02, "keyword": 0.7}, {}))["dense"]
        'it found 4% as much as the strongest leg on 200 pseudo-queries from the corpus'
        >>> strength_reasons(LegStrength(10, {"dense": 0.02, "keyword": 0.7}, {}))
        {}
    """
    if strength.n < MIN_PSEUDO:
        return {}
    return {leg: f"it found {ratio:.0%} as much as the strongest leg on {strength.n} pseudo-queries from the corpus"
            for leg, ratio in strength.ratios().items() if ratio < MIN_RATIO}


def strength_weights(strength: LegStrength, weights: Mapping[str, float], factor: float = WEAK_FACTOR
                     ) -> tuple[dict[str, float], dict[str, str]]:
    """The weights the measured strength implies (module doc's formula): pure, inputs never mutated.

    Args:
        strength: The legs' measured strength (a leg of ``weights`` it did not measure keeps its weight).
        weights: ``{leg: weight}``.
        factor: A weak leg's weight is multiplied by this (in [0, 1]).

    Returns:
        ``(weights, notes)``: every leg of ``weights``, each in [0, its weight]; ``{leg: reason}`` for each leg
        weighted down.

    Raises:
        ValueError: ``factor`` is not in [0, 1].

    Example:
        >>> weak = LegStrength(200, {"dense": 0.02, "keyword": 0.7}, {})
        >>> w, notes = strength_weights(weak, {"dense": 1.0, "keyword": 1.25})
        >>> w
        {'dense': 0.05, 'keyword': 1.25}
        >>> notes["dense"]
        'weighted down (x0.05): it found 4% as much as the strongest leg on 200 pseudo-queries from the corpus'
    """
    if not 0.0 <= factor <= 1.0:
        msg = f"factor must be in [0, 1], got {factor}"
        raise ValueError(msg)
    out = dict(weights)
    notes: dict[str, str] = {}
    for leg, reason in strength_reasons(strength).items():
        if leg in out:
            out[leg] = weights[leg] * factor
            notes[leg] = f"weighted down (x{factor:g}): {reason}"
    return out, notes


def bm25_scores(docs: Sequence[Sequence[str]], queries: Sequence[Sequence[str]], k1: float = BM25_K1,
                b: float = BM25_B) -> list[dict[int, float]]:
    """Each query's Okapi BM25 score (Robertson et al., TREC-3, 1994) of every document holding one of its terms:
    pure.

    ``score(q, d) = sum over the distinct terms t of q of idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b
    + b * |d| / avgdl))`` with ``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))`` (Lucene's, never negative):
    bm25s' ``method="lucene"`` scores times ``k1 + 1``, so the same ranking.

    Args:
        docs: Each document's analyzed terms.
        queries: Each query's analyzed terms.
        k1, b: BM25's term-frequency saturation and length normalization.

    Returns:
        One ``{document index: score}`` per query (documents without a query term left out).

    Example:
        >>> [{i: round(v, 4) for i, v in s.items()} for s in bm25_scores([["cat", "purr"], ["dog"], ["cat"]],
        ...                                                              [["cat"]])]
        [{0: 0.3902, 2: 0.5235}]
    """
    n = len(docs)
    lengths = [len(d) for d in docs]
    avgdl = (sum(lengths) / n) if n else 0.0
    postings: dict[str, dict[int, int]] = {}
    for i, terms in enumerate(docs):
        for t in terms:
            row = postings.setdefault(t, {})
            row[i] = row.get(i, 0) + 1
    norm = [k1 * (1.0 - b + b * (length / avgdl if avgdl else 0.0)) for length in lengths]
    out: list[dict[int, float]] = []
    for terms in queries:
        scores: dict[int, float] = {}
        for t in dict.fromkeys(terms):
            posting = postings.get(t)
            if not posting:
                continue
            idf = math.log(1.0 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for i, tf in posting.items():
                scores[i] = scores.get(i, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm[i])
        out.append(scores)
    return out


def bm25_rankings(docs: Sequence[Sequence[str]], queries: Sequence[Sequence[str]], depth: int = TOP_N,
                  k1: float = BM25_K1, b: float = BM25_B) -> list[list[int]]:
    """Each query's top ``depth`` documents by :func:`bm25_scores` (ties: the lower document index first; a query
    without a term of the corpus: none): pure.

    Example:
        >>> bm25_rankings([["cat", "purr"], ["dog", "bark", "bark"], ["cat"]], [["cat", "purr"], ["bark"], ["x"]])
        [[0, 2], [1], []]
    """
    return [sorted(s, key=lambda i: (-s[i], i))[:depth] for s in bm25_scores(docs, queries, k1, b)]
