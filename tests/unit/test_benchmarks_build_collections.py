"""benchmarks/quality/build_collections.py: each parser on a tiny file of its format, the blob-id pin, the BEIR write.

The real files are pinned by blob id in the script and live outside the repository; these inputs are made here in
the same formats (with their quirks: TIME's dangling judgments, LISA's repeated and headless records), so the
parsing rules the SOURCE.md files describe are held by tests.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from benchmarks.quality import build_collections as bc
from rrf_retriever.evaluation import load_beir


def _pin(files: dict[str, bytes]) -> bc.Pin:
    return bc.Pin("owner/name", "0" * 40, {path: bc.git_blob_id(data) for path, data in files.items()})


def test_git_blob_id_is_gits_own() -> None:
    # `printf 'hello\n' | git hash-object --stdin`
    assert bc.git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_a_folder_source_is_read_by_base_name_and_a_changed_file_is_refused(tmp_path: Path) -> None:
    files = {"time/TIME.ALL": b"a", "time/TIME.QUE": b"b", "time/TIME.REL": b"c"}
    for path, data in files.items():
        (tmp_path / Path(path).name).write_bytes(data)
    pin = _pin(files)
    assert bc.read_pinned(tmp_path, pin) == files
    (tmp_path / "TIME.REL").write_bytes(b"changed")
    with pytest.raises(SystemExit, match="not the pinned"):
        bc.read_pinned(tmp_path, pin)


def test_time_numbers_docs_by_position_and_drops_judgments_of_missing_docs() -> None:
    built = bc.build_time({
        "time/TIME.ALL": b"*TEXT 017 01/04/63 PAGE 020\n\nTHE ALLIES\n\nAFTER NASSAU .\n\n"
                         b"*TEXT 019 01/04/63 PAGE 021\n\nSECOND  STORY\n\n*STOP\n",
        "time/TIME.QUE": b"*FIND      1\n\n NASSAU ACCORD .\n\n*FIND      2\n\nNOTHING\n\n*STOP\n",
        "time/TIME.REL": b"1  1 2 3\n\n2  3\n",
    })
    assert built.docs["1"] == {"_id": "1", "title": "", "text": "THE ALLIES AFTER NASSAU .",
                               "metadata": {"header": "TEXT 017 01/04/63 PAGE 020"}}
    assert built.docs["2"]["text"] == "SECOND STORY"
    assert built.queries == {"1": "NASSAU ACCORD .", "2": "NOTHING"}
    assert built.qrels == {"test": {"1": {"1": 1, "2": 1}}}  # doc 3 does not exist; query 2 is left unjudged


def test_lisa_keeps_identical_repeats_once_drops_headless_fragments_and_reads_lisarj() -> None:
    rec = b"Document    7\nA TITLE\nOVER TWO LINES.\n     \nTHE ABSTRACT\nTEXT.\n"
    stars = b"*" * 44 + b"\n"
    built = bc.build_lisa({
        "Collections/LISA0.001": b"\n" + rec + stars + b"A HEADLESS FRAGMENT.\n" + stars + rec + stars,
        "LISA.QUE": b"1\nWHAT ABOUT\nLIBRARIES. #\n2\nAND MUSEUMS. #\n",
        "LISA.REL": b"Query 1\n1 Relevant Refs:\n7 -1\n\nQuery 2\n3 Relevant Refs:\n7 -1\n",  # query 2 cut short
        "LISARJ.NUM": b"  1  1  7\n  2  1  7\n",
    })
    assert built.docs == {"7": {"_id": "7", "title": "A TITLE OVER TWO LINES.", "text": "THE ABSTRACT TEXT."}}
    assert built.queries == {"1": "WHAT ABOUT LIBRARIES.", "2": "AND MUSEUMS."}
    assert built.qrels == {"test": {"1": {"7": 1}, "2": {"7": 1}}}


def test_lisa_refuses_a_repeat_with_other_text_and_a_rel_file_that_disagrees() -> None:
    stars = b"*" * 44 + b"\n"
    files = {"Collections/LISA0.001": b"Document 1\nT\n\nA\n" + stars + b"Document 1\nT\n\nB\n" + stars,
             "LISA.QUE": b"1\nQ #\n", "LISA.REL": b"", "LISARJ.NUM": b"1 1 1\n"}
    with pytest.raises(SystemExit, match="twice"):
        bc.build_lisa(files)
    files["Collections/LISA0.001"] = b"Document 1\nT\n\nA\n" + stars
    files["LISA.REL"] = b"Query 1\n1 Relevant Refs:\n2 -1\n"
    with pytest.raises(SystemExit, match="disagree"):
        bc.build_lisa(files)


def _tarball(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_adi_reads_the_crlf_tarball_and_drops_authors(monkeypatch: pytest.MonkeyPatch) -> None:
    members = {
        "ADI.ALL": b".I 1\r\n.T\r\na title\r\n.A\r\nH. S. WHITE\r\n.W\r\nthe text\r\n of it\r\n",
        "ADI.QRY": b".I 1\r\n.W\r\nwhat problems ?\r\n",
        "ADI.REL": b"1   1   0   0.000000   \r\n",
    }
    monkeypatch.setattr(bc, "ADI_MEMBERS", {name: bc.git_blob_id(data) for name, data in members.items()})
    built = bc.build_adi({"adi/adi.tar.gz": _tarball(members)})
    assert built.docs == {"1": {"_id": "1", "title": "a title", "text": "the text of it"}}
    assert built.queries == {"1": "what problems ?"}
    assert built.qrels == {"test": {"1": {"1": 1}}}
    monkeypatch.setattr(bc, "ADI_MEMBERS", {**bc.ADI_MEMBERS, "ADI.REL": "0" * 40})
    with pytest.raises(SystemExit, match=r"member ADI\.REL"):
        bc.build_adi({"adi/adi.tar.gz": _tarball(members)})


def _cosqa_files(retrieval_idx: int = 1) -> dict[str, bytes]:
    code = {"def a():\n    pass": 0, "def b():\n    return 1": 1}
    test = [{"idx": "cosqa-train-1", "doc": "return one python", "code": "def b():\n    return 1", "label": 1,
             "retrieval_idx": retrieval_idx}]
    dev = [{"idx": "cosqa-dev-2", "doc": "empty function", "code": "def a():\n    pass", "label": 1, "retrieval_idx": 0}]
    return {"data/search/code_idx_map.txt": json.dumps(code).encode(),
            "data/search/cosqa-retrieval-test-500.json": json.dumps(test).encode(),
            "data/search/cosqa-retrieval-dev-500.json": json.dumps(dev).encode()}


def test_cosqa_judges_each_query_by_its_own_code() -> None:
    built = bc.build_cosqa(_cosqa_files())
    assert built.docs["1"] == {"_id": "1", "title": "", "text": "def b():\n    return 1"}
    assert built.queries == {"cosqa-train-1": "return one python", "cosqa-dev-2": "empty function"}
    assert built.qrels == {"test": {"cosqa-train-1": {"1": 1}}, "dev": {"cosqa-dev-2": {"0": 1}}}
    with pytest.raises(SystemExit, match="retrieval_idx"):
        bc.build_cosqa(_cosqa_files(retrieval_idx=0))


def test_nfcorpus_refuses_qrels_that_are_not_the_published_file() -> None:
    base = "data/nfcorpus/"
    files = {base + "test.docs": b"MED-1\tstatin text\n", base + "raw/test.docs.ids": b"MED-1\n",
             base + "test.titles.queries": b"PLAIN-1\tdeafness\n", base + "test.all.queries": b"PLAIN-1\tdeafness - -\n",
             base + "test.2-1-0.qrel": b"PLAIN-1\t0\tMED-1\t2\n", base + "test.3-2-1.qrel": b"PLAIN-1\t0\tMED-1\t3\n"}
    with pytest.raises(SystemExit, match="ir_datasets"):
        bc.build_nfcorpus(files)
    files[base + "raw/test.docs.ids"] = b"MED-1\nMED-2\n"
    with pytest.raises(SystemExit, match=r"test\.docs\.ids"):
        bc.build_nfcorpus(files)


def test_the_written_folder_loads_with_load_beir_and_counts_are_checked(tmp_path: Path) -> None:
    built = bc.build_cosqa(_cosqa_files())
    bc.write(tmp_path / "c", built)
    ds = load_beir(tmp_path / "c", split="test")
    assert (len(ds.corpus), ds.queries, ds.qrels) == (2, {"cosqa-train-1": "return one python"},
                                                       {"cosqa-train-1": {"1": 1}})
    assert (tmp_path / "c" / "qrels" / "dev.tsv").read_text().splitlines()[0] == "query-id\tcorpus-id\tscore"
    with pytest.raises(SystemExit, match="not the expected"):
        bc.check_counts("cosqa", built)


def test_write_copies_the_source_md_beside_the_data(tmp_path: Path) -> None:
    source = tmp_path / "SOURCE.md"
    source.write_bytes(b"# provenance\n")
    bc.write(tmp_path / "c", bc.build_cosqa(_cosqa_files()), source)
    assert (tmp_path / "c" / "SOURCE.md").read_bytes() == b"# provenance\n"


@pytest.mark.parametrize("name", sorted(bc.PINS))
def test_each_committed_source_md_names_its_pin_every_blob_and_its_counts(name: str) -> None:
    text = (bc.SOURCES / name / "SOURCE.md").read_text(encoding="utf-8")
    pin = bc.PINS[name]
    assert pin.repo in text
    assert pin.commit in text
    blobs = list(pin.blobs.values()) + (list(bc.ADI_MEMBERS.values()) if name == "adi" else [])
    assert [b for b in blobs if b not in text] == []
    n_docs, n_queries, splits = bc.EXPECTED[name]
    assert f"{n_docs:,} docs" in text
    assert f"{n_queries:,} queries" in text
    for judgments, judged in splits.values():
        assert f"{judgments:,} judgments, {judged:,} queries" in text
    assert "Licence" in text
