"""The shape of the code: which modules may import which (read from the source with `ast`, nothing is imported).

- no import cycles among the modules of `engine/`, nor among those of `web/`;
- `engine` imports nothing from `web`, nor a web framework or a database library (it stays usable on its own);
- `web/routes/*` is a leaf layer: a route module imports no other route module (what two of them share lives in
  a `web/` module).

What counts as an import:
- module-level imports, and imports inside functions too: a deferred import is still a dependency at run time,
  and it is the usual way a cycle is hidden rather than removed (web/services.py and web/widget.py were tied
  that way);
- imports under `if TYPE_CHECKING:` do not count for cycles: they never run, they only name a type for the
  checker. They do count for the layer rules (engine -> web, route -> route), which are about what a module
  knows of, not only about what runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "web")
FRAMEWORKS = ("fastapi", "starlette", "jinja2", "sqlmodel", "sqlalchemy", "uvicorn", "web")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a project module where the name is one, else the name as written)
    line: int
    typing_only: bool  # under `if TYPE_CHECKING:`


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        return ".".join([*base, node.module] if node.module else base)

    def walk(node: ast.AST, typing_only: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from walk_one(statement, True)
                for statement in child.orelse:
                    yield from walk_one(statement, typing_only)
            else:
                yield from walk_one(child, typing_only)

    def walk_one(node: ast.AST, typing_only: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, node.lineno, typing_only)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node)
            for alias in node.names:
                # `from web import deferral` imports the module web.deferral; `from web.sites import Sites` web.sites
                full = f"{base}.{alias.name}"
                yield Import(name, full if full in modules else base, node.lineno, typing_only)
        else:
            yield from walk(node, typing_only)

    yield from walk(tree, False)


def all_imports() -> list[Import]:
    modules = project_modules()
    return [found for name, path in modules.items() for found in imports_of(name, path, modules)]


def cycles(package: str, imports: list[Import], names: Iterable[str] | None = None) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan), among `package`'s modules."""
    known = project_modules() if names is None else names
    graph: dict[str, set[str]] = {name: set() for name in known if name.split(".")[0] == package}
    for found in imports:
        if found.source in graph and found.target in graph and found.target != found.source and not found.typing_only:
            graph[found.source].add(found.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found_cycles: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found_cycles.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found_cycles


def where(imports: list[Import], members: frozenset[str]) -> list[str]:
    return sorted(
        f"{found.source} -> {found.target} (line {found.line})"
        for found in imports
        if found.source in members and found.target in members and not found.typing_only
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package: str) -> None:
    imports = all_imports()
    found = cycles(package, imports)
    assert not found, "import cycles:\n" + "\n\n".join("\n".join(where(imports, c)) for c in found)


def test_engine_imports_nothing_from_web_or_a_framework() -> None:
    wrong = {
        f"{found.source} imports {found.target} (line {found.line})"
        for found in all_imports()
        if found.source.split(".")[0] == "engine" and found.target.split(".")[0] in FRAMEWORKS
    }
    assert not wrong, "\n".join(sorted(wrong))


def test_route_modules_import_no_other_route_module() -> None:
    wrong = {
        f"{found.source} imports {found.target} (line {found.line})"
        for found in all_imports()
        if found.source.startswith("web.routes.")
        and found.target.startswith("web.routes.")
        and found.target != found.source
    }
    assert not wrong, "\n".join(sorted(wrong))


def test_the_check_sees_imports_where_they_hide(tmp_path: Path) -> None:
    """The reader finds imports inside functions, relative ones, and tells TYPE_CHECKING ones apart."""
    source = tmp_path / "sample.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from .other import Thing\n"
        "if TYPE_CHECKING:\n"
        "    from web.widget import Widget\n"
        "def late():\n"
        "    import web.services\n",
        encoding="utf-8",
    )
    modules = {"web.sibling": source, "web.other": source, "web.widget": source, "web.services": source}
    found = {(i.target, i.typing_only) for i in imports_of("web.sample", source, modules)}
    assert found == {
        ("typing", False),
        ("web.sibling", False),
        ("web.other", False),
        ("web.widget", True),
        ("web.services", False),
    }
    names = ("web.a", "web.b", "web.c")
    loop = [Import("web.a", "web.b", 1, False), Import("web.b", "web.c", 2, False), Import("web.c", "web.a", 3, False)]
    assert cycles("web", loop, names) == [frozenset(names)]
    typed = [*loop[:2], Import("web.c", "web.a", 3, True)]
    assert cycles("web", typed, names) == []  # a TYPE_CHECKING import closes no cycle
