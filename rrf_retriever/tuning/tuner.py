"""Fit the retriever's settings to YOUR judged queries, and change them only when the gain is real.

:func:`tune` (also ``retriever.tune(...)`` and ``rrf-retriever tune -d INDEX BEIR_DIR``) searches a grid of
fusion settings (``rrf_k``, the keyword weight relative to the dense one, the fusion method, each leg's fetch depth)
with k-fold cross-validation: on each fold the best setting is chosen on the other folds and scored on the held-out
queries, next to the current settings on the same queries. The per-query difference (tuned minus current) gets a
paired-bootstrap 95% interval; the best setting over all queries is applied (``engine.update_settings``) only when
that interval lies above 0, and, for an index directory, saved in its manifest (``settings`` key) so the next open
can use it. Otherwise the current settings stay: a "gain" inside the noise of ~50 queries is not a gain.

How it stays fast: each leg is searched ONCE per query, through the engine (``weights={leg: 1, others: 0}``, so the
filter and the exclusions apply inside the stores as in a real query), at the deepest fetch depth of the grid; every
setting is then a pure fusion (:func:`rrf_retriever.fusion.fuse`) of prefixes of those lists, which is what the
engine itself would compute with that setting (up to how a store orders documents of exactly equal score, which may
depend on the limit asked; rare with real embeddings). The metrics are computed here in pure Python (closed forms,
checked against ranx in the tests), so tuning never pays ranx's numba start-up (9-14 s in a fresh process here,
even with numba's disk cache warm).

Example:
    >>> from rrf_retriever.tuning import load_judged_queries
    >>> queries, qrels = load_judged_queries()  # the evaluation set shipped with the package (demo corpus)
    >>> len(queries) >= 50 and set(queries) == set(qrels)
    True
    >>> report = retriever.tune(queries, qrels, metric="ndcg@10", folds=5)  # doctest: +SKIP
    >>> print(report.to_markdown())  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError
from rrf_retriever.fusion import fuse
from rrf_retriever.index.directory import MANIFEST_SETTINGS_KEY, saved_settings
from rrf_retriever.types import Hit

__all__ = [
    "MANIFEST_SETTINGS_KEY",
    "MANIFEST_TUNING_KEY",
    "METRICS",
    "FoldResult",
    "Setting",
    "TuneGrid",
    "TuneReport",
    "demo_eval_dir",
    "load_judged_queries",
    "metric_value",
    "paired_bootstrap_ci",
    "parse_metric",
    "save_settings",
    "saved_settings",
    "tune",
]

#: Per-query metrics this module computes (the ``metric`` argument is ``"<name>@<cutoff>"``, e.g. ``"ndcg@10"``).
METRICS = ("ndcg", "mrr", "recall", "precision", "map", "hit_rate")
#: The manifest key an index directory's tuned settings are saved under (:func:`tune` with ``index_dir``).
#: The manifest key of the summary of the tuning that chose them.
MANIFEST_TUNING_KEY = "tuning"


# ---- metrics ---------------------------------------------------------------------------------------------------


def parse_metric(metric: str) -> tuple[str, int | None]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"mrr"`` -> ``("mrr", None)`` (cutoff: the retriever's ``top_k``).

    Example:
        >>> parse_metric("recall@20"), parse_metric("MRR")
        (('recall', 20), ('mrr', None))
    """
    if not isinstance(metric, str):
        msg = f"metric must be a string such as 'ndcg@10', not {type(metric).__name__}"
        raise InvalidTypeError(msg)
    name, _, cut = metric.strip().lower().partition("@")
    if name not in METRICS:
        msg = f"unknown metric {metric!r}; use one of {list(METRICS)}, with an optional @cutoff (e.g. 'ndcg@10')"
        raise InvalidArgumentError(msg)
    if not cut:
        return name, None
    if not cut.isdigit() or int(cut) < 1:
        msg = f"the cutoff of {metric!r} must be a positive integer (e.g. 'ndcg@10')"
        raise InvalidArgumentError(msg)
    return name, int(cut)


def metric_value(name: str, ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """One query's metric over its ranked ids (best first), as ranx and trec_eval define it.

    A document is relevant when its grade is > 0. ``ndcg`` uses the grade as the gain and ``log2(rank + 1)`` as
    the discount (trec_eval's, ranx's ``ndcg``); ``map`` divides by the number of relevant documents; a query
    with no relevant document scores 0 on every metric.

    Example:
        >>> metric_value("ndcg", ["a", "b"], {"b": 1}, 10)  # 1 / log2(3)
        0.6309297535714575
        >>> metric_value("mrr", ["a", "b"], {"b": 1}, 1)
        0.0
    """
    top = list(dict.fromkeys(ranked))[:k]  # an id counts once, at its best rank
    relevant = {d: g for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    if name == "ndcg":
        dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(top))
        ideal = sorted(relevant.values(), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        return dcg / idcg
    if name == "mrr":
        return next((1.0 / (i + 1) for i, d in enumerate(top) if d in relevant), 0.0)
    hits = [d in relevant for d in top]
    if name == "recall":
        return sum(hits) / len(relevant)
    if name == "precision":
        return sum(hits) / k
    if name == "hit_rate":
        return 1.0 if any(hits) else 0.0
    if name == "map":
        found, total = 0, 0.0
        for i, hit in enumerate(hits):
            if hit:
                found += 1
                total += found / (i + 1)
        return total / len(relevant)
    msg = f"unknown metric {name!r}; use one of {list(METRICS)}"
    raise InvalidArgumentError(msg)


def paired_bootstrap_ci(
    differences: Sequence[float], *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired per-query differences (queries resampled with
    replacement; seeded, so the same input gives the same interval).

    Example:
        >>> paired_bootstrap_ci([0.1] * 20)
        (0.1, 0.1)
        >>> lo, hi = paired_bootstrap_ci([0.5, -0.5] * 10); lo < 0 < hi
        True
    """
    values = [float(d) for d in differences]
    if not values:
        msg = "the bootstrap needs at least one per-query difference"
        raise InvalidArgumentError(msg)
    if resamples < 1 or not 0 < level < 1:
        msg = f"resamples must be >= 1 and level in (0, 1), got {resamples} and {level}"
        raise InvalidArgumentError(msg)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1.0 - level) / 2.0

    def at(q: float) -> float:  # linear interpolation between order statistics (numpy's default percentile)
        pos = q * (len(means) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(means) - 1)
        return round(means[lo] + (means[hi] - means[lo]) * (pos - lo), 12)

    return at(tail), at(1.0 - tail)


# ---- settings and the grid -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One fusion setting the tuner can choose: what ``update_settings`` would change.

    ``fetch_k`` None means the engine's default depth (``max(2 * top_k, 40)``); ``rrf_k`` is carried for the
    score fusions too (they ignore it), so applying one keeps the current constant.
    """

    fusion: str
    rrf_k: float
    weights: tuple[tuple[str, float], ...]
    fetch_k: int | None

    @classmethod
    def of(cls, settings: Any) -> Setting:
        """The setting part of a :class:`~rrf_retriever.engine.RetrievalSettings` snapshot."""
        return cls(settings.fusion, float(settings.rrf_k), tuple(sorted((n, float(w)) for n, w in
                                                                         settings.weights.items())), settings.fetch_k)

    @property
    def weight_map(self) -> dict[str, float]:
        return dict(self.weights)

    def label(self) -> str:
        """A short human label, e.g. ``rrf k=20 dense=1 keyword=0.75 fetch=40``."""
        parts = [self.fusion]
        if self.fusion == "rrf":
            parts.append(f"k={self.rrf_k:g}")
        parts += [f"{n}={w:g}" for n, w in self.weights]
        parts.append("fetch=default" if self.fetch_k is None else f"fetch={self.fetch_k}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The keywords of ``update_settings`` (and of the manifest's ``settings``)."""
        return {"fusion": self.fusion, "rrf_k": self.rrf_k, "weights": self.weight_map, "fetch_k": self.fetch_k}


@dataclass(frozen=True)
class TuneGrid:
    """What :func:`tune` tries (every combination, plus the current settings).

    Attributes:
        rrf_k: RRF constants (used by ``fusion="rrf"`` only).
        keyword_weights: Weights of the keyword legs, the dense legs weighing 1 (with RRF only the ratio
            matters); other legs keep their current weight.
        fusions: Fusion methods (:data:`rrf_retriever.fusion.FUSIONS`).
        fetch_multipliers: Each leg fetches ``multiplier * depth`` hits, written to ``fetch_k``; ``depth`` is the
            larger of the settings' ``top_k`` and the metric's cutoff (10 for ``ndcg@10`` at ``top_k=10``).
        weights: Explicit weight mappings to try instead of ``keyword_weights`` (e.g. for more than two legs).

    Example:
        >>> len(TuneGrid().rrf_k), len(TuneGrid().keyword_weights)
        (6, 6)
    """

    rrf_k: tuple[float, ...] = (5, 10, 20, 40, 60, 100)
    keyword_weights: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
    fusions: tuple[str, ...] = ("rrf", "dbsf", "relative_score")
    fetch_multipliers: tuple[int, ...] = (2, 4)
    weights: tuple[Mapping[str, float], ...] | None = None

    def weight_options(self, current: Mapping[str, float], kinds: Mapping[str, str]) -> list[dict[str, float]]:
        """The weight mappings to try on an engine whose legs have these kinds."""
        if self.weights is not None:
            return [{**current, **w} for w in self.weights]
        if not any(kind == "keyword" for kind in kinds.values()):
            return [dict(current)]
        options = []
        for ratio in self.keyword_weights:
            options.append({name: (float(ratio) if kind == "keyword" else 1.0 if kind == "dense" else current[name])
                            for name, kind in kinds.items()})
        return options

    def settings(self, current: Any, kinds: Mapping[str, str], depth: int) -> list[Setting]:
        """Every setting of the grid for an engine (deduplicated; the score fusions ignore ``rrf_k``)."""
        out: dict[Setting, None] = {}
        fetches = sorted({int(m) * depth for m in self.fetch_multipliers})
        for fusion in self.fusions:
            for weights in self.weight_options(current.weights, kinds):
                for rrf_k in self.rrf_k if fusion == "rrf" else (current.rrf_k,):
                    for fetch_k in fetches:
                        candidate = replace(current, fusion=fusion, rrf_k=rrf_k, weights=weights, fetch_k=fetch_k)
                        out[Setting.of(candidate)] = None  # replace() validated it
        return list(out)


# ---- the report --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FoldResult:
    """One fold of the cross-validation: the setting chosen on the other folds and its held-out score."""

    fold: int
    queries: int
    chosen: Setting
    train_score: float
    tuned_score: float
    current_score: float

    def to_dict(self) -> dict[str, Any]:
        return {"fold": self.fold, "queries": self.queries, "chosen": self.chosen.to_dict(),
                "chosen_label": self.chosen.label(), "train_score": self.train_score,
                "tuned_score": self.tuned_score, "current_score": self.current_score}


@dataclass(repr=False)
class TuneReport:
    """What :func:`tune` found, and what it did.

    Attributes:
        metric: The metric tuned (e.g. ``"ndcg@10"``); ``cutoff`` is the ranking depth it was computed at.
        current / chosen: The settings before, and the best setting over all queries.
        current_score: Mean metric of the current settings over all queries.
        chosen_score: Mean metric of ``chosen`` over all queries (in-sample: optimistic, not the estimate).
        cv_score: The cross-validated estimate of the tuning: each query scored by the setting chosen without it.
        cv_gain: ``cv_score - current_score`` (same queries, paired).
        ci95: Paired-bootstrap 95% interval of ``cv_gain``.
        significant: ``ci95[0] > 0``.
        applied: True if the engine now uses ``chosen`` (significant, asked to apply, and different).
        saved_to: The index directory whose manifest records ``chosen`` (None: not saved).
        folds: The per-fold table. ``grid``: every setting tried with its mean over all queries.
        per_query: ``{query_id: (current, cross-validated tuned)}``.
        fetch_seconds / fit_seconds / seconds: the legs' searches, the fusion grid + CV + bootstrap, the total.
    """

    metric: str
    cutoff: int
    n_queries: int
    n_folds: int
    current: Setting
    chosen: Setting
    current_score: float
    chosen_score: float
    cv_score: float
    cv_gain: float
    ci95: tuple[float, float]
    significant: bool
    applied: bool
    reason: str
    folds: list[FoldResult] = field(default_factory=list)
    grid: list[tuple[Setting, float]] = field(default_factory=list)
    per_query: dict[str, tuple[float, float]] = field(default_factory=dict)
    saved_to: str | None = None
    resamples: int = 2000
    seed: int = 0
    fetch_depth: int = 0
    fetch_seconds: float = 0.0
    fit_seconds: float = 0.0
    seconds: float = 0.0

    def best(self, n: int = 5) -> list[tuple[Setting, float]]:
        """The ``n`` best settings of the grid over all queries (in-sample)."""
        return sorted(self.grid, key=lambda sv: -sv[1])[:n]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (the CLI's ``--json``)."""
        return {
            "metric": self.metric, "cutoff": self.cutoff, "queries": self.n_queries, "folds": self.n_folds,
            "current": self.current.to_dict(), "chosen": self.chosen.to_dict(),
            "current_label": self.current.label(), "chosen_label": self.chosen.label(),
            "current_score": self.current_score, "chosen_score": self.chosen_score, "cv_score": self.cv_score,
            "cv_gain": self.cv_gain, "ci95": list(self.ci95), "significant": self.significant,
            "applied": self.applied, "reason": self.reason, "saved_to": self.saved_to,
            "fold_table": [f.to_dict() for f in self.folds],
            "best": [{"setting": s.to_dict(), "label": s.label(), "score": v} for s, v in self.best(10)],
            "grid_size": len(self.grid), "resamples": self.resamples, "seed": self.seed,
            "fetch_depth": self.fetch_depth, "fetch_seconds": self.fetch_seconds, "fit_seconds": self.fit_seconds,
            "seconds": self.seconds,
        }

    def summary(self) -> dict[str, Any]:
        """The short record saved in an index manifest next to the settings."""
        return {"metric": self.metric, "queries": self.n_queries, "folds": self.n_folds,
                "current_score": round(self.current_score, 6), "cv_score": round(self.cv_score, 6),
                "cv_gain": round(self.cv_gain, 6), "ci95": [round(v, 6) for v in self.ci95],
                "chosen": self.chosen.label(), "previous": self.current.label()}

    def to_markdown(self) -> str:
        """The report as Markdown: the verdict, the estimate, the per-fold table and the best settings."""
        m = self.metric
        lines = [
            f"**{'applied' if self.applied else 'kept the current settings'}**: {self.reason}",
            "",
            f"- current: `{self.current.label()}`: {m} = {self.current_score:.4f}",
            f"- chosen (best over all {self.n_queries} queries): `{self.chosen.label()}`: {m} = "
            f"{self.chosen_score:.4f} (in-sample)",
            f"- {self.n_folds}-fold cross-validated {m} of the tuning: {self.cv_score:.4f}; gain "
            f"{self.cv_gain:+.4f}, paired-bootstrap 95% CI [{self.ci95[0]:+.4f}, {self.ci95[1]:+.4f}] "
            f"({self.resamples} resamples)",
            f"- {len(self.grid)} settings, legs fetched once at depth {self.fetch_depth}; "
            f"{self.seconds:.2f} s ({self.fetch_seconds:.2f} s searching, {self.fit_seconds:.2f} s fusing and scoring)",
        ]
        if self.saved_to:
            lines.append(f"- saved in the manifest of `{self.saved_to}`")
        lines += ["", f"| fold | queries | chosen on the other folds | train {m} | held-out tuned | held-out current |",
                  "|---:|---:|---|---:|---:|---:|"]
        for f in self.folds:
            lines.append(f"| {f.fold} | {f.queries} | `{f.chosen.label()}` | {f.train_score:.4f} | "
                         f"{f.tuned_score:.4f} | {f.current_score:.4f} |")
        lines += ["", f"| best settings (in-sample) | {m} |", "|---|---:|"]
        lines += [f"| `{s.label()}` | {v:.4f} |" for s, v in self.best(5)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"TuneReport(metric={self.metric!r}, applied={self.applied}, cv_gain={self.cv_gain:+.4f}, "
                f"ci95=({self.ci95[0]:+.4f}, {self.ci95[1]:+.4f}), chosen={self.chosen.label()!r})")

    def _repr_markdown_(self) -> str:  # Jupyter shows the report as a table
        return self.to_markdown()

    def __str__(self) -> str:
        return self.to_markdown()

    def plot(self, ax: Any = None) -> Any:
        """Plot the grid (extra: matplotlib): the metric against ``rrf_k`` for each keyword weight (RRF, at the
        chosen fetch depth), the score fusions' best and the current settings as lines. Returns the axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4))
        fetch = self.chosen.fetch_k
        series: dict[tuple[tuple[str, float], ...], list[tuple[float, float]]] = {}
        for s, v in self.grid:
            if s.fusion == "rrf" and s.fetch_k == fetch:
                series.setdefault(s.weights, []).append((s.rrf_k, v))
        for weights, points in sorted(series.items()):
            xs, ys = zip(*sorted(points))
            ax.plot(xs, ys, marker="o", label=" ".join(f"{n}={w:g}" for n, w in weights))
        for fusion, style in (("dbsf", ":"), ("relative_score", "-.")):
            scores = [v for s, v in self.grid if s.fusion == fusion]
            if scores:
                ax.axhline(max(scores), color="grey", linestyle=style, label=f"best {fusion}")
        ax.axhline(self.current_score, color="black", linestyle="--", label="current")
        ax.set_xscale("log")
        ax.set_xlabel("rrf_k")
        ax.set_ylabel(f"{self.metric} (all queries, in-sample)")
        ax.set_title(f"fetch_k = {'default' if fetch is None else fetch}")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return ax


# ---- the shipped evaluation set ---------------------------------------------------------------------------------


def demo_eval_dir() -> Path:
    """The BEIR folder shipped with the package: the demo corpus (an invented product, Tidewell) and 53 judged
    queries (grades 1-2): keyword-only (codes, config keys, names), paraphrases, mixed, and session-scoped ones
    (their filter in ``queries.jsonl`` ``metadata.filter``).

    Example:
        >>> sorted(p.name for p in demo_eval_dir().iterdir() if p.suffix == ".jsonl")
        ['corpus.jsonl', 'queries.jsonl']
    """
    return Path(str(resources.files("rrf_retriever") / "data" / "demo_eval"))


def load_judged_queries(path: str | os.PathLike[str] | None = None, split: str = "test"
                        ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
    """``(queries, qrels)`` of a BEIR folder (default: :func:`demo_eval_dir`), ready for :func:`tune`.

    ``queries`` maps each judged query id to ``{"text": ..., "filter": ...}`` (the filter where the query's
    ``metadata.filter`` holds one, as in the shipped set's session-scoped queries); ``qrels`` to ``{doc_id: grade}``.
    """
    root = Path(path) if path is not None else demo_eval_dir()
    qrels_file, queries_file = root / "qrels" / f"{split}.tsv", root / "queries.jsonl"
    for f in (qrels_file, queries_file):
        if not f.is_file():
            msg = f"not a BEIR folder: {f} is missing"
            raise InvalidArgumentError(msg)
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.reader(fh, delimiter="\t")):
            if not row or (i == 0 and row[0] == "query-id"):
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries: dict[str, dict[str, Any]] = {}
    with queries_file.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                qid = str(row["_id"])
                if qid in qrels:
                    entry: dict[str, Any] = {"text": row["text"]}
                    flt = (row.get("metadata") or {}).get("filter")
                    if flt is not None:
                        entry["filter"] = flt
                    queries[qid] = entry
    missing = [q for q in qrels if q not in queries]
    if missing:
        msg = f"{len(missing)} judged query id(s) of {qrels_file} are not in {queries_file}: {missing[:5]}"
        raise InvalidArgumentError(msg)
    return queries, qrels


# ---- tuning ------------------------------------------------------------------------------------------------------


def _query_specs(queries: Mapping[str, Any], qrels: Mapping[str, Mapping[str, int]]
                 ) -> list[tuple[str, str, Any, Any]]:
    """``[(qid, text, filter, exclude_ids)]`` for every judged query, in qrels order."""
    if not isinstance(queries, Mapping) or not isinstance(qrels, Mapping):
        msg = "queries and qrels must be mappings: {query_id: text or {'text', 'filter'}}, {query_id: {doc: grade}}"
        raise InvalidTypeError(msg)
    missing = [q for q in qrels if q not in queries]
    if missing:
        msg = f"{len(missing)} judged query id(s) have no text in queries: {sorted(missing)[:5]}"
        raise InvalidArgumentError(msg)
    specs = []
    for qid in qrels:
        spec = queries[qid]
        if isinstance(spec, str):
            specs.append((str(qid), spec, None, None))
        elif isinstance(spec, Mapping) and isinstance(spec.get("text"), str):
            unknown = sorted(set(spec) - {"text", "filter", "exclude_ids"})
            if unknown:
                msg = f"query {qid!r}: unknown key(s) {unknown}; a query is text or {{'text', 'filter', 'exclude_ids'}}"
                raise InvalidArgumentError(msg)
            specs.append((str(qid), spec["text"], spec.get("filter"), spec.get("exclude_ids")))
        else:
            msg = f"query {qid!r} must be a string or a mapping with a 'text' string, not {type(spec).__name__}"
            raise InvalidTypeError(msg)
    return specs


def _leg_lists(engine: Any, specs: Sequence[tuple[str, str, Any, Any]], depth: int
               ) -> dict[str, dict[str, list[Hit]]]:
    """Each leg's ranked list per query, fetched once at ``depth`` through the engine (one leg at a time)."""
    names = list(engine.legs)
    lists: dict[str, dict[str, list[Hit]]] = {}
    for qid, text, flt, excl in specs:
        per_leg: dict[str, list[Hit]] = {}
        for name in names:
            only = {n: (1.0 if n == name else 0.0) for n in names}
            result = engine.search(text, top_k=depth, filter=flt, exclude_ids=excl, weights=only)
            if result.trace.warnings:
                msg = (f"cannot tune on degraded results: query {qid!r}, leg {name!r}: "
                       + "; ".join(result.trace.warnings))
                raise StoreError(msg)
            own = sorted((h for h in result.hits if name in h.ranks), key=lambda h: h.ranks[name])
            per_leg[name] = [Hit(h.id, score=float(h.scores.get(name, 0.0))) for h in own]
        lists[qid] = per_leg
    return lists


def _effective_fetch(current: Any, setting: Setting, top_k: int) -> int:
    return int(replace(current, fetch_k=setting.fetch_k).effective_fetch_k(top_k))


def _best(candidates: Sequence[int], scores: Sequence[Sequence[float]], queries: Sequence[int]) -> tuple[int, float]:
    """The candidate with the highest mean over ``queries`` (ties: the earliest, i.e. the current settings)."""
    best_i, best_v = candidates[0], -math.inf
    for i in candidates:
        row = scores[i]
        value = math.fsum(row[q] for q in queries) / len(queries)
        if value > best_v + 1e-12:
            best_i, best_v = i, value
    return best_i, best_v


def _index_dir_of(engine: Any) -> Path | None:
    """The index directory an engine was opened from (its journal sits there next to the manifest), else None."""
    from rrf_retriever.index.directory import JOURNAL_FILE, MANIFEST_FILE

    journal = getattr(engine, "journal", None)
    path = getattr(journal, "path", None)
    if not path or path == ":memory:":
        return None
    p = Path(path)
    return p.parent if p.name == JOURNAL_FILE and (p.parent / MANIFEST_FILE).is_file() else None


def tune(
    engine: Any,
    queries: Mapping[str, Any],
    qrels: Mapping[str, Mapping[str, int]],
    metric: str = "ndcg@10",
    folds: int = 5,
    *,
    grid: TuneGrid | None = None,
    apply: bool = True,
    index_dir: str | os.PathLike[str] | bool | None = True,
    resamples: int = 2000,
    seed: int = 0,
    ignore_identical_ids: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> TuneReport:
    """Fit the engine's fusion settings to judged queries by k-fold cross-validation; apply a significant gain.

    Args:
        engine: A :class:`~rrf_retriever.engine.HybridEngine` (``retriever.engine``; ``retriever.tune`` passes it).
        queries: ``{query_id: text}`` or ``{query_id: {"text": ..., "filter": ..., "exclude_ids": [...]}}``
            (a filter is applied inside the stores, as in a real query). Ids not in ``qrels`` are ignored.
        qrels: ``{query_id: {doc_id: grade}}``; grade > 0 is relevant. Every judged query needs a text.
        metric: ``"ndcg@10"`` (default), ``"mrr@10"``, ``"recall@20"``, ``"precision@5"``, ``"map@10"``,
            ``"hit_rate@5"``; without a cutoff, the settings' ``top_k``.
        folds: k of the k-fold cross-validation (at most the number of queries; >= 2).
        grid: What to try (default :class:`TuneGrid`: rrf_k {5..100} x keyword weight {0.5..2} x fusion
            {rrf, dbsf, relative_score} x fetch_k {2, 4} x max(top_k, cutoff)); the current settings are always a
            candidate. Each setting is scored as the engine ranks at ``top_k = max(top_k, cutoff)``.
        apply: Apply the chosen setting when the gain is significant (False: only report).
        index_dir: Where to save an applied setting (the manifest's ``settings`` key, with a ``tuning`` summary):
            True (default) = the index directory the engine was opened from, if any; a path; None/False = nowhere.
        resamples / seed: The paired bootstrap (and the fold split, seeded too).
        ignore_identical_ids: Drop a retrieved document whose id is the query's id (BEIR's rule for ArguAna).
        progress: Called as ``progress(done, total)`` while the legs are searched.

    Returns:
        A :class:`TuneReport` (``print(report)`` or ``report.to_markdown()``; ``report.plot()``).

    Raises:
        InvalidArgumentError / InvalidTypeError: bad queries, qrels, metric or folds.
        StoreError: a leg failed during the searches (tuning on degraded results would be wrong).
    """
    started = time.perf_counter()
    name, cut = parse_metric(metric)
    specs = _query_specs(queries, qrels)
    n = len(specs)
    if isinstance(folds, bool) or not isinstance(folds, int):
        msg = f"folds must be an integer >= 2, not {folds!r}"
        raise InvalidTypeError(msg)
    if n < 2 or folds < 2:
        msg = f"cross-validation needs folds >= 2 and at least 2 judged queries (got folds={folds}, {n} queries)"
        raise InvalidArgumentError(msg)
    folds = min(folds, n)
    grid = grid or TuneGrid()
    current_settings = engine.settings
    cutoff = cut if cut is not None else current_settings.top_k
    kinds = {leg_name: leg.kind for leg_name, leg in engine.legs.items()}
    current = Setting.of(current_settings)
    # Ranked as the engine ranks a query at this top_k (a fetch_k below it is raised to it, as the engine does);
    # a fused list's order does not depend on where it is cut, so the metric just reads its first `cutoff`.
    ranking_depth = max(cutoff, current_settings.top_k)
    candidates = [current, *(s for s in grid.settings(current_settings, kinds, ranking_depth) if s != current)]
    fetch = [_effective_fetch(current_settings, s, ranking_depth) for s in candidates]
    depth = max(fetch)

    # 1. every leg once per query, at the deepest depth
    t0 = time.perf_counter()
    lists: dict[str, dict[str, list[Hit]]] = {}
    for i, spec in enumerate(specs):
        lists.update(_leg_lists(engine, [spec], depth))
        if progress is not None:
            progress(i + 1, n)
    fetch_seconds = time.perf_counter() - t0

    # 2. every setting on every query: a pure fusion of the lists' prefixes, then the metric
    t1 = time.perf_counter()
    limit = cutoff + 1 if ignore_identical_ids else cutoff
    scores: list[list[float]] = []
    for s, f in zip(candidates, fetch):
        weights = s.weight_map
        row = []
        for qid, _, _, _ in specs:
            ranked = {leg: hits[:f] for leg, hits in lists[qid].items()}
            used = {leg: weights[leg] for leg in ranked}
            fused = fuse(s.fusion, ranked, used, rrf_k=s.rrf_k, limit=limit) if any(used.values()) else []
            ids = [h.id for h in fused if not (ignore_identical_ids and h.id == qid)]
            row.append(metric_value(name, ids, qrels[qid], cutoff))
        scores.append(row)

    # 3. k-fold cross-validation: choose on the other folds, score on the held-out one, next to the current
    order = list(range(n))
    random.Random(seed).shuffle(order)
    fold_of = {q: i % folds for i, q in enumerate(order)}
    everyone = list(range(len(candidates)))
    tuned_cv = [0.0] * n
    fold_rows: list[FoldResult] = []
    for f_i in range(folds):
        test = [q for q in range(n) if fold_of[q] == f_i]
        train = [q for q in range(n) if fold_of[q] != f_i]
        best_i, train_v = _best(everyone, scores, train)
        for q in test:
            tuned_cv[q] = scores[best_i][q]
        fold_rows.append(FoldResult(
            f_i + 1, len(test), candidates[best_i], train_v,
            math.fsum(scores[best_i][q] for q in test) / len(test),
            math.fsum(scores[0][q] for q in test) / len(test),
        ))
    current_scores = scores[0]
    diffs = [t - c for t, c in zip(tuned_cv, current_scores)]
    ci = paired_bootstrap_ci(diffs, resamples=resamples, seed=seed)
    current_mean = math.fsum(current_scores) / n
    cv_mean = math.fsum(tuned_cv) / n
    final_i, final_v = _best(everyone, scores, list(range(n)))
    chosen = candidates[final_i]
    significant = ci[0] > 0
    fit_seconds = time.perf_counter() - t1

    # 4. apply (and save) only a significant gain
    applied = False
    if not significant:
        reason = (f"the cross-validated gain {cv_mean - current_mean:+.4f} is not significant (95% CI "
                  f"[{ci[0]:+.4f}, {ci[1]:+.4f}] includes 0 or lies below it)")
    elif chosen == current:
        reason = "the current settings are already the best over all queries"
    elif not apply:
        reason = f"significant gain {cv_mean - current_mean:+.4f} (95% CI [{ci[0]:+.4f}, {ci[1]:+.4f}]); apply=False"
    else:
        engine.update_settings(**chosen.to_dict())
        applied = True
        reason = f"significant gain {cv_mean - current_mean:+.4f} (95% CI [{ci[0]:+.4f}, {ci[1]:+.4f}])"
    report = TuneReport(
        metric=f"{name}@{cutoff}", cutoff=cutoff, n_queries=n, n_folds=folds, current=current, chosen=chosen,
        current_score=current_mean, chosen_score=final_v, cv_score=cv_mean, cv_gain=cv_mean - current_mean,
        ci95=ci, significant=significant, applied=applied, reason=reason, folds=fold_rows,
        grid=list(zip(candidates, (math.fsum(r) / n for r in scores))),
        per_query={qid: (current_scores[i], tuned_cv[i]) for i, (qid, _, _, _) in enumerate(specs)},
        resamples=resamples, seed=seed, fetch_depth=depth, fetch_seconds=fetch_seconds, fit_seconds=fit_seconds,
    )
    if applied:
        target = _index_dir_of(engine) if index_dir is True else (Path(index_dir) if index_dir else None)
        if target is not None:
            save_settings(target, engine, report)
            report.saved_to = str(target)
    report.seconds = time.perf_counter() - started
    return report


def save_settings(index_dir: str | os.PathLike[str], engine: Any, report: TuneReport) -> dict[str, Any]:
    """Record ``report.chosen`` in an index directory's manifest (``settings``, plus a ``tuning`` summary) through
    :func:`rrf_retriever.index.directory.save_manifest`. ``open_index`` applies ``settings`` on the next open."""
    from rrf_retriever.index.directory import save_manifest

    return save_manifest(index_dir, engine, **{MANIFEST_SETTINGS_KEY: report.chosen.to_dict(),
                                              MANIFEST_TUNING_KEY: report.summary()})
