"""Windows over a long document, for embedding it in pieces (MaxP: a document scores as its best window).

A model reads a bounded number of tokens (all-MiniLM-L6-v2: 256 word pieces); the rest of a longer text is cut.
:func:`window_spans` splits ``n`` tokens into windows of at most ``size`` tokens, each overlapping the one before
by at least ``overlap`` tokens, the first at token 0 (so a document's first window is what the model reads of it
whole) and the last ending at token ``n`` (moved back to a full window rather than a short tail). A dense store
keeps every window's vector and scores a document by the best (Dai & Callan, "Deeper Text Understanding for IR
with Contextual Neural Language Modeling", SIGIR 2019: MaxP). :func:`word_windows` is the same split over
whitespace words, for a model whose tokenizer is unknown.

Pure functions.

Example:
    >>> window_spans(10, size=4, overlap=1)
    [(0, 4), (3, 7), (6, 10)]
    >>> window_spans(3, size=4, overlap=1)
    [(0, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rrf_retriever.errors import InvalidArgumentError

__all__ = [
    "DEFAULT_MAX_WINDOWS",
    "DEFAULT_OVERLAP",
    "WindowSettings",
    "check_window_settings",
    "window_spans",
    "word_windows",
]

#: Windows a document gets at most, unless a store says otherwise (8 x 254 word pieces: ~1,500 words).
DEFAULT_MAX_WINDOWS = 8
#: Tokens (or words) two neighbouring windows share at least, unless a store says otherwise.
DEFAULT_OVERLAP = 32


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        msg = f"{name} must be an integer >= {low}, got {value!r}"
        raise InvalidArgumentError(msg)
    return value


def check_window_settings(max_windows: object, overlap: object, size: int | None = None) -> tuple[int, int]:
    """``(max_windows, overlap)`` checked: ``max_windows`` >= 1, ``overlap`` >= 0 and below ``size`` if given.

    Example:
        >>> check_window_settings(8, 32, 254)
        (8, 32)

    Raises:
        InvalidArgumentError: a value out of range or not an integer.
    """
    windows = _check_int(max_windows, "max_windows", 1)
    shared = _check_int(overlap, "window_overlap", 0)
    if size is not None and shared >= size:
        msg = f"window_overlap must be below the window size {size}, got {shared}"
        raise InvalidArgumentError(msg)
    return windows, shared


@dataclass(frozen=True)
class WindowSettings:
    """How a dense store cuts long documents: at most ``max_windows`` windows (>= 2), neighbours sharing
    ``overlap`` tokens. Saved with the collection (:meth:`as_saved`, :meth:`from_saved`).

    Example:
        >>> WindowSettings.from_saved(WindowSettings(8, 32).as_saved())
        WindowSettings(max_windows=8, overlap=32)
    """

    max_windows: int = DEFAULT_MAX_WINDOWS
    overlap: int = DEFAULT_OVERLAP

    def as_saved(self) -> dict[str, int]:
        """The settings as JSON."""
        return {"max_windows": self.max_windows, "overlap": self.overlap}

    @classmethod
    def from_saved(cls, saved: Any) -> WindowSettings:
        """The settings a collection saved (the defaults where a value is missing or unreadable).

        Raises:
            InvalidArgumentError: a saved value out of range.
        """
        saved = saved if isinstance(saved, dict) else {}
        windows, overlap = check_window_settings(saved.get("max_windows", DEFAULT_MAX_WINDOWS),
                                                 saved.get("overlap", DEFAULT_OVERLAP))
        return cls(windows, overlap)


def window_spans(n: int, size: int, overlap: int, max_windows: int | None = None) -> list[tuple[int, int]]:
    """The ``[start, end)`` windows over ``n`` tokens: at most ``size`` each, neighbours sharing >= ``overlap``.

    Starts step by ``size - overlap`` from 0; the last window ends at ``n`` and starts at ``n - size`` (a full
    window: it may share more than ``overlap`` with the one before). ``n <= size``: the one window ``(0, n)``
    (an empty text too: it is embedded as it is). ``max_windows`` keeps the first that many (the end of a longer
    text is then not covered; None: no cap). Deterministic.

    Example:
        >>> window_spans(600, size=254, overlap=32)
        [(0, 254), (222, 476), (346, 600)]
        >>> window_spans(600, size=254, overlap=32, max_windows=2)
        [(0, 254), (222, 476)]

    Raises:
        InvalidArgumentError: ``size`` < 1, ``overlap`` not in ``[0, size)``, ``n`` < 0, ``max_windows`` < 1.
    """
    _check_int(n, "n", 0)
    _check_int(size, "size", 1)
    check_window_settings(1 if max_windows is None else max_windows, overlap, size)
    if n <= size:
        return [(0, n)]
    stride = size - overlap
    spans = [(start, start + size) for start in range(0, n - size, stride)]
    spans.append((n - size, n))
    return spans if max_windows is None else spans[:max_windows]


def word_windows(text: str, size: int, overlap: int, max_windows: int | None = None) -> list[str]:
    """``text`` cut into windows of at most ``size`` whitespace words (:func:`window_spans` over its words), each
    joined by single spaces; a text of at most ``size`` words is one window, itself unchanged.

    Example:
        >>> word_windows("a b c d e", size=3, overlap=1)
        ['a b c', 'c d e']
        >>> word_windows("short  text", size=3, overlap=1)
        ['short  text']
    """
    words = text.split()
    spans = window_spans(len(words), size, overlap, max_windows)
    if len(spans) == 1 and spans[0][1] == len(words):
        return [text]
    return [" ".join(words[start:end]) for start, end in spans]
