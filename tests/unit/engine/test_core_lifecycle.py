"""Engine lifecycle: close() racing queries, the context manager, and use after fork (found by attacking it)."""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from pathlib import Path

import pytest

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import EngineClosedError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

DIM = 16
TEXTS = [f"document {i} about rockets and {'fuel' if i % 2 else 'orbits'}" for i in range(40)]


def _engine(path: Path) -> HybridEngine:
    dense = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=path / "edge")
    keyword = FTS5KeywordStore(path / "kw.sqlite3")
    engine = HybridEngine({"dense": dense, "keyword": keyword}, journal=path / "journal.sqlite3")
    if not engine.count()["keyword"]:
        engine.add([f"d{i}" for i in range(len(TEXTS))], TEXTS)
    return engine


def test_close_racing_queries_gives_results_or_engine_closed_only(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    errors: list[BaseException] = []
    answered = [0]
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    engine.search("rockets fuel")
                answered[0] += 1
            except EngineClosedError:
                return
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for t in threads:
        t.start()
    while answered[0] < 20:  # let the readers get going, then pull the rug
        time.sleep(0.001)
    engine.close()
    stop.set()
    for t in threads:
        t.join(30)
    assert errors == []
    for call in (lambda: engine.search("rockets"), lambda: engine.add(["x"], ["y"]), lambda: engine.delete(["d1"]),
                 lambda: engine.count(), lambda: engine.get(["d1"]), lambda: engine.update_settings(top_k=3)):
        with pytest.raises(EngineClosedError):
            call()
    engine.close()  # idempotent
    reopened = _engine(tmp_path)  # every lock and file was released: the same path opens again
    assert reopened.count() == {"dense": len(TEXTS), "keyword": len(TEXTS)}
    reopened.close()


def test_the_retriever_is_a_context_manager_that_releases_the_index(tmp_path: Path) -> None:
    with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(DIM), path=tmp_path) as retriever:
        assert retriever.invoke("rockets")
    with pytest.raises(EngineClosedError):
        retriever.invoke("rockets")
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(DIM), path=tmp_path) as again:
        assert again.engine.count()["keyword"] == len(TEXTS)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_an_engine_used_in_a_forked_child_refuses_with_a_clear_error(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    engine.search("rockets")  # the pool threads and store handles exist before the fork, as with --preload
    pid = os.fork()
    if pid == 0:  # the child: must refuse at once, never hang in the parent's handles
        code = 3
        try:
            engine.search("rockets")
        except EngineClosedError as exc:
            code = 0 if "fork" in str(exc) else 4
        except BaseException:
            code = 5
        try:
            engine.add(["child"], ["written by the child"])
        except EngineClosedError:
            pass
        except BaseException:
            code = 6
        engine.close()  # must not touch the parent's stores
        os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent is untouched and consistent.
    assert engine.search("rockets").ids
    assert engine.count() == {"dense": len(TEXTS), "keyword": len(TEXTS)} and engine.get(["child"]) == []
    engine.close()
