"""The benchmarks' layout (benchmarks/README.md states it), checked on the source.

* every script lives in one of the four groups (``quality/``, ``speed/``, ``scale/``, ``reliability/``), the shared
  helpers in ``common/``, nothing else beside them (``data/`` holds the hand-built sets and their converter);
* a script is a module with a docstring and a ``__main__`` guard (importing it runs nothing), a helper has no guard;
* every ``from benchmarks.x import name`` names a module that exists and a name it defines;
* every ``benchmarks/...`` path quoted in README.md, benchmarks/README.md and benchmarks/RESULTS.md exists (the
  git-ignored ``benchmarks/.cache`` excepted), and so does every ``results/...`` file benchmarks/README.md names;
* every script imports (one fresh interpreter imports them all, without running any).
"""

from __future__ import annotations

import ast
import glob
import itertools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
GROUPS = ("quality", "speed", "scale", "reliability")
HELPERS = "common"
DOCS = (ROOT / "README.md", BENCHMARKS / "README.md", BENCHMARKS / "RESULTS.md")


def _scripts() -> list[Path]:
    return sorted(p for g in GROUPS for p in (BENCHMARKS / g).glob("*.py") if p.name != "__init__.py")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _has_main_guard(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test)
               for node in tree.body)


def test_every_python_file_lives_in_a_group_or_the_shared_package() -> None:
    allowed = {*GROUPS, HELPERS, "data"}
    stray = [str(p.relative_to(ROOT)) for p in BENCHMARKS.rglob("*.py")
             if ".cache" not in p.parts and p != BENCHMARKS / "__init__.py"
             and (len(p.relative_to(BENCHMARKS).parts) < 2 or p.relative_to(BENCHMARKS).parts[0] not in allowed)]
    assert not stray, "\n".join(stray)
    nested = [str(p.relative_to(ROOT)) for g in (*GROUPS, HELPERS) for p in (BENCHMARKS / g).rglob("*.py")
              if p.parent != BENCHMARKS / g]
    assert not nested, "\n".join(nested)
    missing = [g for g in (*GROUPS, HELPERS) if not (BENCHMARKS / g / "__init__.py").is_file()]
    assert not missing, missing


def test_scripts_are_guarded_and_documented_and_helpers_are_not_scripts() -> None:
    scripts = _scripts()
    assert len(scripts) >= 40, "the benchmarks were found"
    bad = []
    for p in scripts:
        tree = ast.parse(p.read_text(encoding="utf-8"))
        if not ast.get_docstring(tree):
            bad.append(f"{p.relative_to(ROOT)}: no docstring")
        if not _has_main_guard(tree):
            bad.append(f"{p.relative_to(ROOT)}: no __main__ guard (importing it would run it)")
    for p in sorted((BENCHMARKS / HELPERS).glob("*.py")):
        if _has_main_guard(ast.parse(p.read_text(encoding="utf-8"))):
            bad.append(f"{p.relative_to(ROOT)}: a helper with a __main__ guard (scripts live in the groups)")
    assert not bad, "\n".join(bad)


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _benchmark_imports() -> Iterator[tuple[Path, int, str, str | None]]:
    for p in sorted(BENCHMARKS.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "benchmarks":
                for alias in node.names:
                    yield p, node.lineno, node.module, alias.name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "benchmarks":
                        yield p, node.lineno, alias.name, None


def test_every_benchmarks_import_names_a_module_and_a_name_it_defines() -> None:
    bad = []
    for p, line, module, name in _benchmark_imports():
        target = ROOT.joinpath(*module.split("."))
        file = target.with_suffix(".py") if target.with_suffix(".py").is_file() else target / "__init__.py"
        where = f"{p.relative_to(ROOT)}:{line}: {module}"
        if not file.is_file():
            bad.append(f"{where}: no such module")
        elif name is not None and not (target / f"{name}.py").is_file() \
                and name not in _defined(ast.parse(file.read_text(encoding="utf-8"))):
            bad.append(f"{where}: defines no {name}")
    assert not bad, "\n".join(bad)


_QUOTED = re.compile(r"benchmarks/[A-Za-z0-9_.*{},<>/-]*[A-Za-z0-9_*}>/]")
_RESULTS = re.compile(r"`(results/[A-Za-z0-9_.*{},<>/-]*[A-Za-z0-9_*}>])")


def _expand(path: str) -> list[str]:
    """``a_{x,y}.json`` -> ``a_x.json``, ``a_y.json``; ``a_<label>.json`` -> ``a_*.json`` (the docs' shorthand)."""
    parts = re.split(r"\{([^}]*)\}", re.sub(r"<[^>]*>", "*", path))
    fixed, choices = parts[::2], [c.split(",") for c in parts[1::2]]
    return ["".join(itertools.chain.from_iterable(itertools.zip_longest(fixed, pick, fillvalue="")))
            for pick in itertools.product(*choices)]


def _missing(base: Path, quoted: str) -> bool:
    return not any(glob.glob(str(base / p)) for p in _expand(quoted))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_benchmarks_path_the_docs_quote_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    quoted = {m.group(0).rstrip("/") for m in _QUOTED.finditer(text)}
    assert quoted or doc.name == "README.md", "the pattern finds the quoted paths"
    missing = sorted(q for q in quoted if not q.startswith("benchmarks/.cache") and _missing(ROOT, q))
    assert not missing, "\n".join(missing)


def test_every_results_file_benchmarks_readme_names_exists() -> None:
    quoted = {m.group(1) for m in _RESULTS.finditer((BENCHMARKS / "README.md").read_text(encoding="utf-8"))}
    assert len(quoted) >= 20, "the README names what each command writes"
    missing = sorted(q for q in quoted if _missing(BENCHMARKS, q))
    assert not missing, "\n".join(missing)


def test_the_readme_lists_every_script() -> None:
    text = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    unlisted = [str(p.relative_to(ROOT)) for p in _scripts() if str(p.relative_to(ROOT)) not in text]
    assert not unlisted, "\n".join(unlisted)


@pytest.mark.slow
def test_every_script_imports_without_running() -> None:
    # One fresh interpreter for all of them: a script's module-level code (sys.path, env) stays out of this one.
    modules = [_module(p) for p in _scripts()]
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\nprint('ok', len(sys.argv) - 1)"
    done = subprocess.run([sys.executable, "-c", code, *modules], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", str(len(modules))]
