"""Corpus-language detection on what is on this machine: false positives on English of every kind, hits elsewhere.

Run: nice .venv/bin/python benchmarks/quality/bench_language_detection_fp.py [--baseline DIR] [--corpus-size 50]

Offline; reads only files already on the machine (a kind with no file found is reported with 0 corpora). Each
source is cut into the documents an index would hold (a code file into chunks of 40 lines, a log or a table into
rows, a licence or a changelog into paragraphs, a gettext catalogue into its messages), and the documents of one
kind are dealt (in a fixed order) into corpora of ``--corpus-size`` documents, the way ``from_texts`` sees a corpus;
:func:`rrf_retriever.analysis.detect.detect_language` runs on each with its default sample.

* **English kinds** (code: Python stdlib and JavaScript as 40-line chunks and as single lines, SQL, C headers,
  JSON; logs: /var/log; tables: CSV/TSV rows; legal: licences; medical/science: the five BEIR collections of
  ``shared/data``; prose: package READMEs/METADATA, Debian changelogs; short texts: titles, first sentences,
  gettext message ids; mixed: English corpora with a tenth or a third of their documents in another language):
  per kind, corpora tested and **false positives** (a corpus detected as a language other than English), and the
  same for each document alone as a one-document corpus.
* **Other languages** (gettext catalogues under /usr/share/locale: the translated messages of one domain in one
  language is a corpus; XQuAD paragraphs and questions; the hand-built multilingual set): per language, corpora
  tested and **hit rate** (detected as that language), and the share detected as English (unsure).

``--baseline DIR``: a directory holding another ``detect.py`` and ``detect_words.py`` (e.g. the ones before a
change, copied there); they run on the same corpora in the same run and the table shows both side by side.

Writes benchmarks/results/language_detection_fp.json (``--corpus-size N`` other than 50:
``language_detection_fp_Ndocs.json``).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import platform
import re
import struct
import sys
import sysconfig
import time
import types
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.paths import DATA, LOCAL_DATA, RESULTS
from rrf_retriever.analysis import detect as current

OUT = RESULTS / "language_detection_fp.json"
SITES = list(dict.fromkeys([Path(sysconfig.get_paths()["purelib"]),
                            Path(sysconfig.get_paths(vars={"base": sys.base_prefix})["purelib"])]))
STDLIB = Path(sysconfig.get_paths()["stdlib"])
MAX_FILES = 400  # per source folder, in sorted order (enough corpora, a bounded run)
MAX_DOCS = 6000  # per kind
LOCALES = {"de": "german", "fr": "french", "es": "spanish", "it": "italian", "pt": "portuguese",
           "pt_BR": "portuguese", "nl": "dutch", "sv": "swedish", "da": "danish", "nb": "norwegian",
           "fi": "finnish", "hu": "hungarian", "ro": "romanian", "tr": "turkish", "id": "indonesian",
           "ca": "catalan", "ru": "russian", "uk": "ukrainian", "bg": "bulgarian", "sr": "serbian", "el": "greek",
           "ar": "arabic", "fa": "persian", "he": "hebrew", "hi": "hindi", "ne": "nepali", "ta": "tamil",
           "hy": "armenian", "zh_CN": "chinese", "zh_TW": "chinese", "ja": "japanese", "ko": "korean"}  # fmt: skip
XQUAD = {"ar": "arabic", "de": "german", "el": "greek", "es": "spanish", "ro": "romanian", "ru": "russian",
         "tr": "turkish", "zh": "chinese"}  # fmt: skip


def files(roots: list[Path], pattern: str, limit: int = MAX_FILES) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.exists():
            found.extend(sorted(p for p in root.rglob(pattern) if p.is_file())[:limit])
    return found


def read(path: Path) -> str:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError):
        return ""
    return raw.decode("utf-8", errors="replace")


def chunks(text: str, lines: int = 40) -> list[str]:
    rows = text.splitlines()
    return [c for i in range(0, len(rows), lines) if (c := "\n".join(rows[i:i + lines]).strip())]


def code_lines(text: str) -> list[str]:
    """The lines of a source file with some code on them (a snippet index holds such one-liners)."""
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 20]


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) > 20]


def from_files(paths: list[Path], cut: Callable[[str], list[str]]) -> list[str]:
    return [doc for p in paths for doc in cut(read(p))][:MAX_DOCS]


def beir_texts(name: str, field: str = "text") -> list[str]:
    path = DATA / name / "corpus.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r.get(field) or "" for r in rows if r.get(field)][:MAX_DOCS]


def mo_catalog(path: Path) -> list[tuple[str, str]]:
    """(message id, translation) pairs of a GNU .mo file (the header entry and plural extras dropped)."""
    data = path.read_bytes()
    if len(data) < 28:
        return []
    order = "<" if data[:4] == b"\xde\x12\x04\x95" else ">" if data[:4] == b"\x95\x04\x12\xde" else ""
    if not order:
        return []
    _, count, ids_at, strs_at = struct.unpack(order + "4I", data[4:20])
    out = []
    for i in range(count):
        n1, o1 = struct.unpack(order + "2I", data[ids_at + 8 * i: ids_at + 8 * i + 8])
        n2, o2 = struct.unpack(order + "2I", data[strs_at + 8 * i: strs_at + 8 * i + 8])
        msgid = data[o1:o1 + n1].split(b"\0")[0].decode("utf-8", "replace")
        msgstr = data[o2:o2 + n2].split(b"\0")[0].decode("utf-8", "replace")
        if msgid and msgstr and msgstr != msgid:
            out.append((msgid, msgstr))
    return out


def catalogues() -> dict[str, list[tuple[str, list[tuple[str, str]]]]]:
    """Language -> [(domain, pairs)] for the gettext catalogues under /usr/share/locale (not the ISO code lists:
    country and language names are not text)."""
    out: dict[str, list[tuple[str, list[tuple[str, str]]]]] = defaultdict(list)
    base = Path("/usr/share/locale")
    for code, language in LOCALES.items():
        for mo in sorted((base / code / "LC_MESSAGES").glob("*.mo")):
            if mo.name.startswith("iso_"):
                continue
            pairs = mo_catalog(mo)
            if len(pairs) >= 20:
                out[language].append((f"{code}/{mo.stem}", pairs))
    return out


def english_kinds(cats: dict[str, list[tuple[str, list[tuple[str, str]]]]]) -> dict[str, list[str]]:
    """Kind -> English documents (see the module doc)."""
    npm = Path("/usr/lib/node_modules")
    js = files([npm, Path("/usr/share/javascript"), *SITES], "*.js")
    row = lambda text: [line for line in text.splitlines() if line.strip()]  # noqa: E731
    logs = [p for p in files([Path("/var/log")], "*")
            if "journal" not in p.parts and not p.name.endswith(("tmp", "lastlog", "faillog", ".xz"))]
    tables = [p for p in files([*SITES, Path("/usr/share/distro-info"), DATA], "*.csv")
              + files([DATA], "*.tsv")]  # fmt: skip
    licences = [*files(SITES, "LICENSE*"), *files(SITES, "COPYING*"), *files([Path("/usr/share/common-licenses")], "*")]
    readmes = files(SITES, "METADATA") + files(SITES, "README*")
    titles = [t for name in ("scifact", "cacm", "arguana") for t in beir_texts(name, "title")]
    first_sentences = [re.split(r"(?<=[.!?])\s", t, maxsplit=1)[0] for n in ("scifact", "med", "npl")
                       for t in beir_texts(n)]  # fmt: skip
    msgids = list(dict.fromkeys(i for domains in cats.values() for _, pairs in domains for i, _ in pairs))
    kinds = {
        "code: Python stdlib": from_files(files([STDLIB], "*.py"), chunks),
        "code: JavaScript": from_files(js, chunks),
        "code: JavaScript lines": from_files(js, code_lines),
        "code: Python stdlib lines": from_files(files([STDLIB], "*.py"), code_lines),
        "code: SQL": from_files(files([Path("/usr/share/postgresql"), Path("/usr/share/postgresql-common")],
                                      "*.sql"), chunks),
        "code: C headers": from_files(files([Path("/usr/include")], "*.h"), chunks),
        "code: JSON": from_files(files([*SITES, npm], "*.json"), chunks),
        "logs: /var/log": from_files(logs, row),
        "tables: CSV/TSV rows": from_files(tables, row),
        "legal: licences": from_files(licences, paragraphs),
        "prose: package READMEs/METADATA": from_files(readmes, paragraphs),
        "prose: Debian changelogs": from_files(files([Path("/usr/share/doc")], "changelog.Debian.gz"), paragraphs),
        "short: titles": titles[:MAX_DOCS],
        "short: first sentences": first_sentences[:MAX_DOCS],
        "short: gettext message ids": msgids[:MAX_DOCS],
    }
    for name in ("scifact", "med", "npl", "cacm", "arguana"):
        kinds[f"medical/science: {name}"] = beir_texts(name)
    return kinds


def corpora(docs: list[str], size: int) -> list[list[str]]:
    return [docs[i:i + size] for i in range(0, len(docs), size) if len(docs[i:i + size]) >= min(size, 5)]


def mixed(english: list[str], foreign: list[str], share: float, size: int) -> Iterator[list[str]]:
    """English corpora of ``size`` documents where ``share`` of them are foreign texts."""
    k = max(1, round(share * size))
    for i, start in enumerate(range(0, len(english) - size, size)):
        picked = foreign[(i * k) % max(1, len(foreign) - k):][:k]
        yield english[start:start + size - k] + picked


def load_baseline(folder: Path) -> types.ModuleType:
    """The ``detect`` module in ``folder`` (its ``detect_words`` beside it), loaded under other names."""
    spec = importlib.util.spec_from_file_location("baseline_detect_words", folder / "detect_words.py")
    words = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(words)  # type: ignore[union-attr]
    sys.modules["baseline_detect_words"] = words
    source = (folder / "detect.py").read_text(encoding="utf-8").replace(
        "rrf_retriever.analysis.detect_words", "baseline_detect_words")
    module = types.ModuleType("baseline_detect")
    sys.modules["baseline_detect"] = module
    exec(compile(source, str(folder / "detect.py"), "exec"), module.__dict__)  # a local copy
    return module


def score(detectors: dict[str, Any], groups: list[list[str]], docs: list[str], expected: str) -> dict[str, Any]:
    """Corpus- and document-level rates of each detector: share detected as ``expected`` and as English."""
    row: dict[str, Any] = {"corpora": len(groups), "documents": len(docs)}
    for name, module in detectors.items():
        found = [module.detect_language(g).language for g in groups]
        single = [module.detect_language([d]).language for d in docs]
        bad = (lambda lang: lang != "english") if expected == "english" else (lambda lang: lang != expected)
        row[name] = {
            "corpora_wrong": sum(map(bad, found)), "documents_wrong": sum(map(bad, single)),
            "corpora_english": found.count("english"), "documents_english": single.count("english"),
            "wrong_as": dict(sorted({x: found.count(x) for x in set(found) if bad(x)}.items())),
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=None, help="a folder with another detect.py/detect_words.py")
    parser.add_argument("--corpus-size", type=int, default=50)
    args = parser.parse_args()
    t0 = time.perf_counter()
    detectors: dict[str, Any] = {"now": current}
    if args.baseline is not None:
        detectors = {"baseline": load_baseline(args.baseline), "now": current}
    size = args.corpus_size
    cats = catalogues()
    english: dict[str, Any] = {}
    kinds = english_kinds(cats)
    for kind, docs in kinds.items():
        english[kind] = score(detectors, corpora(docs, size), docs, "english")
        print(kind, json.dumps(english[kind]), flush=True)
    foreign_lines = [s for lang in ("german", "french", "italian", "spanish", "turkish", "russian")
                     for _, pairs in cats.get(lang, [])[:3] for _, s in pairs[:200]]  # fmt: skip
    prose = kinds["medical/science: scifact"] + kinds["prose: Debian changelogs"]
    for share in (0.1, 0.3):
        groups = list(mixed(prose, foreign_lines, share, size))
        english[f"mixed: English + {share:.0%} foreign lines"] = score(detectors, groups, [], "english")
    others: dict[str, Any] = {}
    for language, domains in sorted(cats.items()):
        groups = [[s for _, s in pairs] for _, pairs in domains]
        docs = [s for g in groups for s in g][:MAX_DOCS]
        others[f"{language} (gettext messages)"] = score(detectors, groups, docs, language)
    xquad = LOCAL_DATA / "xquad"
    for code, language in XQUAD.items():
        paras = [json.loads(x)["text"] for x in (xquad / f"{code}.jsonl").read_text("utf-8").splitlines() if x]
        questions = [json.loads(x)["text"] for x in (xquad / f"queries.{code}.jsonl").read_text("utf-8").splitlines()
                     if x]  # fmt: skip
        others[f"{language} (XQuAD paragraphs)"] = score(detectors, corpora(paras, size), paras, language)
        others[f"{language} (XQuAD questions)"] = score(detectors, corpora(questions, size), questions, language)
    multi = LOCAL_DATA / "multilingual" / "corpus.jsonl"
    by_lang: dict[str, list[str]] = defaultdict(list)
    for line in multi.read_text("utf-8").splitlines():
        doc = json.loads(line)
        by_lang[doc["metadata"]["lang"]].append(doc["text"])
    for code, language in {"de": "german", "fr": "french", "es": "spanish", "zh": "chinese", "ja": "japanese",
                           "ko": "korean"}.items():  # fmt: skip
        others[f"{language} (multilingual set)"] = score(detectors, [by_lang[code]], by_lang[code], language)
    elapsed = time.perf_counter() - t0
    out = OUT if size == 50 else OUT.with_name(f"{OUT.stem}_{size}docs.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "about": "detect_language on this machine's files: English kinds (wrong = detected as another language: a "
                 "false positive) and other languages (wrong = not detected as that language); corpora of "
                 f"{size} documents, and each document alone",
        "detectors": list(detectors), "english": english, "other_languages": others, "seconds": round(elapsed, 1),
        "python": platform.python_version(), "load": os.getloadavg(),
    }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    names = list(detectors)
    head = "  ".join(f"{n + ' FP corpora':>17} {n + ' FP docs':>15}" for n in names)
    print(f"\n{'English kind':42} {'corpora':>7} {'docs':>6}  {head}")
    for kind, row in english.items():
        cells = "  ".join(f"{row[n]['corpora_wrong']:>17} {row[n]['documents_wrong']:>15}" for n in names)
        print(f"{kind:42} {row['corpora']:>7} {row['documents']:>6}  {cells}")
    head = "  ".join(f"{n + ' hit corpora':>18} {n + ' hit docs':>16}" for n in names)
    print(f"\n{'language (source)':42} {'corpora':>7} {'docs':>6}  {head}")
    for lang, row in others.items():
        cells = "  ".join(f"{row['corpora'] - row[n]['corpora_wrong']:>18} "
                          f"{row['documents'] - row[n]['documents_wrong']:>16}" for n in names)
        print(f"{lang:42} {row['corpora']:>7} {row['documents']:>6}  {cells}")
    print(f"wrote {out.relative_to(ROOT)} ({elapsed:.0f} s)")


if __name__ == "__main__":
    main()
