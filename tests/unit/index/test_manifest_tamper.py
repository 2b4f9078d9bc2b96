"""A tampered ``rrf-index.json``: every field of the wrong type or out of range is an :class:`IndexDirectoryError`
naming the field and what it holds, through ``open_index`` and ``from_texts(path=)``, and the index is left as is.

Plumbing only: the hashing embedder; the stores are real (qdrant-edge, the defaults).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import IndexDirectoryError
from rrf_retriever.index.directory import open_index
from rrf_retriever.index.manifest import MANIFEST_FILE

HUGE = 10**400


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "idx"
    with EnsembleRRFRetriever.from_texts(["alpha rockets", "beta gardens"], HashingEmbedding(16), path=root):
        pass
    return root


def sparse_copy(src: str, dst: str) -> None:
    """Copy only a file's data extents, leaving its holes as holes.

    qdrant-edge preallocates its WAL and segment files (~262 MiB of mostly holes per index); a plain copy
    (``shutil.copy2``, ``sendfile``) writes every zero, which made each test here spend ~1 s in the kernel.
    """
    if not hasattr(os, "SEEK_DATA"):  # no hole-aware lseek on this platform: a plain copy is still correct
        shutil.copyfile(src, dst)
        return
    fin, fout = os.open(src, os.O_RDONLY), os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        size, offset = os.fstat(fin).st_size, 0
        while offset < size:
            try:
                start = os.lseek(fin, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: nothing but a hole is left
                break
            end = os.lseek(fin, start, os.SEEK_HOLE)
            while start < end:
                chunk = os.pread(fin, min(end - start, 1 << 20), start)
                if not chunk:  # the file shrank under us: ftruncate below restores its size
                    break
                os.pwrite(fout, chunk, start)
                start += len(chunk)
            offset = end
        os.ftruncate(fout, size)
    finally:
        os.close(fin)
        os.close(fout)


def copy_index(template: Path, root: Path) -> None:
    shutil.copytree(template, root, copy_function=sparse_copy)


def tampered(template: Path, tmp_path: Path, change: Any) -> Path:
    root = tmp_path / "idx"
    copy_index(template, root)
    manifest = json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
    text = json.dumps(change(manifest) if callable(change) else change)
    (root / MANIFEST_FILE).write_text(text, encoding="utf-8")
    return root


def opened_both_ways(root: Path, *needles: str) -> None:
    """Both doors refuse with our error naming the field; the manifest is not rewritten."""
    before = (root / MANIFEST_FILE).read_bytes()
    with pytest.raises(IndexDirectoryError) as via_cli:
        open_index(root)
    with pytest.raises(IndexDirectoryError) as via_python:
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=root)
    for exc in (via_cli.value, via_python.value):
        for needle in needles:
            assert needle in str(exc), str(exc)
    assert (root / MANIFEST_FILE).read_bytes() == before


def setting(key: str, value: Any) -> Any:
    def change(manifest: dict[str, Any]) -> dict[str, Any]:
        return {**manifest, key: value}

    return change


@pytest.mark.parametrize(("key", "value", "shown"), [
    ("doc_count", "5", "'5'"),
    ("doc_count", -1, "-1"),
    ("doc_count", None, "None"),
    ("doc_count", 2.5, "2.5"),
    ("doc_count", True, "True"),
    pytest.param("doc_count", HUGE, "digits", id="doc_count-huge"),
    ("keyword_store", 5, "5"),
    ("keyword_store", ["fts5"], "['fts5']"),
    ("keyword_store", None, "None"),
    ("dense_store", {"kind": "qdrant"}, "{'kind': 'qdrant'}"),
    ("dense_store", 7, "7"),
    ("embedder", 16, "16"),
    ("embedder", ["hashing:16"], "['hashing:16']"),
    ("embedder_model", 3, "3"),
    ("embedder_class", [], "[]"),
    ("dimension", "16", "'16'"),
    ("dimension", 0, "0"),
    ("dimension", 16.0, "16.0"),
    pytest.param("dimension", HUGE, "digits", id="dimension-huge"),
    ("collection", 5, "5"),
    ("collection", "", "''"),
    ("created", 5, "5"),
    ("updated", [], "[]"),
    ("format", True, "True"),
    ("format", "1", "'1'"),
    ("analyzer", "english", "'english'"),
    ("analyzer", {"stem": ["porter"], "language": {"x": 1}}, "analyzer.stem"),
    ("analyzer", {"stopwords": [1, 2]}, "analyzer.stopwords"),
    ("settings", [1, 2], "[1, 2]"),
    ("qdrant_layout", 1, "1"),
    ("qdrant_url", 1, "1"),
])
def test_a_field_of_the_wrong_type_is_our_error_naming_it(template: Path, tmp_path: Path, key: str, value: Any,
                                                           shown: str) -> None:
    root = tampered(template, tmp_path, setting(key, value))
    opened_both_ways(root, key.split(".")[0], shown)


def test_a_huge_number_is_shown_shortened(template: Path, tmp_path: Path) -> None:
    root = tampered(template, tmp_path, setting("doc_count", HUGE))
    with pytest.raises(IndexDirectoryError) as info:
        open_index(root)
    assert len(str(info.value)) < 400


def test_a_dimension_as_a_string_is_not_the_confusing_mismatch(template: Path, tmp_path: Path) -> None:
    root = tampered(template, tmp_path, setting("dimension", "16"))
    with pytest.raises(IndexDirectoryError) as info:
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=root)
    assert "gives dimension" not in str(info.value)
    assert "dimension" in str(info.value) and "'16'" in str(info.value)


@pytest.mark.parametrize("content", [[1, 2, 3], "rrf", 5, None])
def test_a_manifest_that_is_not_an_object_is_our_error(template: Path, tmp_path: Path, content: Any) -> None:
    root = tampered(template, tmp_path, lambda manifest: content)
    opened_both_ways(root, "JSON object")


def test_a_missing_field_is_named(template: Path, tmp_path: Path) -> None:
    root = tampered(template, tmp_path, lambda manifest: {k: v for k, v in manifest.items() if k != "doc_count"})
    opened_both_ways(root, "doc_count")


def test_unknown_keys_and_the_untampered_manifest_still_open(template: Path, tmp_path: Path) -> None:
    root = tampered(template, tmp_path, setting("corpus_sha256", {"any": ["thing"]}))
    engine = open_index(root)
    try:
        assert engine.count() == {"dense": 2, "keyword": 2}
    finally:
        engine.close()


def test_a_number_past_pythons_digit_limit_is_our_error(template: Path, tmp_path: Path) -> None:
    # json.loads refuses an integer of more than 4,300 digits with a raw ValueError (Python's int-to-str limit).
    root = tmp_path / "idx"
    copy_index(template, root)
    text = (root / MANIFEST_FILE).read_text(encoding="utf-8")
    (root / MANIFEST_FILE).write_text(text.replace('"doc_count": 2', '"doc_count": ' + "9" * 5000), encoding="utf-8")
    opened_both_ways(root, MANIFEST_FILE)
