"""Running one store operation on a sync engine or an async client, written once.

An operation is a generator of *steps*: it yields ``(primitive name, args)``, e.g. ``("upsert", (points,))``, and
gets back what the engine's primitive ``_upsert(api, points)`` returned, or its error thrown in at the ``yield``
(so an operation can catch it, and its ``with`` blocks close). :meth:`StepRunner._run` calls the primitives on the
sync engine; :meth:`StepRunner._arun` awaits them on an async client (``AsyncQdrantClient`` has the methods of
``QdrantClient``, as coroutines). So ``add`` and ``aadd`` share one body, and an engine writes only its primitives.

Example:
    >>> class Echo(StepRunner):
    ...     def _double(self, api, x):
    ...         return 2 * x
    >>> def steps():
    ...     y = yield ("double", (21,))
    ...     return y
    >>> Echo()._run(steps())
    42
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from rrf_retriever.errors import RRFRetrieverError, StoreError, missing_dependency

__all__ = ["StepRunner", "Steps", "then"]

T = TypeVar("T")
#: An operation: it yields ``(primitive name, args)``, gets back the primitive's result, and returns a T.
Steps = Generator[tuple[str, tuple[Any, ...]], Any, T]
#: How errors name a primitive ("Qdrant search failed: ..."); the others by their own name ("upsert").
_ACTIONS = {
    "exists": "reading the collection",
    "vector_size": "reading the collection",
    "create": "creating the collection",
    "retrieve": "get",
    "nearest": "search",
    "create_index": "creating a payload index",
}


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


class StepRunner:
    """Runs operations (:data:`Steps`) on an engine's primitives, sync or async, with our errors."""

    #: Names the engine in errors and progress bars.
    engine_name = "Qdrant"

    def _run(self, steps: Steps[T]) -> T:
        """Run an operation on the sync engine, under :meth:`_guard`."""
        api = self._api(asynchronous=False)
        reply, error = None, None
        with self._guard(), contextlib.closing(steps):
            while True:
                try:
                    name, args = steps.send(reply) if error is None else steps.throw(error)
                except StopIteration as done:
                    return done.value
                try:
                    reply, error = self._call(getattr(self, f"_{name}"), _ACTIONS.get(name, name), api, *args), None
                except Exception as exc:  # thrown into the steps
                    reply, error = None, exc

    async def _arun(self, steps: Steps[T]) -> T:
        """Run an operation on the async client (each primitive's coroutine awaited)."""
        api = self._api(asynchronous=True)
        reply, error = None, None
        with contextlib.closing(steps):
            while True:
                try:
                    name, args = steps.send(reply) if error is None else steps.throw(error)
                except StopIteration as done:
                    return done.value
                action = _ACTIONS.get(name, name)
                try:
                    reply, error = await self._call(getattr(self, f"_{name}"), action, api, *args), None
                except Exception as exc:  # thrown into the steps
                    reply, error = None, self._our_error(exc, action)

    async def _arun_or_thread(self, steps: Steps[T], default: Callable[..., Any], *args: Any, **kwargs: Any) -> T:
        """:meth:`_arun` with an async client; else ``default`` (the sync method in a worker thread)."""
        if self._api(asynchronous=True) is None:
            steps.close()
            return await default(*args, **kwargs)
        return await self._arun(steps)

    def _call(self, fn: Callable[..., Any], action: str, *args: Any) -> Any:
        """Call one engine primitive: every engine call passes here (fault-injection tests override it)."""
        try:
            return fn(*args)
        except Exception as exc:
            raise self._our_error(exc, action) from exc

    def _our_error(self, exc: Exception, action: str) -> Exception:
        if isinstance(exc, RRFRetrieverError):
            return exc
        error = self._engine_error(exc, action)
        error.__cause__ = exc
        return error

    def _engine_error(self, exc: Exception, action: str) -> RRFRetrieverError:
        """Our error for an engine failure (the client store tells a lock and an unreachable server apart)."""
        return StoreError(f"{self.engine_name} {action} failed: {type(exc).__name__}: {exc}")

    def _import_engine(self, package: str, *modules: str) -> list[Any]:
        """Import the engine's modules; a missing one is our error naming the extra that brings ``package``."""
        try:
            return [importlib.import_module(name) for name in modules]
        except ImportError as exc:
            raise missing_dependency(package, "qdrant", type(self).__name__) from exc

    def _api(self, *, asynchronous: bool) -> Any:
        """What the primitives get as ``api``: the client to call. None for sync calls on an engine that needs
        none; for async calls, None means there is no async client."""
        return None

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        """Held around a whole sync operation (the edge store's lock and open check)."""
        return contextlib.nullcontext()
