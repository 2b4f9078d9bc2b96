"""Judged queries for tuning: the evaluation set shipped with the package, or any BEIR folder.

Example:
    >>> queries, qrels = load_judged_queries()
    >>> len(queries) >= 50 and set(queries) == set(qrels)
    True
"""

from __future__ import annotations

import csv
import os
from importlib import resources
from pathlib import Path
from typing import Any

from rrf_retriever import strict_json
from rrf_retriever.errors import InvalidArgumentError

__all__ = ["demo_eval_dir", "load_judged_queries"]


def demo_eval_dir() -> Path:
    """The BEIR folder shipped with the package: the demo corpus (an invented product, Tidewell) and 53 judged
    queries (grades 1-2): keyword-only (codes, config keys, names), paraphrases, mixed, and session-scoped ones
    (their filter in ``queries.jsonl`` ``metadata.filter``).

    Example:
        >>> sorted(p.name for p in demo_eval_dir().iterdir() if p.suffix == ".jsonl")
        ['corpus.jsonl', 'queries.jsonl']
    """
    return Path(str(resources.files("rrf_retriever") / "data" / "demo_eval"))


def load_judged_queries(path: str | os.PathLike[str] | None = None, split: str = "test"
                        ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
    """``(queries, qrels)`` of a BEIR folder (default: :func:`demo_eval_dir`), ready for :func:`tune`.

    ``queries`` maps each judged query id to ``{"text": ..., "filter": ...}`` (the filter where the query's
    ``metadata.filter`` holds one, as in the shipped set's session-scoped queries); ``qrels`` to ``{doc_id: grade}``.
    """
    root = Path(path) if path is not None else demo_eval_dir()
    qrels_file, queries_file = root / "qrels" / f"{split}.tsv", root / "queries.jsonl"
    for f in (qrels_file, queries_file):
        if not f.is_file():
            msg = f"not a BEIR folder: {f} is missing"
            raise InvalidArgumentError(msg)
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.reader(fh, delimiter="\t")):
            if not row or (i == 0 and row[0] == "query-id"):
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries: dict[str, dict[str, Any]] = {}
    with queries_file.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if line.strip():
                row = strict_json.loads(line, what=f"{queries_file}:{line_no}")
                qid = str(row["_id"])
                if qid in qrels:
                    entry: dict[str, Any] = {"text": row["text"]}
                    flt = (row.get("metadata") or {}).get("filter")
                    if flt is not None:
                        entry["filter"] = flt
                    queries[qid] = entry
    missing = [q for q in qrels if q not in queries]
    if missing:
        msg = f"{len(missing)} judged query id(s) of {qrels_file} are not in {queries_file}: {missing[:5]}"
        raise InvalidArgumentError(msg)
    return queries, qrels
