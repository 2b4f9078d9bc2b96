"""``rrf-retriever tune -d INDEX BEIR_DIR``: :func:`rrf_retriever.tuning.tune` on an index directory, with a console.

Example:
    >>> from rrf_retriever.apps.tune_command import tune_index  # doctest: +SKIP
    >>> print(tune_index(".idx", "rrf_retriever/data/demo_eval").to_markdown())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the tuner is imported by the command that runs it, not by every CLI start (`search`)
    from rrf_retriever.tuning.report import TuneReport

__all__ = ["register_tune_command", "tune_index"]


def tune_index(
    index_dir: str | os.PathLike[str],
    data: str | os.PathLike[str],
    *,
    split: str = "test",
    metric: str = "ndcg@10",
    folds: int = 5,
    seed: int = 0,
    apply: bool = True,
    max_queries: int | None = None,
    ignore_identical_ids: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> TuneReport:
    """``rrf-retriever tune -d INDEX BEIR_DIR`` without the console: open the index, tune on the folder's judged
    queries (their ``metadata.filter`` applied), save an applied setting in the manifest, close the index."""
    from rrf_retriever.index.directory import open_index
    from rrf_retriever.tuning.judged import load_judged_queries
    from rrf_retriever.tuning.tuner import tune

    queries, qrels = load_judged_queries(data, split)
    if max_queries is not None:
        qrels = dict(list(qrels.items())[:max_queries])
    engine = open_index(index_dir)  # with the settings saved for this index: tune from what it uses
    try:
        return tune(engine, queries, qrels, metric, folds, apply=apply, index_dir=index_dir if apply else None,
                    seed=seed, ignore_identical_ids=ignore_identical_ids, progress=progress)
    finally:
        engine.close()


def register_tune_command(app: Any, user_errors: Callable[[], Any]) -> None:
    """Add ``tune`` to the ``rrf-retriever`` typer app (``user_errors``: the CLI's error-to-exit-2 context)."""
    import sys

    import typer

    from rrf_retriever.apps.console import check_beir_files, console, progress_bar

    @app.command("tune")
    def tune_command(
        data: Path = typer.Argument(..., metavar="BEIR_DIR", show_default=False,
                                    help="A BEIR folder with judged queries (queries.jsonl, qrels/<split>.tsv); a "
                                         "query's metadata.filter is applied."),
        index_dir: Path = typer.Option(..., "--index-dir", "-d", help="The index directory.", show_default=False),
        split: str = typer.Option("test", help="The qrels split."),
        metric: str = typer.Option("ndcg@10", help="ndcg@K, mrr@K, recall@K, precision@K, map@K or hit_rate@K."),
        folds: int = typer.Option(5, help="Folds of the cross-validation."),
        seed: int = typer.Option(0, help="Seed of the fold split and the bootstrap."),
        max_queries: int | None = typer.Option(None, help="Use only the first N judged queries."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Report only: change and save nothing."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Fit rrf_k, weights, fusion and fetch depth to judged queries (k-fold CV, paired bootstrap); a significant
        gain is saved in the index manifest, otherwise the current settings stay."""
        with user_errors():
            check_beir_files(data, split)
            with progress_bar() as bar:
                task = bar.add_task("searching each leg", total=None)
                report = tune_index(index_dir, data, split=split, metric=metric, folds=folds, seed=seed,
                                    apply=not dry_run, max_queries=max_queries,
                                    progress=lambda done, total: bar.update(task, completed=done, total=total))
        if as_json:
            sys.stdout.write(json.dumps(report.to_dict()) + "\n")
            return
        from rich.markdown import Markdown

        console.print(Markdown(report.to_markdown()))
