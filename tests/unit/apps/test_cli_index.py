"""``rrf-retriever index`` and ``eval`` on real-world input: markdown titles, duplicate ids, an interrupted run,
broken BEIR files and a BEIR folder whose judged documents are not in the index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rrf_retriever.apps import console
from rrf_retriever.apps.cli import app
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.leg_strength import EPS, MIN_RATIO
from rrf_retriever.engine.weak_legs import WEAK_FACTOR
from rrf_retriever.index.manifest import MANIFEST_FILE, read_manifest

runner = CliRunner()
EMB = "hashing:16"


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, " ".join(result.output.split())


def test_markdown_files_take_their_first_heading_as_title(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("Intro line\n```\n# not a heading, code\n```\n# Backup policy\n\n## Details\nkept 90 days")
    (notes / "b.md").write_text("no heading at all")
    (notes / "c.txt").write_text("# a txt file keeps its text only")
    code, out = run("index", notes, "-d", tmp_path / "idx", "--embedder", EMB)
    assert code == 0, out
    result = runner.invoke(app, ["search", "kept days backup", "-d", str(tmp_path / "idx"), "--json",
                                 "--semantic-weight", "0"])
    hits = {h["id"]: h["metadata"] for h in json.loads(result.output)["hits"]}
    assert hits["a.md"] == {"path": "a.md", "title": "Backup policy"}
    _, docs = console.iter_documents(notes)
    metadata = {doc_id: meta for doc_id, _, meta in docs}
    assert metadata["b.md"] == {"path": "b.md"} and metadata["c.txt"] == {"path": "c.txt"}


def test_a_duplicate_id_in_a_jsonl_names_both_lines_and_writes_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    rows = [{"id": "a", "text": "one"}, {"id": "b", "text": "two"}, {"id": "a", "text": "three"}]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out = run("index", corpus, "-d", tmp_path / "idx", "--embedder", EMB)
    assert code == 2
    assert "docs.jsonl:3" in out and "line 1" in out and "'a'" in out
    assert not (tmp_path / "idx").exists()  # refused before anything was written


def test_an_interrupted_index_leaves_a_correct_doc_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"d{i}", "text": f"document {i}"}) for i in range(6)) + "\n")
    monkeypatch.setattr(console, "BATCH", 2)
    real_add = HybridEngine.add
    calls = []

    def add_then_interrupt(self: HybridEngine, *args: object, **kwargs: object) -> list[str]:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_add(self, *args, **kwargs)

    monkeypatch.setattr(HybridEngine, "add", add_then_interrupt)
    result = runner.invoke(app, ["index", str(corpus), "-d", str(tmp_path / "idx"), "--embedder", EMB])
    assert result.exit_code != 0
    monkeypatch.undo()
    manifest = json.loads((tmp_path / "idx" / MANIFEST_FILE).read_text())  # read as written, not reopened
    assert manifest["doc_count"] == 4


def write_beir(root: Path, *, corpus_ids: tuple[str, ...] = ("d1", "d2"), queries: str | None = None,
               qrels: str | None = None) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": i, "title": "", "text": f"zinc iron text {i}"}) for i in corpus_ids) + "\n")
    (root / "queries.jsonl").write_text(queries if queries is not None else
                                        json.dumps({"_id": "q1", "text": "zinc"}) + "\n")
    (root / "qrels" / "test.tsv").write_text(qrels if qrels is not None else "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"queries": '{"_id": "q1", "text": "zinc"}\n{broken\n'}, "queries.jsonl:2"),
        ({"queries": '{"id": "q1"}\n'}, "queries.jsonl:1"),
        ({"qrels": "query-id\tcorpus-id\tscore\nq1\td1\n"}, "test.tsv:2"),
        ({"qrels": "query-id\tcorpus-id\tscore\nq1\td1\tgood\n"}, "test.tsv:2"),
        ({"qrels": "query-id\tcorpus-id\tscore\nq9\td1\t1\n"}, "no query"),
    ],
)
def test_eval_reports_bad_beir_files_in_one_line(tmp_path: Path, files: dict, message: str) -> None:
    data = write_beir(tmp_path / "beir", **files)
    code, out = run("eval", data, "-d", tmp_path / "idx", "--embedder", EMB)
    assert code == 2, out
    assert message in out
    assert "Traceback" not in out


def test_eval_refuses_an_index_holding_none_of_the_judged_documents(tmp_path: Path) -> None:
    other = write_beir(tmp_path / "other", corpus_ids=("x1", "x2"))
    code, out = run("index", other, "-d", tmp_path / "idx", "--embedder", EMB)
    assert code == 0, out
    data = write_beir(tmp_path / "beir")
    code, out = run("eval", data, "-d", tmp_path / "idx")
    assert code == 2, out
    assert "judged" in out and "d1" in out


def test_eval_warns_when_some_judged_documents_are_missing(tmp_path: Path) -> None:
    data = write_beir(tmp_path / "beir", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\n")
    result = runner.invoke(app, ["eval", str(data), "-d", str(tmp_path / "idx"), "--embedder", EMB, "--json"])
    assert result.exit_code == 0, result.output
    assert "1 of 2 judged" in " ".join(result.stderr.split())
    assert read_manifest(tmp_path / "idx")["doc_count"] == 2


def test_index_keys_are_declared_up_front_and_kept_in_the_manifest(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    rows = [{"id": "a", "text": "one", "metadata": {"session_id": "s1"}}, {"id": "b", "text": "two"}]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out = run("index", corpus, "-d", tmp_path / "idx", "--embedder", EMB, "--index-key", "session_id")
    assert code == 0, out
    assert read_manifest(tmp_path / "idx")["index_keys"] == ["session_id"]
    code, out = run("index", corpus, "-d", tmp_path / "idx", "--index-key", "lang")  # another key is added
    assert code == 0, out
    assert read_manifest(tmp_path / "idx")["index_keys"] == ["lang", "session_id"]


def test_index_measures_the_legs_says_how_they_are_weighted_and_search_uses_it(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{i}", "text": " ".join(f"Sentence {j} names item{i} and part{i}x{j} of it." for j in range(3))}
            for i in range(80)]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out = run("index", corpus, "-d", tmp_path / "idx", "--embedder", EMB)
    assert code == 0, out
    assert "legs measured at 80 documents" in out and "keyword (keyword): weight 1.25" in out
    saved = read_manifest(tmp_path / "idx")["leg_strength"]
    assert saved["doc_count"] == 80 and saved["n"] >= 30 and set(saved["mrr"]) == {"dense", "keyword"}
    result = runner.invoke(app, ["search", "item7 part7x1", "-d", str(tmp_path / "idx"), "--json"])
    trace = json.loads(result.output)["trace"]
    weights = {leg["name"]: leg["weight"] for leg in trace["legs"]}
    best = max(saved["mrr"].values())
    weak = (saved["mrr"]["dense"] + EPS) / (best + EPS) < MIN_RATIO  # the rule, from the saved measurement
    assert weights["dense"] == pytest.approx(WEAK_FACTOR if weak else 1.0) and weights["keyword"] == pytest.approx(1.25)
