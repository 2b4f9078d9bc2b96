"""The weak-leg rule: a leg that cannot help this corpus or this query is weighted down before fusion.

Fusing a leg at a fixed weight drags the result below the better leg alone when that leg is far weaker (an
English embedder on a German corpus: dense nDCG@10 near 0, keyword 0.19, every hybrid in between). The rule looks
at what the engine already has when the legs come back, and weights a leg down (its weight times
:data:`WEAK_FACTOR`: it still fills what the other legs did not find, and breaks their ties, but no longer reorders
them) when one of these holds:

* ``language``: a dense leg whose embedder declares the languages it speaks (``MiniLMEmbedding``: English), and the
  corpus language (the keyword analyzer's ``language``; None is English) is not one of them. An embedder that
  declares nothing is taken to speak the corpus.
* ``long documents``: a dense leg whose embedder declares how many tokens it reads (``MiniLMEmbedding``: 256) and
  the documents the legs ranked highest are much longer: the median share of them the model reads (tokens
  estimated as 4/3 per word) is below :data:`MIN_COVERAGE`. It saw only their beginnings.
* ``measured``: any leg, whatever its embedder declares, that the engine measured weak on this corpus when the
  index was built or grew (:mod:`~rrf_retriever.engine.leg_probe`): its pseudo-queries found their documents far
  less often than the strongest leg's did. This is what covers an embedder that declares nothing, and a weak keyword
  leg beside a strong dense one.

Not inputs (measured, benchmarks/RESULTS.md): a leg's flat scores (all top-10 scores equal: never on the five public
collections; where it happens, templated texts, the keyword leg still says WHICH documents matched, and weighting it
down lets the dense leg reorder them), the legs' agreement beyond chance and the dense top-1 z-score
(they fire on few of a weak leg's queries, and where they fire on healthy collections the hybrid beats both legs).

Never every leg: when every weighted leg would be weighted down, the weights stay. A per-call ``weights=`` is
taken as given (the rule is off for that call), and ``update_settings(weak_legs=False)`` turns it off. The trace
says what it did: the leg's ``note`` and ``weight``, and ``stage_counts["weak_legs"]``.

Measured (benchmarks/quality/bench_weak_leg.py, benchmarks/RESULTS.md "Never worse than the better leg"): what the rule
costs or gains on the five public collections and on collections where the dense leg is weak, and its failure cases.

Example:
    >>> from rrf_retriever.types import Hit
    >>> ranked = {"dense": [Hit("a", score=0.5)], "keyword": [Hit("b", score=3.0), Hit("c", score=1.0)]}
    >>> views = {"dense": LegView("dense", speaks_corpus=False, language="german"), "keyword": LegView("keyword")}
    >>> decision = weak_leg_weights(ranked, {"dense": 1.0, "keyword": 1.25}, views)
    >>> decision.weights
    {'dense': 0.05, 'keyword': 1.25}
    >>> decision.notes["dense"]
    'weighted down (x0.05): the embedder does not declare the corpus language (german)'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.analysis.languages import language_name
from rrf_retriever.embeddings.base import declared_languages, declared_window
from rrf_retriever.engine.legs import KeywordLeg, Leg
from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.types import Hit

__all__ = ["MIN_COVERAGE", "TOP_N", "WEAK_FACTOR", "LegView", "WeakLegDecision", "corpus_language", "coverage",
           "leg_views", "weak_leg_weights"]

#: A weak leg's weight is multiplied by this: with RRF (k=60) it then moves a document of the other legs by a few
#: places at most, and still adds the documents they did not find, after theirs. Chosen with MIN_COVERAGE
#: leave-one-collection-out (benchmarks/quality/bench_weak_leg.py: the pick of 20 of 22 folds).
WEAK_FACTOR = 0.05
#: A dense leg that reads less than this share (median) of the top documents is weak (long documents).
MIN_COVERAGE = 0.6
#: The top hits the rule looks at, per leg.
TOP_N = 10
#: Estimated word pieces per whitespace-separated word (English text under a WordPiece/BPE vocabulary).
TOKENS_PER_WORD = 4.0 / 3.0
#: At least this many top documents with a text, for the share read to be judged.
MIN_TEXTS = 3


@dataclass(frozen=True)
class LegView:
    """What the rule knows of one leg besides its hits.

    Attributes:
        kind: ``"dense"``, ``"keyword"`` or ``"retriever"``.
        speaks_corpus: False when the leg's embedder declares languages and the corpus language is not one.
        language: The corpus language (for the note).
        window_tokens: How many tokens of a document the leg's embedder reads (None: not declared, or not dense).
    """

    kind: str
    speaks_corpus: bool = True
    language: str | None = None
    window_tokens: int | None = None


@dataclass(frozen=True)
class WeakLegDecision:
    """The weights to fuse with and, for each leg weighted down, why.

    Attributes:
        weights: ``{leg: weight}``, each in [0, the weight given].
        notes: ``{leg: reason}`` for the legs weighted down, or for every leg the rule would have weighted down
            when it kept the weights (every leg weak).
    """

    weights: dict[str, float]
    notes: dict[str, str] = field(default_factory=dict)


def coverage(hits: Sequence[Hit], window_tokens: int) -> float | None:
    """The median share of a document the model reads, over ``hits`` that carry a text (None: fewer than
    :data:`MIN_TEXTS` texts). A document of ``w`` words has about ``w * 4/3`` tokens; the model reads
    ``min(1, window / tokens)`` of it.

    Example:
        >>> coverage([Hit(str(i), text="word " * 384) for i in range(3)], 256)
        0.5
    """
    shares = [min(1.0, window_tokens / (len(h.text.split()) * TOKENS_PER_WORD)) for h in hits if h.text.strip()]
    return float(median(shares)) if len(shares) >= MIN_TEXTS else None


def _top_docs(ranked: Mapping[str, Sequence[Hit]], legs: Sequence[str]) -> list[Hit]:
    """The distinct documents of the legs' top :data:`TOP_N`, in leg order."""
    seen: set[str] = set()
    out: list[Hit] = []
    for name in legs:
        for hit in ranked[name][:TOP_N]:
            if hit.id not in seen:
                seen.add(hit.id)
                out.append(hit)
    return out


def _reason(name: str, view: LegView, ranked: Mapping[str, Sequence[Hit]], legs: Sequence[str]) -> str | None:
    if view.kind == "dense" and not view.speaks_corpus:
        return f"the embedder does not declare the corpus language ({view.language})"
    if view.kind == "dense" and view.window_tokens is not None:
        share = coverage(_top_docs(ranked, legs), view.window_tokens)
        if share is not None and share < MIN_COVERAGE:
            return (f"its model reads ~{share:.0%} of the top documents (window {view.window_tokens} tokens): "
                    "long documents")
    return None


def weak_leg_weights(
    ranked: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    views: Mapping[str, LegView],
    measured: Mapping[str, str] | None = None,
) -> WeakLegDecision:
    """The weak-leg rule (module doc) over one query's leg results: pure, inputs never mutated.

    Args:
        ranked: ``{leg: hits best first}`` of the legs that answered.
        weights: ``{leg: weight}`` for at least the legs of ``ranked``.
        views: ``{leg: LegView}``; a leg without one is judged by its scores alone.
        measured: ``{leg: reason}`` for the legs measured weak on the corpus
            (:func:`~rrf_retriever.engine.leg_strength.strength_reasons`): a reason like the declared ones (a leg
            with both is weighted down once).

    Returns:
        The weights (every leg of ``weights``, each in [0, its weight]) and the notes.

    Example:
        >>> same = [Hit("a", score=1.0), Hit("b", score=0.5)]
        >>> weak_leg_weights({"x": same, "y": same}, {"x": 1.0, "y": 1.0}, {}).notes
        {}
    """
    out = dict(weights)
    live = [name for name in sorted(ranked) if ranked[name] and weights.get(name, 0.0) > 0.0]
    if len(live) < 2:
        return WeakLegDecision(out)
    reasons: dict[str, str] = {}
    for name in live:
        reason = _reason(name, views.get(name) or LegView("retriever"), ranked, live) or (measured or {}).get(name)
        if reason is not None:
            reasons[name] = reason
    if not reasons:
        return WeakLegDecision(out)
    if len(reasons) == len(live):
        return WeakLegDecision(out, {n: f"weight kept (every leg looks weak): {r}" for n, r in reasons.items()})
    for name in reasons:
        out[name] = weights[name] * WEAK_FACTOR
    return WeakLegDecision(out, {n: f"weighted down (x{WEAK_FACTOR:g}): {r}" for n, r in reasons.items()})


def _language(name: str) -> str:
    try:
        return language_name(name)
    except RRFRetrieverError:  # a name PyStemmer does not stem (CJK, ...): compared as given
        return name.strip().lower()


def corpus_language(legs: Sequence[tuple[str, Leg]]) -> str:
    """The corpus language: the first keyword leg's analyzer ``language`` (None, or no analyzer: English).

    Example:
        >>> corpus_language([])
        'english'
    """
    for _, leg in legs:
        if isinstance(leg, KeywordLeg):
            analyzer = leg.store.analyzer
            if isinstance(analyzer, Analyzer) and analyzer.language is not None:
                return _language(analyzer.language)
            return "english"
    return "english"


def leg_views(legs: Sequence[tuple[str, Leg]]) -> dict[str, LegView]:
    """What :func:`weak_leg_weights` needs to know of each leg: its kind and, for a dense leg, whether its embedder
    speaks the corpus language and how many tokens it reads (what the embedder declares:
    :func:`~rrf_retriever.embeddings.base.declared_languages`, :func:`~rrf_retriever.embeddings.base.declared_window`).

    Example:
        >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
        >>> leg_views([("keyword", KeywordLeg(FTS5KeywordStore()))])["keyword"].kind
        'keyword'
    """
    language = corpus_language(legs)
    out: dict[str, LegView] = {}
    for name, leg in legs:
        if leg.kind != "dense" or leg.embedding is None:
            out[name] = LegView(leg.kind, language=language)
            continue
        spoken = declared_languages(leg.embedding)
        speaks = spoken is None or language in {_language(s) for s in spoken}
        out[name] = LegView("dense", speaks, language, declared_window(leg.embedding))
    return out
