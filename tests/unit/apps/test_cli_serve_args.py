"""``rrf-retriever serve`` refuses a port outside 1..65535 and a malformed host in a short usage error (exit code 2),
before opening the index or starting a server: never uvicorn's OverflowError traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rrf_retriever.apps.cli import app

runner = CliRunner()


def serve(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["serve", "-d", str(tmp_path / "no-index"), *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("port", ["70000", "0", "-1", "65536", "99999999999999999999"])
def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path, port: str) -> None:
    code, out = serve(tmp_path, "--port", port)
    assert code == 2, out
    assert "Traceback" not in out and "OverflowError" not in out
    assert "--port" in out and "65535" in out
    assert len(out.splitlines()) <= 8  # typer's short usage box, not a traceback


@pytest.mark.parametrize("host", ["", "exa mple.org", "http://localhost", "[::1]", "bad_host!", "a" * 300,
                                  "-leading.org", "1.2.3.4.5.6"])
def test_a_malformed_host_is_a_usage_error(tmp_path: Path, host: str) -> None:
    code, out = serve(tmp_path, "--host", host)
    assert code == 2, out
    assert "Traceback" not in out and "--host" in out
    assert len(out.splitlines()) <= 8


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::", "::1", "localhost", "search.internal.example.org",
                                  "fe80::1%eth0"])
def test_a_good_host_and_port_get_past_the_checks(tmp_path: Path, host: str) -> None:
    # the checks pass; the missing index is what stops the command (our error, exit 2, no server started)
    code, out = serve(tmp_path, "--host", host, "--port", "65535")
    assert code == 2, out
    assert "no index at" in " ".join(out.split())
