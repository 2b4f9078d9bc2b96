"""One progress bar for the long loops (embedding documents, upserting points): tqdm, when it is installed.

tqdm is an optional extra: it is looked up with :func:`importlib.util.find_spec` and imported only when a bar is
shown, so importing this module costs nothing. Without tqdm, or for small jobs, the bar is a no-op object with the
same two methods, so callers never test for None.

Example:
    >>> with progress_bar(10, "upserting", unit="doc") as bar:  # 10 <= PROGRESS_THRESHOLD: no bar is drawn
    ...     bar.update(10)
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["PROGRESS_THRESHOLD", "ProgressBar", "progress_bar"]

#: Above this many items a progress bar is shown (when tqdm is installed and the caller did not say otherwise).
PROGRESS_THRESHOLD = 1000


class ProgressBar(Protocol):
    """What a caller may do with the bar :func:`progress_bar` gives (a tqdm bar, or a silent stand-in)."""

    def update(self, n: int = 1) -> Any: ...


class _SilentBar:
    def update(self, n: int = 1) -> None:
        """Nothing to draw."""


@contextmanager
def progress_bar(total: int, desc: str, *, unit: str = "it", show: bool | None = None) -> Iterator[ProgressBar]:
    """A progress bar over ``total`` items, closed when the block ends (also on an error).

    Args:
        total: How many items the job has.
        desc: The bar's label.
        unit: What an item is called ("text", "doc").
        show: True or False to force the choice; None (default) shows a bar when ``total`` is above
            :data:`PROGRESS_THRESHOLD`. Either way a bar needs tqdm (``pip install tqdm``); without it nothing is drawn.
    """
    wanted = show if show is not None else total > PROGRESS_THRESHOLD
    if not wanted or importlib.util.find_spec("tqdm") is None:
        yield _SilentBar()
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit)
    try:
        yield bar
    finally:
        bar.close()
