"""Imports run one way between the packages of projects/ (docs/ARCHITECTURE.md draws the map):

    models, audit, errors, outbox  <-  memory  <-  runners
                                               <-  governance
                                   <-  events (delivery: only the foundation)
    and the console (views, forms, admin, api wiring, commands) on top of all of them.

Read from the source with ast, so an import hidden inside a function counts too."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.db_independent

ROOT = Path(__file__).resolve().parent.parent / "projects"
FOUNDATION = {
    "projects.models",
    "projects.audit",
    "projects.errors",
    "projects.jsontext",
    "projects.system_text",
    "projects.outbox",
    "projects.metrics",
    "projects.logs",
    "projects.prepared",
}
PURE = {"projects.memory.layout", "projects.memory.lookalikes"}  # may be imported by anything
ALLOWED = {
    "foundation": FOUNDATION | PURE,
    "projects.memory": FOUNDATION | {"projects.memory"},
    "projects.runners": FOUNDATION | {"projects.memory", "projects.runners"},
    "projects.governance": FOUNDATION | {"projects.memory", "projects.governance"},
    "projects.events": FOUNDATION | {"projects.events"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str | None:
    if any(module == f or module.startswith(f + ".") for f in FOUNDATION):  # and a package's modules
        return "foundation"
    for package in ("projects.memory", "projects.runners", "projects.governance", "projects.events"):
        if module == package or module.startswith(package + "."):
            return package
    return None  # the console: may import anything


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "projects" or node.module.startswith("projects."):
                for alias in node.names:  # a submodule by name, else a name of the module
                    name = f"{node.module}.{alias.name}"
                    found.append(name if _is_module(name) else node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("projects")]
    return found


def _allowed(target: str, allowed: set[str]) -> bool:
    return any(target == a or target.startswith(a + ".") for a in allowed | PURE)


def _is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (ROOT / relative).with_suffix(".py").exists() or (ROOT / relative / "__init__.py").exists()


SOURCES = sorted(p for p in ROOT.rglob("*.py") if "migrations" not in p.parts)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_run_one_way_between_packages(path):
    module = _module_name(path)
    layer = _layer(module)
    if layer is None:
        return
    wrong = [
        target for target in _imports(path) if _is_module(target) and not _allowed(target, ALLOWED[layer])
    ]
    assert wrong == [], f"{module} ({layer}) may not import {wrong}"


def test_the_checker_sees_a_wrong_import():
    assert not _allowed("projects.runners.hooks", ALLOWED["projects.memory"])
    assert not _allowed("projects.governance.isolation", ALLOWED["projects.runners"])
    assert _allowed("projects.memory.layout", ALLOWED["foundation"])
    assert _layer("projects.models.memory") == "foundation"  # a module of the models package
    assert not _allowed("projects.memory.store", ALLOWED[_layer("projects.models.memory")])
