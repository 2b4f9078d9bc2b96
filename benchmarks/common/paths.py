"""Where the benchmarks read and write: the repository, the BEIR data, the vector cache, the results.

Imports nothing heavy (no numpy, no ``rrf_retriever``), so a script that puts another source tree first on
``sys.path`` (``--code DIR``) can read these before it imports the package.

The BEIR collections live in ``shared/data`` beside the checkout (``/work/main`` -> ``/work/shared/data``); a git
worktree sits deeper (``/work/wt/NAME``), so the nearest ancestor holding ``shared/data`` is taken.

Example:
    >>> from benchmarks.common.paths import DATA, RESULTS
    >>> RESULTS.name
    'results'
"""

from __future__ import annotations

from pathlib import Path

#: The repository root (the folder holding ``benchmarks/`` and ``rrf_retriever/``).
ROOT = Path(__file__).resolve().parents[2]
#: The benchmarks folder.
BENCHMARKS = ROOT / "benchmarks"
#: The BEIR copies (scifact, arguana, med, cacm, npl; each with its ``SOURCE.md``).
DATA = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()),
            ROOT.parent / "shared" / "data")
#: The hand-built sets shipped in the repository (``multilingual``, ``xquad``).
LOCAL_DATA = BENCHMARKS / "data"
#: Cached vectors and leg runs (git-ignored).
CACHE = BENCHMARKS / ".cache"
#: JSON results and plots.
RESULTS = BENCHMARKS / "results"
