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
