"""The layout's rules, checked on the source (the README's Architecture section states them).

Each rule reads the package with :mod:`ast`, so a violation names the file and line:

* no import cycles between modules, counting imports inside functions (``TYPE_CHECKING`` blocks excepted), in the
  package and in the benchmarks;
* no module over :data:`MAX_MODULE_LINES` lines;
* no private name (``_x``) imported from another module, in the package, the tests, the benchmarks or the
  examples, and no private attribute of ours reached from the tests, benchmarks or examples
  (:data:`PRIVATE_ATTRIBUTE_ALLOWLIST` says why for each exception);
* one import path per name: no re-export shims (``noqa: F401``, or an ``__all__`` listing an imported name) outside
  ``__init__.py``, and every name imported from the module that defines it (or a package ``__init__``);
* the framework packages (``rrf_retriever/langchain/``, ``rrf_retriever/llama_index/``) imported only by their own
  modules and ``retriever.py``: nothing else builds on them;
* no method copied from another class by assignment (``_delete = OtherStore._delete``), no dispatch by a built
  name (``getattr(self, f"_{name}")``), no ``getattr`` / ``hasattr`` probing in ``engine/``;
* framework imports only in that framework's package (``langchain_core`` in ``rrf_retriever/langchain/``,
  ``llama_index`` in ``rrf_retriever/llama_index/``); ``apps/`` imports no framework code;
* every ``# type: ignore`` says why on the same line;
* tests/unit/ mirrors the package: ``tests/unit/<pkg>/test_<module>[_<what>].py`` tests
  ``rrf_retriever/<pkg>/<module>.py``;
* every path README.md, benchmarks/README.md and deploy/README.md name in backticks exists.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator
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
            "rrf_retriever", "benchmarks", "tests", "integrations",
        }:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{alias.name}"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [module] if module else [alias.name for alias in node.names]
            for name in names:
                if (name and name.split(".")[0] in {"rrf_retriever", "benchmarks", "tests", "integrations"}
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


# ---- one home per name --------------------------------------------------------------------------------------------


def _top_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (``if`` / ``try`` blocks included, imports excluded)."""
    names: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try)):
            stack.extend([*node.body, *node.orelse])
            if isinstance(node, ast.Try):
                stack.extend([*(s for h in node.handlers for s in h.body), *node.finalbody])
    return names


def _homes() -> tuple[dict[str, Path], dict[str, set[str]]]:
    """Our modules by name, and the names each plain module (not a package ``__init__``) defines."""
    modules = _package_modules()
    defined = {name: _top_level_names(_parse(p)) for name, p in modules.items() if p.name != "__init__.py"}
    return modules, defined


def _reexported_names(tree: ast.Module, defined: set[str]) -> Iterator[tuple[int, str]]:
    for node in tree.body:
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.List, ast.Tuple))
                and any(isinstance(t, ast.Name) and t.id == "__all__"
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))):
            for elt in node.value.elts:
                if isinstance(elt, ast.Constant) and elt.value not in defined:
                    yield node.lineno, str(elt.value)


def test_the_home_checks_find_planted_shims() -> None:
    shim = ast.parse("from m.b import helper\nfrom m import b\n__all__ = ['helper', 'own']\nown = b.helper\n")
    assert list(_reexported_names(shim, _top_level_names(shim))) == [(3, "helper")]
    defined = {"m.a": _top_level_names(shim), "m.b": {"helper"}}
    user = ast.parse("from m.a import helper, own\nfrom m import a\nx = a.helper, a.own, a.__name__\n")
    assert list(_imported_from_elsewhere(user, {"m", "m.a", "m.b"}, defined)) == [(1, "m.a.helper"),
                                                                                 (3, "m.a.helper")]


def test_a_module_exports_only_names_it_defines() -> None:
    # A package's __init__ re-exports; any other module listing a name it imported is a shim (a second path).
    modules, defined = _homes()
    found = [f"{p.relative_to(ROOT)}:{line}: {exported}" for name, p in modules.items() if name in defined
             for line, exported in _reexported_names(_parse(p), defined[name])]
    assert not found, "\n".join(found)


def _imported_from_elsewhere(
    tree: ast.Module, modules: Collection[str], defined: dict[str, set[str]]
) -> Iterator[tuple[int, str]]:
    """``from mod import name`` where ``mod`` is one of our plain modules that does not define ``name``, and
    ``alias.name`` where ``alias`` is such a module imported whole (``from pkg import mod``)."""
    aliases: dict[str, str] = {}
    for node in _imports(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in defined:
                    aliases[alias.asname or alias.name] = full
                elif node.module in defined and alias.name not in defined[node.module] and full not in modules:
                    yield node.lineno, full
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in defined})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and not node.attr.startswith("__")):
            module = aliases[node.value.id]
            if node.attr not in defined[module] and f"{module}.{node.attr}" not in modules:
                yield node.lineno, f"{module}.{node.attr}"


def _lazy_maps(path: Path) -> Iterator[tuple[int, str, str]]:
    for node in _parse(path).body:
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "_LAZY"
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))):
            for key, value in zip(node.value.keys, node.value.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                    yield node.lineno, str(key.value), str(value.value)


def test_every_name_is_imported_from_the_module_that_defines_it() -> None:
    # One import path per name: a module that merely imported a name is not a place to import it from (a package's
    # __init__ is: it re-exports). The lazy maps of the package inits point at the defining module too.
    modules, defined = _homes()
    found = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in _sources("rrf_retriever", "tests", "benchmarks",
                                                                       "integrations")
             for line, name in _imported_from_elsewhere(_parse(p), modules, defined)]
    found += [f"{p.relative_to(ROOT)}:{line}: _LAZY[{name!r}] -> {module}" for p in _sources("rrf_retriever")
              if p.name == "__init__.py" for line, name, module in _lazy_maps(p)
              if module in defined and name not in defined[module]]
    assert not found, "\n".join(found)


def test_only_the_framework_packages_and_the_dual_retriever_import_the_framework_packages() -> None:
    # The direction: our framework packages build on the rest, never the reverse (embeddings/ once imported them
    # inside methods); rrf_retriever/retriever.py composes them, the package __init__ names them lazily.
    allowed = ("rrf_retriever/langchain/", "rrf_retriever/llama_index/", "rrf_retriever/retriever.py")
    found = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in _sources("rrf_retriever")
             if not str(p.relative_to(ROOT)).startswith(allowed)
             for line, name in _top_level_imports(p)
             if name.startswith(("rrf_retriever.langchain", "rrf_retriever.llama_index"))]
    assert not found, "\n".join(found)


# ---- tests, benchmarks and examples use our public names ----------------------------------------------------------

#: (file, private attribute) pairs a test may reach, each with why no public name serves.
PRIVATE_ATTRIBUTE_ALLOWLIST: dict[tuple[str, str], str] = {
    ("tests/reliability/test_faults.py", "_call"): (
        "fault injection: a qdrant-edge store subclass fails its n-th upsert at the one method every engine call "
        "passes (stores/qdrant/common.py documents it as the override point); a real disk cannot be made to fail "
        "on the n-th write"),
    ("tests/unit/test_retriever.py", "_verbose"): (
        "LlamaIndex's own BaseRetriever attribute (we only declare it on the pydantic model so LlamaIndex can set "
        "it); the test pins that verbose= reaches it"),
}


def _private_names_of_ours() -> set[str]:
    """Every private name the package binds: functions, classes, attributes set on objects, arguments."""
    names: set[str] = set()
    for p in _sources("rrf_retriever"):
        names |= _bound_private_names(_parse(p))
    return names


def _bound_private_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _private_attribute_uses(tree: ast.Module, ours: set[str]) -> Iterator[tuple[int, str]]:
    """``x._name`` where ``_name`` is a private name of ours, except ``self._name`` / ``cls._name`` of a name the
    file binds itself (its own fake's state and hooks). ``super()._hook(...)`` counts: it reaches our code."""
    own = _bound_private_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ours:
            if isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"} and node.attr in own:
                continue
            yield node.lineno, ast.unparse(node)


def test_the_private_attribute_check_finds_planted_uses() -> None:
    tree = ast.parse(
        "class Fake(Base):\n"
        "    def _hook(self):\n"
        "        self._state = 1\n"
        "        return self._state, self._hook, super()._hook(), self._vector, store._shard, os._exit\n"
    )
    assert sorted(text for _, text in _private_attribute_uses(tree, {"_hook", "_state", "_vector", "_shard"})) == [
        "self._vector", "store._shard", "super()._hook"]


def test_tests_benchmarks_and_examples_reach_no_private_attribute_of_ours() -> None:
    # Private imports are refused above; this is the attribute side (store._shard, model._tokenizer, pkg._LAZY):
    # what a test needs is public (a read-only property) or checked through behaviour. Names the package does not
    # bind (os._exit, a namedtuple's _replace, LlamaIndex's Settings._embed_model) are not ours and pass.
    ours = _private_names_of_ours()
    found, used = [], set()
    for p in _sources("tests", "benchmarks", "integrations"):
        rel = str(p.relative_to(ROOT))
        for line, text in _private_attribute_uses(_parse(p), ours):
            key = (rel, text.rsplit(".", 1)[1])
            if key in PRIVATE_ATTRIBUTE_ALLOWLIST:
                used.add(key)
            else:
                found.append(f"{rel}:{line}: {text}")
    assert not found, "\n".join(found)
    assert used == set(PRIVATE_ATTRIBUTE_ALLOWLIST), f"allowlisted but no longer used: {set(PRIVATE_ATTRIBUTE_ALLOWLIST) - used}"


# ---- the tests mirror the package ---------------------------------------------------------------------------------

#: Tests about the whole package rather than one module: they stay at tests/unit/.
#: Tests of the whole repository (its layout, public names, package, doctests, the benchmarks folder), not of one module.
WHOLE_PACKAGE_TESTS = {"test_architecture.py", "test_imports.py", "test_package.py", "test_doctests.py",
                       "test_benchmarks_layout.py", "test_benchmarks_build_collections.py"}


def _module_stems(folder: Path) -> set[str]:
    return {"init" if p.stem == "__init__" else p.stem for p in folder.glob("*.py")}


def _misplaced_unit_tests() -> Iterator[str]:
    unit = ROOT / "tests" / "unit"
    for test in sorted(unit.rglob("test_*.py")):
        rel = test.relative_to(unit)
        if rel.parent == Path(".") and rel.name in WHOLE_PACKAGE_TESTS:
            continue
        folder = PACKAGE / rel.parent
        if not (folder / "__init__.py").is_file():
            yield f"tests/unit/{rel}: no package folder rrf_retriever/{rel.parent}/"
            continue
        subject = test.stem.removeprefix("test_")
        if not any(subject == m or subject.startswith(m + "_") for m in _module_stems(folder)):
            yield f"tests/unit/{rel}: names no module of rrf_retriever/{rel.parent}/ (test_<module>[_<what>].py)"
    for folder in sorted(p for p in unit.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        if not (folder / "__init__.py").is_file():
            yield f"{folder.relative_to(ROOT)}: no __init__.py (two test files of one name would collide)"


def test_unit_tests_mirror_the_package() -> None:
    # tests/unit/engine/test_journal.py tests rrf_retriever/engine/journal.py, test_query_vector_door.py one subject of
    # engine/query.py. Tests about the whole package stay at the top (WHOLE_PACKAGE_TESTS).
    found = list(_misplaced_unit_tests())
    assert not found, "\n".join(found)


# ---- prose names files that exist ---------------------------------------------------------------------------------

#: The documents whose backticked paths are checked. benchmarks/RESULTS.md is not: a dated log, each entry naming
#: the files as they were when it was measured.
DOCUMENTS = ("README.md", "benchmarks/README.md", "deploy/README.md")
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_EXTENSIONS = (".py", ".md", ".json", ".jsonl", ".toml", ".ipynb", ".txt", ".yml", ".yaml", ".png", ".npy", ".tsv")


def _path_in(token: str) -> str | None:
    """The repository path a backticked token names, or None when it names none: a path holds a ``/`` or ends in
    ``.py``; ``engine/query.prepare`` names ``engine/query.py``. Placeholders (``<fw>``, ``DIR/``), URLs, image
    tags (``a/b:v1``) and the gitignored data cache (``.cache/``) name no file of the repository."""
    # shared/ is the workplace's data folder beside the repository (benchmarks read it), not a file of the repository.
    if any(mark in token for mark in ("<", ":", ".cache/")) or token.startswith(("-", "/", "shared/")):
        return None
    if (ROOT / token).is_dir():
        return token
    if re.match(r"^[A-Z]+/", token) or ("/" not in token and not token.endswith(".py")):
        return None
    if token.endswith(_EXTENSIONS) or token.endswith("/"):
        return token
    module = token.partition(".")[0]
    return module + ".py" if "/" in module else None


def _exists(path: str, document: Path) -> bool:
    """Relative to the document, the repository, the package or tests/; a bare ``x.py`` anywhere in our code."""
    bases = (document.parent, ROOT, PACKAGE, ROOT / "tests")
    # ``results/x_{test,train}.json`` names each of its brace's alternatives
    head, brace, rest = path.partition("{")
    if brace:
        options, _, tail = rest.partition("}")
        return all(_exists(head + option + tail, document) for option in options.split(","))
    if any(any(base.glob(path.rstrip("/"))) for base in bases):
        return True
    return "/" not in path.rstrip("/") and any(any((ROOT / root).rglob(path.rstrip("/")))
                                   for root in ("rrf_retriever", "tests", "benchmarks", "integrations"))


def test_path_finds_the_file_or_says_it_names_none() -> None:
    assert _path_in("engine/query.prepare") == "engine/query.py"
    assert _path_in("`x`") is None and _path_in("rrf_retriever/<fw>/") is None and _path_in("DIR/a.json") is None
    assert _path_in("tests/unit/test_imports.py") == "tests/unit/test_imports.py"
    assert not _exists("embeddings/frameworks.py", ROOT / "README.md")
    assert _exists("stores/base.py", ROOT / "README.md") and _exists("results/", ROOT / "benchmarks" / "README.md")


def test_every_path_the_documents_name_exists() -> None:
    found = []
    for name in DOCUMENTS:
        document = ROOT / name
        for i, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for token in _BACKTICKED.findall(line):
                path = _path_in(token)
                if path is not None and not _exists(path, document):
                    found.append(f"{name}:{i}: {token}")
    assert not found, "\n".join(found)
