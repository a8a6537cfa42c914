"""No import circle anywhere in haystack_fin: every import of a haystack_fin module (at module level, inside a
function or under ``if TYPE_CHECKING``, where circles hide from the interpreter) forms an acyclic graph."""

import ast
from pathlib import Path

import networkx as nx

import haystack_fin

PACKAGE = Path(haystack_fin.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The haystack_fin modules ``path`` imports (a ``from package import name`` of a submodule counts as it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m in modules and m != here}


def import_graph() -> "nx.DiGraph[str]":
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph: nx.DiGraph[str] = nx.DiGraph()
    for path in paths:
        graph.add_node(module_name(path))
        for target in imported_modules(path, modules):
            if not module_name(path).startswith(target + "."):  # a package's __init__ runs before its modules
                graph.add_edge(module_name(path), target)
    return graph


def test_no_import_circle() -> None:
    graph = import_graph()
    assert graph.number_of_edges() > 100  # the walk found the package's imports
    # A strongly connected component of more than one module holds a circle of any length.
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not circles, "import circles among: " + "; ".join(", ".join(c) for c in circles)


def test_core_imports_no_haystack() -> None:
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n == "haystack" or n.startswith(("haystack.", "haystack_integrations")) for n in names), path
