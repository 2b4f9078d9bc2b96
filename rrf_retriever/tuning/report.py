"""What :func:`~rrf_retriever.tuning.tuner.tune` found and did: the per-fold table, the estimate, the verdict.

Example:
    >>> FoldResult(1, 10, Setting("rrf", 60.0, (("dense", 1.0),), None), 0.5, 0.4, 0.3).to_dict()["chosen_label"]
    'rrf k=60 dense=1 fetch=default'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rrf_retriever.tuning.grid import Setting

__all__ = ["FoldResult", "TuneReport"]


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
