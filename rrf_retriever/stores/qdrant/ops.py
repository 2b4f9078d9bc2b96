"""One store operation, written once for a sync engine and for an async client.

An operation is a generator of :class:`Op` s: each names a backend method (the bound method itself, so grep finds
every caller) and its arguments. The runner calls ``op.call(api, *op.args)`` and sends the result back in at the
``yield``, or throws the error in there (so an operation can catch it, and its ``with`` blocks close).
:func:`run_sync` does that with the sync client (or none: qdrant-edge); :func:`run_async` awaits each call made
with an ``AsyncQdrantClient``, which has the methods of ``QdrantClient`` as coroutines. So ``add`` and ``aadd``
share one body. Both runners resume an operation with :func:`advance`, which also lets :func:`drive` stop several
operations at their engine query, so a joint store sends its legs' queries as one request
(:meth:`~rrf_retriever.stores.qdrant.joint.JointKind.search_batch`): plain sync and async bodies would write each
operation twice and could not batch so.

Example:
    >>> def double(api, x):
    ...     return 2 * x
    >>> def steps():
    ...     y = yield Op(double, (21,), "double")
    ...     return y
    >>> run_sync(steps(), lambda op: op.call(None, *op.args))
    42
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Finished", "Op", "Steps", "advance", "drive", "failed", "finish", "run_async", "run_sync", "then"]

T = TypeVar("T")


@dataclass(frozen=True)
class Op:
    """One engine call of an operation.

    Attributes:
        call: A backend method; it gets the ``api`` to call (the sync or async client, None on qdrant-edge) first,
            then ``args``, and returns the result or, on an async client, an awaitable of it.
        args: Its arguments after ``api``.
        action: How errors name it (``"Qdrant upsert failed: ..."``); fault-injection tests match on it.
    """

    call: Callable[..., Any]
    args: tuple[Any, ...] = ()
    action: str = ""


#: An operation: it yields :class:`Op` s, gets back each call's result, and returns a T.
Steps = Generator[Op, Any, T]


def then(result: Any, fn: Callable[[Any], T]) -> Any:
    """``fn(result)``; for an awaitable ``result`` (an async client's call), a coroutine giving ``fn(await result)``.

    Example:
        >>> then(20, lambda n: n + 1)
        21
    """
    if not inspect.isawaitable(result):
        return fn(result)

    async def finish() -> T:
        return fn(await result)

    return finish()


class Finished:
    """A finished operation's result (or its error, kept as the result), as :func:`advance` and :func:`drive`
    return it."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def advance(steps: Steps[Any], reply: Any, error: BaseException | None) -> Op | Finished:
    """Resume ``steps`` with the last call's ``reply`` (or throw its ``error`` in): its next op, or
    :class:`Finished` with what it returned. An error the steps raise propagates."""
    try:
        return steps.send(reply) if error is None else steps.throw(error)
    except StopIteration as done:
        return Finished(done.value)


def run_sync(steps: Steps[T], perform: Callable[[Op], Any]) -> T:
    """Run an operation, each of its ops by ``perform`` (whose error is thrown back into the operation)."""
    reply, error = None, None
    with contextlib.closing(steps):
        while not isinstance(op := advance(steps, reply, error), Finished):
            try:
                reply, error = perform(op), None
            except Exception as exc:  # thrown into the steps
                reply, error = None, exc
        return op.value


async def run_async(
    steps: Steps[T], perform: Callable[[Op], Awaitable[Any]], translate: Callable[[Exception, str], Exception]
) -> T:
    """:func:`run_sync` with each op's awaitable awaited; an error raised while awaiting is ``translate(exc,
    op.action)`` (our error type) before it is thrown in."""
    reply, error = None, None
    with contextlib.closing(steps):
        while not isinstance(op := advance(steps, reply, error), Finished):
            try:
                reply, error = await perform(op), None
            except Exception as exc:  # thrown into the steps
                reply, error = None, translate(exc, op.action)
        return op.value


def drive(
    steps: Steps[Any], reply: Any, error: BaseException | None, stop_at: Callable[[Op], bool] = lambda op: False
) -> Steps[Finished | Op]:
    """Advance ``steps`` (first sending ``reply`` or throwing ``error``), passing its ops through, until it finishes
    (:class:`Finished`: its result, or the exception it raised) or yields an op ``stop_at`` picks (returned, not
    run: the caller runs it, e.g. with other operations' ops in one request, and drives on with its reply)."""
    while True:
        try:
            op = advance(steps, reply, error)
        except Exception as exc:
            return Finished(exc)
        if isinstance(op, Finished) or stop_at(op):
            return op
        try:
            reply, error = (yield op), None
        except Exception as exc:
            reply, error = None, exc


def failed(exc: Exception) -> Steps[Any]:
    """An operation that raises ``exc`` when run (an error found before its steps were made, kept for them)."""
    raise exc
    yield  # a generator: nothing runs until it is driven


def finish(steps: Steps[Any], reply: Any, error: BaseException | None) -> Steps[Any]:
    """:func:`drive` ``steps`` to its end: its result, or the exception it raised, as the value."""
    outcome = yield from drive(steps, reply, error)
    assert isinstance(outcome, Finished)  # nothing stops it short
    return outcome.value

