"""``rrf-retriever eval`` and ``tune`` evaluate an index ONE way (:func:`rrf_retriever.tuning.evaluate_index`): the
same queries with their own ``metadata.filter``, the same ranking depth, the same pure-Python metrics. So eval's
nDCG@10 is tune's current figure, and eval never imports ranx (whose first call sits in numba's compile)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rrf_retriever.apps.tune_command import tune_index
from rrf_retriever.index.directory import open_index
from rrf_retriever.tuning import demo_eval_dir, evaluate_index, load_judged_queries
from rrf_retriever.tuning.tuner import tune

ROOT = Path(__file__).resolve().parents[3]
EVAL_SCRIPT = """
import json, sys
from rrf_retriever.apps.cli import app
try:
    app(sys.argv[1:], prog_name="rrf-retriever")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stderr.write(json.dumps({"code": code, "ranx_loaded": "ranx" in sys.modules}) + "\\n")
"""


def _cli_eval(data: Path, index_dir: Path) -> tuple[dict, dict]:
    done = subprocess.run(
        [sys.executable, "-c", EVAL_SCRIPT, "eval", str(data), "-d", str(index_dir), "--embedder", "hashing:64",
         "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
    )
    status = json.loads(done.stderr.strip().splitlines()[-1])
    assert status["code"] == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), status


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    index_dir = tmp_path_factory.mktemp("demo") / "idx"
    out, status = _cli_eval(demo_eval_dir(), index_dir)  # indexes the demo corpus first, then evaluates
    return index_dir, out, status


def test_cli_eval_equals_tunes_current_figure_on_the_shipped_set(evaluated: tuple[Path, dict, dict]) -> None:
    index_dir, out, _ = evaluated
    report = tune_index(index_dir, demo_eval_dir(), apply=False)
    assert report.metric == "ndcg@10"
    assert out["queries"] == report.n_queries
    assert abs(out["metrics"]["ndcg@10"] - report.current_score) <= 1e-12, (out["metrics"], report.current_score)


def test_cli_eval_does_not_import_ranx(evaluated: tuple[Path, dict, dict]) -> None:
    _, out, status = evaluated
    assert status["ranx_loaded"] is False
    assert set(out["metrics"]) == {"ndcg@10", "recall@100", "mrr@10"}


@pytest.mark.slow  # seconds each (a model graph rebuilt, or an index tuned): `make test` runs it
def test_evaluate_index_applies_each_querys_filter_and_equals_tune(evaluated: tuple[Path, dict, dict]) -> None:
    index_dir, out, _ = evaluated
    queries, qrels = load_judged_queries()
    assert any("filter" in q for q in queries.values())  # the shipped set has session-scoped queries
    engine = open_index(index_dir)
    try:
        figures = evaluate_index(engine, queries, qrels)
        assert figures.metrics == out["metrics"]
        for metric in ("ndcg@10", "mrr@10", "recall@20"):
            current = tune(engine, queries, qrels, metric, apply=False, index_dir=None).current_score
            assert abs(evaluate_index(engine, queries, qrels, (metric,)).metrics[metric] - current) <= 1e-12
        unfiltered = {qid: {"text": q["text"]} for qid, q in queries.items()}
        assert evaluate_index(engine, unfiltered, qrels).per_query != figures.per_query  # the filters count
    finally:
        engine.close()
