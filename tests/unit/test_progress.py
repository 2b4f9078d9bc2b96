"""Progress bars: only for long work on a terminal by default, and switched per call by ``show_progress``."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from rrf_retriever.errors import InvalidTypeError
from rrf_retriever.progress import PROGRESS_THRESHOLD, check_show_progress, progress_bar, progress_shown, progress_span

LONG = PROGRESS_THRESHOLD + 1


def _draw(total: int, show: bool | None = None) -> None:
    with progress_bar(total, "upserting", unit="doc", show=show) as bar:
        bar.update(total)


def test_default_draws_no_bar_into_a_stream_that_is_not_a_terminal(capfd: pytest.CaptureFixture[str]) -> None:
    _draw(LONG)
    assert capfd.readouterr().err == ""


def test_default_draws_a_bar_for_long_work_on_a_terminal_only() -> None:
    script = ("from rrf_retriever.progress import PROGRESS_THRESHOLD, progress_bar\n"
              "for n in (10, PROGRESS_THRESHOLD + 1):\n"
              "    with progress_bar(n, f'job-{n}-items') as bar:\n"
              "        bar.update(n)\n")
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # a new pty is 0 columns wide
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", script], stderr=child, stdout=subprocess.DEVNULL, env=env,
                          timeout=120, check=True)
    os.close(child)
    drawn = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child side is closed: all read
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main)
    assert proc.returncode == 0
    assert f"job-{LONG}-items".encode() in drawn and b"job-10-items" not in drawn


def test_true_draws_a_bar_even_for_a_small_job(capfd: pytest.CaptureFixture[str]) -> None:
    with progress_shown(True):
        _draw(3)
    assert "upserting" in capfd.readouterr().err
    _draw(3, show=True)  # a caller's own setting (an embedding model's show_progress)
    assert "upserting" in capfd.readouterr().err


def test_false_silences_every_bar_even_a_forced_one(capfd: pytest.CaptureFixture[str]) -> None:
    with progress_shown(False):
        _draw(LONG, show=True)
    assert capfd.readouterr().err == ""


def test_none_changes_nothing_and_the_switch_ends_with_its_block(capfd: pytest.CaptureFixture[str]) -> None:
    with progress_shown(True), progress_shown(None):
        _draw(3)
    assert "upserting" in capfd.readouterr().err
    _draw(3)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("bad", ["no", 0, 1])
def test_a_switch_that_is_not_a_bool_is_refused(bad: object) -> None:
    with pytest.raises(InvalidTypeError, match="show_progress"):
        check_show_progress(bad)
    with pytest.raises(InvalidTypeError, match="show_progress"), progress_shown(bad):  # type: ignore[arg-type]  # the bad value is the point
        pass


def test_a_span_draws_each_bar_of_its_parts_once_over_the_whole_job(capfd: pytest.CaptureFixture[str]) -> None:
    with progress_shown(True), progress_span(25) as span:
        for size in (10, 10, 5):
            span.part(size)
            for _ in range(2):  # two stores whose bars have one label: two bars, not one
                with progress_bar(size, "upserting into x", unit="doc") as bar:
                    bar.update(size)
    err = capfd.readouterr().err
    assert err.count("upserting into x:   0%") == 2  # two bars, each opened once
    assert err.count("25/25") >= 2 and "/10 " not in err and "/5 " not in err
    _draw(3)  # the span ended: bars are per call again (and silent here)
    assert capfd.readouterr().err == ""
