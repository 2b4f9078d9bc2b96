"""The main job end to end: the demo on the shipped corpus with the real MiniLM, Qdrant local mode and FTS5."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from rrf_retriever.apps.demo import load_demo_queries, run_demo


# The demo embeds its corpus with the real MiniLM: slow for the inner loop, part of `make test`.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    index_dir = tmp_path_factory.mktemp("demo") / "demo-index"
    out = io.StringIO()
    first = run_demo(index_dir=index_dir, console=Console(file=out, width=140))
    second_out = io.StringIO()
    second = run_demo(index_dir=index_dir, console=Console(file=second_out, width=140))
    return first, out.getvalue(), second, second_out.getvalue()


def test_demo_output_names_ranks_and_marks_relevant(demo_run: tuple) -> None:
    first, text, _, _ = demo_run
    for words in ("dense", "keyword", "rank", "fused", "✔", "What a weight of 0 does", "hits@1", "session_id"):
        assert words in text
    assert first.doc_count == 227
    assert first.queries == len(load_demo_queries())


def test_hybrid_hits_at_1_beats_or_ties_each_leg(demo_run: tuple) -> None:
    first, _, _, _ = demo_run
    rates = first.hits_at_1
    assert rates["hybrid"] >= rates["dense"]
    assert rates["hybrid"] >= rates["keyword"]


def test_weight_zero_removes_a_keyword_only_document(demo_run: tuple) -> None:
    first, _, _, _ = demo_run
    assert first.weight_zero_example is not None
    assert first.weight_zero_example["disappeared"] is True


def test_session_filter_keeps_results_inside_the_sessions(demo_run: tuple) -> None:
    first, _, _, _ = demo_run
    info = first.session_example
    assert info["sessions"] and set(info["sessions"]) <= set(info["filter"]["session_id"])


def test_second_run_reuses_the_index_with_the_same_answers(demo_run: tuple) -> None:
    first, _, second, _ = demo_run
    assert not first.reused_index and second.reused_index
    assert second.top1 == first.top1
    assert second.hits_at_1 == first.hits_at_1


def test_a_changed_corpus_or_foreign_folder_is_not_reused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not an index")
    from rrf_retriever.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="not an rrf-retriever index"):
        run_demo(index_dir=foreign, console=Console(file=io.StringIO()))
    assert (foreign / "notes.txt").read_text() == "not an index"
