"""remembered_hash: a file's hash kept in the graph cache against the file's identity, so opening an index does not
read the weights again; any change to the file computes it again, and a memo that cannot be read or written only
costs the computation."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from rrf_retriever.embeddings.graph_cache import remembered_hash


def _counting(calls: list[Path]) -> Callable[[Path], str]:
    def sha(path: Path) -> str:
        calls.append(path)
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]

    return sha


def test_the_hash_is_computed_once_while_the_file_is_unchanged(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights v1")
    calls: list[Path] = []
    first = remembered_hash(weights, tmp_path, _counting(calls))
    again = [remembered_hash(weights, tmp_path, _counting(calls)) for _ in range(3)]
    assert first == hashlib.sha256(b"weights v1").hexdigest()[:16] and again == [first] * 3
    assert calls == [weights]
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_a_file_rewritten_with_the_same_size_and_mtime_is_hashed_again(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights v1")
    calls: list[Path] = []
    remembered_hash(weights, tmp_path, _counting(calls))
    st = weights.stat()
    with weights.open("r+b") as fh:  # the same inode, the same size
        fh.write(b"WEIGHTS v2")
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))  # the old modification time put back
    assert remembered_hash(weights, tmp_path, _counting(calls)) == hashlib.sha256(b"WEIGHTS v2").hexdigest()[:16]
    assert len(calls) == 2


def test_a_replaced_file_is_hashed_again(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights v1")
    remembered_hash(weights, tmp_path, _counting([]))
    (tmp_path / "new").write_bytes(b"weights v2")
    os.replace(tmp_path / "new", weights)
    assert remembered_hash(weights, tmp_path, _counting([])) == hashlib.sha256(b"weights v2").hexdigest()[:16]


def test_a_garbled_memo_or_an_unusable_cache_only_costs_the_computation(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights")
    expected = hashlib.sha256(b"weights").hexdigest()[:16]
    cache = tmp_path / "cache"
    cache.mkdir()
    remembered_hash(weights, cache, _counting([]))
    for memo in cache.iterdir():
        memo.write_text('{"stamp": "not a stamp", "hash": 3')
    calls: list[Path] = []
    assert remembered_hash(weights, cache, _counting(calls)) == expected and len(calls) == 1
    (tmp_path / "file").write_text("x")
    for unusable in (tmp_path / "missing", tmp_path / "file", tmp_path / "file" / "under"):
        assert remembered_hash(weights, unusable, _counting([])) == expected
    assert (tmp_path / "file").read_text() == "x"


def test_a_hostile_memo_is_never_taken_back(tmp_path: Path) -> None:
    """The remembered value names the graph file: a memo written by someone else (a path, a deep nest, the right
    stamp with a wrong kind of value) is computed again, never followed, never a crash."""
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights")
    expected = hashlib.sha256(b"weights").hexdigest()[:16]
    cache = tmp_path / "cache"
    cache.mkdir()
    remembered_hash(weights, cache, _counting([]))
    (memo,) = [m for m in cache.iterdir() if m.suffix == ".json"]
    stamp = json.loads(memo.read_text(encoding="utf-8"))["stamp"]
    for hostile in (json.dumps({"stamp": stamp, "hash": "../../evil"}), json.dumps({"stamp": stamp, "hash": "AB"}),
                    "[" * 100_000, json.dumps({"stamp": stamp, "hash": ["0" * 16]})):
        memo.write_text(hostile, encoding="utf-8")
        calls: list[Path] = []
        assert remembered_hash(weights, cache, _counting(calls)) == expected and len(calls) == 1
    assert not [m for m in cache.iterdir() if m.suffix == ".tmp"]  # no temporary file left behind
