"""What the tuner can choose: one fusion :class:`Setting`, and the :class:`TuneGrid` of settings it tries.

Example:
    >>> Setting("rrf", 20.0, (("dense", 1.0), ("keyword", 0.75)), 40).label()
    'rrf k=20 dense=1 keyword=0.75 fetch=40'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Setting", "TuneGrid"]


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
