"""tuning.py: per-query metrics (closed forms, and equal to ranx), the paired bootstrap, the shipped evaluation set,
and tune() itself: its offline fusion of the legs' lists equals what the engine returns with each setting, a planted
gain is found, applied and saved in an index manifest, and no gain leaves the settings alone."""

from __future__ import annotations

import json
import math
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import FunctionLeg, HybridEngine
from rrf_retriever.errors import AllLegsFailedError, InvalidArgumentError, InvalidTypeError
from rrf_retriever.evaluation import doc_text, load_beir
from rrf_retriever.index.manifest import saved_settings
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from rrf_retriever.tuning.grid import Setting, TuneGrid
from rrf_retriever.tuning.judged import demo_eval_dir, load_judged_queries
from rrf_retriever.tuning.metrics import metric_value, parse_metric
from rrf_retriever.tuning.report import TuneReport
from rrf_retriever.tuning.statistics import paired_bootstrap_ci
from rrf_retriever.tuning.tuner import tune
from rrf_retriever.types import Hit

DATA = files("rrf_retriever").joinpath("data")


# ---- metrics -----------------------------------------------------------------------------------------------------


def test_metric_closed_forms() -> None:
    judged = {"a": 2, "b": 1, "z": 1, "n": 0}  # z is never retrieved; n is judged not relevant
    ranked = ["x", "a", "n", "b"]
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert metric_value("ndcg", ranked, judged, 10) == pytest.approx(dcg / idcg)
    assert metric_value("ndcg", ranked, judged, 2) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert metric_value("mrr", ranked, judged, 10) == 0.5
    assert metric_value("mrr", ranked, judged, 1) == 0.0
    assert metric_value("recall", ranked, judged, 10) == pytest.approx(2 / 3)
    assert metric_value("precision", ranked, judged, 4) == 0.5
    assert metric_value("map", ranked, judged, 10) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert metric_value("hit_rate", ranked, judged, 1) == 0.0 and metric_value("hit_rate", ranked, judged, 2) == 1.0
    assert metric_value("ndcg", ["a", "a", "b"], {"b": 1}, 2) == pytest.approx(1 / math.log2(3))  # dup counts once
    assert all(metric_value(m, ["a"], {"a": 0}, 5) == 0.0 for m in ("ndcg", "mrr", "recall", "map"))


def test_parse_metric() -> None:
    assert parse_metric("nDCG@10") == ("ndcg", 10)
    assert parse_metric("hit_rate") == ("hit_rate", None)
    for bad in ("ndgc@10", "ndcg@0", "ndcg@x", "recall@-1"):
        with pytest.raises(InvalidArgumentError):
            parse_metric(bad)
    with pytest.raises(InvalidTypeError):
        parse_metric(10)  # type: ignore[arg-type]


@pytest.mark.slow
def test_metrics_equal_ranx() -> None:
    """The pure-Python metrics give ranx's numbers (graded qrels, a 0 grade, misses, a query with no hit)."""
    from rrf_retriever.evaluation import evaluate

    qrels = {"q1": {"a": 2, "b": 1, "z": 1, "n": 0}, "q2": {"c": 1}, "q3": {"d": 2, "e": 2}, "q4": {"f": 1}}
    ranked = {"q1": ["x", "a", "n", "b", "y"], "q2": ["c", "a"], "q3": ["e", "x", "y", "d"], "q4": ["x", "y"]}
    run = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in ranked.items()}
    names = ("ndcg@3", "ndcg@10", "mrr@10", "recall@3", "recall@10", "precision@3", "map@10", "hit_rate@1")
    expected = evaluate(run, qrels, names)
    for metric in names:
        name, k = parse_metric(metric)
        ours = sum(metric_value(name, ranked[q], qrels[q], k) for q in qrels) / len(qrels)  # type: ignore[arg-type]
        assert ours == pytest.approx(expected[metric], abs=1e-9), metric


def test_paired_bootstrap_ci() -> None:
    assert paired_bootstrap_ci([0.2] * 30) == (0.2, 0.2)
    diffs = [0.3, 0.0, 0.1, -0.1, 0.2, 0.0, 0.4, 0.0] * 5
    lo, hi = paired_bootstrap_ci(diffs, seed=1)
    assert lo < sum(diffs) / len(diffs) < hi
    assert paired_bootstrap_ci(diffs, seed=1) == (lo, hi)  # seeded: reproducible
    lo_wide, hi_wide = paired_bootstrap_ci(diffs, seed=1, level=0.99)
    assert lo_wide <= lo and hi_wide >= hi
    with pytest.raises(InvalidArgumentError):
        paired_bootstrap_ci([])


# ---- the shipped evaluation set ----------------------------------------------------------------------------------


def test_shipped_eval_set_is_a_beir_folder_over_the_demo_corpus() -> None:
    ds = load_beir(demo_eval_dir())
    demo = [json.loads(line) for line in DATA.joinpath("demo_corpus.jsonl").read_text("utf-8").splitlines()
            if line.strip()]
    assert {d["id"]: (d["text"], d["metadata"]) for d in demo} == {
        i: (doc["text"], doc["metadata"]) for i, doc in ds.corpus.items()}, "demo_eval/corpus.jsonl drifted"
    assert 50 <= len(ds.queries) == len(ds.qrels) <= 80
    for qid, judged in ds.qrels.items():
        assert judged, qid
        assert set(judged) <= set(ds.corpus), (qid, set(judged) - set(ds.corpus))
        assert set(judged.values()) <= {1, 2} and 2 in judged.values(), qid
    assert len(set(ds.queries.values())) == len(ds.queries)  # no duplicate query text


def test_shipped_eval_set_kinds_and_filters() -> None:
    from rrf_retriever.scope.parse import normalize_filter
    from rrf_retriever.scope.tree import matches

    rows = [json.loads(line) for line in (demo_eval_dir() / "queries.jsonl").read_text("utf-8").splitlines()]
    kinds = {r["metadata"]["kind"] for r in rows}
    assert kinds == {"keyword", "paraphrase", "hybrid", "session"}
    queries, qrels = load_judged_queries()
    corpus = load_beir(demo_eval_dir()).corpus
    scoped = {q: spec["filter"] for q, spec in queries.items() if "filter" in spec}
    assert len(scoped) >= 5
    for qid, flt in scoped.items():
        normalized = normalize_filter(flt)
        for doc in qrels[qid]:
            assert matches(corpus[doc]["metadata"], normalized), (qid, doc)
    assert all(r["metadata"]["kind"] == "session" for r in rows if "filter" in r["metadata"])


def test_load_judged_queries_refuses_a_broken_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="missing"):
        load_judged_queries(tmp_path)
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td\t1\n", "utf-8")
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n', "utf-8")
    with pytest.raises(InvalidArgumentError, match="q9"):
        load_judged_queries(tmp_path)


# ---- tune() on real stores ---------------------------------------------------------------------------------------


class _TieFreeHashing(HashingEmbedding):
    """The hashing embedder plus a small deterministic jitter per text: no two documents score exactly alike.

    With exact ties a store may order the tied documents differently at another limit, so the top 40 of a
    deeper search need not be the 40 of a search for 40; tune() reads prefixes of one deep search (documented),
    and this test checks the fusion arithmetic, not a store's tie-breaking."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.plain = HashingEmbedding(dim)

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self._jittered(text, vec) for text, vec in zip(texts, self.plain.embed_documents(texts))]

    @staticmethod
    def _jittered(text: str, vec: list[float]) -> list[float]:
        import hashlib
        import random as _random

        rng = _random.Random(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest())
        jittered = [x + rng.uniform(-0.05, 0.05) for x in vec]
        norm = math.sqrt(sum(x * x for x in jittered))
        return [x / norm for x in jittered]


@pytest.fixture(scope="module")
def demo_engine() -> Any:
    """The demo corpus in FTS5 + Qdrant local mode with a hashing embedder (plumbing, not quality)."""
    ds = load_beir(demo_eval_dir())
    engine = HybridEngine({"dense": QdrantDenseStore(_TieFreeHashing(64)), "keyword": FTS5KeywordStore()})
    ids = list(ds.corpus)
    engine.add(ids, [doc_text(ds.corpus[d]) for d in ids], [ds.corpus[d]["metadata"] for d in ids])
    yield engine
    engine.close()


def _live_mean(engine: HybridEngine, setting: Setting, queries: dict[str, Any], qrels: dict[str, Any],
               name: str, k: int) -> float:
    before = engine.settings
    engine.update_settings(**setting.to_dict())
    try:
        values = []
        for qid, spec in queries.items():
            hits = engine.search(spec["text"], top_k=k, filter=spec.get("filter")).hits
            values.append(metric_value(name, [h.id for h in hits], qrels[qid], k))
    finally:
        engine.update_settings(fusion=before.fusion, rrf_k=before.rrf_k, weights=dict(before.weights),
                               fetch_k=before.fetch_k)
    return sum(values) / len(values)


@pytest.mark.slow  # seconds each (a model graph rebuilt, or an index tuned): `make test` runs it
@pytest.mark.parametrize("metric", ["ndcg@10", "recall@5"])
def test_offline_fusion_equals_the_engine(demo_engine: HybridEngine, metric: str) -> None:
    """Every setting's score in the report is what the engine returns when set to it (sampled over the grid)."""
    queries, qrels = load_judged_queries()
    before = demo_engine.settings
    report = tune(demo_engine, queries, qrels, metric, 5, apply=False)
    assert demo_engine.settings == before
    name, k = parse_metric(metric)
    grid = dict(report.grid)
    assert report.current in grid and len(grid) == len(report.grid) == 1 + 6 * 6 * 2 + 2 * 6 * 2
    sample = [report.current, report.chosen]
    for fusion in ("rrf", "dbsf", "relative_score"):
        sample += [s for s in grid if s.fusion == fusion][:: 17 if fusion == "rrf" else 5]
    for setting in sample:
        assert _live_mean(demo_engine, setting, queries, qrels, name, k) == pytest.approx(grid[setting], abs=1e-12), (
            setting.label())


def test_report_shape(demo_engine: HybridEngine) -> None:
    queries, qrels = load_judged_queries()
    report = tune(demo_engine, queries, qrels, "mrr@10", folds=4, apply=False, resamples=500, seed=3)
    assert isinstance(report, TuneReport) and report.n_folds == 4 and report.n_queries == len(qrels)
    assert sum(f.queries for f in report.folds) == report.n_queries
    assert set(report.per_query) == set(qrels)
    assert report.cv_score == pytest.approx(sum(t for _, t in report.per_query.values()) / report.n_queries)
    assert report.current_score == pytest.approx(sum(c for c, _ in report.per_query.values()) / report.n_queries)
    assert report.cv_gain == pytest.approx(report.cv_score - report.current_score)
    assert report.ci95[0] <= report.ci95[1] and report.significant == (report.ci95[0] > 0)
    assert report.chosen_score == max(v for _, v in report.grid)
    assert not report.applied and report.fetch_depth == 40
    data = report.to_dict()
    json.dumps(data)
    assert data["fold_table"][0]["fold"] == 1 and len(data["best"]) == 10
    md = report.to_markdown()
    assert "| fold |" in md and "95% CI" in md and report.current.label() in md
    again = tune(demo_engine, queries, qrels, "mrr@10", folds=4, apply=False, resamples=500, seed=3)
    assert (again.chosen, again.ci95, again.cv_score) == (report.chosen, report.ci95, report.cv_score)


def test_tune_argument_errors(demo_engine: HybridEngine) -> None:
    queries, qrels = load_judged_queries()
    with pytest.raises(InvalidArgumentError, match="folds"):
        tune(demo_engine, queries, qrels, folds=1)
    with pytest.raises(InvalidTypeError):
        tune(demo_engine, queries, qrels, folds=2.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="no text"):
        tune(demo_engine, {}, qrels)
    with pytest.raises(InvalidArgumentError, match="unknown metric"):
        tune(demo_engine, queries, qrels, "bleu")
    with pytest.raises(InvalidArgumentError, match="unknown key"):
        tune(demo_engine, {"q01": {"text": "x", "filtre": {}}, "q02": "y"}, {"q01": qrels["q01"], "q02": qrels["q02"]})


# ---- a planted gain, and none --------------------------------------------------------------------------------------


class _KeywordFn(FunctionLeg):
    kind = "keyword"


class _DenseFn(FunctionLeg):
    kind = "dense"


def _planted_engine(n_queries: int = 30, **settings: Any) -> tuple[HybridEngine, dict[str, str], dict[str, Any]]:
    """The keyword leg ranks each query's relevant document 1st; the dense leg returns 15 others. With the keyword
    weight at 0.05 the relevant document falls out of the top 10; any keyword weight of the grid brings it back."""
    queries = {f"q{i}": f"query {i}" for i in range(n_queries)}
    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(n_queries)}

    def keyword(query: str, limit: int) -> list[Hit]:
        i = query.split()[1]
        return [Hit(f"rel{i}", score=9.0), *(Hit(f"kw{i}-{j}", score=8.0 - j * 0.1) for j in range(20))][:limit]

    def dense(query: str, limit: int) -> list[Hit]:
        i = query.split()[1]
        return [Hit(f"d{i}-{j}", score=0.9 - j * 0.01) for j in range(15)][:limit]

    engine = HybridEngine({"dense": _DenseFn(dense), "keyword": _KeywordFn(keyword)}, **settings)
    return engine, queries, qrels


def test_a_planted_gain_is_applied() -> None:
    engine, queries, qrels = _planted_engine(weights={"keyword": 0.05})
    report = tune(engine, queries, qrels, "mrr@10", folds=5)
    assert report.current_score == 0.0 and report.cv_score == 1.0
    assert report.significant and report.applied and report.ci95 == (1.0, 1.0)
    assert engine.settings.weights["keyword"] == report.chosen.weight_map["keyword"] >= 0.5
    assert report.saved_to is None  # an in-memory engine: nothing to save
    again = tune(engine, queries, qrels, "mrr@10", folds=5)  # now nothing is left to gain
    assert not again.applied and again.cv_gain == 0.0 and again.current == report.chosen


def test_no_gain_keeps_the_settings() -> None:
    engine, queries, qrels = _planted_engine()  # the defaults (keyword 1.25) already rank the relevant one 1st
    before = engine.settings
    report = tune(engine, queries, qrels, "mrr@10", folds=3)
    assert report.current_score == 1.0 and report.cv_gain == 0.0 and report.ci95 == (0.0, 0.0)
    assert not report.significant and not report.applied and engine.settings is before
    assert report.chosen == report.current  # ties go to the current settings


def test_apply_false_reports_only() -> None:
    engine, queries, qrels = _planted_engine(weights={"keyword": 0.05})
    before = engine.settings
    report = tune(engine, queries, qrels, "ndcg@10", folds=5, apply=False)
    assert report.significant and not report.applied and engine.settings is before
    assert "apply=False" in report.reason


def test_ignore_identical_ids() -> None:
    """ArguAna's rule: a retrieved document whose id is the query's id is dropped before the metric."""
    same = _KeywordFn(lambda q, n: [Hit(q, score=2.0), Hit("rel", score=1.0)][:n])
    engine = HybridEngine({"keyword": same})
    queries, qrels = {"q1": "q1", "q2": "q2"}, {"q1": {"rel": 1}, "q2": {"rel": 1}}
    assert tune(engine, queries, qrels, "mrr@10", folds=2, apply=False).current_score == 0.5
    assert tune(engine, queries, qrels, "mrr@10", folds=2, apply=False,
                ignore_identical_ids=True).current_score == 1.0


def test_a_failing_leg_stops_the_tuning() -> None:
    def broken(query: str, limit: int) -> list[Hit]:
        raise RuntimeError("down")

    engine = HybridEngine({"dense": _DenseFn(broken), "keyword": _KeywordFn(lambda q, n: [Hit("a", score=1.0)])})
    with pytest.raises(AllLegsFailedError, match="down"):
        tune(engine, {"q1": "a", "q2": "b"}, {"q1": {"a": 1}, "q2": {"a": 1}}, folds=2)


def test_a_filter_is_applied_inside_the_legs(demo_engine: HybridEngine) -> None:
    """A session-scoped query is tuned on session-scoped lists: nothing outside the filter is ever scored."""
    seen: list[Any] = []
    original = demo_engine.search

    def spy(query: str, **kwargs: Any) -> Any:
        result = original(query, **kwargs)
        seen.append((kwargs.get("filter"), [h.metadata.get("session_id") for h in result.hits]))
        return result

    demo_engine.search = spy  # type: ignore[method-assign]
    try:
        tune(demo_engine, {"a": {"text": "certificate pin mismatch", "filter": {"session_id": [2]}},
                           "b": "certificate pin mismatch"}, {"a": {"tkt-2620": 2}, "b": {"tkt-2614": 2}},
             folds=2, apply=False)
    finally:
        del demo_engine.search
    scoped = [sessions for flt, sessions in seen if flt is not None]
    assert scoped and all(s == 2 for sessions in scoped for s in sessions)
    assert any(s != 2 for flt, sessions in seen if flt is None for s in sessions)


# ---- an index directory: saved in the manifest ---------------------------------------------------------------------


def test_an_applied_setting_is_saved_in_the_index_manifest(tmp_path: Path) -> None:
    from rrf_retriever.index.directory import create_index, open_index
    from rrf_retriever.index.manifest import read_manifest

    index = tmp_path / "idx"
    engine = create_index(index, embedder="hashing:256")
    # The keyword leg drops the stopwords and finds only "rel"; the hashing vectors share "the" and "what" with
    # "other", so the dense leg ranks it 1st. With the keyword weight at 0.0001, the dense order wins.
    engine.add(["rel", "other"], ["error E4107 claim missing", "the what where which"])
    engine.update_settings(weights={"keyword": 0.0001})
    try:
        assert engine.search("the what E4107", top_k=1).hits[0].id == "other"
        queries = {f"q{i}": "the what E4107" for i in range(6)}
        report = tune(engine, queries, {q: {"rel": 1} for q in queries}, "mrr@1", folds=3)
    finally:
        engine.close()
    assert report.applied and report.saved_to == str(index)
    assert {s.fetch_k for s, _ in report.grid} == {None, 20, 40}  # x top_k 10, not x the metric's cutoff 1
    manifest = read_manifest(index)
    saved = saved_settings(manifest)
    assert saved == report.chosen.to_dict() and saved["weights"]["keyword"] >= 0.5
    assert manifest["tuning"]["metric"] == "mrr@1" and manifest["tuning"]["cv_gain"] == 1.0
    # What open_index must do with them (until it does it itself): pass them to the engine.
    engine = open_index(index, **saved)
    try:
        assert Setting.of(engine.settings) == report.chosen
        assert engine.search("the what E4107", top_k=1).hits[0].id == "rel"
    finally:
        engine.close()


def test_the_grid_for_other_legs() -> None:
    engine, _, _ = _planted_engine()
    kinds = {n: leg.kind for n, leg in engine.legs.items()}
    settings = TuneGrid(rrf_k=(10,), fusions=("rrf",), fetch_multipliers=(2,)).settings(engine.settings, kinds, 10)
    assert [s.weight_map for s in settings] == [{"dense": 1.0, "keyword": w} for w in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)]
    assert {s.fetch_k for s in settings} == {20}
    explicit = TuneGrid(weights=({"dense": 2.0},), fusions=("dbsf",), fetch_multipliers=(4,))
    assert [s.weight_map for s in explicit.settings(engine.settings, kinds, 5)] == [{"dense": 2.0, "keyword": 1.25}]


# ---- the CLI command (registered on a fresh app: cli.py wires it with one line) -----------------------------------


@pytest.fixture
def cli_app() -> Any:
    import typer

    from rrf_retriever.apps.tune_command import register_tune_command
    from rrf_retriever.errors import RRFRetrieverError

    pytest.importorskip("rich")
    from rrf_retriever.apps.console import UsageError

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """rrf-retriever (test app)."""

    from contextlib import contextmanager

    @contextmanager
    def user_errors() -> Any:
        try:
            yield
        except (UsageError, RRFRetrieverError, OSError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None

    register_tune_command(app, user_errors)
    return app


def _demo_index(path: Path) -> Path:
    from rrf_retriever.index.directory import create_index

    ds = load_beir(demo_eval_dir())
    engine = create_index(path, embedder="hashing:64")
    try:
        ids = list(ds.corpus)
        engine.add(ids, [doc_text(ds.corpus[d]) for d in ids], [ds.corpus[d]["metadata"] for d in ids])
    finally:
        engine.close()
    return path


def test_cli_tune_reports_and_saves_only_a_significant_gain(cli_app: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rrf_retriever.index.manifest import read_manifest

    index = _demo_index(tmp_path / "idx")
    before = read_manifest(index)
    result = CliRunner().invoke(cli_app, ["tune", str(demo_eval_dir()), "-d", str(index), "--json", "--folds", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["queries"] == 53 and data["folds"] == 3 and data["metric"] == "ndcg@10"
    manifest = read_manifest(index)
    if data["applied"]:
        assert data["saved_to"] == str(index) and saved_settings(manifest) == data["chosen"]
    else:
        assert "settings" not in manifest and manifest["doc_count"] == before["doc_count"]
    dry = CliRunner().invoke(cli_app, ["tune", str(demo_eval_dir()), "-d", str(index), "--dry-run",
                                       "--metric", "mrr@5", "--max-queries", "20"])
    assert dry.exit_code == 0, dry.output
    assert "mrr@5" in dry.stdout and "| fold |" not in dry.stdout  # rendered as a rich table, not raw markdown
    assert read_manifest(index) == manifest  # a dry run writes nothing


def test_cli_tune_user_errors(cli_app: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    runner = CliRunner()
    missing = runner.invoke(cli_app, ["tune", str(demo_eval_dir()), "-d", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no index" in missing.output
    index = _demo_index(tmp_path / "idx")
    bad = runner.invoke(cli_app, ["tune", str(demo_eval_dir()), "-d", str(index), "--metric", "bleu"])
    assert bad.exit_code == 2 and "unknown metric" in bad.output
    not_beir = runner.invoke(cli_app, ["tune", str(tmp_path), "-d", str(index)])
    assert not_beir.exit_code == 2 and "not a BEIR folder" in not_beir.output


def test_the_real_cli_has_tune(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rrf_retriever.apps.cli import app

    runner = CliRunner()
    help_text = runner.invoke(app, ["tune", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"}, terminal_width=200)
    assert help_text.exit_code == 0 and "BEIR_DIR" in help_text.output and "<bool>" not in help_text.output
    missing = runner.invoke(app, ["tune", str(demo_eval_dir()), "-d", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no index" in missing.output and "Traceback" not in missing.output


def test_a_tuned_setting_is_saved_over_the_other_saved_settings(tmp_path: Path) -> None:
    # PATCH /settings persists top_k and diversity; a later tune must not drop them (it saved its choice alone).
    from rrf_retriever.index.directory import create_index
    from rrf_retriever.index.manifest import persist_settings, read_manifest

    index = tmp_path / "idx"
    engine = create_index(index, embedder="hashing:256")
    engine.add(["rel", "other"], ["error E4107 claim missing", "the what where which"])
    persist_settings(index, {"top_k": 7, "diversity": 0.6})
    engine.update_settings(weights={"keyword": 0.0001})
    try:
        queries = {f"q{i}": "the what E4107" for i in range(6)}
        report = tune(engine, queries, {q: {"rel": 1} for q in queries}, "mrr@1", folds=3)
    finally:
        engine.close()
    assert report.applied
    saved = saved_settings(read_manifest(index))
    assert saved["top_k"] == 7 and saved["diversity"] == 0.6
    assert {k: saved[k] for k in report.chosen.to_dict()} == report.chosen.to_dict()
