"""The example system YAMLs (memory tiers attached) load and source every number."""

from pathlib import Path

import pytest
import yaml

from fabricsim import catalog
from fabricsim.specs.memory_tier import MemoryTierKind

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "systems").glob("*.yaml"))


def _unsourced(node, path=""):
    if isinstance(node, dict):
        if "value" in node and "source" in node:
            return [] if str(node["source"]).strip() else [path]
        return [p for key, value in node.items() for p in _unsourced(value, f"{path}.{key}")]
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return [path]
    return []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_system_loads_with_sources(path: Path) -> None:
    assert _unsourced(yaml.safe_load(path.read_text(encoding="utf-8"))) == []
    system = catalog.load_system(str(path))
    assert system.memory_tiers


def test_the_examples_are_there() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"dgx-a100-calculon", "dgx-h100-cxl-pool"} <= names
    pool = catalog.load_system(str(EXAMPLES[[p.stem for p in EXAMPLES].index("dgx-h100-cxl-pool")]))
    assert pool.memory_tier(MemoryTierKind.CXL).link.name == "cxl2"
