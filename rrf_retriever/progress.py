"""One progress bar for the long loops (embedding documents, upserting points): tqdm, when it is installed.

tqdm is an optional extra: it is looked up with :func:`importlib.util.find_spec` and imported only when a bar is
shown, so importing this module costs nothing. Without tqdm, or for small jobs, the bar is a no-op object with the
same two methods, so callers never test for None.

When a bar is drawn (``show_progress``, LlamaIndex's name, on ``from_texts``, ``from_documents``, ``add_texts``,
``add_documents``, ``insert_nodes`` and both vector stores): ``True`` draws every bar of that call, ``False`` none;
``None`` (the default) lets each bar decide: an embedding model built with ``show_progress=`` has its way, else a
bar is drawn for long work only (more than :data:`PROGRESS_THRESHOLD` items) and only when stderr is a terminal
(no bar in logs, CI or a captured stream). A call's switch reaches its bars through :func:`progress_shown` (a
context variable, so it holds for that call only, threads and asyncio tasks of other calls untouched).

A write done in parts (an add of more than 10,000 documents, in chunks) opens :func:`progress_span`: each part
opens the same bars (embedding, upserting into each store), and within the span the n-th bar of a label is one bar
over the whole write, drawn once, instead of one bar a part.

Example:
    >>> with progress_bar(10, "upserting", unit="doc") as bar:  # 10 <= PROGRESS_THRESHOLD: no bar is drawn
    ...     bar.update(10)
    >>> with progress_shown(False), progress_bar(10_000, "upserting", show=True) as bar:  # the call's False wins
    ...     bar.update(10_000)
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from rrf_retriever.errors import InvalidTypeError

__all__ = [
    "PROGRESS_THRESHOLD",
    "ProgressBar",
    "ProgressSpan",
    "check_show_progress",
    "progress_bar",
    "progress_shown",
    "progress_span",
]

#: The current call's ``show_progress`` (None: not set; each bar decides).
_SHOWN: ContextVar[bool | None] = ContextVar("rrf_retriever_show_progress", default=None)

#: Above this many items a progress bar is shown (when tqdm is installed and the caller did not say otherwise).
PROGRESS_THRESHOLD = 1000


class ProgressBar(Protocol):
    """What a caller may do with the bar :func:`progress_bar` gives (a tqdm bar, or a silent stand-in)."""

    def update(self, n: int = 1) -> Any: ...


class _SilentBar:
    def update(self, n: int = 1) -> None:
        """Nothing to draw."""

    def close(self) -> None:
        """Nothing to close."""


class ProgressSpan:
    """The bars of one job done in parts (see :func:`progress_span`): call :meth:`part` before each part.

    A bar a part opens is kept open, by its label and its rank among that part's bars of the label (a dense and a
    keyword store on qdrant-edge both upsert "into qdrant-edge"), and the next parts update it.
    """

    def __init__(self, total: int) -> None:
        self.total = total
        self._part = 0
        self._ranks: dict[str, int] = {}
        self.bars: dict[tuple[str, int], Any] = {}

    def part(self, size: int) -> None:
        """The next part, of ``size`` of the span's items, starts."""
        self._part = max(size, 1)
        self._ranks.clear()

    def scaled(self, total: int) -> int:
        """A part's bar of ``total`` items as a bar over the whole job (exact for a bar counting the items)."""
        return max(total, round(total * self.total / self._part)) if self._part else total

    def key(self, desc: str) -> tuple[str, int]:
        rank = self._ranks.get(desc, 0)
        self._ranks[desc] = rank + 1
        return desc, rank


_SPAN: ContextVar[ProgressSpan | None] = ContextVar("rrf_retriever_progress_span", default=None)


@contextmanager
def progress_span(total: int) -> Iterator[ProgressSpan]:
    """Within the block, a job of ``total`` items runs in parts, each opening the same bars: each is drawn once,
    over the whole job, and closed when the block ends.

    Example:
        >>> with progress_span(20) as span:
        ...     for part in range(2):
        ...         span.part(10)
        ...         with progress_bar(10, "upserting") as bar:  # one bar of 20 items, not two of 10
        ...             bar.update(10)
    """
    span = ProgressSpan(total)
    token = _SPAN.set(span)
    try:
        yield span
    finally:
        _SPAN.reset(token)
        for bar in span.bars.values():
            bar.close()


def check_show_progress(show: object) -> bool | None:
    """``show`` if it is True, False or None.

    Raises:
        InvalidTypeError: anything else (``"no"`` is not False).

    Example:
        >>> check_show_progress(False) is False
        True
    """
    if show is not None and not isinstance(show, bool):
        msg = f"show_progress must be True, False or None, not {show!r:.60}"
        raise InvalidTypeError(msg)
    return show


@contextmanager
def progress_shown(show: bool | None) -> Iterator[None]:
    """Within the block, every bar is drawn (``True``) or none (``False``); ``None`` changes nothing.

    Raises:
        InvalidTypeError: ``show`` is not a bool or None.
    """
    if check_show_progress(show) is None:
        yield
        return
    token = _SHOWN.set(show)
    try:
        yield
    finally:
        _SHOWN.reset(token)


def _stderr_is_a_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


@contextmanager
def progress_bar(total: int, desc: str, *, unit: str = "it", show: bool | None = None) -> Iterator[ProgressBar]:
    """A progress bar over ``total`` items, closed when the block ends (also on an error).

    Args:
        total: How many items the job has.
        desc: The bar's label.
        unit: What an item is called ("text", "doc").
        show: True or False to force the choice (the caller's own setting, e.g. an embedding model's); None
            (default): a bar when ``total`` is above :data:`PROGRESS_THRESHOLD` and stderr is a terminal. A call's
            :func:`progress_shown` wins over both. Either way a bar needs tqdm (``pip install tqdm``).
    """
    span = _SPAN.get()
    if span is not None:
        key = span.key(desc)
        if key not in span.bars:  # the first part opens it, over the whole job; the span closes it
            span.bars[key] = _open_bar(span.scaled(total), desc, unit, show)
        yield span.bars[key]
        return
    bar = _open_bar(total, desc, unit, show)
    try:
        yield bar
    finally:
        bar.close()


def _open_bar(total: int, desc: str, unit: str, show: bool | None) -> Any:
    """A tqdm bar, or the silent stand-in (see :func:`progress_bar` for the choice)."""
    call = _SHOWN.get()
    if call is not None:
        wanted = call
    elif show is not None:
        wanted = show
    else:
        wanted = total > PROGRESS_THRESHOLD and _stderr_is_a_terminal()
    if not wanted or importlib.util.find_spec("tqdm") is None:
        return _SilentBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit)
