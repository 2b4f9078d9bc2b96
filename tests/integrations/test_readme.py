"""The README's quickstarts run as written (a user copies them)."""

from __future__ import annotations

import re
from pathlib import Path

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
