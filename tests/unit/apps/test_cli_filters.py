"""Typed CLI filters: ``key:str=42`` asks for the string "42", ``--filter-json`` takes the filter as JSON, and an
empty value list is an error, never "everything"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rrf_retriever.apps.cli import app
from rrf_retriever.apps.cli_options import parse_filters
from rrf_retriever.errors import FilterError
from rrf_retriever.scope.cli_syntax import parse_filter_item, parse_filter_values

runner = CliRunner()
DOCS = [
    {"id": "int42", "text": "deploy the relay server", "metadata": {"session_id": 42, "pinned": True}},
    {"id": "str42", "text": "deploy the relay server again", "metadata": {"session_id": "42", "pinned": False}},
    {"id": "other", "text": "deploy the relay server elsewhere", "metadata": {"session_id": 7}},
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("filters")
    corpus = root / "docs.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n")
    result = runner.invoke(app, ["index", str(corpus), "-d", str(root / "idx"), "--embedder", "hashing:16"])
    assert result.exit_code == 0, result.output
    return root / "idx"


def ids(index_dir: Path, *args: str) -> set[str]:
    result = runner.invoke(app, ["search", "deploy relay", "-d", str(index_dir), "--json", *args])
    assert result.exit_code == 0, result.output
    return {h["id"] for h in json.loads(result.output)["hits"]}


def test_a_numeric_string_can_be_asked_for(index_dir: Path) -> None:
    assert ids(index_dir, "-f", "session_id=42") == {"int42"}  # plain: an integer if it parses
    assert ids(index_dir, "-f", "session_id:str=42") == {"str42"}
    assert ids(index_dir, "-f", "session_id:int=42,7") == {"int42", "other"}
    assert ids(index_dir, "-f", "pinned:bool=true") == {"int42"}
    assert ids(index_dir, "--filter-json", '{"session_id": ["42"]}') == {"str42"}
    assert ids(index_dir, "--filter-json", '{"session_id": [42, "42"]}', "-f", "pinned:bool=false") == {"str42"}


def test_where_takes_the_full_language_and_ands_with_filter(index_dir: Path) -> None:
    assert ids(index_dir, "--where", '{"session_id": {"$gte": 10}}') == {"int42"}  # never the string "42"
    assert ids(index_dir, "--where", '{"pinned": {"$exists": false}}') == {"other"}
    assert ids(index_dir, "--where", '{"$or": [{"pinned": true}, {"session_id": {"$lt": 10}}]}') == {"int42", "other"}
    assert ids(index_dir, "--where", '{"session_id": {"$ne": 7}}', "-f", "session_id=42") == {"int42"}
    assert ids(index_dir, "--filter-json", '{"session_id": 7}', "-f", "session_id=42") == set()  # AND, not merge


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "session_id="], "no value"),
        (["-f", "session_id=,"], "no value"),
        (["-f", "session_id:int=abc"], "not an integer"),
        (["-f", "pinned:bool=maybe"], "true or false"),
        (["-f", "session_id:date=1"], "unknown type"),
        (["--filter-json", "{nope"], "not valid JSON"),
        (["--filter-json", "[1, 2]"], "JSON object"),
        (["--where", '{"session_id": {"$gt": "4"}}'], "needs a number"),
        (["--where", '{"session_id": {"$regex": "4"}}'], "unknown filter operator"),
        (["--where", '{"$or": []}'], "at least one filter"),
    ],
)
def test_bad_filters_are_one_line_errors(index_dir: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["search", "deploy", "-d", str(index_dir), *args])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_parse_filters_and_the_shared_parsers() -> None:
    assert parse_filters(["session_id:str=1,2", "lang=en", "session_id=3"]) == {"session_id": ["1", "2", 3],
                                                                             "lang": "en"}
    with pytest.raises(FilterError, match="unknown type"):
        parse_filter_item("a:b=1")  # a key cannot hold ':', so this names a type
    assert parse_filter_item(" flag:bool = True ") == ("flag", [True])
    assert parse_filter_values("01, 2", "str") == ["01", "2"]
    assert parse_filter_values("1, 2,,en") == [1, 2, "en"]  # unchanged default
    with pytest.raises(FilterError, match="no value"):
        parse_filter_item("session_id=")
