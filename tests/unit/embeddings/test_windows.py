"""The windows a long document is embedded in: closed-form cases and properties (pure functions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.embeddings.window_vectors import WORD_WINDOW, tail_windows
from rrf_retriever.embeddings.windows import WindowSettings, check_window_settings, window_spans, word_windows
from rrf_retriever.errors import InvalidArgumentError


@pytest.mark.parametrize("n", [0, 1, 253, 254])
def test_a_text_within_the_limit_is_one_window(n: int) -> None:
    assert window_spans(n, 254, 32) == [(0, n)]


def test_exact_boundaries() -> None:
    # stride 222: starts 0, 222; the last window is moved back to end at n (a full window, not a 32-token tail)
    assert window_spans(600, 254, 32) == [(0, 254), (222, 476), (346, 600)]
    assert window_spans(255, 254, 32) == [(0, 254), (1, 255)]
    assert window_spans(476, 254, 32) == [(0, 254), (222, 476)]
    assert window_spans(10, 4, 0) == [(0, 4), (4, 8), (6, 10)]


def test_max_windows_keeps_the_first_ones() -> None:
    full = window_spans(2000, 254, 32)
    assert window_spans(2000, 254, 32, max_windows=3) == full[:3]
    assert window_spans(2000, 254, 32, max_windows=1) == [(0, 254)]


@pytest.mark.parametrize(("n", "size", "overlap", "windows"), [(-1, 4, 0, None), (5, 0, 0, None), (5, 4, 4, None),
                                                                (5, 4, -1, None), (5, 4, 1, 0), (5, 4, True, None)])
def test_bad_settings_are_refused(n: int, size: int, overlap: int, windows: int | None) -> None:
    with pytest.raises(InvalidArgumentError):
        window_spans(n, size, overlap, windows)


@given(n=st.integers(0, 3000), size=st.integers(1, 300), data=st.data())
def test_windows_cover_every_token_within_the_limit_and_overlap(n: int, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    spans = window_spans(n, size, overlap)
    assert spans == window_spans(n, size, overlap)  # deterministic
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(0 <= s <= e <= n and e - s <= size for s, e in spans)
    covered = set().union(*(range(s, e) for s, e in spans))
    assert covered == set(range(n))
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert s1 < s2 and e1 < e2  # in order, each window adds tokens
        assert e1 - s2 >= overlap  # neighbours share at least the overlap
    if n > size:
        assert all(e - s == size for s, e in spans)  # every window full once the text is longer than one
    cap = data.draw(st.integers(1, 5))
    assert window_spans(n, size, overlap, cap) == spans[:cap]


def test_word_windows() -> None:
    assert word_windows("a b c d e", 3, 1) == ["a b c", "c d e"]
    assert word_windows("  keeps\ttext  as is ", 4, 1) == ["  keeps\ttext  as is "]  # within: unchanged
    assert word_windows(" ".join(map(str, range(10))), 4, 0, max_windows=2) == ["0 1 2 3", "4 5 6 7"]


def test_settings_round_trip_and_checks() -> None:
    assert WindowSettings.from_saved(WindowSettings(3, 0).as_saved()) == WindowSettings(3, 0)
    assert WindowSettings.from_saved(None) == WindowSettings()
    assert check_window_settings(2, 0) == (2, 0)
    for bad in ((0, 0), (2, -1), (2.0, 0), (2, 254, 254)):
        with pytest.raises(InvalidArgumentError):
            check_window_settings(*bad)


def test_tail_windows_of_a_model_without_its_own_windows_cut_words() -> None:
    emb = HashingEmbedding(dim=8)
    long_text = " ".join(f"w{i}" for i in range(WORD_WINDOW * 2))
    tails = tail_windows(emb, ["short", long_text, ""], max_windows=8, overlap=32)
    assert [len(t) for t in tails] == [0, 2, 0]
    expected = word_windows(long_text, WORD_WINDOW, 32)[1:]
    assert tails[1] == emb.embed_documents(expected)
    assert tail_windows(emb, [long_text], max_windows=1, overlap=32) == [[]]
    assert [len(t) for t in tail_windows(emb, [long_text], max_windows=2, overlap=32)] == [1]
