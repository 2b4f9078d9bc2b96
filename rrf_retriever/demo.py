"""The main job, ``make demo``: show weighted RRF on two ranked lists and what a weight of 0 does.

This first version fuses two fixed ranked lists; it grows into the full hybrid demo over a shipped corpus.

Example:
    >>> from rrf_retriever.demo import main  # doctest: +SKIP
"""

from __future__ import annotations

from rrf_retriever.fusion import weighted_rrf
from rrf_retriever.types import Hit


def _show(title: str, fused: list) -> None:
    print(f"\n{title}")
    print(f"  {'id':<8} {'fused':>8}  {'dense rank':>10}  {'keyword rank':>12}")
    for hit in fused:
        print(
            f"  {hit.id:<8} {hit.score:>8.5f}  {hit.ranks.get('dense', '-'):>10}  {hit.ranks.get('keyword', '-'):>12}"
        )


def main() -> None:
    dense = [Hit("doc-pw", score=0.82), Hit("doc-sso", score=0.71), Hit("doc-2fa", score=0.64)]
    keyword = [Hit("doc-e401", score=9.1), Hit("doc-pw", score=6.3), Hit("doc-sso", score=2.2)]
    print("Weighted RRF: score(d) = sum_i w_i / (k + rank_i(d)), k = 60")
    _show("weights dense=1, keyword=1", weighted_rrf({"dense": dense, "keyword": keyword}))
    _show(
        "weights dense=1, keyword=0 (the keyword leg cannot add documents)",
        weighted_rrf({"dense": dense, "keyword": keyword}, {"keyword": 0.0}),
    )


if __name__ == "__main__":
    main()
