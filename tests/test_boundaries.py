"""The 'forbidden' contracts of pyproject.toml without import-linter: only api imports the catalog;
the CLI imports only api, report, io and errors (direct imports, function-local ones included)."""

import pytest
from tests.test_architecture import PACKAGE, contracts, imported_modules, module_name


def _inside(module: str, prefixes: list[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("contract", [c for c in contracts() if c["type"] == "forbidden"], ids=lambda c: c["name"])
def test_forbidden_imports(contract: dict) -> None:
    violations = []
    for path in PACKAGE.rglob("*.py"):
        importer = module_name(path)
        if not _inside(importer, contract["source_modules"]):
            continue
        violations += [f"{importer} imports {m}" for m in imported_modules(path)
                       if _inside(m, contract["forbidden_modules"])]
    assert violations == []
