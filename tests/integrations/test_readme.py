"""The README's quickstarts run as written (a user copies them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _block_after(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, heading
    return match.group(1)


@pytest.mark.slow  # the real MiniLM
def test_the_llamaindex_quickstart_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    exec(compile(_block_after("## Quickstart: LlamaIndex"), "README.md", "exec"), namespace)
    nodes = namespace["nodes"]
    assert [n.node.node_id for n in nodes][:1] == ["m1"]  # type: ignore[attr-defined]
    assert "m1" not in {n.node.node_id for n in namespace["scoped"].retrieve("uploads")}  # type: ignore[attr-defined]
    assert capsys.readouterr().out.strip()


def test_the_llamaindex_recipes_run_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_block_after("### Recipes: LlamaIndex"), "README.md", "exec"), namespace)
    assert namespace["hits"][0].node.ref_doc_id == "kb-1"
    assert all(0.0 <= n.score <= 1.0 for n in namespace["hits"])
    assert str(namespace["answer"]) and str(namespace["hyde_answer"])
    assert namespace["store"].client.engine.count() == {"dense": 1, "keyword": 1}  # kb-2 deleted
    assert {c.ref_doc_id for c in namespace["chunks"]} == {"kb-1", "kb-2"}
    assert [n.node.node_id for n in namespace["kept"]] == ["kb-1"]
