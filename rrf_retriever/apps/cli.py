"""The ``rrf-retriever`` command: ``index | search | eval | serve | demo`` (extra ``cli``: typer + rich).

The commands work on an index directory (see :mod:`rrf_retriever.layout`) through the engine directly, not the
framework retriever, so they start fast. A user mistake (missing index, wrong path, bad filter, bad weights)
prints one clear line and exits with code 2, never a traceback.

Example:
    $ rrf-retriever index docs/ --index-dir .idx
    $ rrf-retriever search "restore a deleted file" --index-dir .idx --filter session_id=1,2 --explain
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import typer
    from rich.console import Console
    from rich.markup import escape as rich_escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "typer", "cli", "the rrf-retriever command") from exc

from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.scope import parse_filter_values
from rrf_retriever.validate import check_number

__all__ = ["app", "iter_documents", "main", "parse_filters"]

EXIT_USAGE = 2
BATCH = 256
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")

app = typer.Typer(
    name="rrf-retriever",
    help="Hybrid retrieval (Qdrant dense + SQLite FTS5 keyword) fused with weighted Reciprocal Rank Fusion.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)


class UsageError(Exception):
    """A user mistake the CLI reports in one line (exit code 2)."""


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


def _read_jsonl(path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Rows of a BEIR corpus.jsonl (``_id``, ``title``, ``text``) or of a ``{id, text, metadata}`` jsonl."""
    from rrf_retriever.evaluation import doc_text

    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                msg = f"{path}:{line_no}: not valid JSON ({exc.msg})"
                raise UsageError(msg) from None
            doc_id = row.get("_id", row.get("id")) if isinstance(row, dict) else None
            if doc_id is None or not isinstance(row.get("text"), str):
                msg = f"{path}:{line_no}: each line needs an 'id' (or BEIR '_id') and a 'text' string"
                raise UsageError(msg)
            metadata = row.get("metadata") or {}
            if not isinstance(metadata, dict):
                msg = f"{path}:{line_no}: 'metadata' must be an object"
                raise UsageError(msg)
            metadata = dict(metadata)
            if row.get("title"):
                metadata.setdefault("title", row["title"])
            yield str(doc_id), doc_text(row), metadata


def iter_documents(path: Path) -> tuple[int, Iterator[tuple[str, str, dict[str, Any]]]]:
    """The documents under ``path``: a jsonl file, a BEIR folder (its corpus.jsonl), or a folder of text files.

    Text files (.txt, .md, .markdown, .rst) get their relative path as id and ``{"path": ...}`` as metadata.

    Returns:
        (number of documents, iterator of (id, text, metadata)).
    """
    if not path.exists():
        msg = f"{path} does not exist"
        raise UsageError(msg)
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        path = path / "corpus.jsonl"
    if path.is_file():
        if path.suffix != ".jsonl":
            msg = f"{path}: expected a .jsonl file (BEIR corpus or {{id, text, metadata}} lines) or a folder"
            raise UsageError(msg)
        with path.open(encoding="utf-8") as fh:
            total = sum(1 for line in fh if line.strip())
        return total, _read_jsonl(path)
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    if not files:
        msg = f"{path}: no .jsonl corpus and no {', '.join(TEXT_SUFFIXES)} files in this folder"
        raise UsageError(msg)

    def read() -> Iterator[tuple[str, str, dict[str, Any]]]:
        for f in files:
            rel = f.relative_to(path).as_posix()
            yield rel, f.read_text(encoding="utf-8", errors="replace"), {"path": rel}

    return len(files), read()


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True,
    )


def index_documents(engine: Any, total: int, docs: Iterator[tuple[str, str, dict[str, Any]]],
                    description: str = "indexing") -> tuple[int, str]:
    """Upsert documents in batches with a progress bar. Returns (count, sha256 of the ids and texts)."""
    digest = hashlib.sha256()
    done = 0
    with _progress() as progress:
        task = progress.add_task(description, total=total)
        batch: list[tuple[str, str, dict[str, Any]]] = []

        def flush() -> None:
            nonlocal done
            engine.add([b[0] for b in batch], [b[1] for b in batch], [b[2] for b in batch])
            done += len(batch)
            progress.update(task, advance=len(batch))
            batch.clear()

        for doc in docs:
            digest.update(json.dumps([doc[0], doc[1], doc[2]], sort_keys=True).encode("utf-8"))
            batch.append(doc)
            if len(batch) >= BATCH:
                flush()
        if batch:
            flush()
    return done, digest.hexdigest()


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


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def trace_table(trace: Any) -> Table:
    """A rich table of a query's trace: per leg weight, called, latency, hits, error or note."""
    table = Table(title=f"trace: rrf_k={trace.rrf_k:g} top_k={trace.top_k} fetch_k={trace.fetch_k} "
                        f"embed={trace.embed_ms:.1f} ms fusion={trace.fusion_ms:.2f} ms total={trace.total_ms:.1f} ms",
                  title_justify="left")
    for col in ("leg", "weight", "called", "latency ms", "hits", "error / note"):
        table.add_column(col)
    for leg in trace.legs:
        table.add_row(leg.name, f"{leg.weight:g}", "yes" if leg.called else "no", f"{leg.latency_ms:.1f}",
                      str(leg.hits), rich_escape(leg.error or leg.note or ""))
    return table


def hits_table(hits: Sequence[Any], *, explain: bool, relevant: frozenset[str] = frozenset(),
               title: str | None = None, metadata_keys: Sequence[str] = (), width: int | None = None) -> Table:
    """A rich table of fused hits: rank, id, fused score, dense and keyword ranks (and raw scores), the
    ``metadata_keys`` asked, and the start of the text (cut to fit ``width``, default the console's)."""
    table = Table(title=title, title_justify="left")
    headers = ["#", "id", "fused", "dense\nrank", "keyword\nrank"]
    if explain:
        headers += ["dense\nscore", "keyword\nscore"]
    headers += list(metadata_keys)
    rows = []
    for i, h in enumerate(hits, 1):
        mark = "✔ " if h.id in relevant else ""
        row = [str(i), f"{mark}{h.id}", f"{h.score:.5f}", str(h.ranks.get("dense", "-")),
               str(h.ranks.get("keyword", "-"))]
        if explain:
            row += [_fmt(h.scores.get("dense")), _fmt(h.scores.get("keyword"))]
        row += [str(h.metadata.get(key, "-")) for key in metadata_keys]
        rows.append(row)
    # Cut the text so each row stays on one line: the numbers matter more than the prose.
    widths = [max([len(line) for line in header.split("\n")] + [len(r[c]) for r in rows])
              for c, header in enumerate(headers)]
    text_width = (width or console.width) - sum(w + 3 for w in widths) - 4
    show_text = text_width >= 12  # a narrow terminal drops the text, never the numbers
    for c, header in enumerate(headers):
        table.add_column(header, justify="left" if c == 1 else "right", no_wrap=True)
    if show_text:
        table.add_column("text")
    for h, row in zip(hits, rows):
        text = " ".join(h.text.split())
        text = text if len(text) <= text_width else text[: text_width - 1] + "…"
        cells = [rich_escape(cell) for cell in row] + ([rich_escape(text)] if show_text else [])
        if h.id in relevant:
            cells[1] = f"[green]{cells[1]}[/green]"
        table.add_row(*cells)
    return table


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
            with _progress() as progress:
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
