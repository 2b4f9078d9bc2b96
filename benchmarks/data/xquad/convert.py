"""Turn XQuAD (github.com/deepmind/xquad, CC BY-SA 4.0) into a small judged retrieval set per language.

Run: python benchmarks/data/xquad/convert.py DIR   (DIR holds xquad.<lang>.json as published)

Each language's 240 paragraphs are its documents (ids ``a<article>-p<paragraph>``, the same paragraph under the
same id in every language: XQuAD is one English set translated), each of its 1,190 questions a query, and the
paragraph a question was asked of its one relevant document (grade 1). Titles are left out (they are English
in every file). Writes ``<lang>.jsonl`` (one line per document: ``{"_id", "text"}``), ``queries.<lang>.jsonl``
and one ``qrels.tsv`` (query id, document id, grade), shared by all languages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LANGS = ("ar", "de", "el", "en", "es", "ro", "ru", "tr", "zh")  # hi, th, vi left out: size (see SOURCE.md)


def main(src: Path) -> None:
    qrels: dict[str, str] = {}
    for lang in LANGS:
        data = json.loads((src / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
        docs, queries = [], []
        for a, article in enumerate(data):
            for p, paragraph in enumerate(article["paragraphs"]):
                doc_id = f"a{a}-p{p}"
                docs.append({"_id": doc_id, "text": paragraph["context"]})
                for qa in paragraph["qas"]:
                    if qrels.setdefault(qa["id"], doc_id) != doc_id:
                        msg = f"{lang}: question {qa['id']} belongs to another paragraph than in the other languages"
                        raise SystemExit(msg)
                    queries.append({"_id": qa["id"], "text": qa["question"]})
        for name, rows in ((f"{lang}.jsonl", docs), (f"queries.{lang}.jsonl", queries)):
            lines = (json.dumps(r, ensure_ascii=False) for r in rows)
            (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = "".join(f"{q}\t{d}\t1\n" for q, d in sorted(qrels.items()))
    (HERE / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
