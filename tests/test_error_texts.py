"""Each layout error text is defined once (issue 15): a check copied into a second module drifts.

Walks every ``FabricsimError(field, problem, ...)`` call in src/ whose field is a layout option and
compares the problem texts (f-string placeholders normalised): no text may appear twice.
"""

import ast
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "fabricsim"
LAYOUT_FIELDS = {"tp", "pp", "dp", "cp", "ep", "vpp", "micro-batch", "zero", "recompute", "dtype", "layout",
                 "global-batch", "seq-len", "sequence-parallel"}


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def layout_error_texts() -> list[tuple[str, str, str]]:
    """(field, problem text, file) of every layout FabricsimError raised with literal texts."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "FabricsimError"):
                continue
            if len(node.args) < 2:
                continue
            field, problem = _text(node.args[0]), _text(node.args[1])
            if field in LAYOUT_FIELDS and problem:
                found.append((field, problem, str(path.relative_to(PACKAGE))))
    return found


def test_layout_error_texts_are_defined_once() -> None:
    texts = layout_error_texts()
    assert len(texts) >= 8  # the walk sees the layout checks at all
    counts = Counter((field, problem) for field, problem, _ in texts)
    repeated = {key: [f for fi, p, f in texts if (fi, p) == key] for key, n in counts.items() if n > 1}
    assert repeated == {}


def test_layout_spec_has_no_validation_copy() -> None:
    """Field checks live in specs/inputs.py, cross-field rules in workload/training.py: the spec
    class and the engine carry none (no validate_basic, no 'fast path' copy)."""
    for relative in ("specs/layout.py", "engine/training/analytic.py"):
        source = (PACKAGE / relative).read_text(encoding="utf-8")
        assert "validate_basic" not in source and "FabricsimError(" not in source, relative
