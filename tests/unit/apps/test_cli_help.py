"""The CLI's help reads like a CLI's: plain flags show no ``<bool>``, arguments are named QUERY not ``{query}``,
and the demo names the index path it really uses."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from rrf_retriever.apps.cli import app
from rrf_retriever.apps.demo import default_demo_index_dir

runner = CliRunner()


def help_of(*command: str) -> str:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"}, terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", ["search", "index", "eval", "serve", "demo", ""])
def test_flags_show_no_bool_type_and_arguments_no_braces(command: str) -> None:
    text = help_of(*filter(None, [command]))
    assert "<bool>" not in text
    assert not re.search(r"\{[a-z_]+\}", text), text


def test_search_usage_names_its_argument_and_flags() -> None:
    text = help_of("search")
    assert "QUERY" in text
    assert re.search(r"--explain\s+Show", text), text
    assert re.search(r"--json\s+Print", text), text


def test_demo_help_names_the_real_index_path() -> None:
    text = help_of("demo")
    assert "default: .cache/demo-index" not in text
    assert "RRF_RETRIEVER_CACHE_DIR" in text
    assert "rrf-retriever/demo-index" in text
    assert default_demo_index_dir().name == "demo-index"
