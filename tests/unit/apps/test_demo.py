"""The main job end to end: the demo on the shipped corpus with the real MiniLM, Qdrant local mode and FTS5."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

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


def fused_rank(engine: Any, query: str, doc_id: str, **kwargs: Any) -> tuple[int | None, dict[str, int]]:
    """Rank in the fused list the demo's tables show (top_k=20: each leg fetches 40, as for the tables' top 5)."""
    result = engine.search(query, top_k=20, **kwargs)
    if doc_id not in result.ids:
        return None, {}
    return result.ids.index(doc_id) + 1, dict(result.hits[result.ids.index(doc_id)].ranks)


def test_the_why_texts_say_what_the_tables_show(demo_run: tuple) -> None:
    """Each number a 'why' states is what the demo computes (with the shipped defaults)."""
    from rrf_retriever.index.directory import open_index

    first, text, _, _ = demo_run
    queries = {q.query: q for q in load_demo_queries()}
    engine = open_index(first.index_dir)
    try:
        q = queries["thief took my computer"]  # 5: the weights matter
        assert fused_rank(engine, q.query, "doc-device-revoke") == (9, {"dense": 1})
        assert "9th" in q.why and "1st" in q.why
        assert engine.search(q.query, top_k=1, weights={"keyword": 0.0}).ids == ["doc-device-revoke"]
        assert fused_rank(engine, q.query, "doc-device-revoke", weights={"dense": 1.0, "keyword": 1.0})[0] == 3
        assert "3rd" in q.why

        q = queries["certificate pin mismatch"]  # 8: its table is the filtered one
        assert fused_rank(engine, q.query, "tkt-2620", filter=q.filter) == (2, {"dense": 1, "keyword": 2})
        assert "1st" in q.why and "2nd" in q.why
        assert fused_rank(engine, q.query, "tkt-2620")[0] == 5 and "5th" in q.why
        assert "this table" in q.why.lower()

        q = queries["hub restored from an old backup, agents stuck"]  # 6: rrf_k
        assert fused_rank(engine, q.query, "tkt-2304") == (1, {"dense": 8, "keyword": 4}) and "keyword 4th" in q.why
        engine.update_settings(rrf_k=2)
        assert fused_rank(engine, q.query, "tkt-2304")[0] == 4 and "ranks it 4th" in q.why
        engine.update_settings(rrf_k=60)

        q = queries["E4107"]  # 2: the dense leg does find the ticket, far down
        assert fused_rank(engine, q.query, "tkt-2424")[1] == {"dense": 23, "keyword": 1} and "23rd" in q.why
        assert fused_rank(engine, q.query, "doc-errors-auth")[1]["keyword"] == 2 and "(2nd)" in q.why
    finally:
        engine.close()
    # The filtered query's table says it is filtered, and a relevant document missing from a table is located.
    assert re.search(r"8\. certificate pin mismatch\s.*filter", text)
    assert re.search(r"doc-device-revoke.*9th", " ".join(text.split()))
