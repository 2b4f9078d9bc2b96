"""``rrf-retriever --version`` prints the package version; ``-h`` is ``--help`` on the app and every command."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import rrf_retriever
from rrf_retriever.apps.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


def test_version_prints_the_package_version_and_exits_0() -> None:
    result = runner.invoke(app, ["--version"], env=ENV)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"rrf-retriever {rrf_retriever.__version__}"


@pytest.mark.parametrize("command", ["", "index", "search", "eval", "tune", "serve", "demo"])
def test_h_is_an_alias_of_help(command: str) -> None:
    args = [command] if command else []
    short = runner.invoke(app, [*args, "-h"], env=ENV, terminal_width=200)
    long = runner.invoke(app, [*args, "--help"], env=ENV, terminal_width=200)
    assert short.exit_code == 0, short.output
    assert short.output == long.output and "Usage" in short.output
