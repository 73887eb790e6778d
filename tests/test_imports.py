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
