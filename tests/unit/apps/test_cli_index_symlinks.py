"""``rrf-retriever index FOLDER`` never follows a link out of the folder: ``leak.txt -> ../secret/credentials`` is
skipped (and counted in the output), so the secret's text is in no store and never comes back over HTTP. A link
to a file inside the folder is read once: under the real file's own path when the index reads that file anyway,
else under the link's path. Real stores, the hashing embedder (plumbing); real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from rrf_retriever.apps.cli import app
from rrf_retriever.apps.console import read_documents
from rrf_retriever.apps.service import create_app
from rrf_retriever.index.directory import open_index
from tests.integrations.server_helpers import running_server

runner = CliRunner()
EMB = "hashing:16"
SECRET = "zorblax hunter2 credential"

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, " ".join(result.output.split())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "credentials").write_text(f"aws key {SECRET}")
    (tmp_path / "secret" / "notes.md").write_text(f"# Private\n{SECRET} again")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("backup the zorblax server nightly")
    (docs / "sub" / "real.md").write_text("# Real\nrestore the zorblax snapshot")
    (docs / "raw.text").write_text("zorblax raw notes, a suffix the index does not read")
    (docs / "leak.txt").symlink_to(Path("..") / "secret" / "credentials")  # out of the folder: relative
    (docs / "sub" / "leak2.md").symlink_to(tmp_path / "secret" / "notes.md")  # out of the folder: absolute
    (docs / "alias.md").symlink_to(Path("sub") / "real.md")  # inside, a file read anyway: read once, as itself
    (docs / "raw.txt").symlink_to("raw.text")  # inside, a file not read otherwise: read once, as raw.txt
    (docs / "linked").symlink_to(tmp_path / "secret", target_is_directory=True)  # a directory link: never followed
    return docs


def test_links_out_of_the_folder_are_skipped_and_counted(folder: Path) -> None:
    found = read_documents(folder)
    rows = list(found.rows)
    assert sorted(doc_id for doc_id, _, _ in rows) == ["a.txt", "raw.txt", "sub/real.md"]
    assert found.folder_ids == ["a.txt", "raw.txt", "sub/real.md"]
    assert all(SECRET not in text for _, text, _ in rows)
    assert (found.links_outside, found.links_duplicate) == (2, 1)


def test_the_secret_is_never_indexed_nor_served(folder: Path, tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    code, out = run("index", folder, "-d", idx, "--embedder", EMB)
    assert code == 0, out
    engine = open_index(idx)
    try:
        with running_server(create_app(engine)) as url, httpx.Client(base_url=url, timeout=30) as client:
            for query in (SECRET, "aws key credential", "zorblax"):
                r = client.get("/search", params={"q": query, "top_k": 50})
                assert r.status_code == 200, r.text
                hits = r.text.replace(f'"query":"{query}"', "")  # the reply echoes the query itself
                assert "hunter2" not in hits and "aws key" not in hits and "Private" not in hits
                assert {h["id"] for h in r.json()["hits"]} <= {"a.txt", "raw.txt", "sub/real.md"}
        assert engine.count() == {"dense": 3, "keyword": 3}
    finally:
        engine.close()
    assert "indexed 3 document(s)" in out
    assert "skipped 2 symbolic link(s) to files outside the folder and 1 link(s) to a file already indexed" in out
    code, found = run("search", "hunter2 credential", "-d", idx, "--json")
    assert code == 0, found
    assert "hunter2" not in found.replace('"query": "hunter2 credential"', "")


def test_a_link_made_to_point_out_later_is_dropped_at_the_next_sync(folder: Path, tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    code, out = run("index", folder, "-d", idx, "--embedder", EMB)
    assert code == 0, out
    (folder / "raw.txt").unlink()
    (folder / "raw.txt").symlink_to(tmp_path / "secret" / "credentials")
    code, out = run("index", folder, "-d", idx, "--embedder", EMB)
    assert code == 0, out
    assert "skipped 3 symbolic link(s)" in out
    assert "deleted 1 document(s)" in out
    engine = open_index(idx)
    try:
        assert sorted(r.id for r in engine.get(["a.txt", "raw.txt", "sub/real.md", "leak.txt"])) == [
            "a.txt", "sub/real.md"]
        assert all(SECRET not in h.text for h in engine.search("hunter2 zorblax credential").hits)
    finally:
        engine.close()
