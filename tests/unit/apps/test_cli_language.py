"""``rrf-retriever index --language``: the index keeps its analyzer; another language on re-index is refused."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rrf_retriever.apps.cli import app
from rrf_retriever.index.manifest import read_manifest

runner = CliRunner()


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, " ".join(result.output.split())


def test_index_with_a_language_then_search_and_reindex(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    rows = [{"id": "de", "text": "Die Häuser am Hafen"}, {"id": "ja", "text": "東京都庁の検索システム"}]
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    idx = tmp_path / "idx"
    code, out = run("index", corpus, "-d", idx, "--embedder", "hashing:16", "--language", "german")
    assert code == 0, out
    assert read_manifest(idx)["analyzer"]["language"] == "german"
    result = runner.invoke(app, ["search", "Haus", "-d", str(idx), "--json", "--semantic-weight", "0"])
    assert [h["id"] for h in json.loads(result.output)["hits"]] == ["de"]
    result = runner.invoke(app, ["search", "都庁", "-d", str(idx), "--json", "--semantic-weight", "0"])
    assert [h["id"] for h in json.loads(result.output)["hits"]] == ["ja"]
    assert run("index", corpus, "-d", idx, "--language", "de")[0] == 0  # the same analyzer, by its code
    code, out = run("index", corpus, "-d", idx, "--language", "french")
    assert code != 0 and "another analyzer" in out


def test_an_unknown_language_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    code, out = run("index", corpus, "-d", tmp_path / "idx", "--embedder", "hashing:16", "--language", "klingon")
    assert code != 0 and "unknown language" in out
    assert not (tmp_path / "idx" / "rrf-index.json").exists()


def test_a_new_index_without_language_detects_it_and_says_so(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    rows = [{"id": "d0", "text": "Les chevaux sauvages vivent dans le sud de la France."},
            {"id": "d1", "text": "Le journal est sur la table de la cuisine."}]
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    idx = tmp_path / "idx"
    code, out = run("index", corpus, "-d", idx, "--embedder", "hashing:16")
    assert code == 0, out
    assert "keyword analyzer language: french" in out and "indexed 2 document(s)" in out
    manifest = read_manifest(idx)
    assert manifest["analyzer"]["language"] == "french" and manifest["language_detection"]["detected"] is True
    result = runner.invoke(app, ["search", "cheval", "-d", str(idx), "--json", "--semantic-weight", "0"])
    assert [h["id"] for h in json.loads(result.output)["hits"]] == ["d0"]  # chevaux -> cheval
    code, out = run("index", corpus, "-d", idx)  # a re-index keeps the index's analyzer: nothing detected
    assert code == 0 and "keyword analyzer language" not in out
    code, out = run("index", corpus, "-d", tmp_path / "en", "--embedder", "hashing:16", "--language", "english")
    assert code == 0 and "keyword analyzer language" not in out
    assert read_manifest(tmp_path / "en")["analyzer"]["language"] is None
