"""The ``rrf-retriever`` command through typer's CliRunner: index, search, eval, and clear user errors.

Plumbing only, so the deterministic hashing embedder stands in for MiniLM; the stores are real (SQLite FTS5 file,
Qdrant local mode on a folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rrf_retriever.apps.cli import app
from rrf_retriever.apps.cli_options import parse_filters
from rrf_retriever.engine import DEFAULT_LEG_WEIGHTS
from rrf_retriever.index.manifest import MANIFEST_FILE

runner = CliRunner()
EMB = "hashing:32"

DOCS = [
    {"id": "d1", "text": "Reset the agent password from the console settings page", "metadata": {"session_id": 1}},
    {"id": "d2", "text": "Error E3301 means a chunk failed its integrity check", "metadata": {"session_id": 2}},
    {"id": "d3", "text": "Restore a deleted file from the hub trash within 30 days", "metadata": {"session_id": 3}},
    {"id": "d4", "text": "Integrity errors after a disk failure: run the scrub job", "metadata": {"session_id": 1}},
    {"id": "d5", "text": "Password rules: twelve characters, checked against breached lists",
     "metadata": {"session_id": 2, "lang": "en"}},
]


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def search_json(index_dir: Path, query: str, *extra: str) -> dict:
    code, out = run("search", query, "--index-dir", index_dir, "--json", *extra)
    assert code == 0, out
    return json.loads(out)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def index_dir(tmp_path: Path, corpus: Path) -> Path:
    target = tmp_path / "idx"
    code, out = run("index", corpus, "--index-dir", target, "--embedder", EMB)
    assert code == 0, out
    return target


def test_index_writes_manifest_and_reindex_upserts(tmp_path: Path, corpus: Path, index_dir: Path) -> None:
    manifest = json.loads((index_dir / MANIFEST_FILE).read_text())
    assert manifest["doc_count"] == 5
    assert manifest["embedder"] == EMB
    assert manifest["analyzer"]["stem"] == "porter"
    assert (index_dir / "keyword-qdrant-edge").is_dir() and (index_dir / "qdrant-edge").is_dir()  # the defaults

    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({"id": "d1", "text": "zebra crossing", "metadata": {"session_id": 9}}) + "\n"
                       + json.dumps({"id": "d6", "text": "a brand new page", "metadata": {}}) + "\n")
    code, out = run("index", changed, "--index-dir", index_dir)  # the index keeps its own embedder
    assert code == 0, out
    assert json.loads((index_dir / MANIFEST_FILE).read_text())["doc_count"] == 6
    hits = search_json(index_dir, "zebra", "--keyword-weight", "1", "--semantic-weight", "0")["hits"]
    assert [h["id"] for h in hits] == ["d1"]
    assert hits[0]["metadata"] == {"session_id": 9}


def test_index_folder_of_markdown_and_beir_corpus(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# Backups\nSnapshots are kept for ninety days.")
    (folder / "sub" / "b.txt").write_text("The relay server forwards encrypted chunks.")
    (folder / "ignored.png").write_bytes(b"\x89PNG")
    code, out = run("index", folder, "--index-dir", tmp_path / "i1", "--embedder", EMB)
    assert code == 0, out
    hits = search_json(tmp_path / "i1", "relay chunks", "--semantic-weight", "0")["hits"]
    assert hits[0]["id"] == "sub/b.txt"
    assert hits[0]["metadata"] == {"path": "sub/b.txt"}

    beir = tmp_path / "corpus.jsonl"
    beir.write_text(json.dumps({"_id": "x1", "title": "Zinc", "text": "An essential trace element."}) + "\n")
    code, out = run("index", beir, "--index-dir", tmp_path / "i2", "--embedder", EMB)
    assert code == 0, out
    hit = search_json(tmp_path / "i2", "zinc", "--semantic-weight", "0")["hits"][0]
    assert hit["id"] == "x1"
    assert hit["text"] == "Zinc\nAn essential trace element."  # title + text, as the BEIR baselines index it
    assert hit["metadata"]["title"] == "Zinc"


def test_search_json_has_ranks_scores_and_trace(index_dir: Path) -> None:
    data = search_json(index_dir, "integrity error E3301", "--top-k", "3")
    assert len(data["hits"]) == 3
    top = data["hits"][0]
    assert top["id"] == "d2"
    assert set(top) == {"id", "text", "metadata", "score", "normalized_score", "relevance", "ranks", "scores"}
    assert top["ranks"]["keyword"] == 1 and "dense" in top["ranks"]
    legs = {leg["name"]: leg for leg in data["trace"]["legs"]}
    assert legs["dense"]["called"] and legs["keyword"]["called"]
    assert data["trace"]["weights"] == dict(DEFAULT_LEG_WEIGHTS)
    assert data["trace"]["top_k"] == 3


def test_search_filters_exclusions_and_weights(index_dir: Path) -> None:
    hits = search_json(index_dir, "password integrity", "--filter", "session_id=1,3")["hits"]
    assert hits and {h["metadata"]["session_id"] for h in hits} <= {1, 3}
    hits = search_json(index_dir, "password", "-f", "session_id=2", "-f", "lang=en")["hits"]
    assert [h["id"] for h in hits] == ["d5"]
    hits = search_json(index_dir, "password", "--exclude", "d1", "--exclude", "d5")["hits"]
    assert {"d1", "d5"}.isdisjoint(h["id"] for h in hits)
    data = search_json(index_dir, "password", "--keyword-weight", "0", "--rrf-k", "10")
    assert all("keyword" not in h["ranks"] for h in data["hits"])
    assert data["trace"]["rrf_k"] == 10.0
    assert {leg["name"]: leg["called"] for leg in data["trace"]["legs"]} == {"dense": True, "keyword": False}


def test_search_pages_pins_and_thresholds(index_dir: Path) -> None:
    whole = [h["id"] for h in search_json(index_dir, "password integrity", "-k", "4", "--keyword-weight", "1")["hits"]]
    page = search_json(index_dir, "password integrity", "-k", "2", "--offset", "2", "--keyword-weight", "1")["hits"]
    assert [h["id"] for h in page] == whole[2:4]
    pinned = search_json(index_dir, "password integrity", "-k", "2", "--pinned", whole[3])["hits"]
    assert whole[3] in [h["id"] for h in pinned] and any(h["metadata"].get("rrf_pinned") for h in pinned)
    high = search_json(index_dir, "password integrity", "--threshold", "0.9")["hits"]
    assert all(h["normalized_score"] >= 0.9 for h in high)


def test_search_explain_prints_ranks_scores_and_trace(index_dir: Path) -> None:
    code, out = run("search", "integrity", "--index-dir", index_dir, "--explain")
    assert code == 0, out
    for word in ("dense", "keyword", "rank", "score", "fused", "trace", "latency", "d2"):
        assert word in out


def test_parse_filters() -> None:
    assert parse_filters(["session_id=1,2", "lang=en", "session_id=x"]) == {"session_id": [1, 2, "x"], "lang": "en"}
    assert parse_filters([]) is None


def write_beir(root: Path) -> Path:
    """A tiny BEIR folder where query q1 is also a corpus document (ArguAna style)."""
    (root / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "q1", "title": "", "text": "zinc deficiency symptoms"},
        {"_id": "d1", "title": "Zinc", "text": "zinc deficiency causes hair loss and other symptoms"},
        {"_id": "d2", "title": "Iron", "text": "iron deficiency causes anaemia"},
        {"_id": "d3", "title": "Vitamin", "text": "vitamin d comes from sunlight"},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus) + "\n")
    queries = [{"_id": "q1", "text": "zinc deficiency symptoms"}, {"_id": "q2", "text": "anaemia iron"}]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return root


@pytest.mark.slow
def test_eval_builds_index_and_drops_self_matches(tmp_path: Path) -> None:
    data = write_beir(tmp_path / "tiny")
    args = ["eval", data, "--index-dir", tmp_path / "ev", "--embedder", EMB, "--semantic-weight", "0", "--json"]
    code, out = run(*args)
    assert code == 0, out
    result = json.loads(out)
    assert result["queries"] == 2
    # q1 retrieves itself first; BEIR (and our default) drop it, so d1 is first: MRR@10 = 1 on both queries.
    assert result["metrics"]["mrr@10"] == pytest.approx(1.0)
    code, out = run(*args, "--keep-self-matches", "--max-queries", "1")
    assert code == 0, out
    kept = json.loads(out)
    assert kept["queries"] == 1
    assert kept["metrics"]["mrr@10"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "x", "--index-dir", "{missing}"], "no index at"),
        (["index", "{missing}", "--index-dir", "{idx}"], "does not exist"),
        (["search", "x", "--index-dir", "{idx}", "--filter", "session_id"], "bad filter"),
        (["search", "x", "--index-dir", "{idx}", "--filter", "=3"], "bad filter"),
        (["search", "x", "--index-dir", "{idx}", "--semantic-weight", "-1"], "--semantic-weight"),
        (["search", "x", "--index-dir", "{idx}", "--keyword-weight", "nan"], "--keyword-weight"),
        (["search", "x", "--index-dir", "{idx}", "--semantic-weight", "0", "--keyword-weight", "0"], "both 0"),
        (["search", "x", "--index-dir", "{idx}", "--rrf-k", "-5"], "--rrf-k"),
        (["search", "x", "--index-dir", "{idx}", "--top-k", "0"], "top_k"),
        (["search", "x", "--index-dir", "{idx}", "--exclude", ""], "exclude_ids"),
        (["index", "{corpus}", "--index-dir", "{idx}", "--embedder", "hashing:64"], "was built with embedder"),
        (["index", "{corpus}", "--index-dir", "{new}", "--embedder", "bert"], "unknown embedder"),
        (["eval", "{missing}", "--index-dir", "{new}"], "not a BEIR folder"),
    ],
)
def test_user_errors_exit_2_without_traceback(
    tmp_path: Path, corpus: Path, index_dir: Path, args: list[str], message: str
) -> None:
    paths = {"missing": tmp_path / "nope", "idx": index_dir, "corpus": corpus, "new": tmp_path / "new"}
    code, out = run(*(a.format(**{k: str(v) for k, v in paths.items()}) for a in args))
    assert code == 2, out
    assert message in " ".join(out.split())
    assert "Traceback" not in out


def test_corrupt_and_foreign_index_dirs_are_clear_errors(tmp_path: Path, corpus: Path, index_dir: Path) -> None:
    (index_dir / MANIFEST_FILE).write_text("{not json")
    code, out = run("search", "x", "--index-dir", index_dir)
    assert code == 2 and "corrupt index" in out and "Traceback" not in out

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    code, out = run("index", corpus, "--index-dir", foreign, "--embedder", EMB)
    assert code == 2 and "not empty" in " ".join(out.split())
    assert (foreign / "keep.txt").read_text() == "mine"

    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text('{"id": "a", "text": "ok"}\n{"text": "no id"}\n')
    code, out = run("index", bad_line, "--index-dir", tmp_path / "i3", "--embedder", EMB)
    assert code == 2 and "bad.jsonl:2" in out
