"""Every JSON file and CLI argument the package reads refuses a repeated key (never "the last one wins"): the
index manifest (with the settings the service saves in it), a corpus jsonl (``index``), BEIR queries (``eval``,
``tune``, :func:`load_beir`, :func:`load_judged_queries`), the demo queries, and ``--where`` / ``--dense-path``.
Real stores, the hashing embedder (plumbing)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rrf_retriever.apps.cli import app
from rrf_retriever.apps.demo import load_demo_queries
from rrf_retriever.errors import IndexDirectoryError, InvalidArgumentError
from rrf_retriever.evaluation import load_beir
from rrf_retriever.index.directory import create_index, open_index
from rrf_retriever.index.manifest import MANIFEST_FILE, persist_settings, read_manifest, save_manifest
from rrf_retriever.strict_json import DuplicateKeyError
from rrf_retriever.tuning import load_judged_queries

runner = CliRunner()
EMB = "hashing:16"
SCOPED_QUERY = '{"_id": "q1", "text": "zinc", "metadata": {"filter": {"session_id": 1}, "filter": {}}}\n'


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, " ".join(result.output.split())


def _index(root: Path) -> Path:
    engine = create_index(root, embedder=EMB)
    engine.add(["d1", "d2"], ["zinc iron one", "zinc iron two"], [{"session_id": 1}, {"session_id": 2}])
    save_manifest(root, engine)
    engine.close()
    return root


def _beir(root: Path, queries: str) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": i, "title": "", "text": f"zinc iron {i}", "metadata": {"session_id": n}}) + "\n"
        for n, i in enumerate(("d1", "d2"), 1)))
    (root / "queries.jsonl").write_text(queries)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def test_a_manifest_repeating_a_saved_setting_is_refused_by_name(tmp_path: Path) -> None:
    root = _index(tmp_path / "idx")
    persist_settings(root, {"top_k": 3})  # what PATCH /settings and tune write
    manifest = root / MANIFEST_FILE
    text = manifest.read_text()
    assert text.count('"top_k": 3') == 1
    manifest.write_text(text.replace('"top_k": 3', '"top_k": 3, "top_k": 7'))
    for door in (read_manifest, open_index):
        with pytest.raises(IndexDirectoryError, match=r"repeats the key 'top_k' at settings\.top_k"):
            door(root)
    assert manifest.read_text() == text.replace('"top_k": 3', '"top_k": 3, "top_k": 7')  # left as it is


def test_a_manifest_repeating_a_top_level_field_is_refused(tmp_path: Path) -> None:
    root = _index(tmp_path / "idx")
    manifest = root / MANIFEST_FILE
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(data)[:-1] + ', "embedder": "hashing:64"}')
    with pytest.raises(IndexDirectoryError, match=re.escape(f"corrupt index at {root}: {MANIFEST_FILE} repeats the key 'embedder'")):
        open_index(root)


def test_index_refuses_a_corpus_line_repeating_a_key_and_writes_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "one"}\n'
                      '{"id": "b", "text": "two", "metadata": {"session_id": 1, "session_id": 2}}\n')
    code, out = run("index", corpus, "-d", tmp_path / "idx", "--embedder", EMB)
    assert code == 2, out
    assert "docs.jsonl:2 repeats the key 'session_id' at metadata.session_id" in out
    assert "Traceback" not in out
    assert not (tmp_path / "idx" / MANIFEST_FILE).exists()


@pytest.mark.parametrize("command", ["eval", "tune"])
def test_eval_and_tune_refuse_a_query_line_repeating_its_filter(tmp_path: Path, command: str) -> None:
    data = _beir(tmp_path / "beir", SCOPED_QUERY)
    index = _index(tmp_path / "idx")
    code, out = run(command, data, "-d", index)
    assert code == 2, out
    assert "queries.jsonl:1 repeats the key 'filter' at metadata.filter" in out
    assert "Traceback" not in out


def test_the_library_readers_refuse_the_same(tmp_path: Path) -> None:
    data = _beir(tmp_path / "beir", SCOPED_QUERY)
    with pytest.raises(DuplicateKeyError, match=r"queries\.jsonl:1 repeats the key 'filter'"):
        load_judged_queries(data)
    with pytest.raises(InvalidArgumentError, match=r"queries\.jsonl:1 repeats the key 'filter'"):
        load_beir(data)
    (data / "queries.jsonl").write_text('{"_id": "q1", "text": "zinc"}\n')
    (data / "corpus.jsonl").write_text('{"_id": "d1", "text": "zinc", "text": "iron"}\n')
    with pytest.raises(DuplicateKeyError, match=r"corpus\.jsonl:1 repeats the key 'text'"):
        load_beir(data)
    demo = tmp_path / "demo_queries.json"
    demo.write_text('[{"query": "zinc", "relevant": ["d1"], "filter": {"s": 1}, "filter": null}]')
    with pytest.raises(DuplicateKeyError, match=r"repeats the key 'filter' at \[0\]\.filter"):
        load_demo_queries(demo)


@pytest.mark.parametrize("args", [
    ("--where", '{"session_id": 1, "session_id": 2}'),
    ("--dense-path", 'two={"session_id": [1], "session_id": [2]}'),
])
def test_search_refuses_a_filter_argument_repeating_a_key(tmp_path: Path, args: tuple[str, str]) -> None:
    index = _index(tmp_path / "idx")
    code, out = run("search", "zinc", "-d", index, *args)
    assert code == 2, out
    assert "repeats the key 'session_id' at session_id" in out
    code, out = run("search", "zinc", "-d", index, "--json", "--where", '{"session_id": 2}')
    assert code == 0, out
