"""The ``rrf-retriever`` command: ``index | search | eval | tune | serve | demo`` (extra ``cli``: typer + rich).

The commands work on an index directory (see :mod:`rrf_retriever.index.directory`) through the engine directly, not the
framework retriever, so they start fast. A user mistake (missing index, wrong path, bad filter, bad weights)
prints one clear line and exits with code 2, never a traceback. The ``search`` and ``eval`` flags become the
engine's search options in one function, :func:`rrf_retriever.apps.cli_options.search_options`.

Example:
    $ rrf-retriever index docs/ --index-dir .idx
    $ rrf-retriever search "restore a deleted file" --index-dir .idx --filter session_id=1,2 --explain
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

try:
    import typer
    from rich.markup import escape as rich_escape
    from rich.table import Table
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "typer", "cli", "the rrf-retriever command") from exc

from rrf_retriever.apps.cli_help import CliGroup, CliTyper
from rrf_retriever.apps.cli_options import check_host, check_port, search_options
from rrf_retriever.apps.console import (
    UsageError,
    check_beir_files,
    console,
    err_console,
    hits_table,
    index_documents,
    iter_documents,
    progress_bar,
    read_documents,
    sync_folder,
    trace_table,
)
from rrf_retriever.apps.tune_command import register_tune_command
from rrf_retriever.engine.settings import DEFAULT_LEG_WEIGHTS
from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.fusion import DEFAULT_RRF_K
from rrf_retriever.metadata import public_result_dict

__all__ = ["app", "main"]

EXIT_USAGE = 2

app = CliTyper(
    name="rrf-retriever",
    cls=CliGroup,
    help="Hybrid retrieval (Qdrant dense + BM25 keyword) fused with weighted Reciprocal Rank Fusion.",
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
        err_console.print(f"[red]error:[/red] {rich_escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from None


# ---- commands ----------------------------------------------------------------------------------------------

_DENSE_WEIGHT_HELP = f"Weight of the dense leg (default {DEFAULT_LEG_WEIGHTS['dense']:g})."
_KEYWORD_WEIGHT_HELP = f"Weight of the keyword leg (default {DEFAULT_LEG_WEIGHTS['keyword']:g})."
IndexDir = typer.Option(..., "--index-dir", "-d", help="The index directory.", show_default=False)


@app.command("index")
def index_command(
    path: Path = typer.Argument(..., metavar="PATH", show_default=False,
                                help="A BEIR corpus.jsonl (or folder), a jsonl of {id, text, metadata} lines, or a "
                                     "folder of .txt/.md/.markdown files (a markdown file's first '# heading' is its "
                                     "title; empty files and links out of the folder are skipped)."),
    index_dir: Path = IndexDir,
    embedder: str | None = typer.Option(
        None, help="'minilm-int8' (offline all-MiniLM-L6-v2 in int8, the default for a new index: 2-2.5x faster "
                   "indexing than fp32, hybrid nDCG@10 within noise on five collections), 'minilm' (the exact fp32 "
                   "model) or 'hashing[:dim]' (plumbing only). An existing index keeps its own; naming another is "
                   "an error."),
    language: str | None = typer.Option(
        None, help="Keyword analyzer language of a new index ('german', 'french', 'es', ...: Snowball stemming and "
                   "stopwords; 'english' to skip detection). Default: detected on the first 500 documents "
                   "(English when unsure); CJK text is cut into bigrams either way. An index keeps its own."),
    keyword: str | None = typer.Option(
        None, help="Keyword store of a new index: qdrant-edge (default), fts5, bm25, qdrant. An index keeps its own."),
    dense: str | None = typer.Option(
        None, help="Dense store of a new index: qdrant-edge (default) or qdrant. An index keeps its own."),
    url: str | None = typer.Option(
        None, help="With --keyword qdrant --dense qdrant: the Qdrant server or cluster holding both legs in one "
                   "collection (API key from QDRANT_API_KEY). Without it both legs share one local collection."),
    index_key: list[str] = typer.Option(
        [], "--index-key", help="A metadata key searches filter on (repeatable, e.g. --index-key session_id): the "
                                "Qdrant stores index it before writing documents (before their HNSW graph is built); "
                                "kept in the manifest."),
) -> None:
    """Index documents (upsert: re-indexing updates documents with the same id). A folder is synced: the documents
    of its files deleted or emptied since the last run are deleted."""
    from itertools import chain, islice

    from rrf_retriever.analysis.detect import DEFAULT_SAMPLE, detect_language
    from rrf_retriever.index.directory import create_index
    from rrf_retriever.index.manifest import MANIFEST_FILE, refresh_manifest, save_manifest

    with _user_errors():
        found = read_documents(path)  # a jsonl is checked whole first: a bad line writes nothing
        rows, detection = found.rows, None
        if language is None and not (index_dir / MANIFEST_FILE).exists():  # a new index: its corpus's language
            head = list(islice(rows, DEFAULT_SAMPLE))
            detection = detect_language([text for _, text, _ in head])
            language, rows = detection.language, chain(head, rows)
            console.print(f"keyword analyzer language: {detection.language} ({detection.reason})", highlight=False)
        engine = create_index(index_dir, embedder=embedder, analyzer=language, keyword=keyword, dense=dense, url=url,
                              index_keys=index_key)
        try:
            done, _ = index_documents(engine, found.total, rows)
            # after the upsert: an interrupted run deletes nothing
            removed = sync_folder(engine, found.folder_ids) if found.folder_ids is not None else 0
            extra = {} if detection is None else {"language_detection": detection.as_dict()}
            manifest = save_manifest(index_dir, engine, **extra)
            if engine.leg_probe.measured is not None:  # how the legs are weighted on this corpus, and why
                console.print(str(engine.leg_probe.explain(engine.settings.weights, engine.settings.weak_legs)),
                              highlight=False, markup=False)
        except BaseException:
            # Interrupted (Ctrl-C, a bad document): the manifest still counts what the stores really hold.
            with suppress(Exception):
                refresh_manifest(index_dir, engine)
            raise
        finally:
            engine.close()
    links = [f"{found.links_outside} symbolic link(s) to files outside the folder" if found.links_outside else "",
             f"{found.links_duplicate} link(s) to a file already indexed" if found.links_duplicate else ""]
    notes = "".join([f"; skipped {found.skipped} empty file(s)" if found.skipped else "",
                     f"; skipped {' and '.join(filter(None, links))}" if any(links) else "",
                     f"; deleted {removed} document(s) of files no longer there" if removed else ""])
    console.print(f"indexed {done} document(s) from {path}{notes}; {index_dir} now holds {manifest['doc_count']} "
                  f"(embedder {manifest['embedder']})", highlight=False)


@app.command("search")
def search_command(
    query: str = typer.Argument(..., metavar="QUERY", help="The query text.", show_default=False),
    index_dir: Path = IndexDir,
    top_k: int = typer.Option(10, "--top-k", "-k", help="Number of results."),
    filter_: list[str] | None = typer.Option(
        None, "--filter", "-f", metavar="KEY[:TYPE]=VALUES",
        help="Metadata filter; repeatable (every key must match). key=v1,v2 means any of them. A plain value is an "
             "integer if it parses, else a string: write key:str=42 for the string '42' (key:int=, key:bool=true "
             "also work). key= with no value is an error."),
    filter_json: str | None = typer.Option(
        None, "--where", "--filter-json", metavar="JSON",
        help='The filter as a JSON object in the full language, exactly typed: \'{"session_id": ["42"], '
             '"n": {"$gte": 3}}\' ($eq $ne $in $nin $gt $gte $lt $lte $exists, $and $or $not). AND-ed with --filter.'),
    exclude: list[str] | None = typer.Option(None, "--exclude", metavar="ID",
                                             help="A document id never to return; repeatable."),
    offset: int = typer.Option(0, "--offset", help="Skip this many results (page 2 of -k 10: --offset 10)."),
    pinned: list[str] | None = typer.Option(None, "--pinned", metavar="ID",
                                            help="A document always in the results when it passes the filter; "
                                                 "repeatable."),
    threshold: float | None = typer.Option(
        None, "--threshold", metavar="0..1", help="Keep hits whose normalized score (1: top in every leg) reaches it."),
    diversity: float | None = typer.Option(
        None, "--diversity", metavar="0..1",
        help="MMR over the candidates' stored vectors: the lambda (1 = the fused order, lower = more diverse)."),
    reranker: str | None = typer.Option(
        None, "--reranker", metavar="MODULE:ATTR",
        help="A reranker to import: a callable (query, texts) -> scores or an object with rerank_hits (a class is "
             "built with no arguments; a LangChain compressor or LlamaIndex postprocessor wrapped in "
             "rrf_retriever.langchain.CompressorReranker / rrf_retriever.llama_index.PostprocessorReranker)."),
    rerank_k: int | None = typer.Option(None, "--rerank-k", help="Candidates the reranker sees (default "
                                                                  "max(2 * top-k, 20))."),
    fetch_k: int | None = typer.Option(None, "--fetch-k", help="Hits each leg fetches, the candidates --diversity "
                                                                "re-orders (default max(2 * top-k, 40); at most "
                                                                "10000)."),
    dense_path: list[str] | None = typer.Option(
        None, "--dense-path", metavar="NAME[=FILTER_JSON]",
        help="An extra dense leg over the dense store with its own filter instead of --filter (NAME alone: "
             "unfiltered; NAME='{\"session_id\": [2]}'); tagged NAME in the ranks; repeatable."),
    links_key: str | None = typer.Option(
        None, "--links-key", metavar="KEY", help="1-hop expansion: append the neighbours named in metadata[KEY]."),
    expand_limit: int | None = typer.Option(None, "--expand-limit", help="At most this many neighbours "
                                                                          "(default: top-k)."),
    semantic_weight: float | None = typer.Option(None, help=_DENSE_WEIGHT_HELP),
    keyword_weight: float | None = typer.Option(None, help=_KEYWORD_WEIGHT_HELP),
    rrf_k: float | None = typer.Option(None, help=f"The RRF constant k (default {DEFAULT_RRF_K:g})."),
    explain: bool = typer.Option(False, "--explain", help="Show raw leg scores and the per-leg trace."),
    as_json: bool = typer.Option(False, "--json", help="Print the hits and the trace as JSON."),
) -> None:
    """Search an index: dense and keyword legs, fused with weighted RRF."""
    from rrf_retriever.index.directory import open_index

    with _user_errors():
        if rrf_k is not None and (not math.isfinite(rrf_k) or rrf_k < 0):
            msg = f"--rrf-k must be a finite number >= 0, got {rrf_k}"
            raise UsageError(msg)
        loaded = None
        if reranker is not None:
            from rrf_retriever.apps.rerankers import load_reranker

            loaded = load_reranker(reranker)
        options = search_options(
            filters=filter_, filter_json=filter_json, dense_path=dense_path, semantic_weight=semantic_weight,
            keyword_weight=keyword_weight, top_k=top_k, exclude_ids=exclude, offset=offset, pinned_ids=pinned,
            score_threshold=threshold, diversity=diversity, reranker=loaded, rerank_k=rerank_k,
            expand_limit=expand_limit, fetch_k=fetch_k)
        engine = open_index(index_dir, **({"links_key": links_key} if links_key else {}))
        try:
            if rrf_k is not None:
                engine.update_settings(rrf_k=rrf_k)
            result = engine.search(query, options)
        finally:
            engine.close()
    if as_json:
        sys.stdout.write(json.dumps({"query": query, **public_result_dict(result)}, ensure_ascii=False) + "\n")
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
    data: Path = typer.Argument(..., metavar="BEIR_DIR", show_default=False,
                                help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)."),
    index_dir: Path = IndexDir,
    split: str = typer.Option("test", help="The qrels split."),
    max_queries: int | None = typer.Option(None, help="Evaluate only the first N queries."),
    embedder: str | None = typer.Option(None, help="Embedder if the index must be built first "
                                                      "(default minilm)."),
    semantic_weight: float | None = typer.Option(None, help=_DENSE_WEIGHT_HELP),
    keyword_weight: float | None = typer.Option(None, help=_KEYWORD_WEIGHT_HELP),
    rrf_k: float | None = typer.Option(None, help=f"The RRF constant k (default {DEFAULT_RRF_K:g})."),
    keep_self_matches: bool = typer.Option(
        False, "--keep-self-matches", help="Keep a retrieved document whose id equals the query id (default: drop "
                                           "it, as BEIR does for ArguAna)."),
    as_json: bool = typer.Option(False, "--json", help="Print the metrics as JSON."),
) -> None:
    """Evaluate hybrid retrieval on a BEIR folder: nDCG@10, Recall@100, MRR@10.

    Each judged query is searched with its own metadata.filter, and the figures are those tune reports for the
    current settings (rrf_retriever.tuning.evaluate_index). If --index-dir holds no index yet, the folder's corpus
    is indexed into it first.
    """
    from rrf_retriever.index.directory import create_index, open_index
    from rrf_retriever.index.manifest import MANIFEST_FILE, refresh_manifest
    from rrf_retriever.tuning.index_eval import evaluate_index
    from rrf_retriever.tuning.judged import load_judged_queries

    with _user_errors():
        weights = search_options(semantic_weight=semantic_weight, keyword_weight=keyword_weight).weights
        if max_queries is not None and max_queries < 1:
            msg = f"--max-queries must be >= 1, got {max_queries}"
            raise UsageError(msg)
        check_beir_files(data, split)
        total, docs = iter_documents(data)  # checks corpus.jsonl line by line
        try:
            queries, qrels = load_judged_queries(data, split)  # the queries tune reads, with their filters
        except RRFRetrieverError:
            raise  # our own message already
        except (ValueError, KeyError, IndexError, TypeError) as exc:  # what check_beir_files did not foresee
            msg = f"cannot read the BEIR folder {data}: {type(exc).__name__}: {exc}"
            raise UsageError(msg) from None
        qrels = dict(list(qrels.items())[:max_queries])
        if not (index_dir / MANIFEST_FILE).exists():
            engine = create_index(index_dir, embedder=embedder)
            try:
                index_documents(engine, total, docs, f"indexing {data.name}")
            finally:
                with suppress(Exception):
                    refresh_manifest(index_dir, engine)
                engine.close()
        engine = open_index(index_dir)
        try:
            if rrf_k is not None:
                engine.update_settings(rrf_k=rrf_k)
            if weights:
                engine.update_settings(weights=weights)  # this run's settings, not saved
            _check_judged_documents(engine, qrels, index_dir)
            with progress_bar() as progress:
                task = progress.add_task("searching", total=len(qrels))
                figures = evaluate_index(engine, queries, qrels, ignore_identical_ids=not keep_self_matches,
                                         progress=lambda done, _: progress.update(task, completed=done))
        finally:
            engine.close()
        metrics = figures.metrics
    if as_json:
        sys.stdout.write(json.dumps({"dataset": data.name, "split": split, "queries": len(qrels),
                                     "metrics": metrics}) + "\n")
        return
    table = Table(title=f"{data.name} ({split}, {len(qrels)} queries)", title_justify="left")
    for name in metrics:
        table.add_column(name, justify="right")
    table.add_row(*(f"{v:.4f}" for v in metrics.values()))
    console.print(table)


def _check_judged_documents(engine: Any, qrels: dict[str, dict[str, int]], index_dir: Path) -> None:
    """Refuse an index holding none of the judged documents (every metric would be a silent 0.0); warn when some
    are missing (their queries can only score lower)."""
    judged = sorted({doc_id for docs in qrels.values() for doc_id, grade in docs.items() if grade > 0})
    if not judged:
        msg = "the qrels judge no document relevant (every score is 0): nothing to evaluate"
        raise UsageError(msg)
    found: set[str] = set()
    for start in range(0, len(judged), 1000):
        found.update(r.id for r in engine.get(judged[start:start + 1000]))
    if not found:
        shown = ", ".join(judged[:3]) + (", ..." if len(judged) > 3 else "")
        msg = (f"none of the {len(judged)} judged document ids ({shown}) is in the index at {index_dir}: was it "
               "built from another corpus? Use a new --index-dir to index this folder's corpus")
        raise UsageError(msg)
    if len(found) < len(judged):
        err_console.print(f"[yellow]warning:[/yellow] only {len(found)} of {len(judged)} judged documents are in "
                          f"the index at {rich_escape(str(index_dir))}; the metrics undercount", highlight=False,
                          soft_wrap=True)


@app.command("serve")
def serve_command(
    ctx: typer.Context,
    index_dir: Path = IndexDir,
    host: str = typer.Option("127.0.0.1", callback=check_host,
                             help="Interface to bind: an IP address or a host name (0.0.0.0 or :: = every one)."),
    port: int = typer.Option(8000, callback=check_port, help="Port, 1 to 65535."),
    api_key: str | None = typer.Option(None, envvar="RRF_RETRIEVER_API_KEY", show_default=False, metavar="KEY",
                                       help="Require 'Authorization: Bearer KEY' on every route but /health and "
                                            "/docs. On the command line other local users can read it: prefer "
                                            "the environment variable or --api-key-file."),
    api_key_file: Path | None = typer.Option(None, show_default=False, metavar="PATH",
                                             help="Read the API key from this file (one line; chmod 600)."),
    expose_scores: bool = typer.Option(False, "--expose-scores", help="Return the keyword legs' raw BM25 scores "
                                       "(collection-wide statistics: they tell about other tenants' documents)."),
    allowed_host: list[str] | None = typer.Option(None, "--allowed-host", show_default=False, metavar="HOST",
                                                  help="A Host header to accept besides localhost, 127.0.0.1, ::1 "
                                                       "and the bound host (repeatable; '*.x.org', '*' = any)."),
    max_body: int | None = typer.Option(None, show_default=False, metavar="BYTES",
                                        help="Largest request body in bytes (default 1 MiB); larger is a 413."),
    reranker: str | None = typer.Option(
        None, "--reranker", metavar="MODULE:ATTR",
        help="Rerank every search with this (a callable (query, texts) -> scores or an object with rerank_hits, "
             "as for search --reranker); requests turn it off with \"rerank\": false. Requests cannot name code."),
) -> None:
    """Serve /settings, /search (GET and POST), /documents (POST, DELETE) and /health over an index (extra: server)."""
    from rrf_retriever.index.directory import open_index

    with _user_errors():
        from rrf_retriever.apps.serve_key import serve_api_key
        from rrf_retriever.apps.service import DEFAULT_ALLOWED_HOSTS, DEFAULT_MAX_BODY, create_app

        # by name: typer's commands use its own copy of click, whose ParameterSource is another class
        source = getattr(ctx.get_parameter_source("api_key"), "name", None)
        api_key = serve_api_key(api_key, api_key_file, on_command_line=source == "COMMANDLINE")

        try:
            import uvicorn
        except ImportError as exc:
            from rrf_retriever.errors import missing_dependency

            raise missing_dependency("uvicorn", "server", "rrf-retriever serve") from exc
        bound = [] if host in ("0.0.0.0", "::", "") else [host]  # a wildcard address is no Host name
        hosts = [*DEFAULT_ALLOWED_HOSTS, *bound, *(allowed_host or [])]
        loaded = None
        if reranker is not None:
            from rrf_retriever.apps.rerankers import load_reranker

            loaded = load_reranker(reranker)
        engine = open_index(index_dir)
        try:
            if loaded is not None:
                engine.update_settings(reranker=loaded)
            service = create_app(engine, api_key=api_key, allowed_hosts=hosts, index_path=index_dir,
                                 max_body=DEFAULT_MAX_BODY if max_body is None else max_body,
                                 expose_keyword_scores=expose_scores)
        except BaseException:
            engine.close()
            raise
    if api_key is None and host not in ("127.0.0.1", "localhost", "::1"):
        err_console.print(f"[yellow]warning:[/yellow] serving on {rich_escape(host)} without --api-key",
                          highlight=False)
    try:
        uvicorn.run(service, host=host, port=port)
    finally:
        engine.close()


@app.command("demo")
def demo_command(
    index_dir: Path | None = typer.Option(
        None, "--index-dir", "-d", metavar="PATH",
        help="Where the demo index is cached (default: $RRF_RETRIEVER_CACHE_DIR/demo-index, else "
             "~/.cache/rrf-retriever/demo-index)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Rebuild the demo index even if it is up to date."),
) -> None:
    """The main job: index the shipped demo corpus offline and show hybrid results, ranks and weights."""
    from rrf_retriever.apps.demo import run_demo

    with _user_errors():
        run_demo(index_dir=index_dir, rebuild=rebuild, console=console)


# ``tune``: the command lives beside tune() in rrf_retriever/tuning/tuner.py (same error handling as the others).
register_tune_command(app, _user_errors)


def main() -> None:
    """Entry point of the ``rrf-retriever`` script."""
    app()


if __name__ == "__main__":
    main()
