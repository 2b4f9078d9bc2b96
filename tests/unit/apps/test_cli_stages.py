"""The search command's result-stage flags: --diversity, --reranker MODULE:ATTR, --rerank-k, --dense-path,
--links-key/--expand-limit (with --offset, --pinned); bad values are one red line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rrf_retriever.apps.cli import app
from rrf_retriever.apps.cli_options import parse_dense_paths

runner = CliRunner()
DOCS = [{"id": f"d{i}", "text": f"backup restore note {i // 3} copy {i % 3}",
         "metadata": {"session_id": i % 3, "links": [f"d{(i + 4) % 12}"]}} for i in range(12)]


def by_length(query: str, texts: list[str]) -> list[float]:
    """Imported by the CLI through --reranker tests.unit.apps.test_cli_stages:by_length."""
    return [float(len(t)) + (1.0 if "copy 2" in t else 0.0) for t in texts]


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-stages")
    corpus = root / "docs.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n", encoding="utf-8")
    code, out = run("index", corpus, "--index-dir", root / "idx", "--embedder", "hashing:32")
    assert code == 0, out
    return root / "idx"


def search(index_dir: Path, *extra: object) -> dict:
    code, out = run("search", "backup restore", "--index-dir", index_dir, "--json", *extra)
    assert code == 0, out
    return json.loads(out)


def test_reranker_flag_reorders_and_keeps_fused_scores(index_dir: Path) -> None:
    result = search(index_dir, "-k", "4", "--reranker", "tests.unit.apps.test_cli_stages:by_length", "--rerank-k", "12")
    assert all("copy 2" in h["text"] for h in result["hits"][:4])
    assert all(h["metadata"]["rrf_rerank_score"] > 0 and h["ranks"] for h in result["hits"])
    assert result["trace"]["stage_counts"]["reranked"] == 12


def test_diversity_offset_and_pinned_flags(index_dir: Path) -> None:
    plain = [h["id"] for h in search(index_dir, "-k", "12")["hits"]]
    diverse = search(index_dir, "-k", "4", "--diversity", "0.2")
    assert diverse["trace"]["stage_counts"]["diversity_pool"] >= 4 and "diversity" in diverse["trace"]["stages_ms"]
    page2 = [h["id"] for h in search(index_dir, "-k", "4", "--offset", "4", "--diversity", "1")["hits"]]
    assert page2 == plain[4:8]
    pinned = search(index_dir, "-k", "2", "--diversity", "0.3", "--pinned", plain[-1])
    assert plain[-1] in [h["id"] for h in pinned["hits"]]


def test_dense_path_and_expansion_flags(index_dir: Path) -> None:
    result = search(index_dir, "-k", "12", "--filter", "session_id=1", "--dense-path", "dense_all")
    assert result["trace"]["weights"]["dense_all"] == 1.0
    assert any("dense_all" in h["ranks"] for h in result["hits"])
    expanded = search(index_dir, "-k", "2", "--links-key", "links", "--expand-limit", "1")
    assert len(expanded["hits"]) == 2 and expanded["trace"]["stage_counts"]["expanded"] == 1  # within -k


@pytest.mark.parametrize(("flags", "message"), [
    (["--diversity", "2"], "diversity"),
    (["--rerank-k", "0"], "rerank_k"),
    (["--reranker", "no_colon"], "module:attribute"),
    (["--reranker", "tests.unit.apps.test_cli_stages:missing"], "cannot load"),
    (["--reranker", "tests.unit.apps.test_cli_stages:DOCS"], "reranker must be"),
    (["--dense-path", "x={bad"], "not valid JSON"),
    (["--dense-path", "keyword"], "source names"),
    (["--dense-path", 'p={"$bogus": 1}'], "bogus"),
    (["--expand-limit", "0"], "expand_limit"),
])
def test_bad_stage_flags_are_one_line_and_exit_2(index_dir: Path, flags: list[str], message: str) -> None:
    code, out = run("search", "backup", "--index-dir", index_dir, *flags)
    assert code == 2 and message in out and "Traceback" not in out


def test_parse_dense_paths() -> None:
    assert parse_dense_paths(None) is None
    assert parse_dense_paths(["a", 'b={"s": 1}']) == {"a": None, "b": {"s": 1}}


def test_serve_refuses_a_bad_reranker_before_serving(index_dir: Path) -> None:
    code, out = run("serve", "--index-dir", index_dir, "--reranker", "tests.unit.apps.test_cli_stages:nothing_here")
    assert code == 2 and "cannot load the reranker" in out
