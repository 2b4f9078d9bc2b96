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
depend on the limit asked; rare with real embeddings). The current settings are scored on the engine's own answers
by :func:`~rrf_retriever.tuning.index_eval.evaluate_index`, the definition ``rrf-retriever eval`` reports, so the
two figures agree. The metrics are computed in pure Python
(:mod:`~rrf_retriever.tuning.metrics`: closed forms, checked against ranx in the tests), so tuning never pays ranx's
numba start-up.

Example:
    >>> from rrf_retriever.tuning import load_judged_queries
    >>> queries, qrels = load_judged_queries()  # the evaluation set shipped with the package (demo corpus)
    >>> len(queries) >= 50 and set(queries) == set(qrels)
    True
    >>> report = retriever.tune(queries, qrels, metric="ndcg@10", folds=5)  # doctest: +SKIP
    >>> print(report.to_markdown())  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError
from rrf_retriever.fusion import fuse
from rrf_retriever.index.manifest import (
    JOURNAL_FILE,
    MANIFEST_FILE,
    MANIFEST_SETTINGS_KEY,
    read_manifest,
    save_manifest,
    saved_settings,
)
from rrf_retriever.tuning.grid import Setting, TuneGrid
from rrf_retriever.tuning.index_eval import evaluate_index
from rrf_retriever.tuning.judged_input import QuerySpec, judged_queries
from rrf_retriever.tuning.metrics import metric_value, parse_metric
from rrf_retriever.tuning.report import FoldResult, TuneReport
from rrf_retriever.tuning.statistics import paired_bootstrap_ci
from rrf_retriever.types import Hit

__all__ = ["MANIFEST_TUNING_KEY", "save_settings", "tune"]

#: The manifest key of the summary of the tuning that chose the saved ``settings``.
MANIFEST_TUNING_KEY = "tuning"


def _check_judged_stored(engine: Any, qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Refuse an index holding none of the judged relevant documents: every setting would score 0, and the report
    would say nothing but that (an engine without a store to look in, only function legs, is not checked here)."""
    judged = sorted({doc for docs in qrels.values() for doc, grade in docs.items() if grade > 0})
    if not judged or not engine.count():
        return
    for start in range(0, len(judged), 1000):
        if engine.get(judged[start:start + 1000]):
            return
    shown = ", ".join(judged[:3]) + (", ..." if len(judged) > 3 else "")
    msg = (f"none of the {len(judged)} judged document ids ({shown}) is in the index: was it built from another "
           "corpus? Every setting would score 0; index the corpus the qrels judge")
    raise InvalidArgumentError(msg)


def _leg_lists(engine: Any, specs: Sequence[QuerySpec], depth: int) -> dict[str, dict[str, list[Hit]]]:
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
        qrels: ``{query_id: {doc_id: grade}}``; grade > 0 is relevant. Every judged query needs a text. Ids are
            strings (an ``int`` id is converted with ``str``, in both mappings); a grade is an ``int`` from 0 to
            :data:`~rrf_retriever.tuning.judged_input.MAX_GRADE` (see :mod:`~rrf_retriever.tuning.judged_input`).
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
        InvalidArgumentError / InvalidTypeError: bad queries, qrels (a grade ``"1"``, ``None``, ``1.0``, negative or
            huge; a list for a mapping), metric or folds; or nothing to tune: the qrels judge no document relevant,
            the index holds none of the judged documents, or no setting ranks one in the top ``cutoff`` of any query
            (every score would be 0: refused rather than reported as all zeros, and nothing is applied).
        StoreError: a leg failed during the searches (tuning on degraded results would be wrong).
    """
    started = time.perf_counter()
    name, cut = parse_metric(metric)
    specs, qrels = judged_queries(queries, qrels)
    n = len(specs)
    if isinstance(folds, bool) or not isinstance(folds, int):
        msg = f"folds must be an integer >= 2, not {folds!r}"
        raise InvalidTypeError(msg)
    if n < 2 or folds < 2:
        msg = f"cross-validation needs folds >= 2 and at least 2 judged queries (got folds={folds}, {n} queries)"
        raise InvalidArgumentError(msg)
    folds = min(folds, n)
    _check_judged_stored(engine, qrels)
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

    # 2. the current settings: the engine's own answers, evaluated as `rrf-retriever eval` does (one definition,
    # so tune's current figure is eval's); every other setting on every query: a pure fusion of the lists'
    # prefixes, then the metric
    t1 = time.perf_counter()
    label = f"{name}@{cutoff}"
    now = evaluate_index(engine, queries, qrels, (label,), ignore_identical_ids=ignore_identical_ids).per_query[label]
    scores: list[list[float]] = [[now[qid] for qid, _, _, _ in specs]]
    limit = cutoff + 1 if ignore_identical_ids else cutoff
    for s, f in zip(candidates[1:], fetch[1:]):
        weights = s.weight_map
        row = []
        for qid, _, _, _ in specs:
            ranked = {leg: hits[:f] for leg, hits in lists[qid].items()}
            used = {leg: weights[leg] for leg in ranked}
            fused = fuse(s.fusion, ranked, used, rrf_k=s.rrf_k, limit=limit) if any(used.values()) else []
            ids = [h.id for h in fused if not (ignore_identical_ids and h.id == qid)]
            row.append(metric_value(name, ids, qrels[qid], cutoff))
        scores.append(row)
    if not any(any(row) for row in scores):
        msg = (f"no setting ranks a judged relevant document in the top {cutoff} of any of the {n} queries: every "
               "score is 0, nothing to tune (are the qrels for this index's corpus?)")
        raise InvalidArgumentError(msg)

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
    :func:`rrf_retriever.index.manifest.save_manifest`, over the settings already saved there (what ``PATCH
    /settings`` persisted and tuning does not choose, such as ``top_k``, stays). ``open_index`` applies
    ``settings`` on the next open."""
    saved = saved_settings(read_manifest(Path(index_dir)))
    return save_manifest(index_dir, engine, **{MANIFEST_SETTINGS_KEY: {**saved, **report.chosen.to_dict()},
                                              MANIFEST_TUNING_KEY: report.summary()})
