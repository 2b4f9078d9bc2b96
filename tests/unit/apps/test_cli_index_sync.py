"""``rrf-retriever index FOLDER`` again is a sync: the documents of files no longer in the folder are deleted (and
counted), whitespace-only files are skipped (and counted), and exactly the suffixes the help and the README name
are read. Real stores with the hashing embedder (plumbing)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from rrf_retriever.apps import console
from rrf_retriever.apps.cli import app
from rrf_retriever.index.directory import open_index

runner = CliRunner()
EMB = "hashing:16"
README = Path(__file__).resolve().parents[3] / "README.md"


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, " ".join(result.output.split())


def ids(index_dir: Path) -> list[str]:
    engine = open_index(index_dir)
    try:
        return sorted(r.id for r in engine.get([f"{n}.txt" for n in "abcdef"] + ["g.md", "h.rst", "j.jsonl-doc"]))
    finally:
        engine.close()


def test_a_reindex_deletes_the_documents_of_deleted_files_and_says_how_many(tmp_path: Path) -> None:
    docs, idx = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    for name in "abcdef":
        (docs / f"{name}.txt").write_text(f"note {name} about backups")
    code, out = run("index", docs, "-d", idx, "--embedder", EMB)
    assert code == 0 and "now holds 6" in out, out
    (docs / "b.txt").unlink()
    (docs / "c.txt").unlink()
    code, out = run("index", docs, "-d", idx, "--embedder", EMB)
    assert code == 0, out
    assert "indexed 4" in out and "now holds 4" in out and "deleted 2" in out, out
    assert ids(idx) == ["a.txt", "d.txt", "e.txt", "f.txt"]


def test_a_jsonl_document_without_a_path_survives_a_folder_sync(tmp_path: Path) -> None:
    docs, idx = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    (docs / "a.txt").write_text("note a")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "j.jsonl-doc", "text": "a row", "metadata": {"n": 1}}) + "\n")
    assert run("index", rows, "-d", idx, "--embedder", EMB)[0] == 0
    code, out = run("index", docs, "-d", idx, "--embedder", EMB)
    assert code == 0 and "deleted" not in out, out
    assert ids(idx) == ["a.txt", "j.jsonl-doc"]


def test_whitespace_only_files_are_skipped_and_counted_and_an_emptied_file_leaves(tmp_path: Path) -> None:
    docs, idx = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    (docs / "a.txt").write_text("note a")
    (docs / "b.txt").write_text("note b")
    (docs / "c.txt").write_text("")
    (docs / "d.txt").write_text("  \n\t\n")
    code, out = run("index", docs, "-d", idx, "--embedder", EMB)
    assert code == 0, out
    assert "indexed 2" in out and "skipped 2 empty" in out and "now holds 2" in out, out
    (docs / "b.txt").write_text("\n")
    code, out = run("index", docs, "-d", idx, "--embedder", EMB)
    assert code == 0 and "deleted 1" in out and "now holds 1" in out, out
    assert ids(idx) == ["a.txt"]


def test_a_folder_of_only_empty_files_is_an_error_that_deletes_nothing(tmp_path: Path) -> None:
    docs, idx = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    (docs / "a.txt").write_text("note a")
    assert run("index", docs, "-d", idx, "--embedder", EMB)[0] == 0
    (docs / "a.txt").write_text(" ")
    code, out = run("index", docs, "-d", idx, "--embedder", EMB)
    assert code == 2 and "empty" in out, out
    assert ids(idx) == ["a.txt"]


def test_the_suffixes_read_are_the_ones_the_help_and_the_readme_name(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.txt", "g.md", "k.markdown", "h.rst", "x.html", "y.py"):
        (docs / name).write_text(f"text of {name}")
    _, rows = console.iter_documents(docs)
    read = sorted(Path(doc_id).suffix for doc_id, _, _ in rows)
    assert read == sorted(console.TEXT_SUFFIXES) == [".markdown", ".md", ".txt"]
    listed = "/".join(console.TEXT_SUFFIXES)
    result = runner.invoke(app, ["index", "--help"], terminal_width=200)
    assert listed in " ".join(result.output.split()), result.output
    cli_section = README.read_text(encoding="utf-8").split("## CLI and settings service")[1].split("\n## ")[0]
    assert listed in cli_section
    assert not re.search(r"\.rst\b", cli_section)
