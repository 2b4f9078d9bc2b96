"""MMR (rrf_retriever.diversity): closed-form cases and the invariants (lambda=1 identity, a permutation)."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rrf_retriever.diversity import cosine, mmr_order
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError

REL = [1.0, 0.9, 0.5]
DUP = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]  # b duplicates a; c is orthogonal


def test_closed_form_switch_point() -> None:
    # After a is picked: b scores 0.9*lam - (1-lam), c scores 0.5*lam. b wins iff 0.4*lam > 1-lam, lam > 1/1.4.
    switch = 1 / 1.4
    assert mmr_order(REL, DUP, switch - 0.005) == [0, 2, 1]
    assert mmr_order(REL, DUP, switch + 0.005) == [0, 1, 2]
    assert mmr_order(REL, DUP, 0.0) == [0, 2, 1]  # novelty only: after the first, the duplicate goes last


def test_lambda_zero_first_pick_is_the_most_relevant_then_the_most_novel() -> None:
    rel = [0.2, 0.9, 0.8, 0.1]
    vecs = [[1.0, 0.0], [0.0, 1.0], [0.1, 1.0], [1.0, 0.05]]
    order = mmr_order(rel, vecs, 0.0)
    assert order[0] == 1 and order[1] == 0  # the one most unlike the first pick


def test_missing_and_zero_vectors_are_never_redundant() -> None:
    rel = [1.0, 0.9, 0.8]
    assert mmr_order(rel, [[1.0, 0.0], None, [1.0, 0.0]], 0.5) == [0, 1, 2]
    assert mmr_order(rel, [[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]], 0.5) == [0, 1, 2]


def test_limit_and_prefix_stability() -> None:
    assert mmr_order(REL, DUP, 0.5, limit=2) == mmr_order(REL, DUP, 0.5)[:2] == [0, 2]
    assert mmr_order(REL, DUP, 0.5, limit=0) == []
    assert mmr_order([], [], 0.3) == []


def test_ties_go_to_the_earlier_candidate() -> None:
    assert mmr_order([0.5, 0.5, 0.5], [None, None, None], 0.4) == [0, 1, 2]


@pytest.mark.parametrize(("args", "error"), [
    (([1.0], [None], 1.5), InvalidArgumentError),
    (([1.0], [None], -0.1), InvalidArgumentError),
    (([1.0], [None], "0.5"), InvalidTypeError),
    (([1.0, 2.0], [None], 0.5), InvalidArgumentError),
    (([math.nan], [None], 0.5), InvalidArgumentError),
    (([1.0, 1.0], [[1.0], [1.0, 2.0]], 0.5), InvalidArgumentError),
])
def test_bad_input_is_our_error(args: tuple, error: type[Exception]) -> None:
    with pytest.raises(error):
        mmr_order(*args)


def test_cosine() -> None:
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 3.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0
    with pytest.raises(InvalidArgumentError):
        cosine([1.0], [1.0, 2.0])


_vec = st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3)
_pool = st.integers(0, 12).flatmap(lambda n: st.tuples(
    st.lists(st.floats(0, 1, allow_nan=False), min_size=n, max_size=n),
    st.lists(st.one_of(st.none(), _vec), min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(_pool)
def test_lambda_one_reproduces_a_ranked_list_exactly(pool: tuple[list[float], list]) -> None:
    rel, vecs = pool
    ranked = sorted(rel, reverse=True)  # a list already in relevance order (with ties) comes back unchanged
    assert mmr_order(ranked, vecs, 1.0) == list(range(len(rel)))


@settings(max_examples=150, deadline=None)
@given(_pool, st.floats(0, 1), st.integers(0, 15))
def test_the_selection_is_distinct_candidates_and_prefix_stable(pool: tuple[list[float], list], lam: float,
                                                                limit: int) -> None:
    rel, vecs = pool
    full = mmr_order(rel, vecs, lam)
    assert sorted(full) == list(range(len(rel)))
    assert mmr_order(rel, vecs, lam, limit) == full[:limit]
    if rel:
        assert rel[full[0]] == max(rel)  # the first pick is always the most relevant


def test_the_pure_python_fallback_gives_the_numpy_order(monkeypatch: pytest.MonkeyPatch) -> None:
    import random
    import sys

    rng = random.Random(7)
    rel = sorted((rng.random() for _ in range(30)), reverse=True)
    vecs = [None if i % 7 == 3 else [rng.gauss(0, 1) for _ in range(12)] for i in range(30)]
    with_numpy = [mmr_order(rel, vecs, lam) for lam in (0.0, 0.3, 0.7)]
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now raises ImportError: the pure loop runs
    assert [mmr_order(rel, vecs, lam) for lam in (0.0, 0.3, 0.7)] == with_numpy


def test_a_negative_similarity_to_the_picked_counts_as_it_is() -> None:
    """max over the picked of a cosine below 0 is that cosine, not 0 (as LangChain's and the formula's): an opposite
    candidate is more novel than an orthogonal one (both were 0 before, the tie went to the earlier)."""
    rel, vecs = [1.0, 0.9, 0.8], [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.2]]
    assert mmr_order(rel, vecs, 0.0) == [0, 2, 1]
    assert mmr_order(rel, vecs, 0.5) == [0, 2, 1]  # 0.4 + 0.5 * 0.98 beats 0.45 - 0


def _reference(rel: list[float], vecs: list[list[float]], lam: float) -> list[int]:
    """The module doc's formula, written plainly: S empty -> the most relevant; then the argmax of
    lam * rel - (1 - lam) * max cosine to S; ties to the earlier."""
    chosen: list[int] = []
    while len(chosen) < len(rel):
        rest = [i for i in range(len(rel)) if i not in chosen]
        if not chosen:
            chosen.append(max(rest, key=lambda i: (rel[i], -i)))
            continue
        chosen.append(max(rest, key=lambda i: (lam * rel[i] - (1 - lam) * max(cosine(vecs[i], vecs[j])
                                                                                for j in chosen), -i)))
    return chosen


_nonzero = st.lists(st.integers(-4, 4), min_size=3, max_size=3).filter(any).map(lambda v: [float(x) for x in v])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.lists(st.integers(0, 8).map(float), min_size=n, max_size=n),
                                                     st.lists(_nonzero, min_size=n, max_size=n))),
       st.sampled_from([0.0, 0.25, 0.5, 0.75]))
# two candidates whose cosines are 0 in exact arithmetic tie (the earlier wins), whatever the float noise says
@example(pool=([0.0] * 6, [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [0.0, 1.0, -2.0], [0.0, 1.0, -1.0],
                          [0.0, -2.0, -1.0]]), lam=0.0)
def test_the_order_is_the_formula_with_negative_similarities_too(pool: tuple[list[float], list], lam: float) -> None:
    rel, vecs = pool
    got, want = mmr_order(rel, vecs, lam), _reference(rel, vecs, lam)
    scores = [lam * rel[i] - (1 - lam) * max((cosine(vecs[i], vecs[j]) for j in got[:p]), default=0.0)
              for p, i in enumerate(got)]
    best = [lam * rel[i] - (1 - lam) * max((cosine(vecs[i], vecs[j]) for j in want[:p]), default=0.0)
            for p, i in enumerate(want)]
    assert got == want or scores == pytest.approx(best)  # equal, or the same scores (a float tie read either way)
