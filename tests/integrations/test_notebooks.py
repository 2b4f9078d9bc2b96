"""The numbered notebooks run headless, top to bottom, with nbclient (the weight-tuning one on a small subset).

The kernel is the ``python3`` kernelspec resolved to THIS interpreter: the venv's bin directory goes first on
PATH (the ipykernel kernelspec runs ``python``), nothing is registered globally.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SCIFACT = NOTEBOOKS.parent.parent / "shared" / "data" / "scifact"


def run_notebook(name: str, monkeypatch: pytest.MonkeyPatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("RRF_NOTEBOOK_SMALL", "1")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def text_of(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") or str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def test_notebooks_are_stored_without_outputs() -> None:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.slow
def test_quickstart_runs_both_frameworks(monkeypatch: pytest.MonkeyPatch) -> None:
    nb = run_notebook("1_quickstart.ipynb", monkeypatch)
    out = text_of(nb)
    assert "session 3 only: [('doc-5', 3)" in out or "session 3 only: [('doc-4', 3)" in out
    assert "scoped:" in out and "'doc-2'" not in out.split("scoped:")[1].splitlines()[0]
    assert "dense only:" in out


@pytest.mark.slow
@pytest.mark.skipif(not (SCIFACT / "qrels" / "train.tsv").is_file(), reason="SciFact data not present")
def test_weight_tuning_runs_on_a_small_train_subset(monkeypatch: pytest.MonkeyPatch) -> None:
    nb = run_notebook("2_weight_tuning.ipynb", monkeypatch)
    out = text_of(nb)
    assert "300 documents, 30 train queries (small=True)" in out
    assert "shipped defaults" in out and "best of the sweep" in out
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the heatmap and the rrf_k curve
