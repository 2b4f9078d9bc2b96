"""A value built on a background thread, started at once and waited for at its first use: how
:class:`~rrf_retriever.embeddings.minilm.MiniLMEmbedding` creates its onnxruntime session while its caller goes on
(opening an index's stores), since creating a session partly releases the GIL.

Every caller of :meth:`BackgroundLoad.get` waits for the same load (threads embedding at once never load twice),
and a load that failed raises its error at every use, not at construction. A process forked while the load ran
(the thread does not exist in the child) loads again, once, in the first caller.

Example:
    >>> BackgroundLoad(lambda: 6 * 7).get()
    42
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["BackgroundLoad"]

T = TypeVar("T")


class BackgroundLoad(Generic[T]):
    """``load()`` run on a new (non-daemon: the interpreter waits for it at exit) thread named ``name``.

    Args:
        load: Builds the value; what it raises is kept and raised by every :meth:`get`.
        name: The thread's name.
    """

    def __init__(self, load: Callable[[], T], *, name: str = "background-load") -> None:
        self._load = load
        self._value: T | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._load()
        except BaseException as exc:  # kept for the callers of get(): a thread has no one else to tell
            self._error = exc
        finally:
            self._done.set()

    def get(self) -> T:
        """The value, waiting for the load if it still runs.

        Raises:
            BaseException: whatever the load raised (the same error at every call).
        """
        if not self._done.is_set():
            self._thread.join()
            with self._lock:
                if not self._done.is_set():  # a forked child: the loading thread was not copied, load here
                    self._run()
        if self._error is not None:
            # its traceback reset each time: raising the one kept object again grew it at every call
            raise self._error.with_traceback(None)
        return self._value  # type: ignore[return-value]  # set when the load returned
