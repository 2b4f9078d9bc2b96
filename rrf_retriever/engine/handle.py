"""What makes :class:`~rrf_retriever.engine.HybridEngine` a handle: a context manager, and shared by copies.

The engine holds open stores (SQLite connections, Qdrant handles, directory locks, worker threads), as a database
client does: ``copy.copy`` and ``copy.deepcopy`` return the engine itself, so copying an object that holds one (a
retriever, a pydantic ``model_copy(deep=True)``) copies that object's own settings and shares the engine. Closing any
holder closes the shared engine for all of them.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["SharedHandle"]

_H = TypeVar("_H", bound="SharedHandle")


class SharedHandle:
    """A copy is the same handle; ``with handle:`` closes it on exit."""

    def close(self) -> None:  # pragma: no cover - every handle defines its own
        raise NotImplementedError

    def __copy__(self: _H) -> _H:
        return self

    def __deepcopy__(self: _H, memo: dict[int, Any]) -> _H:
        return self

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
