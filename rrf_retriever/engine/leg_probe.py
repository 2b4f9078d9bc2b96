"""The legs measured on the corpus when an index is built or grows: the engine's side of
:mod:`~rrf_retriever.engine.leg_strength`.

After a write that leaves the corpus at least :data:`MIN_DOCS` documents and at least twice as large as when the
legs were last measured (the first build, then each doubling), :class:`LegProbe` measures the main dense leg and
the keyword leg on a sub-corpus of the index: up to :data:`SUBCORPUS` stored documents (the dense store's own
order, :class:`~rrf_retriever.stores.base.SomeIds`), with their stored vectors
(:class:`~rrf_retriever.stores.base.VectorSource`). From them, :func:`~.leg_strength.pseudo_queries` draws up to
:data:`~.leg_strength.SAMPLE` pseudo-queries, as many as fit in :data:`~.leg_strength.BUDGET` of the corpus'
embedding work (:func:`~.leg_strength.within_budget`). Each source document's remainder takes its place, and
both legs rank the sub-corpus exactly:

* the dense leg: the cosine of the query's vector to every document's vector. The leg's own embedder embeds the
  queries and the remainders, in one ``embed_documents`` call, shortest first (batches of like lengths pad
  little): a pseudo-query is a sentence of a passage;
* the keyword leg: Okapi BM25 (:func:`~.leg_strength.bm25_rankings`) with the leg's own analyzer.

The weak-leg rule then weights down, per query, a leg the measurement found weak
(:func:`~.leg_strength.strength_reasons`, beside what the embedder declares:
:func:`~rrf_retriever.engine.weak_legs.weak_leg_weights`). The result is kept in the index manifest
(``leg_strength``), so a reopened index does not measure again until it doubles, and
:meth:`LegProbe.explain` says what it does. A measurement that fails (the embedder is down) is logged and
recorded as not measured: the write it follows has succeeded. ``update_settings(weak_legs=False)`` turns the rule
and the measuring off.

Example:
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> from rrf_retriever.engine.legs import KeywordLeg
    >>> probe = LegProbe({"keyword": KeywordLeg(FTS5KeywordStore())}, lambda ids: [])
    >>> probe.after_write(100, lambda: 100).reason
    'not measured: no dense store leg'
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.embeddings.base import declared_window
from rrf_retriever.engine.leg_strength import (
    MIN_PSEUDO,
    SAMPLE,
    TOP_N,
    LegStrength,
    bm25_rankings,
    leg_strength,
    pseudo_queries,
    strength_reasons,
    within_budget,
)
from rrf_retriever.engine.legs import DenseLeg, KeywordLeg, Leg
from rrf_retriever.engine.weak_legs import TOKENS_PER_WORD, leg_views, weak_leg_weights
from rrf_retriever.stores.base import SomeIds, VectorSource
from rrf_retriever.types import Hit, Record

__all__ = ["MIN_DOCS", "SUBCORPUS", "LegProbe", "LegWeight", "MeasuredLegs", "WeightsExplanation", "measure_legs"]

logger = logging.getLogger(__name__)

#: The stored documents the legs are measured on, at most (the whole corpus below it).
SUBCORPUS = 10_000
#: A corpus smaller than this is not measured (too few pseudo-queries to say anything).
MIN_DOCS = 2 * MIN_PSEUDO
#: The tokens a model reads of a text when it declares no window (for the cost of the embedding work).
DEFAULT_WINDOW = 512


@dataclass(frozen=True)
class MeasuredLegs:
    """One measurement of the legs (or why there is none).

    Attributes:
        doc_count: The corpus' size when it was taken.
        strength: The legs' measured strength; None: not measured (``reason`` says why).
        sample_docs: The documents of the sub-corpus.
        seconds: What the measurement took.
        reason: Why no leg can be judged from it (None: the measurement stands).
    """

    doc_count: int
    strength: LegStrength | None = None
    sample_docs: int = 0
    seconds: float = 0.0
    reason: str | None = None

    def reasons(self) -> dict[str, str]:
        """``{leg: reason}`` for each leg the measurement finds weak (:func:`~.leg_strength.strength_reasons`)."""
        return strength_reasons(self.strength) if self.strength is not None else {}

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able copy (what the manifest keeps under ``leg_strength``)."""
        s = self.strength
        return {"doc_count": self.doc_count, "sample_docs": self.sample_docs, "seconds": round(self.seconds, 3),
                "reason": self.reason, "n": None if s is None else s.n,
                "mrr": None if s is None else {k: round(v, 6) for k, v in s.mrr.items()},
                "success": None if s is None else {k: round(v, 6) for k, v in s.success.items()}}

    @classmethod
    def from_dict(cls, raw: object) -> MeasuredLegs | None:
        """The measurement :meth:`as_dict` wrote; None for anything else (a damaged or hand-edited value is not
        trusted: the legs are measured again at the next write).

        Example:
            >>> MeasuredLegs.from_dict({"doc_count": "many"}) is None
            True
        """
        if not isinstance(raw, Mapping):
            return None
        count, docs, n, seconds, reason = (raw.get(k) for k in ("doc_count", "sample_docs", "n", "seconds", "reason"))
        mrr, success = raw.get("mrr"), raw.get("success")
        if not isinstance(count, int) or not isinstance(docs, int) or not _count(count) or not _count(docs):
            return None
        if (not (reason is None or isinstance(reason, str)) or not isinstance(seconds, (int, float))
                or not _share_like(seconds, math.inf)):
            return None
        if n is None:
            return cls(count, None, docs, float(seconds), reason or "not measured")
        if not isinstance(n, int) or not _count(n) or not isinstance(mrr, Mapping) or not isinstance(success, Mapping):
            return None
        if not _shares(mrr) or not _shares(success):
            return None
        return cls(count, LegStrength(n, dict(mrr), dict(success)), docs, float(seconds), reason)


def _count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _share_like(v: object, high: float = 1.0) -> bool:
    """A number (not a bool, not NaN) from 0 to ``high``."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= high


def _shares(v: object) -> bool:
    return isinstance(v, Mapping) and all(isinstance(k, str) and _share_like(x) for k, x in v.items())


def _tokens(text: str, window: int) -> float:
    return min(float(window), len(text.split()) * TOKENS_PER_WORD)


def measure_legs(legs: Mapping[str, Leg], doc_count: int, lookup: Callable[[list[str]], list[Record]]
                 ) -> MeasuredLegs:
    """Measure the main dense leg and the first keyword leg on the corpus (module doc).

    Args:
        legs: The engine's legs.
        doc_count: The corpus' size.
        lookup: Stored documents by id (their texts).

    Returns:
        The measurement, or why there is none (no dense store leg that lists ids and gives vectors, no keyword
        leg with an analyzer, too few pseudo-queries).

    Raises:
        The embedder's or a store's own error (the caller logs it).
    """
    started = time.perf_counter()
    dense = [(n, leg) for n, leg in legs.items() if isinstance(leg, DenseLeg)]
    keyword = [(n, leg) for n, leg in legs.items() if isinstance(leg, KeywordLeg)]
    if not dense:
        return MeasuredLegs(doc_count, reason="not measured: no dense store leg")
    dense_name, dense_leg = next(((n, g) for n, g in dense if n == "dense"), dense[0])
    store = dense_leg.store
    if not isinstance(store, SomeIds) or not isinstance(store, VectorSource) or dense_leg.embedding is None:
        return MeasuredLegs(doc_count, reason="not measured: the dense store lists no ids or gives no vectors")
    analyzer = keyword[0][1].store.analyzer if keyword else None
    if not isinstance(analyzer, Analyzer):
        return MeasuredLegs(doc_count, reason="not measured: no keyword leg with an analyzer of ours")
    ids = store.some_ids(min(SUBCORPUS, max(doc_count, 1)))
    texts = {r.id: r.text for r in lookup(ids)}
    stored = store.get_vectors(ids)
    ids = [i for i in ids if i in texts and i in stored]
    items = pseudo_queries([texts[i] for i in ids], SAMPLE, seed=0)
    window = declared_window(dense_leg.embedding) or DEFAULT_WINDOW
    corpus_cost = doc_count * sum(_tokens(texts[i], window) for i in ids) / max(len(ids), 1)
    items = items[:within_budget([_tokens(p.query, window) + _tokens(p.remainder, window) for p in items],
                                 corpus_cost)]
    if len(items) < MIN_PSEUDO:
        return MeasuredLegs(doc_count, None, len(ids), time.perf_counter() - started,
                            f"not measured: {len(items)} pseudo-queries (documents of two sentences or more) of "
                            f"{len(ids)} documents; {MIN_PSEUDO} needed")
    import numpy as np  # every dense store of ours needs it; lazily, as the stores import it

    asked = [p.query for p in items] + [p.remainder for p in items]
    by_length = sorted(range(len(asked)), key=lambda i: len(asked[i]))  # batches of like lengths: little padding
    vectors = dense_leg.embedding.embed_documents([asked[i] for i in by_length])
    embedded = np.empty((len(asked), len(vectors[0]) if len(vectors) else 0), dtype=np.float64)
    embedded[by_length] = np.asarray(vectors, dtype=np.float64)
    matrix = np.asarray([stored[i] for i in ids], dtype=np.float64)
    doc_texts = [texts[i] for i in ids]
    for j, p in enumerate(items):  # the remainder in the source document's place
        matrix[p.index] = embedded[len(items) + j]
        doc_texts[p.index] = p.remainder
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    queries = embedded[: len(items)]
    scores = (queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)) @ matrix.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :TOP_N]
    keyword_top = bm25_rankings(analyzer.analyze_many(doc_texts), [analyzer.analyze_query(p.query) for p in items])
    ranked = {dense_name: [[ids[i] for i in row] for row in top.tolist()],
              keyword[0][0]: [[ids[i] for i in row] for row in keyword_top]}
    strength = leg_strength(ranked, [ids[p.index] for p in items])
    return MeasuredLegs(doc_count, strength, len(ids), time.perf_counter() - started)


@dataclass(frozen=True)
class LegWeight:
    """One leg in :class:`WeightsExplanation`.

    Attributes:
        name, kind: The leg.
        weight: Its weight in the settings.
        corpus_weight: What the weak-leg rule makes of it on this corpus, before any per-query reason.
        reasons: Why it is weighted down (declared or measured), or why the rule keeps it.
        measured_mrr: Its pseudo-query MRR@10 (None: not measured).
        ratio: That MRR against the strongest leg's (:meth:`~.leg_strength.LegStrength.ratios`).
        per_query: What the rule may still do query by query (the long-document check), or None.
    """

    name: str
    kind: str
    weight: float
    corpus_weight: float
    reasons: tuple[str, ...] = ()
    measured_mrr: float | None = None
    ratio: float | None = None
    per_query: str | None = None


@dataclass(frozen=True)
class WeightsExplanation:
    """How the legs are weighted on this corpus (``retriever.explain_weights()``); ``str()`` reads it out.

    Attributes:
        legs: One entry per leg, in the engine's order.
        measured: The leg measurement (None: not taken yet).
        rule_on: The ``weak_legs`` setting.
    """

    legs: tuple[LegWeight, ...]
    measured: MeasuredLegs | None = None
    rule_on: bool = True

    def __str__(self) -> str:
        m = self.measured
        lines = [("weak-leg rule: on" if self.rule_on else "weak-leg rule: off (update_settings(weak_legs=True))")
                 + ("; legs not measured yet (measured after a write of 60+ documents)" if m is None else
                    f"; legs measured at {m.doc_count} documents ({m.sample_docs} in the sample, {m.seconds:.2f} s)"
                    + (f": {m.reason}" if m.reason else f", {m.strength.n if m.strength else 0} pseudo-queries"))]
        for leg in self.legs:
            measured = ("" if leg.measured_mrr is None else
                        f", pseudo MRR@10 {leg.measured_mrr:.3f} (ratio {leg.ratio:.2f})")
            lines.append(f"{leg.name} ({leg.kind}): weight {leg.weight:g} -> {leg.corpus_weight:g}{measured}"
                         + "".join(f"; {r}" for r in leg.reasons)
                         + (f"; per query: {leg.per_query}" if leg.per_query else ""))
        return "\n".join(lines)


class LegProbe:
    """The engine's leg measurement: taken after a write that doubles the corpus, restored from a manifest.

    Args:
        legs: The engine's legs.
        lookup: Stored documents by id.
    """

    def __init__(self, legs: Mapping[str, Leg], lookup: Callable[[list[str]], list[Record]]) -> None:
        self._legs = legs
        self._lookup = lookup
        self._lock = threading.Lock()
        self._measured: MeasuredLegs | None = None
        self._written = 0  # ids written since the last measurement (upserts of stored ids included)

    @property
    def measured(self) -> MeasuredLegs | None:
        """The last measurement (None: none yet)."""
        return self._measured

    def reasons(self) -> dict[str, str]:
        """``{leg: reason}`` for each leg the last measurement found weak."""
        measured = self._measured
        return measured.reasons() if measured is not None else {}

    def restore(self, saved: object) -> bool:
        """Take the measurement a manifest kept (:meth:`MeasuredLegs.as_dict`); False (nothing taken) for a value
        that is not one."""
        measured = MeasuredLegs.from_dict(saved)
        if measured is not None:
            self._measured = measured
        elif saved is not None:
            logger.warning("the index manifest's leg_strength is not a measurement this version wrote: ignored")
        return measured is not None

    def due(self, doc_count: int) -> bool:
        """True when a corpus of ``doc_count`` documents is to be measured (module doc).

        Example:
            >>> probe = LegProbe({}, lambda ids: [])
            >>> probe.due(MIN_DOCS - 1), probe.due(MIN_DOCS)
            (False, True)
        """
        measured = self._measured
        return doc_count >= MIN_DOCS and (measured is None or doc_count >= 2 * measured.doc_count)

    def after_write(self, written: int, doc_count: Callable[[], int]) -> MeasuredLegs | None:
        """Measure the legs if :meth:`due` after a write of ``written`` ids (one measurement at a time: a write
        meanwhile does not start another). ``doc_count`` is asked only once the ids written since the last
        measurement could have doubled the corpus (a count can cost a scan).

        Returns:
            The new measurement, or None when none was taken.
        """
        self._written += written
        measured = self._measured
        if self._written < (MIN_DOCS if measured is None else measured.doc_count):
            return None
        count = doc_count()
        if not self.due(count) or not self._lock.acquire(blocking=False):
            return None  # a write meanwhile keeps its ids counted: the next write checks again
        taken = self._written
        try:
            try:
                measured = measure_legs(self._legs, count, self._lookup)
            except Exception as exc:  # an estimate: the write it follows has succeeded
                logger.warning("rrf_retriever: measuring the legs failed (%s: %s); weights as declared",
                               type(exc).__name__, exc)
                measured = MeasuredLegs(count, reason=f"not measured: {type(exc).__name__}: {exc}")
            # the ids written while it ran count towards the next doubling
            self._measured, self._written = measured, max(0, self._written - taken)
            logger.info("rrf_retriever: legs measured at %d documents: %s", count, measured.as_dict())
            return measured
        finally:
            self._lock.release()

    def explain(self, weights: Mapping[str, float], rule_on: bool = True) -> WeightsExplanation:
        """How the weak-leg rule weights each leg on this corpus (:class:`WeightsExplanation`)."""
        measured = self._measured
        views = leg_views(list(self._legs.items()))
        ratios = measured.strength.ratios() if measured is not None and measured.strength is not None else {}
        # the rule's own decision, on one placeholder hit per leg: what it does before any query's documents
        decision = weak_leg_weights({n: [Hit("-")] for n in self._legs}, weights, views, self.reasons())
        out = []
        for name, leg in self._legs.items():
            view = views[name]
            window = view.window_tokens
            note = decision.notes.get(name)
            mrr = measured.strength.mrr.get(name) if measured is not None and measured.strength else None
            out.append(LegWeight(name, leg.kind, weights.get(name, 0.0),
                                 decision.weights.get(name, 0.0) if rule_on else weights.get(name, 0.0),
                                 (note,) if note and rule_on else (), mrr, ratios.get(name),
                                 (f"weighted down when its model (window {window} tokens) reads less than 60% of "
                                  "the top documents" if rule_on and window is not None else None)))
        return WeightsExplanation(tuple(out), measured, rule_on)

