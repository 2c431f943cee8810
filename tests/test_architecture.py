"""The layer contract of DESIGN.md: lower layers never import higher ones.

``lint-imports`` (import-linter, configured in pyproject.toml) is the authority when installed;
an AST walk over src/ checks the same layer list without it, so the contract holds everywhere.
"""

import ast
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "fabricsim"


def contracts() -> list[dict]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)["tool"]["importlinter"]["contracts"]


def layer_of() -> dict[str, int]:
    """Module prefix -> layer rank (0 = highest), from the 'layers' contract."""
    layers = next(c for c in contracts() if c["type"] == "layers")["layers"]
    ranks = {}
    for rank, entry in enumerate(layers):
        for module in entry.split("|"):
            ranks[module.strip().strip("()")] = rank  # "(x)" marks an optional layer
    return ranks


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Absolute fabricsim imports of a file, including function-local ones."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("fabricsim")}


def rank(module: str, ranks: dict[str, int]) -> int | None:
    matches = [prefix for prefix in ranks if module == prefix or module.startswith(prefix + ".")]
    return ranks[max(matches, key=len)] if matches else None


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed")
def test_lint_imports_passes():
    proc = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_module_imports_a_higher_layer():
    ranks = layer_of()
    violations = []
    for path in PACKAGE.rglob("*.py"):
        importer = module_name(path)
        own = rank(importer, ranks)
        if own is None:
            continue
        for imported in imported_modules(path):
            other = rank(imported, ranks)
            if other is not None and other < own:
                violations.append(f"{importer} imports {imported}")
    assert violations == []


def test_collectives_and_transformer_are_independent():
    pairs = [("collectives", "fabricsim.transformer"), ("transformer", "fabricsim.collectives")]
    for folder, forbidden in pairs:
        for path in (PACKAGE / folder).rglob("*.py"):
            assert not any(m.startswith(forbidden) for m in imported_modules(path)), path
