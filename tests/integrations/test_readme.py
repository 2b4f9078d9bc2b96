"""The README's quickstarts run as written (a user copies them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _block_after(heading: str, nth: int = 0) -> str:
    """The ``nth`` python block of the section under ``heading`` (up to the next ``## `` heading)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    section = section[:section.find("\n## ")] if "\n## " in section else section
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) > nth, heading
    return str(blocks[nth])


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


def test_the_llamaindex_query_fusion_recipe_runs_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_block_after("### Recipes: LlamaIndex", 1), "README.md", "exec"), namespace)
    fused = [(n.node.node_id, n.score) for n in namespace["fused"]]
    assert fused[0] == ("kb-1", pytest.approx(2 / 60))  # first in both members: fused into one node
    assert len(fused) == 3 and len({i for i, _ in fused}) == 3  # as many nodes as asked, each once
    namespace["hybrid"].close()


def test_every_recipe_block_is_run_by_a_test() -> None:
    """A recipe added to a Recipes section without a test here (or in test_langchain_recipes.py) fails this."""
    assert len(re.findall(r"```python\n", _section("### Recipes: LlamaIndex"))) == 2
    assert len(re.findall(r"```python\n", _section("### Recipes: LangChain"))) == 3


def _section(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    return section[:section.index("\n## ")]


def test_the_result_identity_example_runs_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_block_after("## What every result carries"), "README.md", "exec"), namespace)
    assert namespace["first"].id == namespace["second"].id == "kb-2"
    assert namespace["same_document"] is True and namespace["same_hash"] is True
    first, second = namespace["scorings"]
    assert first != second  # the per-query scoring is there, and differs
    namespace["retriever"].close()


def test_the_limits_the_readme_states_are_the_code_s() -> None:
    """Each bound the README names is stated with its number just before the name: that number is the constant's
    (a bound changed in the code and not in the README, or the other way round, fails here)."""
    from rrf_retriever.engine.settings import MAX_DENSE_PATHS
    from rrf_retriever.frameworks.listing import LIST_MAX
    from rrf_retriever.llama_index.vector_store import NODE_IDS_MAX_OTHERS
    from rrf_retriever.scope.parse import MAX_FILTER_VALUES_TOTAL
    from rrf_retriever.validate import MAX_LINKS, MAX_QUERY_LENGTH

    text = " ".join(README.read_text(encoding="utf-8").split())
    bounds = {"NODE_IDS_MAX_OTHERS": NODE_IDS_MAX_OTHERS, "LIST_MAX": LIST_MAX, "MAX_QUERY_LENGTH": MAX_QUERY_LENGTH,
              "MAX_DENSE_PATHS": MAX_DENSE_PATHS, "MAX_FILTER_VALUES_TOTAL": MAX_FILTER_VALUES_TOTAL,
              "MAX_LINKS": MAX_LINKS}
    for name, value in bounds.items():
        at = text.index(name)
        stated = re.findall(r"\d[\d,]*", text[max(0, at - 120):at])
        assert stated and int(stated[-1].replace(",", "")) == value, (name, text[max(0, at - 120):at])


def test_the_any_embedder_block_prints_what_its_comments_say(capsys: pytest.CaptureFixture[str]) -> None:
    block = _block_after("### Any embedder: the legs measured on the corpus")
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.strip().splitlines()
    promised = [line[2:] for line in block.splitlines() if line.startswith("# ")]
    assert len(printed) == len(promised)
    for got, said in zip(printed, promised):
        said = re.sub(r"\d+\.\d\d s", "<s>", said)  # the measurement's own seconds vary from run to run
        got = re.sub(r"\d+\.\d\d s", "<s>", got)
        if said.endswith("..."):  # the README cuts a long line short
            assert got.startswith(said[:-3].rstrip()), (got, said)
        else:
            assert got == said
