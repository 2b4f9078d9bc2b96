"""BEIR-format data sets and IR metrics (extra ``eval`` for the metrics: ranx).

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``, ``metadata``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score`` with a header).
The query set is taken from the qrels file (``queries.jsonl`` may hold every split, as SciFact's does).

ArguAna's queries are themselves in the corpus: every published figure drops a retrieved document whose id
equals the query id (BEIR ``ignore_identical_ids``, Pyserini ``--remove-query``). :func:`evaluate` does the same
when asked (``ignore_identical_ids=True``). It is NOT the default, unlike BEIR's: collections that number queries
and documents alike (MED, CACM, NPL: query "1" is not document "1") would silently lose real hits.

Example:
    >>> ds = load_beir("../shared/data/scifact")  # doctest: +SKIP
    >>> len(ds.corpus), len(ds.queries)  # doctest: +SKIP
    (5183, 300)
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rrf_retriever import strict_json
from rrf_retriever.errors import InvalidArgumentError, missing_dependency

__all__ = ["DEFAULT_METRICS", "BeirDataset", "doc_text", "evaluate", "load_beir", "remove_identical_ids"]

DEFAULT_METRICS = ("ndcg@10", "recall@100", "mrr@10")


@dataclass(frozen=True)
class BeirDataset:
    """A loaded BEIR collection.

    Attributes:
        name: The folder name.
        corpus: ``{doc_id: {"title": ..., "text": ..., "metadata": {...}}}``.
        queries: ``{query_id: text}`` for the queries of the split.
        qrels: ``{query_id: {doc_id: relevance}}``.
    """

    name: str
    corpus: dict[str, dict[str, Any]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)


def doc_text(doc: Mapping[str, Any]) -> str:
    """Title and text in one string, as the flat BEIR baselines index them.

    Example:
        >>> doc_text({"title": "T", "text": "body"})
        'T\\nbody'
    """
    title = (doc.get("title") or "").strip()
    text = doc.get("text") or ""
    return f"{title}\n{text}" if title else text


def load_beir(path: str | Path, split: str = "test") -> BeirDataset:
    """Load a BEIR folder; queries are those named in ``qrels/<split>.tsv``.

    Raises:
        InvalidArgumentError: the folder or one of its files is missing.
    """
    root = Path(path)
    corpus_file, queries_file, qrels_file = (
        root / "corpus.jsonl",
        root / "queries.jsonl",
        root / "qrels" / f"{split}.tsv",
    )
    for f in (corpus_file, queries_file, qrels_file):
        if not f.is_file():
            msg = f"not a BEIR folder: {f} is missing"
            raise InvalidArgumentError(msg)
    corpus: dict[str, dict[str, Any]] = {}
    with corpus_file.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if line.strip():
                row = strict_json.loads(line, what=f"{corpus_file}:{line_no}")
                corpus[str(row["_id"])] = {
                    "title": row.get("title") or "",
                    "text": row.get("text") or "",
                    "metadata": row.get("metadata") or {},
                }
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        for i, row in enumerate(reader):
            if not row or (i == 0 and row[0] == "query-id"):
                continue
            qid, did, score = row[0], row[1], int(row[2])
            qrels.setdefault(qid, {})[did] = score
    all_queries: dict[str, str] = {}
    with queries_file.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if line.strip():
                row = strict_json.loads(line, what=f"{queries_file}:{line_no}")
                all_queries[str(row["_id"])] = row["text"]
    queries = {qid: all_queries[qid] for qid in qrels if qid in all_queries}
    return BeirDataset(root.name, corpus, queries, qrels)


def remove_identical_ids(run: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Drop every retrieved document whose id equals its query's id (BEIR ``ignore_identical_ids``).

    Example:
        >>> remove_identical_ids({"q1": {"q1": 9.0, "d2": 1.0}})
        {'q1': {'d2': 1.0}}
    """
    return {qid: {did: s for did, s in docs.items() if did != qid} for qid, docs in run.items()}


def evaluate(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: tuple[str, ...] = DEFAULT_METRICS,
    *,
    ignore_identical_ids: bool = False,
) -> dict[str, float]:
    """Mean metrics of a run with ranx (``{query_id: {doc_id: score}}``, higher score = better rank).

    Queries of ``qrels`` missing from the run count as 0, as in BEIR and trec_eval with ``-c``.

    Example:
        >>> evaluate({"q": {"d1": 2.0, "d2": 1.0}}, {"q": {"d2": 1}}, ("mrr@10",))  # doctest: +SKIP
        {'mrr@10': 0.5}
    """
    try:
        from ranx import Qrels, Run
        from ranx import evaluate as ranx_evaluate
    except ImportError as exc:
        raise missing_dependency("ranx", "eval", "evaluation") from exc
    if ignore_identical_ids:
        run = remove_identical_ids(run)
    # Every qrels query must be in the run; ranx needs at least one document per query.
    full_run = {qid: dict(run.get(qid) or {}) or {"__none__": 0.0} for qid in qrels}
    scores = ranx_evaluate(Qrels.from_dict({q: dict(d) for q, d in qrels.items()}), Run.from_dict(full_run),
                           list(metrics), make_comparable=True)
    if isinstance(scores, float):
        scores = {metrics[0]: scores}
    return {m: float(v) for m, v in scores.items()}
