"""Every python block of the README runs as printed, alone, in a fresh interpreter (a newcomer pastes one block).

Each block is written to a file as it stands in the README and run by a new ``python`` in an empty folder: no name
is supplied by a test, no block leans on the one before it. What the blocks return is checked by
``test_readme.py`` and ``test_langchain_recipes.py``; this checks that each is whole.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
#: A block that names this address needs a Qdrant server: it runs only where ``QDRANT_URL`` is set.
SERVER_MARK = "localhost:6333"


def readme_python_blocks(text: str) -> list[tuple[str, str]]:
    """``(heading, block)`` for each fenced python block of ``text``, under the nearest ``#`` heading above it."""
    blocks: list[tuple[str, str]] = []
    heading = "(top)"
    for part in re.split(r"(^```python\n.*?^```$)", text, flags=re.S | re.M):
        if part.startswith("```python\n"):
            blocks.append((heading, part[len("```python\n"):-3]))
            continue
        headings = re.findall(r"^#+ (.+)$", part, re.M)
        if headings:
            heading = headings[-1]
    return blocks


def _cases() -> list[object]:
    cases: list[object] = []
    for n, (heading, block) in enumerate(readme_python_blocks(README.read_text(encoding="utf-8"))):
        marks = [pytest.mark.qdrant_server] if SERVER_MARK in block else []
        cases.append(pytest.param(block, id=f"{n}-{heading[:40]}", marks=marks))
    return cases


def test_the_block_reader_finds_each_block_under_its_heading() -> None:
    text = "# A\n```python\nx = 1\n```\n## B\ntext\n```bash\nls\n```\n```python\ny = 2\n```\n"
    assert readme_python_blocks(text) == [("A", "x = 1\n"), ("B", "y = 2\n")]


def test_the_readme_has_its_blocks() -> None:
    assert len(readme_python_blocks(README.read_text(encoding="utf-8"))) >= 10


@pytest.mark.slow  # a fresh interpreter per block, with the frameworks' imports (MiniLM in some)
@pytest.mark.parametrize("block", _cases())
def test_each_readme_block_runs_alone_in_a_fresh_interpreter(block: str, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(block, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, f"the block failed as printed:\n{block}\n--- stderr:\n{done.stderr[-3000:]}"
