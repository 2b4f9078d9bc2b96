"""The ``rrf-retriever`` command: ``index | search | eval | serve | demo`` (extra ``cli``: typer + rich).

The commands work on an index directory (see :mod:`rrf_retriever.layout`) through the engine directly, not the
framework retriever, so they start fast. A user mistake (missing index, wrong path, bad filter, bad weights)
prints one clear line and exits with code 2, never a traceback.

Example:
    $ rrf-retriever index docs/ --index-dir .idx
    $ rrf-retriever search "restore a deleted file" --index-dir .idx --filter session_id=1,2 --explain
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import typer
    from rich.markup import escape as rich_escape
    from rich.table import Table
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "typer", "cli", "the rrf-retriever command") from exc

from rrf_retriever.apps.console import (
    UsageError,
    console,
    err_console,
    hits_table,
    index_documents,
    iter_documents,
    progress_bar,
    trace_table,
)
from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.scope import parse_filter_values
from rrf_retriever.validate import check_number

__all__ = ["app", "iter_documents", "main", "parse_filters"]

EXIT_USAGE = 2

app = typer.Typer(
    name="rrf-retriever",
    help="Hybrid retrieval (Qdrant dense + SQLite FTS5 keyword) fused with weighted Reciprocal Rank Fusion.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)




@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn our errors into one red line and exit code 2 (no traceback)."""
    try:
        yield
    except (UsageError, RRFRetrieverError, OSError) as exc:
        err_console.print(f"[red]error:[/red] {rich_escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from None


# ---- input parsing -----------------------------------------------------------------------------------------


def parse_filters(items: Sequence[str] | None) -> dict[str, Any] | None:
    """``["session_id=1,2", "lang=en"]`` -> ``{"session_id": [1, 2], "lang": "en"}``.

    A comma list means any-of; integers are parsed; a repeated key adds to its values.

    Example:
        >>> parse_filters(["session_id=1,2", "lang=en"])
        {'session_id': [1, 2], 'lang': 'en'}
    """
    if not items:
        return None
    out: dict[str, list[str | int]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not raw.strip():
            msg = f"bad filter {item!r}: write key=value, or key=v1,v2 for any of several values"
            raise UsageError(msg)
        values = parse_filter_values(raw)
        if not values:
            msg = f"bad filter {item!r}: no value after '='"
            raise UsageError(msg)
        out.setdefault(key, []).extend(values)
    return {key: values[0] if len(values) == 1 else values for key, values in out.items()}


def _weights(semantic: float | None, keyword: float | None) -> dict[str, float] | None:
    for name, value in (("--semantic-weight", semantic), ("--keyword-weight", keyword)):
        if value is not None:
            check_number(value, name)
    weights = {}
    if semantic is not None:
        weights["dense"] = semantic
    if keyword is not None:
        weights["keyword"] = keyword
    if weights and not any({"dense": 1.0, "keyword": 1.0, **weights}.values()):
        msg = "--semantic-weight and --keyword-weight are both 0: nothing would be searched"
        raise UsageError(msg)
    return weights or None


# ---- commands ----------------------------------------------------------------------------------------------

IndexDir = typer.Option(..., "--index-dir", "-d", help="The index directory.", show_default=False)


@app.command("index")
def index_command(
    path: Path = typer.Argument(..., help="A BEIR corpus.jsonl (or folder), a jsonl of {id, text, metadata}, "
                                          "or a folder of .txt/.md files.", show_default=False),
    index_dir: Path = IndexDir,
    embedder: str | None = typer.Option(
        None, help="'minilm' (offline all-MiniLM-L6-v2, the default for a new index) or 'hashing[:dim]' "
                   "(plumbing only). An existing index keeps its own; naming another is an error."),
) -> None:
    """Index documents (upsert: re-indexing updates documents with the same id)."""
    from rrf_retriever.layout import close_engine, create_index, save_manifest

    with _user_errors():
        total, docs = iter_documents(path)
        engine = create_index(index_dir, embedder=embedder)
        try:
            done, _ = index_documents(engine, total, docs)
            manifest = save_manifest(index_dir, engine)
        finally:
            close_engine(engine)
    console.print(f"indexed {done} document(s) from {path}; {index_dir} now holds {manifest['doc_count']} "
                  f"(embedder {manifest['embedder']})", highlight=False)


@app.command("search")
def search_command(
    query: str = typer.Argument(..., help="The query text.", show_default=False),
    index_dir: Path = IndexDir,
    top_k: int = typer.Option(10, "--top-k", "-k", help="Number of results."),
    filter_: list[str] | None = typer.Option(
        None, "--filter", "-f", help="key=value metadata filter; repeatable; key=v1,v2 means any of them."),
    exclude: list[str] | None = typer.Option(None, "--exclude", help="A document id never to return; "
                                                                        "repeatable."),
    semantic_weight: float | None = typer.Option(None, help="Weight of the dense leg (default 1)."),
    keyword_weight: float | None = typer.Option(None, help="Weight of the keyword leg (default 1.25)."),
    rrf_k: float | None = typer.Option(None, help="The RRF constant k (default 2)."),
    explain: bool = typer.Option(False, "--explain", help="Show raw leg scores and the per-leg trace."),
    as_json: bool = typer.Option(False, "--json", help="Print the hits and the trace as JSON."),
) -> None:
    """Search an index: dense and keyword legs, fused with weighted RRF."""
    from rrf_retriever.layout import close_engine, open_index

    with _user_errors():
        weights = _weights(semantic_weight, keyword_weight)
        if rrf_k is not None and (not math.isfinite(rrf_k) or rrf_k < 0):
            msg = f"--rrf-k must be a finite number >= 0, got {rrf_k}"
            raise UsageError(msg)
        flt = parse_filters(filter_)
        engine = open_index(index_dir)
        try:
            if rrf_k is not None:
                engine.update_settings(rrf_k=rrf_k)
            result = engine.search(query, top_k=top_k, filter=flt, exclude_ids=exclude or None, weights=weights)
        finally:
            close_engine(engine)
    if as_json:
        sys.stdout.write(json.dumps({"query": query, **result.to_dict()}, ensure_ascii=False) + "\n")
        return
    if not result.hits:
        console.print("no results", highlight=False)
    else:
        console.print(hits_table(result.hits, explain=explain, title=f"{query!r}"))
    if explain:
        console.print(trace_table(result.trace))
        for warning in result.trace.warnings:
            console.print(f"[yellow]degraded:[/yellow] {rich_escape(warning)}", highlight=False)


@app.command("eval")
def eval_command(
    data: Path = typer.Argument(..., help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).",
                                show_default=False),
    index_dir: Path = IndexDir,
    split: str = typer.Option("test", help="The qrels split."),
    max_queries: int | None = typer.Option(None, help="Evaluate only the first N queries."),
    embedder: str | None = typer.Option(None, help="Embedder if the index must be built first "
                                                      "(default minilm)."),
    semantic_weight: float | None = typer.Option(None, help="Weight of the dense leg (default 1)."),
    keyword_weight: float | None = typer.Option(None, help="Weight of the keyword leg (default 1.25)."),
    rrf_k: float | None = typer.Option(None, help="The RRF constant k (default 2)."),
    keep_self_matches: bool = typer.Option(
        False, help="Keep a retrieved document whose id equals the query id (default: drop it, as BEIR does "
                    "for ArguAna)."),
    as_json: bool = typer.Option(False, "--json", help="Print the metrics as JSON."),
) -> None:
    """Evaluate hybrid retrieval on a BEIR folder: nDCG@10, Recall@100, MRR@10.

    If --index-dir holds no index yet, the folder's corpus is indexed into it first.
    """
    from rrf_retriever.evaluation import evaluate, load_beir
    from rrf_retriever.layout import MANIFEST_FILE, close_engine, create_index, open_index, save_manifest

    with _user_errors():
        weights = _weights(semantic_weight, keyword_weight)
        if max_queries is not None and max_queries < 1:
            msg = f"--max-queries must be >= 1, got {max_queries}"
            raise UsageError(msg)
        dataset = load_beir(data, split=split)
        if not (index_dir / MANIFEST_FILE).exists():
            total, docs = iter_documents(data)
            engine = create_index(index_dir, embedder=embedder)
            try:
                index_documents(engine, total, docs, f"indexing {dataset.name}")
                save_manifest(index_dir, engine)
            finally:
                close_engine(engine)
        engine = open_index(index_dir)
        try:
            if rrf_k is not None:
                engine.update_settings(rrf_k=rrf_k)
            queries = list(dataset.queries.items())[:max_queries]
            run: dict[str, dict[str, float]] = {}
            with progress_bar() as progress:
                task = progress.add_task("searching", total=len(queries))
                for qid, text in queries:
                    result = engine.search(text, top_k=100, weights=weights)
                    run[qid] = {h.id: h.score for h in result.hits}
                    progress.update(task, advance=1)
        finally:
            close_engine(engine)
        qrels = {qid: dataset.qrels[qid] for qid, _ in queries}
        metrics = evaluate(run, qrels, ignore_identical_ids=not keep_self_matches)
    if as_json:
        sys.stdout.write(json.dumps({"dataset": dataset.name, "split": split, "queries": len(queries),
                                     "metrics": metrics}) + "\n")
        return
    table = Table(title=f"{dataset.name} ({split}, {len(queries)} queries)", title_justify="left")
    for name in metrics:
        table.add_column(name, justify="right")
    table.add_row(*(f"{v:.4f}" for v in metrics.values()))
    console.print(table)


@app.command("serve")
def serve_command(
    index_dir: Path = IndexDir,
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8000, help="Port."),
) -> None:
    """Serve GET/PATCH /settings, GET /search and GET /health over an index (extra: server)."""
    from rrf_retriever.layout import close_engine, open_index

    with _user_errors():
        from rrf_retriever.apps.service import create_app

        try:
            import uvicorn
        except ImportError as exc:
            from rrf_retriever.errors import missing_dependency

            raise missing_dependency("uvicorn", "server", "rrf-retriever serve") from exc
        engine = open_index(index_dir)
    try:
        uvicorn.run(create_app(engine), host=host, port=port)
    finally:
        close_engine(engine)


@app.command("demo")
def demo_command(
    index_dir: Path | None = typer.Option(None, "--index-dir", help="Where the demo index is cached "
                                                                       "(default: .cache/demo-index)."),
    rebuild: bool = typer.Option(False, help="Rebuild the demo index even if it is up to date."),
) -> None:
    """The main job: index the shipped demo corpus offline and show hybrid results, ranks and weights."""
    from rrf_retriever.apps.demo import run_demo

    with _user_errors():
        run_demo(index_dir=index_dir, rebuild=rebuild, console=console)


def main() -> None:
    """Entry point of the ``rrf-retriever`` script."""
    app()


if __name__ == "__main__":
    main()
