"""BackgroundLoad: a value built on a thread at construction, waited for at its first use; every caller waits for
the same load, and a failed load raises its error at every use (never at construction)."""

from __future__ import annotations

import threading
import traceback
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrf_retriever.embeddings.session_load import BackgroundLoad
from rrf_retriever.errors import EmbeddingError


def test_the_value_is_what_the_load_returned() -> None:
    value = object()
    assert BackgroundLoad(lambda: value).get() is value


def test_the_load_runs_on_another_thread_named_as_asked() -> None:
    seen: list[str] = []
    BackgroundLoad(lambda: seen.append(threading.current_thread().name), name="minilm-session").get()
    assert seen == ["minilm-session"] and threading.current_thread().name != "minilm-session"


@settings(max_examples=10, deadline=None)
@given(callers=st.integers(min_value=1, max_value=16))
def test_concurrent_first_uses_wait_for_one_load(callers: int) -> None:
    release = threading.Event()
    calls: list[int] = []

    def load() -> list[int]:
        release.wait()  # every caller is waiting before the load ends
        calls.append(1)
        return calls

    loader = BackgroundLoad(load)
    with ThreadPoolExecutor(callers) as pool:
        futures = [pool.submit(loader.get) for _ in range(callers)]
        release.set()
        got = [f.result() for f in futures]
    assert calls == [1] and all(g is calls for g in got)


def test_a_failed_load_raises_at_every_use_not_at_construction() -> None:
    def load() -> int:
        msg = "cannot load the graph"
        raise EmbeddingError(msg)

    loader = BackgroundLoad(load)  # no error here
    for _ in range(3):
        with pytest.raises(EmbeddingError, match="cannot load the graph"):
            loader.get()


def test_a_child_forked_while_the_load_runs_loads_for_itself() -> None:
    import multiprocessing
    import os

    started = threading.Event()
    release = threading.Event()

    def load() -> int:
        started.set()
        release.wait(timeout=30)  # the parent's load is still running when the child is forked
        return os.getpid()

    loader = BackgroundLoad(load)
    started.wait()
    ctx = multiprocessing.get_context("fork")
    parent_end, child_end = ctx.Pipe()

    def child() -> None:  # runs in the forked child: its copy of the loader has no loading thread
        release.set()  # the child's copy of the event: its own load may finish
        child_end.send((loader.get(), loader.get()))

    process = ctx.Process(target=child)
    process.start()
    child_value = parent_end.recv()
    process.join()
    release.set()
    assert child_value[0] == child_value[1] == process.pid != os.getpid()
    assert loader.get() == os.getpid()


def test_a_failed_load_raises_the_same_error_without_growing_its_traceback() -> None:
    def fail() -> int:
        msg = "cannot load"
        raise ValueError(msg)

    load = BackgroundLoad(fail, name="failing")
    depths = []
    for _ in range(30):
        with pytest.raises(ValueError, match="cannot load") as err:
            load.get()
        depths.append(len(traceback.extract_tb(err.value.__traceback__)))
    assert depths[-1] == depths[0]  # raised again 30 times, the traceback is one raise long each time
