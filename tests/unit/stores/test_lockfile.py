"""stores/lockfile.py: one holder per directory, released on close, our errors only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rrf_retriever.errors import StoreError, StoreLockedError
from rrf_retriever.stores.lockfile import lock_directory, release


def test_a_second_holder_is_refused_in_this_process_and_another_until_released(tmp_path: Path) -> None:
    lock = lock_directory(tmp_path / "d" / ".lock", "the store")
    with pytest.raises(StoreLockedError, match="open elsewhere"):
        lock_directory(tmp_path / "d" / ".lock", "the store")
    code = ("import sys; from pathlib import Path; from rrf_retriever.stores.lockfile import lock_directory\n"
            "try:\n    lock_directory(Path(sys.argv[1]), 'x')\nexcept Exception as e:\n"
            "    print(type(e).__name__)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "d" / ".lock")], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "StoreLockedError"
    release(lock)
    release(lock)  # twice is harmless
    release(None)
    again = lock_directory(tmp_path / "d" / ".lock", "the store")
    release(again)


def test_a_place_that_cannot_hold_a_lock_file_is_our_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot open"):
        lock_directory(blocker / ".lock", "the store")
