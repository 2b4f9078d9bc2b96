"""Fit the retriever's settings to judged queries (:func:`tune`), and change them only when the gain is real.

The public path of the names the README and the notebooks use; each is defined in its own module of this package:
:mod:`~.metrics` (per-query metrics), :mod:`~.statistics` (the paired bootstrap), :mod:`~.grid` (the settings tried),
:mod:`~.report` (what tuning found), :mod:`~.judged` (judged queries), :mod:`~.index_eval` (:func:`evaluate_index`,
what ``rrf-retriever eval`` reports and tune scores the current settings by) and :mod:`~.tuner` (:func:`tune` itself).

Example:
    >>> from rrf_retriever.tuning import load_judged_queries
    >>> queries, qrels = load_judged_queries()
    >>> set(queries) == set(qrels)
    True
"""

from rrf_retriever.tuning.index_eval import IndexEvaluation, evaluate_index
from rrf_retriever.tuning.judged import demo_eval_dir, load_judged_queries
from rrf_retriever.tuning.metrics import metric_value
from rrf_retriever.tuning.report import TuneReport
from rrf_retriever.tuning.tuner import tune

__all__ = ["IndexEvaluation", "TuneReport", "demo_eval_dir", "evaluate_index", "load_judged_queries", "metric_value",
           "tune"]
