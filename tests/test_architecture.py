"""The package's shape: no import cycles, no module reaching into another's private names.

The import graph is read from the source (``ast``), so the test also sees
imports that run only inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dprec"

#: Modules allowed to read a private attribute of another library, with the reason.
FOREIGN_PRIVATE = {
    "dprec.utils._surprise": "the one adapter to Surprise's private raw-to-inner id maps",
}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def _target(module: str, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``ImportFrom`` reads from (None outside dprec)."""
    if node.level == 0:
        return node.module if node.module and node.module.split(".")[0] == "dprec" else None
    package = module.split(".")
    if MODULES[module].name != "__init__.py":
        package.pop()
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str):
    """``(node, imported module, name or None)`` for every dprec import of ``module``."""
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.ImportFrom):
            target = _target(module, node)
            if target is None:
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in MODULES:
                    yield node, submodule, None
                else:
                    yield node, target, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dprec":
                    yield node, alias.name, None


def _graph() -> dict[str, set[str]]:
    return {module: {target for _, target, _ in _imports(module) if target in MODULES}
            for module in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state, stack, found = {}, [], []

    def visit(module: str) -> None:
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_the_import_graph_has_no_cycle():
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_no_module_imports_another_modules_private_names():
    private = [f"{module}: {target}.{name}" for module in MODULES
               for _, target, name in _imports(module)
               if name is not None and name.startswith("_") and not name.startswith("__")]
    assert private == []


def _defined_private_attributes(tree: ast.Module) -> set[str]:
    """Underscore names a module defines: its functions, classes and attributes it sets."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if name.startswith("_")}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_private_attributes_are_read_only_where_they_are_defined(module):
    if module in FOREIGN_PRIVATE:
        pytest.skip(FOREIGN_PRIVATE[module])
    tree = TREES[module]
    own = _defined_private_attributes(tree)
    foreign = sorted({f"{ast.unparse(node)} (line {node.lineno})" for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                      and not node.attr.startswith("__") and node.attr not in own
                      and not (isinstance(node.value, ast.Name)   # a base class's hooks
                               and node.value.id in ("self", "cls"))})
    assert foreign == []


def test_dprec_is_imported_only_at_module_level():
    """No function-local import of a dprec module: an import inside a function hides a
    dependency (often a cycle) from the reader and from this graph's first look."""
    local = []
    for module, tree in TREES.items():
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                        True for _ in _imports_of(module, node)):
                    local.append(f"{module}:{node.lineno}")
    assert local == []


def _imports_of(module: str, node: ast.AST):
    if isinstance(node, ast.ImportFrom):
        if _target(module, node) is not None:
            yield node
    elif any(alias.name.split(".")[0] == "dprec" for alias in node.names):
        yield node


# The packages' floors (docs/development.md draws the map): a package imports only packages
# on lower floors; the command line (`dprec/cli.py`, `__main__`) and `dprec/__init__` stand
# above them all.
FLOORS = {"utils": 0,
          "accountant": 1, "mechanisms": 1, "datasets": 1, "evaluation": 1,
          "similarity": 2, "selectors": 2,
          "knn": 3,
          "endtoend": 4, "ranking": 4, "audit": 4,
          "attacks": 5, "implicit": 5,
          "experiments": 6}
TOP_LEVEL_FILES = {"__init__.py", "__main__.py", "cli.py"}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FLOORS else None


def _package_imports() -> set[tuple[str, str]]:
    """Every (package, package it imports) across packages."""
    return {(_package(module), _package(target)) for module, targets in _graph().items()
            for target in targets
            if _package(module) and _package(target) and _package(module) != _package(target)}


def test_every_top_level_entry_is_a_placed_package_or_the_command_line():
    entries = {path.name for path in PACKAGE.iterdir()
               if path.name != "__pycache__" and not path.name.startswith(".")}
    assert len(entries - TOP_LEVEL_FILES) <= 14
    assert entries - TOP_LEVEL_FILES == set(FLOORS)
    assert all((PACKAGE / name / "__init__.py").is_file() for name in FLOORS)


def test_packages_import_only_packages_on_lower_floors():
    upward = sorted(f"{package} -> {target}" for package, target in _package_imports()
                    if FLOORS[target] >= FLOORS[package])
    assert upward == []


def test_the_floor_check_finds_an_upward_import():
    assert FLOORS["knn"] >= FLOORS["similarity"]   # similarity -> knn would be upward
    imports = {("similarity", "knn"), ("knn", "similarity")}
    assert [f"{a} -> {b}" for a, b in sorted(imports) if FLOORS[b] >= FLOORS[a]] == \
        ["similarity -> knn"]


def _may_import(docstring: str) -> set[str]:
    """The packages a ``May import:`` sentence names (up to its full stop)."""
    sentence = docstring.split("May import:", 1)[1].split(".\n", 1)[0].replace("\n", " ")
    sentence = sentence.rstrip(". ")
    return {word.strip("`, ").removeprefix("dprec.") for word in sentence.split(",")
            if word.strip().startswith("`dprec.")}


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_each_package_says_what_it_holds_and_what_it_may_import(package):
    docstring = ast.get_docstring(TREES[f"dprec.{package}"])
    assert docstring and len(docstring.split("\n\n")[0]) > 20, "a docstring saying what it holds"
    assert "May import:" in docstring
    assert _may_import(docstring) == {name for name, floor in FLOORS.items()
                                      if floor < FLOORS[package]}


def test_no_module_is_over_600_lines():
    long = sorted(f"{name}: {len(path.read_text().splitlines())}" for name, path in MODULES.items()
                  if len(path.read_text().splitlines()) > 600)
    assert long == []
