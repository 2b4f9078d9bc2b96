"""The layout's rules, checked on the source (the README's Architecture section states them).

Each rule reads the package with :mod:`ast`, so a violation names the file and line:

* no import cycles between modules, counting imports inside functions (``TYPE_CHECKING`` blocks excepted), in the
  package and in the benchmarks;
* no module over :data:`MAX_MODULE_LINES` lines;
* no private name (``_x``) imported from another module, in the package, the tests, the benchmarks or the
  examples; no re-export shims (``noqa: F401``) outside ``__init__.py``;
* no method copied from another class by assignment (``_delete = OtherStore._delete``), no dispatch by a built
  name (``getattr(self, f"_{name}")``), no ``getattr`` / ``hasattr`` probing in ``engine/``;
* framework imports only in that framework's package (``langchain_core`` in ``rrf_retriever/langchain/``,
  ``llama_index`` in ``rrf_retriever/llama_index/``); ``apps/`` imports no framework code;
* every ``# type: ignore`` says why on the same line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rrf_retriever"
MAX_MODULE_LINES = 450
#: Packages whose framework imports are allowed, by the framework's top-level import name.
FRAMEWORK_HOMES = {
    "langchain_core": "rrf_retriever/langchain/",
    "langchain": "rrf_retriever/langchain/",
    "langchain_classic": "rrf_retriever/langchain/",
    "langchain_community": "rrf_retriever/langchain/",
    "langchain_text_splitters": "rrf_retriever/langchain/",
    "llama_index": "rrf_retriever/llama_index/",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(*roots: str) -> Iterator[Path]:
    for root in roots:
        yield from sorted((ROOT / root).rglob("*.py"))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, outside ``if TYPE_CHECKING:`` blocks."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _package_modules(root: str = "rrf_retriever") -> dict[str, Path]:
    return {_module_name(p): p for p in _sources(root)}


def _targets(node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The package modules an import statement loads (``from pkg import mod`` counts ``pkg.mod``)."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level or node.module is None:
            return found
        names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    for name in names:
        if name in modules:
            found.add(name)
    return found


def import_graph(root: str = "rrf_retriever") -> dict[str, set[str]]:
    """Module -> the modules of ``root`` it imports (a package's ``__init__`` is its own node)."""
    modules = _package_modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _imports(_parse(path)):
            graph[name] |= _targets(node, modules) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycles_finds_a_planted_cycle_and_passes_a_chain() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycles_counting_function_level_imports() -> None:
    # A package's __init__ importing its own submodules, which import the package back, is not a cycle of code.
    graph = import_graph()
    for name, deps in graph.items():
        graph[name] = {d for d in deps if not (name.startswith(d + ".") and (PACKAGE / d.replace("rrf_retriever.", "", 1).replace(".", "/") / "__init__.py").exists())}
    found = cycles(graph)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_no_import_cycles_in_the_benchmarks() -> None:
    # Scripts may import a sibling's public helpers; the shared ones live in benchmarks/common, which imports none.
    graph = import_graph("benchmarks")
    assert "benchmarks.common.beir" in graph
    found = cycles(graph)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_no_module_is_over_the_size_limit() -> None:
    big = {str(p.relative_to(ROOT)): n for p in _sources("rrf_retriever")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not big, "\n".join(f"{k}: {v} lines" for k, v in sorted(big.items()))


def _private_imports(path: Path) -> Iterator[str]:
    for node in _imports(_parse(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in {
            "rrf_retriever", "benchmarks", "tests",
        }:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{alias.name}"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [module] if module else [alias.name for alias in node.names]
            for name in names:
                if (name and name.split(".")[0] in {"rrf_retriever", "benchmarks", "tests"}
                        and any(part.startswith("_") and not part.startswith("__") for part in name.split("."))):
                    yield f"{path.relative_to(ROOT)}:{node.lineno}: {name}"


def test_no_private_name_is_imported_across_modules() -> None:
    found = [hit for p in _sources("rrf_retriever", "tests", "benchmarks", "integrations") for hit in _private_imports(p)]
    assert not found, "\n".join(found)


def test_no_reexport_shims_outside_package_inits() -> None:
    found = [f"{p.relative_to(ROOT)}:{i}" for p in _sources("rrf_retriever") if p.name != "__init__.py"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "noqa: F401" in line]
    assert not found, "\n".join(found)


def _class_attribute_copies(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Attribute)
                    and isinstance(stmt.value.value, ast.Name) and stmt.value.value.id[:1].isupper()
                    and not stmt.value.attr.isupper()):
                yield stmt.lineno, ast.unparse(stmt)


def test_no_method_is_copied_from_another_class() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in _sources("rrf_retriever")
             for line, text in _class_attribute_copies(_parse(p))]
    assert not found, "\n".join(found)


def _built_name_dispatch(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and isinstance(node.args[1], (ast.JoinedStr, ast.BinOp))):
            yield node.lineno, ast.unparse(node)


def test_no_dispatch_by_a_built_name() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in _sources("rrf_retriever")
             for line, text in _built_name_dispatch(_parse(p))]
    assert not found, "\n".join(found)


def test_the_engine_does_not_probe_objects_with_getattr_or_hasattr() -> None:
    found = [f"{p.relative_to(ROOT)}:{n.lineno}: {ast.unparse(n)}" for p in _sources("rrf_retriever/engine")
             for n in ast.walk(_parse(p)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id in {"getattr", "hasattr"}]
    assert not found, "\n".join(found)


def _top_level_imports(path: Path) -> Iterator[tuple[int, str]]:
    for node in _imports(_parse(path)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def test_framework_code_lives_in_its_own_package() -> None:
    found = []
    for p in _sources("rrf_retriever"):
        rel = str(p.relative_to(ROOT))
        for line, name in _top_level_imports(p):
            home = FRAMEWORK_HOMES.get(name.split(".")[0])
            if home is not None and not rel.startswith(home):
                found.append(f"{rel}:{line}: {name}")
    assert not found, "\n".join(found)


def test_apps_import_no_framework_code() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in _sources("rrf_retriever/apps")
             for line, name in _top_level_imports(p)
             if name.split(".")[0] in FRAMEWORK_HOMES
             or name.startswith(("rrf_retriever.langchain", "rrf_retriever.llama_index", "rrf_retriever.frameworks",
                                 "rrf_retriever.retriever"))]
    assert not found, "\n".join(found)


_IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(?P<rest>.*)$")


def test_every_type_ignore_says_why() -> None:
    found = []
    for p in _sources("rrf_retriever"):
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            m = _IGNORE.search(line)
            if m and not re.search(r"#\s*\w", m.group("rest")):
                found.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("pattern", [
    r"\bDESIGN( section)? \d", r"\bseed 00\d", r"\bissue \d+",
])
def test_no_prose_names_documents_outside_the_repository(pattern: str) -> None:
    paths = [*_sources("rrf_retriever", "tests", "benchmarks", "integrations"), ROOT / "README.md"]
    found = [f"{p.relative_to(ROOT)}:{i}" for p in paths
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if re.search(pattern, line)]
    assert not found, "\n".join(found)
