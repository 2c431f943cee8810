"""Every third-party module the package imports is a declared dependency.

CI installs the test extras (ray pulls in click, for example), which can hide an import of a
package that a plain ``pip install fabricsim`` does not bring; this test catches that.
Optional extras (ray, pyarrow, torch) may only be imported inside functions, never at module level.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import fabricsim

REQUIRED = {"numpy", "scipy", "pydantic", "yaml", "typer", "rich", "numba"}
OPTIONAL = {"ray", "pyarrow", "torch"}
PACKAGE_ROOT = Path(fabricsim.__file__).parent


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """(top-level module name, imported at module level?) for every import in ``tree``."""
    found: list[tuple[str, bool]] = []
    module_level = {id(node) for node in getattr(tree, "body", [])}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [(name.split(".")[0], id(node) in module_level) for name in names]
    return found


def test_third_party_imports_are_declared_and_optional_ones_are_lazy() -> None:
    problems = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        for module, at_top in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if module in sys.stdlib_module_names or module in ("fabricsim", "__future__"):
                continue
            if module in OPTIONAL and at_top:
                problems.append(f"{path.name}: optional {module} imported at module level")
            elif module not in REQUIRED | OPTIONAL:
                problems.append(f"{path.name}: {module} is not a declared dependency")
    assert problems == []
