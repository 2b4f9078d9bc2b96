"""``rrf-retriever serve`` with --api-key (or RRF_RETRIEVER_API_KEY), --allowed-host and --max-body: a real
subprocess on 127.0.0.1 serving and writing one index directory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from rrf_retriever.index.directory import create_index
from rrf_retriever.index.manifest import read_manifest, save_manifest
from tests.integrations.server_helpers import free_port

KEY = "cli-key-123"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serve") / "idx"
    engine = create_index(root, embedder="hashing:32")
    engine.add(["a", "b"], ["backup restore snapshot", "password reset login"], [{"session_id": 1}, {"session_id": 2}])
    save_manifest(root, engine)
    engine.close()
    return root


@contextmanager
def serving(index_dir: Path, *args: str, env: dict[str, str] | None = None,
            output: list[str] | None = None) -> Iterator[str]:
    """Run ``serve`` until the block ends; its output (stdout and stderr) is appended to ``output`` then."""
    port = free_port()
    cmd = [sys.executable, "-m", "rrf_retriever.apps.cli", "serve", "-d", str(index_dir), "--port", str(port), *args]
    full_env = {k: v for k, v in os.environ.items() if k != "RRF_RETRIEVER_API_KEY"}
    full_env.update(env or {})
    proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"serve exited {proc.returncode}: {proc.stdout.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    pytest.fail("serve did not start")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if output is not None:
            output.append(proc.stdout.read().decode())  # type: ignore[union-attr]  # stdout is a pipe


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rrf_retriever.apps.cli", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_serve_help_documents_the_new_options() -> None:
    out = _run_cli("serve", "--help").stdout
    for option in ("--api-key", "--api-key-file", "--expose-scores", "--allowed-host", "--max-body",
                   "RRF_RETRIEVER_API_KEY"):
        assert option in out, option


@pytest.mark.parametrize("how", ["option", "env"])
def test_serve_with_an_api_key_serves_and_writes_one_index(index_dir: Path, how: str) -> None:
    args, env = (("--api-key", KEY), None) if how == "option" else ((), {"RRF_RETRIEVER_API_KEY": KEY})
    with serving(index_dir, *args, env=env) as url, httpx.Client(base_url=url, timeout=30) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/settings").status_code == 401
        auth = {"Authorization": f"Bearer {KEY}"}
        assert c.get("/settings", headers=auth).status_code == 200
        assert c.get("/settings", headers={**auth, "Host": "evil.example"}).status_code == 400
        r = c.post("/documents", headers=auth, json={"documents": [{"id": f"c-{how}", "text": "served write"}]})
        assert r.status_code == 200, r.text
        assert read_manifest(index_dir)["doc_count"] == 3 + (how == "env")
        hits = c.post("/search", headers=auth, json={"q": "served write", "filter": {}}).json()["hits"]
        assert f"c-{how}" in {h["id"] for h in hits}


def test_serve_allowed_host_and_max_body(index_dir: Path) -> None:
    with serving(index_dir, "--allowed-host", "search.internal", "--max-body", "100") as url, \
            httpx.Client(base_url=url, timeout=30) as c:
        assert c.get("/settings", headers={"Host": "search.internal"}).status_code == 200
        assert c.get("/settings", headers={"Host": "127.0.0.1"}).status_code == 200
        assert c.get("/settings", headers={"Host": "evil.example"}).status_code == 400
        r = c.post("/search", json={"q": "x" * 200})
        assert r.status_code == 413, r.text


@pytest.mark.parametrize("args", [("--api-key", ""), ("--max-body", "0"), ("--allowed-host", "*.")])
def test_serve_refuses_bad_options(index_dir: Path, args: tuple[str, ...]) -> None:
    result = _run_cli("serve", "-d", str(index_dir), "--port", str(free_port()), *args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout


def test_serve_reads_the_key_from_a_file_and_can_expose_keyword_scores(index_dir: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")  # as `echo KEY > file` writes it
    key_file.chmod(0o600)
    output: list[str] = []
    with serving(index_dir, "--api-key-file", str(key_file), "--expose-scores", output=output) as url, \
            httpx.Client(base_url=url, timeout=30) as c:
        assert c.get("/settings").status_code == 401
        auth = {"Authorization": f"Bearer {KEY}"}
        hits = c.get("/search", params={"q": "backup restore"}, headers=auth).json()["hits"]
        assert any("keyword" in h["scores"] for h in hits)
    assert "warning" not in output[0].lower(), output[0]


def test_serve_hides_keyword_scores_unless_asked(index_dir: Path) -> None:
    with serving(index_dir) as url, httpx.Client(base_url=url, timeout=30) as c:
        hits = c.get("/search", params={"q": "backup restore"}).json()["hits"]
    assert hits and all("keyword" not in h["scores"] for h in hits)


def test_an_api_key_on_the_command_line_warns_and_names_the_alternatives(index_dir: Path) -> None:
    output: list[str] = []
    with serving(index_dir, "--api-key", KEY, output=output) as url:
        assert httpx.get(f"{url}/settings", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    warning = " ".join(output[0].split())  # rich wraps long lines
    assert "warning" in warning and "other local users" in warning
    assert "RRF_RETRIEVER_API_KEY" in warning and "--api-key-file" in warning
    assert KEY not in output[0]


def test_an_api_key_from_the_environment_does_not_warn(index_dir: Path) -> None:
    output: list[str] = []
    with serving(index_dir, env={"RRF_RETRIEVER_API_KEY": KEY}, output=output):
        pass
    assert "--api-key-file" not in output[0], output[0]


@pytest.mark.parametrize("case", ["both", "missing", "empty", "directory"])
def test_serve_refuses_a_bad_api_key_file(index_dir: Path, tmp_path: Path, case: str) -> None:
    key_file = tmp_path / "key"
    args = ["--api-key-file", str(key_file)]
    if case == "both":
        key_file.write_text(KEY)
        args += ["--api-key", KEY]
    elif case == "empty":
        key_file.write_text("\n")
    elif case == "directory":
        key_file.mkdir()
    result = _run_cli("serve", "-d", str(index_dir), "--port", str(free_port()), *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "api-key" in result.stderr and KEY not in result.stderr
