"""Module boundaries: no module imports another module's private names (`from x import _y`,
counting imports inside functions), in the packages and the entry points."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sebulba", "envs", "experiments", "benchmarks")


def private_imports(path: Path) -> list[str]:
    """`module:line name` of every `from <our module> import _name` in the file (relative imports
    count as ours)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            ours = node.level > 0 or (node.module or "").split(".")[0] in PACKAGES
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            found += [f"{where}:{node.lineno} {alias.name}" for alias in node.names
                      if ours and alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names():
    files = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    assert len(files) > 100
    assert [hit for p in files for hit in private_imports(p)] == []


def test_the_check_finds_a_private_import_inside_a_function(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("import os\nfrom os import _exit\n\ndef f():\n    from sebulba.loop.checkpoint import _storable\n"
                   "    from . import _near\n")
    assert private_imports(bad) == ["probe.py:5 _storable", "probe.py:6 _near"]


def import_graph(package: str) -> dict[str, set[str]]:
    """{module: the package's modules it imports}, counting imports inside functions; a package's
    `__init__` is the package's name."""
    paths = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for p in sorted((ROOT / package).rglob("*.py"))}
    graph = {m: set() for m in paths}
    for module, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = module.split(".")[: (None if path.name == "__init__.py" else -1)]
                base = ".".join(base[: len(base) - node.level + 1] + [node.module or ""]) if node.level else node.module
                names = [f"{base}.{a.name}" for a in node.names] + [base]
            else:
                continue
            for name in names:
                while name and name not in paths:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    graph[module].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module."""
    index, low, stack, found = {}, {}, [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_env_pool_has_no_import_cycle():
    """envs' modules import one way, counting imports inside functions (issue 52: the registry, the
    JAX registry, the kernel pool, the pool and the metadata went round in a circle)."""
    graph = import_graph("envs")
    assert len(graph) > 50 and cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
