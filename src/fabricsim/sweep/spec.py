"""Sweep spec documents (layer L8): the YAML a user writes to describe many scenarios at once.

A spec is a list of task blocks. Each block names a task ``kind`` (``collective`` today; ``train``,
``infer``, ``serve`` once the API has them) and either a ``grid`` (the cartesian product of its
values: every key maps to one value or a list of values) or a ``list`` of explicit parameter sets::

    name: collectives-across-systems
    tasks:
      - kind: collective
        grid: {op: [all-reduce, all-gather], system: [dgx-a100, dgx-h100], gpus: [8, 64], size: 1GiB}
      - kind: collective
        list:
          - {op: all-to-all, system: gb200-nvl72, gpus: 72, size: 256MiB}

The document's shape is validated by pydantic (frozen, unknown keys forbidden); the parameters of a
task are checked later against the runner of its kind (:mod:`fabricsim.sweep.tasks`). Every problem
becomes one :class:`FabricsimError` whose field is the key path, e.g. ``tasks[0].grid.gpus``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fabricsim.errors import FabricsimError
from fabricsim.textfile import read_yaml

SCALAR_TYPES = (str, int, float, bool)


class TaskKind(StrEnum):
    """What a sweep task runs: one public API call per kind (the commands of DESIGN.md)."""

    COLLECTIVE = "collective"
    TRAIN = "train"
    INFER = "infer"
    SERVE = "serve"


class TaskBlock(BaseModel):
    """One block of a spec: a kind, and a grid or an explicit list of parameter sets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: TaskKind
    grid: dict[str, Any] | None = None
    cases: list[dict[str, Any]] | None = Field(default=None, alias="list")


class SweepSpec(BaseModel):
    """A whole sweep: an optional name and at least one task block."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    tasks: list[TaskBlock]


def key_path(loc: tuple[Any, ...]) -> str:
    """Render a pydantic error location as a key path: ``('tasks', 0, 'grid')`` -> ``tasks[0].grid``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "spec"


def _spec_error(exc: ValidationError) -> FabricsimError:
    first = exc.errors()[0]
    loc = tuple(first["loc"])
    path = key_path(loc)
    kind = first["type"]
    if kind == "extra_forbidden":
        return FabricsimError(path, "unknown key", "allowed keys: name, tasks; in a task: kind, grid or list")
    if kind == "missing":
        return FabricsimError(path, "required key is missing", "a spec needs tasks: [{kind: ..., grid: {...}}]")
    if kind == "enum":
        known = ", ".join(k.value for k in TaskKind)
        return FabricsimError(path, f"unknown task kind {first.get('input')!r}", f"known: {known}")
    return FabricsimError(path, first["msg"], "see examples/sweep-collectives.yaml")


def _check_scalar(path: str, value: Any) -> None:
    if not isinstance(value, SCALAR_TYPES):
        raise FabricsimError(path, f"value {value!r} is not a number, string or boolean", "use plain values")


def _check_grid(path: str, grid: dict[str, Any]) -> None:
    if not grid:
        raise FabricsimError(path, "empty grid", "give at least one parameter, e.g. grid: {gpus: [8, 16]}")
    for key, values in grid.items():
        if isinstance(values, list):
            if not values:
                raise FabricsimError(f"{path}.{key}", "empty list of values", "give at least one value")
            for i, value in enumerate(values):
                _check_scalar(f"{path}.{key}[{i}]", value)
        else:
            _check_scalar(f"{path}.{key}", values)


def _check_cases(path: str, cases: list[dict[str, Any]]) -> None:
    if not cases:
        raise FabricsimError(path, "empty list of tasks", "give at least one parameter set")
    for i, case in enumerate(cases):
        for key, value in case.items():
            _check_scalar(f"{path}[{i}].{key}", value)


def _check_block(index: int, block: TaskBlock) -> None:
    path = f"tasks[{index}]"
    if (block.grid is None) == (block.cases is None):
        raise FabricsimError(
            path, "needs exactly one of grid or list", "grid: {...} (cartesian product) or list: [...]"
        )
    if block.grid is not None:
        _check_grid(f"{path}.grid", block.grid)
    else:
        _check_cases(f"{path}.list", block.cases or [])


def parse_spec(data: dict[str, Any]) -> SweepSpec:
    """Validate a spec given as plain data (e.g. loaded YAML); raises :class:`FabricsimError`."""
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise _spec_error(exc) from None
    if not spec.tasks:
        raise FabricsimError("tasks", "empty list of task blocks", "give at least one {kind: ..., grid: {...}}")
    for index, block in enumerate(spec.tasks):
        _check_block(index, block)
    return spec


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a YAML sweep spec file."""
    data = read_yaml(Path(path), "spec")
    if not isinstance(data, dict):
        raise FabricsimError("spec", f"{path} does not hold a YAML mapping", "write tasks: [...]")
    return parse_spec(data)
