"""FTS5 store connections: short-lived threads must not accumulate open sqlite connections (file descriptors).

The store once kept one connection per thread that ever touched it, closed only by ``close()``: a service
whose worker threads come and go ran out of file descriptors after ~500 threads.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from pathlib import Path

import pytest

from rrf_retriever.errors import StoreError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd"
)


def open_fds() -> int:
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def _run_threads(store: FTS5KeywordStore, n_threads: int, concurrent: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            hits = store.search("memory note", 5, filter={"s": i % 3})
            assert all(h.metadata["s"] == i % 3 for h in hits)
        except BaseException as exc:
            errors.append(exc)

    for start in range(0, n_threads, concurrent):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(start, min(start + concurrent, n_threads))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    return errors


def test_short_lived_threads_do_not_accumulate_open_files(tmp_path: Path) -> None:
    baseline = open_fds()
    store = FTS5KeywordStore(tmp_path / "kw.sqlite")
    store.add([f"d{i}" for i in range(30)], [f"memory note {i}" for i in range(30)], [{"s": i % 3} for i in range(30)])
    store.search("memory", 5)
    before = open_fds()
    errors = _run_threads(store, 600, concurrent=12)
    assert not errors, errors[:3]
    after = open_fds()
    # A few pooled connections may stay open (two descriptors each: the database and its WAL), never one per thread.
    assert after - before <= 24, f"{after - before} more open file descriptors after 600 threads"
    store.close()
    assert open_fds() <= baseline, "close() closes every connection the store opened"


def test_close_closes_the_connections_of_threads_still_alive(tmp_path: Path) -> None:
    baseline = open_fds()
    store = FTS5KeywordStore(tmp_path / "kw.sqlite")
    store.add(["a"], ["memory note"], [{"s": 0}])
    release = threading.Event()
    searched = threading.Barrier(9)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            store.search("memory", 5)
            searched.wait(timeout=30)
            release.wait(timeout=30)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    searched.wait(timeout=30)  # every thread has searched and is still alive
    store.close()
    assert open_fds() <= baseline
    release.set()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors[:3]
    with pytest.raises(StoreError, match="closed"):
        store.search("memory", 5)


def test_concurrent_searches_from_many_threads_agree(tmp_path: Path) -> None:
    store = FTS5KeywordStore(tmp_path / "kw.sqlite")
    store.add([f"d{i}" for i in range(40)], [f"memory note {i}" for i in range(40)], [{"s": i % 3} for i in range(40)])
    expected = [h.id for h in store.search("memory note", 10, filter={"s": 1})]
    results: list[list[str]] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(20):
            got = [h.id for h in store.search("memory note", 10, filter={"s": 1})]
            with lock:
                results.append(got)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 16 * 20 and all(r == expected for r in results)
    store.close()


def test_a_refused_open_keeps_no_file_open(tmp_path: Path) -> None:
    from rrf_retriever.analysis.analyzer import Analyzer
    from rrf_retriever.errors import InvalidArgumentError

    path = tmp_path / "kw.sqlite"
    FTS5KeywordStore(path, fields=("text",)).close()
    baseline = open_fds()
    for _ in range(20):
        with pytest.raises(InvalidArgumentError):
            FTS5KeywordStore(path, fields=("title", "text"))
        with pytest.raises(InvalidArgumentError):
            FTS5KeywordStore(path, analyzer=Analyzer(stopwords=["x"]))
    assert open_fds() <= baseline
