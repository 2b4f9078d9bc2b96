"""Rebuild more judged collections (TIME, LISA, ADI, CoSQA, NFCorpus) into ``shared/data/<name>/`` from pinned public snapshots.

Each collection is read from one public GitHub repository at a pinned commit. Every file's git blob id is checked
before it is parsed, so a changed or damaged copy fails loudly. Every count (docs, queries, judgments) is checked
against the figures written in that collection's ``SOURCE.md``. It then writes the BEIR layout that
:func:`rrf_retriever.evaluation.load_beir` reads: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``
(with the ``query-id<TAB>corpus-id<TAB>score`` header), and copies the collection's hand-written ``SOURCE.md``
(provenance, every blob id, licence, counts, rules) from ``benchmarks/data/collections/<name>/`` (:data:`SOURCES`,
kept in the repository) beside them.

* ``time``: Chaplinski/IR-Assignment3 @ 7586dbc4. TIME magazine news, 1963 (Glasgow / SMART).
* ``lisa``: HamzaMouaz/AI-powered-information-retrieval-system @ 9b403e8c. Library and information science
  abstracts (Glasgow).
* ``adi``: lailaglez/belief-network-irs @ f5096aa1. Documentation / information science (SMART; Glasgow tarball).
* ``cosqa``: Jun-jie-Huang/CoCLR @ 778daa8a. Code search: web queries -> Python functions.
* ``nfcorpus``: hakimamarullah/medisearch-api @ 80859055. The NFCorpus archive's test split: nutrition questions ->
  PubMed abstracts, in the authors' preprocessed text, with BEIR's test judgments.

A source is either the repository's git directory (e.g. a snapshot under ``/work/.mirror/<owner>+<name>/repo``),
which is read with ``git cat-file`` at the pinned commit, or a plain folder holding the files at their repository
paths or under their base names. Only the standard library is used, plus ``git`` when a source is a git directory.

Run (from the repository root)::

    python benchmarks/quality/build_collections.py --time DIR --lisa DIR --adi DIR --cosqa DIR --nfcorpus DIR [--out DIR]

Each collection is built only if its flag is given. ``--out`` defaults to
:data:`benchmarks.common.paths.DATA`. ``--check`` then loads every collection it built with ``load_beir`` and
prints the counts.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

#: The committed ``<name>/SOURCE.md`` of each collection, copied into its output folder.
SOURCES = Path(__file__).resolve().parents[1] / "data" / "collections"

Docs = dict[str, dict[str, object]]
Qrels = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Pin:
    """One repository at one commit, and the git blob id each file read from it must have."""

    repo: str
    commit: str
    blobs: dict[str, str]


@dataclass
class Built:
    """A parsed collection: documents, every query (judged or not) and the qrels of each split."""

    docs: Docs
    queries: dict[str, str]
    qrels: dict[str, Qrels]


PINS = {
    "time": Pin("Chaplinski/IR-Assignment3", "7586dbc4598bcb1531489972f86cc8bc00ab633b", {
        "time/TIME.ALL": "ec831e3d61e5160674874e6bbc66242ffb0f601c",
        "time/TIME.QUE": "3503f1773e79b98819783e3b4e1b6202411ec8cf",
        "time/TIME.REL": "f6141f3b5b11317c290a4f9d43249f8cf25b81de",
    }),
    "lisa": Pin("HamzaMouaz/AI-powered-information-retrieval-system", "9b403e8cde7fe9c7d2ec0feaca19a1198d87579d", {
        "Collections/LISA0.001": "ddc9351b29f645baeba8fde9cc8112d60a91b5c6",
        "Collections/LISA0.501": "c8c95f1ac66e2c8977d47ec55d43965f733aae1c",
        "Collections/LISA1.001": "c8436a663af7a9d5e8f241fa010f6ad3d7dea17d",
        "Collections/LISA1.501": "afbe08ce0c52eb5eb0e314b8c4504bbd73ffb952",
        "Collections/LISA2.001": "1b37088e398258f1c4e43f34ced2a68c6c541af7",
        "Collections/LISA2.501": "43576519fde8745be5cbd9322b9a21e8a0f12ca2",
        "Collections/LISA3.001": "be2d7c1d0ee7cf276049c33f17d9770ae2a9cc0e",
        "Collections/LISA3.501": "9c1d5df25b64546e2384360b19addac3b97fa954",
        "Collections/LISA4.001": "78e9cd3281193e8137f758424dbb080e38a8497e",
        "Collections/LISA4.501": "6f8bec2de27ea92e30639dcbe0bf0e297702bd27",
        "Collections/LISA5.001": "15cd22b8549fabcdf6834c2be7ba8078b8661105",
        "Collections/LISA5.501": "a035fc6ad9b59cc59d385527bc348f9842d7139d",
        "Collections/LISA5.627": "724ca5137661b61d2811578394838c79cf9fd500",
        "Collections/LISA5.850": "dfd55b34a8097f6944a9b5e9947903632f98dab7",
        "LISA.QUE": "32a87cd7b9e5b44280de9525dfbee14589f7c4ee",
        "LISA.REL": "8923896a8e0f12d3f77124cd3ac1ad1547b42828",
        "LISARJ.NUM": "1f2f89cbccfcb0e6c9ed6f57148bccbcf98f47cd",
    }),
    # The Glasgow tarball itself, from the repository and commit the MED copy came from.
    "adi": Pin("lailaglez/belief-network-irs", "f5096aa1af21702e40d93c56f673d22bd4d13094", {
        "adi/adi.tar.gz": "acff77afa952f767c8472eebb62abb8cd65578ce",
    }),
    "nfcorpus": Pin("hakimamarullah/medisearch-api", "80859055c4e0df4cc7a209b74ff62ac8fdaf2592", {
        "data/nfcorpus/test.docs": "82fcbd78694c6a5b70e360840040e2c1a648f884",
        "data/nfcorpus/test.titles.queries": "ffba74420a0879551727a16416d20f427eedabde",
        "data/nfcorpus/test.all.queries": "352dbd4c675044f675a64ed654bba8c7e3709b96",
        "data/nfcorpus/test.2-1-0.qrel": "5046dbf46d22bd27341636192cb73075007b5454",
        "data/nfcorpus/test.3-2-1.qrel": "fc1a096bda160263d07aff60ed0d3d74575285b0",
        "data/nfcorpus/raw/test.docs.ids": "ea6e01e5904b3161e94f921a4193f70178152fef",
    }),
    "cosqa": Pin("Jun-jie-Huang/CoCLR", "778daa8aa9ac1dbee8839775edfce191d356861e", {
        "data/search/code_idx_map.txt": "a9dda4a5fc56ab7b95fb0d7fb90048c00a3bf831",
        "data/search/cosqa-retrieval-test-500.json": "07f1b83205c50a5e805930ffdfc5f05050f07742",
        "data/search/cosqa-retrieval-dev-500.json": "41b50fdfb94cbf69b3564d4de51369d2b7134225",
    }),
}

#: (docs, queries, {split: (judgments, judged queries)}) -- the figures each SOURCE.md states.
EXPECTED = {
    "time": (423, 83, {"test": (321, 82)}),
    "lisa": (5999, 35, {"test": (379, 35)}),
    "adi": (82, 35, {"test": (170, 35)}),
    "cosqa": (6267, 1000, {"test": (500, 500), "dev": (500, 500)}),
    "nfcorpus": (3162, 325, {"test": (12334, 323)}),
}


def git_blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes (``git hash-object``)."""
    # SHA-1 because that is git's own object id (what the pins record), not for security.
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def read_pinned(source: Path, pin: Pin) -> dict[str, bytes]:
    """Every pinned file of ``pin`` from ``source`` (a git directory, or a folder), each checked by its blob id."""
    is_git = (source / "objects").is_dir() or (source / ".git").exists()
    out: dict[str, bytes] = {}
    for path, blob in pin.blobs.items():
        if is_git:
            done = subprocess.run(["git", "--git-dir", str(source if (source / "objects").is_dir() else source / ".git"),
                                   "cat-file", "blob", f"{pin.commit}:{path}"], capture_output=True, check=False)
            if done.returncode != 0:
                msg = f"{pin.repo}@{pin.commit[:8]}:{path} not readable from {source}: {done.stderr.decode()[:200]}"
                raise SystemExit(msg)
            data = done.stdout
        else:
            candidates = [source / path, source / Path(path).name]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                msg = f"{path} not found under {source}"
                raise SystemExit(msg)
            data = found.read_bytes()
        if git_blob_id(data) != blob:
            msg = f"{pin.repo}:{path}: blob {git_blob_id(data)} is not the pinned {blob}"
            raise SystemExit(msg)
        out[path] = data
    return out


def _collapse(text: str) -> str:
    return " ".join(text.split())


def build_time(files: dict[str, bytes]) -> Built:
    """TIME: ``*TEXT nnn date PAGE p`` records; docs are numbered 1..423 in file order, as TIME.REL counts them."""
    records = re.split(r"^\*TEXT", files["time/TIME.ALL"].decode("ascii"), flags=re.MULTILINE)[1:]
    docs: Docs = {}
    for n, rec in enumerate(records, 1):
        header, _, body = rec.partition("\n")
        body = body.split("*STOP")[0]
        docs[str(n)] = {"_id": str(n), "title": "", "text": _collapse(body),
                        "metadata": {"header": _collapse("TEXT" + header)}}
    queries = {}
    for rec in re.split(r"^\*FIND", files["time/TIME.QUE"].decode("ascii"), flags=re.MULTILINE)[1:]:
        head, _, body = rec.partition("\n")
        queries[str(int(head))] = _collapse(body.split("*STOP")[0])
    qrels: Qrels = {}
    for line in files["time/TIME.REL"].decode("ascii").splitlines():
        if line.strip():
            qid, *dids = line.split()
            # Three pairs name docs 424 and 425, which TIME.ALL does not hold (SOURCE.md): dropped.
            qrels.setdefault(qid, {}).update({d: 1 for d in dids if d in docs})
    return Built(docs, queries, {"test": {q: r for q, r in qrels.items() if r}})


def build_lisa(files: dict[str, bytes]) -> Built:
    """LISA: ``Document N`` records split by asterisk lines; title up to the first blank line, abstract after it."""
    docs: Docs = {}
    for path in sorted(p for p in files if p.startswith("Collections/")):
        for rec in re.split(r"^\*{20,}\s*$", files[path].decode("ascii"), flags=re.MULTILINE):
            if not rec.strip():
                continue
            m = re.match(r"\s*Document\s+(\d+)\s*\n(.*)", rec, re.DOTALL)
            if m is None:
                continue  # the one headless fragment in LISA1.501 (SOURCE.md): no id, so no document
            did, body = m.group(1), m.group(2)
            parts = re.split(r"\n[ \t]*\n", body.strip("\n"), maxsplit=1)
            doc = {"_id": did, "title": _collapse(parts[0]), "text": _collapse(parts[1] if len(parts) > 1 else "")}
            if did in docs and docs[did] != doc:
                msg = f"LISA document {did} appears twice with different text"
                raise SystemExit(msg)
            docs[did] = doc  # 1998-2001 appear twice, identically
    queries = {m.group(1): _collapse(m.group(2)) for m in
               re.finditer(r"^\s*(\d+)\s*\n(.*?)#", files["LISA.QUE"].decode("ascii"), re.DOTALL | re.MULTILINE)}
    nums = files["LISARJ.NUM"].decode("ascii").split()
    qrels: Qrels = {}
    i = 0
    while i < len(nums):
        qid, n = nums[i], int(nums[i + 1])
        qrels.setdefault(qid, {}).update({d: 1 for d in nums[i + 2:i + 2 + n]})
        i += 2 + n
    # LISA.REL says the same for every query it holds whole (it is cut short inside query 21): checked here.
    for m in re.finditer(r"Query\s+(\d+)\s*\n\s*(\d+)\s+Relevant Refs:\s*\n([\d\s]*?)-1",
                         files["LISA.REL"].decode("ascii")):
        ids = m.group(3).split()
        if len(ids) == int(m.group(2)) and set(ids) != set(qrels.get(m.group(1), {})):
            msg = f"LISA query {m.group(1)}: LISA.REL and LISARJ.NUM disagree"
            raise SystemExit(msg)
    return Built(docs, queries, {"test": qrels})


def _smart_fields(text: str) -> dict[str, dict[str, str]]:
    """SMART ``.I id`` records -> {id: {field letter: text}}."""
    out: dict[str, dict[str, str]] = {}
    for rec in re.split(r"^\.I\s+", text, flags=re.MULTILINE)[1:]:
        did, _, rest = rec.partition("\n")
        fields = re.split(r"^\.([A-Z])\s*$", rest, flags=re.MULTILINE)
        out[did.strip()] = {fields[k]: _collapse(fields[k + 1]) for k in range(1, len(fields) - 1, 2)}
    return out


#: The tarball's members (dated 1994-02-28) and their git blob ids, as packed (CRLF).
ADI_MEMBERS = {
    "ADI.ALL": "e61b99a1f91ddf4eb46d98d2a2d4feaa507a721f",
    "ADI.QRY": "ff365384631715bc867b98451a900d09de052416",
    "ADI.REL": "dbc5b40df8942094634610bb2bde8f251c0a230f",
}


def _adi_members(tarball: bytes) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        out = {}
        for name, blob in ADI_MEMBERS.items():
            member = tar.extractfile(name)
            data = member.read() if member is not None else b""
            if git_blob_id(data) != blob:
                msg = f"adi.tar.gz member {name}: blob {git_blob_id(data)} is not the pinned {blob}"
                raise SystemExit(msg)
            out[name] = data.decode("ascii").replace("\r\n", "\n")
    return out


def build_adi(files: dict[str, bytes]) -> Built:
    """ADI: SMART ``.I/.T/.A/.W`` records; title = ``.T``, text = ``.W`` (authors dropped, as for CACM)."""
    members = _adi_members(files["adi/adi.tar.gz"])
    docs: Docs = {did: {"_id": did, "title": f.get("T", ""), "text": f.get("W", "")}
                  for did, f in _smart_fields(members["ADI.ALL"]).items()}
    queries = {qid: f.get("W", "") for qid, f in _smart_fields(members["ADI.QRY"]).items()}
    qrels: Qrels = {}
    for line in members["ADI.REL"].splitlines():
        if line.strip():
            qid, did, *_ = line.split()
            qrels.setdefault(qid, {})[did] = 1
    return Built(docs, queries, {"test": qrels})


def build_cosqa(files: dict[str, bytes]) -> Built:
    """CoSQA code search as CoCLR evaluates it: 500 dev and 500 test web queries over the 6,267-function code base."""
    code_ids: dict[str, int] = json.loads(files["data/search/code_idx_map.txt"])
    docs: Docs = {str(i): {"_id": str(i), "title": "", "text": code} for code, i in code_ids.items()}
    queries: dict[str, str] = {}
    qrels: dict[str, Qrels] = {}
    for split in ("test", "dev"):
        rows = json.loads(files[f"data/search/cosqa-retrieval-{split}-500.json"])
        for row in rows:
            qid = str(row["idx"])
            if qid in queries or code_ids[row["code"]] != row["retrieval_idx"] or row["label"] != 1:
                msg = f"CoSQA {split} row {qid}: repeated id, or its code is not its retrieval_idx"
                raise SystemExit(msg)
            queries[qid] = row["doc"]
            qrels.setdefault(split, {})[qid] = {str(row["retrieval_idx"]): 1}
    return Built(docs, queries, qrels)


def _tsv_pairs(data: bytes) -> dict[str, str]:
    return dict(line.split("\t", 1) for line in data.decode("utf-8").splitlines() if line.strip())


def build_nfcorpus(files: dict[str, bytes]) -> Built:
    """NFCorpus, the authors' test split: ``test.docs``, title queries, and the 2-1-0 qrels (BEIR's test qrels).

    The texts are the authors' preprocessed ones (lower-cased, stop words and numbers removed); BEIR took raw text
    from ``raw/doc_dump.txt``, which is too large for the snapshot. The 3-2-1 file is checked against ir_datasets'
    published figures (15,820 rows; rows 0, 9 and the last) and against the 2-1-0 file it was derived from.
    """
    base = "data/nfcorpus/"
    texts = _tsv_pairs(files[base + "test.docs"])
    if sorted(texts) != sorted(files[base + "raw/test.docs.ids"].decode("ascii").split()):
        msg = "NFCorpus test.docs does not hold exactly raw/test.docs.ids"
        raise SystemExit(msg)
    docs: Docs = {did: {"_id": did, "title": "", "text": text.strip()} for did, text in texts.items()}
    titles = _tsv_pairs(files[base + "test.titles.queries"])
    if set(titles) != set(_tsv_pairs(files[base + "test.all.queries"])):
        msg = "NFCorpus title and all-field query files name different queries"
        raise SystemExit(msg)
    queries = {qid: text.strip() for qid, text in titles.items()}
    rows = {name: [line.split("\t") for line in files[base + name].decode("ascii").splitlines() if line.strip()]
            for name in ("test.2-1-0.qrel", "test.3-2-1.qrel")}
    full = rows["test.3-2-1.qrel"]
    if len(full) != 15820 or (full[0], full[9], full[-1]) != (["PLAIN-2", "0", "MED-2427", "3"],
                                                              ["PLAIN-2", "0", "MED-5324", "1"],
                                                              ["PLAIN-3472", "0", "MED-3627", "2"]):
        msg = "NFCorpus test.3-2-1.qrel is not the file ir_datasets describes"
        raise SystemExit(msg)
    # 2-1-0 is 3-2-1 with every level lowered by one and the zeros left out.
    if sorted((q, d, int(r) - 1) for q, _, d, r in full if int(r) > 1) != \
            sorted((q, d, int(r)) for q, _, d, r in rows["test.2-1-0.qrel"]):
        msg = "NFCorpus 2-1-0 qrels are not the 3-2-1 qrels shifted down"
        raise SystemExit(msg)
    qrels: Qrels = {}
    for qid, _, did, level in rows["test.2-1-0.qrel"]:
        qrels.setdefault(qid, {})[did] = int(level)
    return Built(docs, queries, {"test": qrels})


BUILDERS: dict[str, Callable[[dict[str, bytes]], Built]] = {
    "time": build_time, "lisa": build_lisa, "adi": build_adi, "cosqa": build_cosqa, "nfcorpus": build_nfcorpus,
}


def check_counts(name: str, built: Built) -> None:
    """Every count against :data:`EXPECTED`, and every judged id against the docs and queries."""
    n_docs, n_queries, splits = EXPECTED[name]
    got = (len(built.docs), len(built.queries),
           {s: (sum(map(len, q.values())), len(q)) for s, q in built.qrels.items()})
    if got != (n_docs, n_queries, splits):
        msg = f"{name}: counts {got} are not the expected {(n_docs, n_queries, splits)}"
        raise SystemExit(msg)
    for split, qrels in built.qrels.items():
        missing = [(q, d) for q, r in qrels.items() for d in r if q not in built.queries or d not in built.docs]
        if missing:
            msg = f"{name} {split}: judged ids missing from the corpus or queries: {missing[:5]}"
            raise SystemExit(msg)


def write(out: Path, built: Built, source_md: Path | None = None) -> None:
    """The BEIR files, one ``json.dumps`` per line, ids in their numeric order where they are numbers; ``source_md``
    (the collection's ``SOURCE.md``), if given, copied beside them byte for byte."""
    def order(k: str) -> tuple[int, int | str]:
        return (0, int(k)) if k.isdigit() else (1, k)

    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for did in sorted(built.docs, key=order):
            fh.write(json.dumps(built.docs[did]) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for qid in sorted(built.queries, key=order):
            fh.write(json.dumps({"_id": qid, "text": built.queries[qid]}) + "\n")
    for split, qrels in built.qrels.items():
        with (out / "qrels" / f"{split}.tsv").open("w", encoding="utf-8", newline="\n") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for qid in sorted(qrels, key=order):
                for did in sorted(qrels[qid], key=order):
                    fh.write(f"{qid}\t{did}\t{qrels[qid][did]}\n")
    if source_md is not None:
        (out / "SOURCE.md").write_bytes(source_md.read_bytes())


def main(argv: list[str] | None = None) -> int:
    """Build every collection whose source is given; ``--check`` loads each back with ``load_beir``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, pin in PINS.items():
        parser.add_argument(f"--{name}", type=Path, metavar="DIR", help=f"git directory or folder of {pin.repo}")
    parser.add_argument("--out", type=Path, default=None, help="where the collection folders go (shared/data)")
    parser.add_argument("--check", action="store_true", help="load each with load_beir and print its counts")
    args = parser.parse_args(argv)
    if args.out is None:
        from benchmarks.common.paths import DATA

        args.out = DATA
    chosen = [n for n in PINS if getattr(args, n) is not None]
    if not chosen:
        parser.error("give at least one source (" + ", ".join(f"--{n}" for n in PINS) + ")")
    for name in chosen:
        built = BUILDERS[name](read_pinned(getattr(args, name), PINS[name]))
        check_counts(name, built)
        source_md = SOURCES / name / "SOURCE.md"
        if not source_md.is_file():
            msg = f"{name}: {source_md} is missing (each collection ships its SOURCE.md)"
            raise SystemExit(msg)
        write(args.out / name, built, source_md)
        print(f"{name}: wrote {args.out / name}")
    if args.check:
        from rrf_retriever.evaluation import load_beir

        for name in chosen:
            for split in EXPECTED[name][2]:
                ds = load_beir(args.out / name, split=split)
                n_judged = sum(map(len, ds.qrels.values()))
                print(f"{name}/{split}: {len(ds.corpus)} docs, {len(ds.queries)} judged queries, {n_judged} qrels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
