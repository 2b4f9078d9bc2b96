"""What the command line and the demo share: reading documents, indexing them with a progress bar, and the
rich tables of hits and traces. No command is defined here (so neither app imports the other).

Example:
    >>> from pathlib import Path
    >>> iter_documents(Path("/nonexistent"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rrf_retriever.apps.console.UsageError: /nonexistent does not exist
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from rich.console import Console
    from rich.markup import escape as rich_escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from rrf_retriever.errors import missing_dependency

    raise missing_dependency(exc.name or "rich", "cli", "the rrf-retriever command") from exc

from rrf_retriever import strict_json

__all__ = ["TEXT_SUFFIXES", "Documents", "UsageError", "check_beir_files", "console", "err_console", "hits_table",
           "index_documents", "iter_documents", "markdown_title", "progress_bar", "read_documents", "sync_folder",
           "trace_table"]

BATCH = 256
#: The files a folder index reads (the ``index`` command's help and the README name the same).
TEXT_SUFFIXES = (".txt", ".md", ".markdown")
console = Console()
err_console = Console(stderr=True)


class UsageError(Exception):
    """A user mistake the CLI reports in one line (exit code 2)."""


def _jsonl_rows(path: Path) -> Iterator[tuple[int, str, str, dict[str, Any]]]:
    """``(line number, id, text, metadata)`` of a BEIR corpus.jsonl (``_id``, ``title``, ``text``) or of an
    ``{id, text, metadata}`` jsonl; a bad line is a :class:`UsageError` naming it."""
    from rrf_retriever.evaluation import doc_text

    for line_no, row in _json_lines(path):
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
        yield line_no, str(doc_id), doc_text(row), metadata


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` of each non-blank line of a jsonl file; a line that is not JSON is a
    :class:`UsageError` naming it."""
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield line_no, strict_json.loads(line, what=f"{path}:{line_no}")
            except strict_json.DuplicateKeyError as exc:
                raise UsageError(str(exc)) from None
            except json.JSONDecodeError as exc:
                msg = f"{path}:{line_no}: not valid JSON ({exc.msg})"
                raise UsageError(msg) from None


def _check_jsonl(path: Path) -> int:
    """Read the whole file once before anything is written: every line valid, every id once. Returns the count."""
    first_line: dict[str, int] = {}
    for line_no, doc_id, _, _ in _jsonl_rows(path):
        seen = first_line.setdefault(doc_id, line_no)
        if seen != line_no:
            msg = f"{path}:{line_no}: duplicate id {doc_id!r} (first on line {seen}); ids must be unique"
            raise UsageError(msg)
    return len(first_line)


def markdown_title(text: str) -> str | None:
    r"""The first level-1 ATX heading (``# Title``) of a markdown text, outside code fences; None if none.

    Example:
        >>> markdown_title("intro\n```\n# code\n```\n# Backups #\n## Details")
        'Backups'
    """
    fence = None
    for line in text.splitlines():
        stripped = line.strip()
        marker = stripped[:3]
        if marker in ("```", "~~~"):
            fence = None if fence == marker else (fence or marker)
            continue
        if fence is None and len(line) - len(line.lstrip(" ")) < 4 and stripped.startswith("# "):
            title = stripped[2:].strip().rstrip("#").strip()
            if title:
                return title
    return None


@dataclass
class Documents:
    """What :func:`read_documents` found under a path."""

    #: How many documents ``rows`` yields.
    total: int
    #: ``(id, text, metadata)`` of each document, read lazily.
    rows: Iterator[tuple[str, str, dict[str, Any]]]
    #: For a folder of text files: the ids (relative paths) of its non-empty files, which a sync keeps; else None.
    folder_ids: list[str] | None = None
    #: Whitespace-only files skipped.
    skipped: int = 0
    #: Symbolic links skipped because their target is outside the folder (never read).
    links_outside: int = 0
    #: Symbolic links skipped because the file they reach in the folder is already read (under its own path).
    links_duplicate: int = 0


def iter_documents(path: Path) -> tuple[int, Iterator[tuple[str, str, dict[str, Any]]]]:
    """``(number of documents, iterator of (id, text, metadata))`` under ``path`` (:func:`read_documents`)."""
    found = read_documents(path)
    return found.total, found.rows


def _read_text(f: Path) -> str:
    return f.read_text(encoding="utf-8", errors="replace")


def _inside(path: Path, candidates: list[Path]) -> tuple[dict[Path, Path], int, int]:
    """``{path shown (the id): real file to read}`` of the candidates whose real file is inside ``path``, each real
    file once; plus how many links pointed outside and how many reached a file already taken.

    A link is never followed out of the folder. A link to a file inside is read once: the real file under its own
    path when it is itself a candidate, else under the link's path (the first in sorted order).
    """
    root = path.resolve()
    taken: dict[Path, Path] = {}  # real file -> path shown
    outside = duplicate = 0
    for f in sorted(candidates, key=lambda p: (p.is_symlink(), p)):  # real files first: they keep their own path
        real = f.resolve()
        if not real.is_relative_to(root):
            outside += 1
        elif real in taken:
            duplicate += 1
        else:
            taken[real] = f
    return {f: real for real, f in taken.items()}, outside, duplicate


def read_documents(path: Path) -> Documents:
    """The documents under ``path``: a jsonl file, a BEIR folder (its corpus.jsonl), or a folder of text files.

    A jsonl is checked whole first (valid lines, no duplicate id: the error names both lines), so a bad file writes
    nothing. Text files (:data:`TEXT_SUFFIXES`: .txt, .md, .markdown) get their relative path as id and
    ``{"path": ...}`` as metadata; a markdown file's first ``# heading`` is also its ``title`` (the keyword store's
    title field). A whitespace-only file is skipped (counted in ``skipped``). A symbolic link is never followed out
    of the folder (counted in ``links_outside``); a link to a file inside it is read once (``links_duplicate``
    counts the links to a file already read), and directory links are not descended.

    Raises:
        UsageError: nothing to read (a missing path, another kind of file, a folder without text files or with
            only empty ones).
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
        total = _check_jsonl(path)
        return Documents(total, ((doc_id, text, metadata) for _, doc_id, text, metadata in _jsonl_rows(path)))
    candidates = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    reads, outside, duplicate = _inside(path, candidates)  # a link out of the folder is never read
    if not reads:
        links = f" ({outside} symbolic link(s) to files outside the folder skipped)" if outside else ""
        msg = f"{path}: no .jsonl corpus and no {', '.join(TEXT_SUFFIXES)} files in this folder{links}"
        raise UsageError(msg)
    # read once up front to skip the empty ones (the count is the progress bar's total and the sync's list)
    files = [f for f in sorted(reads) if _read_text(reads[f]).strip()]
    if not files:
        msg = f"{path}: its {len(reads)} {'/'.join(TEXT_SUFFIXES)} file(s) are all empty: nothing to index"
        raise UsageError(msg)

    def read() -> Iterator[tuple[str, str, dict[str, Any]]]:
        for f in files:
            rel = f.relative_to(path).as_posix()
            text = _read_text(reads[f])  # the real file checked to be inside, not the link again
            metadata: dict[str, Any] = {"path": rel}
            if f.suffix.lower() in (".md", ".markdown"):
                title = markdown_title(text)
                if title:
                    metadata["title"] = title
            yield rel, text, metadata

    ids = [f.relative_to(path).as_posix() for f in files]
    return Documents(len(files), read(), folder_ids=ids, skipped=len(reads) - len(files), links_outside=outside,
                     links_duplicate=duplicate)


def sync_folder(engine: Any, kept: Sequence[str]) -> int:
    """Delete the documents of files no longer in the folder: every document with a ``path`` metadata (what a
    folder index writes) whose path is not in ``kept``. Returns how many were deleted (journaled, all or none)."""
    flt = {"$and": [{"path": {"$exists": True}}, {"path": {"$nin": list(kept)}}]}
    return int(engine.delete_where(flt))


def check_beir_files(root: Path, split: str) -> None:
    """Check a BEIR folder's queries.jsonl and qrels/<split>.tsv line by line (the corpus is checked when it is
    indexed), so a bad file is one :class:`UsageError` naming file and line, never a traceback."""
    queries_file, qrels_file = root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    for f in (root / "corpus.jsonl", queries_file, qrels_file):
        if not f.is_file():
            msg = f"not a BEIR folder: {f} is missing"
            raise UsageError(msg)
    query_ids: set[str] = set()
    try:
        for line_no, row in _json_lines(queries_file):
            if not isinstance(row, dict) or "_id" not in row or not isinstance(row.get("text"), str):
                msg = f"{queries_file}:{line_no}: each line needs an '_id' and a 'text' string"
                raise UsageError(msg)
            query_ids.add(str(row["_id"]))
        judged = set()
        with qrels_file.open(encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                cells = line.rstrip("\r\n").split("\t")
                if not line.strip() or (line_no == 1 and cells[0] == "query-id"):
                    continue
                if len(cells) < 3:
                    msg = f"{qrels_file}:{line_no}: expected 3 tab-separated columns (query-id, corpus-id, score)"
                    raise UsageError(msg)
                try:
                    int(cells[2])
                except ValueError:
                    msg = f"{qrels_file}:{line_no}: the score {cells[2]!r} is not an integer"
                    raise UsageError(msg) from None
                judged.add(cells[0])
    except UnicodeDecodeError as exc:
        msg = f"{root}: a BEIR file is not UTF-8 ({exc})"
        raise UsageError(msg) from None
    if not judged & query_ids:
        msg = f"{qrels_file}: no query of the qrels is in {queries_file.name} (nothing to evaluate)"
        raise UsageError(msg)


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True,
    )


def index_documents(engine: Any, total: int, docs: Iterator[tuple[str, str, dict[str, Any]]],
                    description: str = "indexing") -> tuple[int, str]:
    """Upsert documents in batches with a progress bar. Returns (count, sha256 of the ids and texts)."""
    digest = hashlib.sha256()
    done = 0
    with progress_bar() as progress:
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
