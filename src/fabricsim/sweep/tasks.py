"""Sweep tasks (layer L8): expand a spec into typed tasks with stable ids, and run one task.

Which function a task of each kind calls is NOT decided here. Sweep is L8 and the public API is L9,
so the API owns the one registry ``{TaskKind: function}`` (:func:`fabricsim.api.sweep_runners`) and
passes it in (dependency injection). A runner is any picklable module-level function called with the
task's parameters as keyword arguments that returns a result with ``to_json()`` (or a JSON dict).

The runner's signature is also the parameter schema: :func:`params_model` turns its keyword
parameters, type hints and defaults into a frozen pydantic model with unknown keys forbidden, so a
new kind needs no schema of its own. A task's id is the SHA-256 of its canonical JSON (kind and the
validated parameters with defaults filled in, sorted keys), so the same scenario has the same id in
every spec, run and process.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from fabricsim.errors import FabricsimError, did_you_mean
from fabricsim.limits import check_cap
from fabricsim.sweep.spec import SweepSpec, TaskBlock, TaskKind

Runner = Callable[..., Any]
RunnerRegistry = Mapping[TaskKind, Runner]

TASK_ID_HEX_CHARS = 32  # 128 bits of SHA-256: collisions are negligible for any feasible sweep
STATUS_OK = "ok"
STATUS_FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Task:
    """One scenario: a kind and its validated parameters as canonical JSON."""

    task_id: str
    kind: TaskKind
    params_json: str

    @property
    def params(self) -> dict[str, Any]:
        return json.loads(self.params_json)


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What a task produced: the result JSON (status ok) or the one-line user error (status failed)."""

    task_id: str
    kind: str
    params_json: str
    status: str
    result_json: str | None
    error: str | None


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: identical values give identical text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def task_id(kind: TaskKind, params: Mapping[str, Any]) -> str:
    """Stable id of a task: the first 32 hex digits of SHA-256 of its canonical JSON."""
    text = canonical_json({"kind": kind.value, "params": dict(params)})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:TASK_ID_HEX_CHARS]


@lru_cache(maxsize=64)
def params_model(kind: TaskKind, runner: Runner) -> type[BaseModel]:
    """A frozen, extra-forbidding pydantic model of the runner's keyword parameters."""
    hints = typing.get_type_hints(runner)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(runner).parameters.items():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise TypeError(f"sweep runner for {kind.value} must take named parameters only, not {name}")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (hints.get(name, Any), default)
    config = ConfigDict(frozen=True, extra="forbid")
    return create_model(f"{kind.value.title()}TaskParams", __config__=config, **fields)


def _params_error(path: str, kind: TaskKind, model: type[BaseModel], exc: ValidationError) -> FabricsimError:
    errors = exc.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])  # typos first
    key = str(first["loc"][0]) if first["loc"] else ""
    where = f"{path}.{key}" if key else path
    known = ", ".join(model.model_fields)
    if first["type"] == "extra_forbidden":
        hint = did_you_mean(key, model.model_fields)
        return FabricsimError(where, f"unknown parameter for a {kind.value} task", hint)
    if first["type"] == "missing":
        return FabricsimError(where, f"required by a {kind.value} task but missing", f"parameters: {known}")
    return FabricsimError(where, f"{first['msg']} (got {first.get('input')!r})", "fix the value in the spec")


def _block_cases(index: int, block: TaskBlock) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key path, raw parameters) of every task of one block, in spec order."""
    if block.grid is not None:
        keys = list(block.grid)
        axes = [v if isinstance(v, list) else [v] for v in block.grid.values()]
        for combo in itertools.product(*axes):
            yield f"tasks[{index}].grid", dict(zip(keys, combo, strict=True))
    else:
        for i, case in enumerate(block.cases or []):
            yield f"tasks[{index}].list[{i}]", dict(case)


def _runner_for(index: int, kind: TaskKind, runners: RunnerRegistry) -> Runner:
    if kind not in runners:
        available = ", ".join(sorted(k.value for k in runners))
        raise FabricsimError(f"tasks[{index}].kind", f"no runner for {kind.value} tasks yet", f"available: {available}")
    return runners[kind]


def block_size(block: TaskBlock) -> int:
    """Tasks of one block before duplicates are dropped: the product of its grid's list lengths
    (a single value counts 1), or the length of its list. Computed, never enumerated."""
    if block.grid is not None:
        return math.prod(len(v) if isinstance(v, list) else 1 for v in block.grid.values())
    return len(block.cases or [])


def task_count(spec: SweepSpec) -> int:
    """Tasks the spec expands to before duplicates are dropped (an upper bound of the distinct ones)."""
    return sum(block_size(block) for block in spec.tasks)


def check_task_count(spec: SweepSpec) -> int:
    """:func:`task_count`, or a one-line error when it exceeds the cap ``SWEEP_TASKS`` (checked before
    any task is built: a grid of 8 x 10^6 would otherwise take minutes and gigabytes to expand)."""
    count = task_count(spec)
    check_cap("spec tasks", count, "SWEEP_TASKS")
    return count


def expand(spec: SweepSpec, runners: RunnerRegistry) -> tuple[Task, ...]:
    """Every distinct task of the spec, validated, sorted by task id (duplicates kept once).
    Refuses a spec of more than the ``SWEEP_TASKS`` cap before building any task."""
    check_task_count(spec)
    tasks: dict[str, Task] = {}
    for index, block in enumerate(spec.tasks):
        model = params_model(block.kind, _runner_for(index, block.kind, runners))
        for path, raw in _block_cases(index, block):
            try:
                params = model.model_validate(raw).model_dump(mode="json")
            except ValidationError as exc:
                raise _params_error(path, block.kind, model, exc) from None
            ident = task_id(block.kind, params)
            tasks.setdefault(ident, Task(ident, block.kind, canonical_json(params)))
    return tuple(tasks[k] for k in sorted(tasks))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def run_task(runners: RunnerRegistry, task: Task) -> TaskOutcome:
    """Run one task in this process; a user error inside it becomes a failed outcome, not a crash."""
    try:
        result = runners[task.kind](**task.params)
    except FabricsimError as exc:
        message = _one_line(str(exc))
        return TaskOutcome(task.task_id, task.kind.value, task.params_json, STATUS_FAILED, None, message)
    payload = result.to_json() if hasattr(result, "to_json") else result
    return TaskOutcome(task.task_id, task.kind.value, task.params_json, STATUS_OK, canonical_json(payload), None)


def run_chunk(runners: RunnerRegistry, chunk: Sequence[Task]) -> list[TaskOutcome]:
    """Run a few tasks in a row (one executor call): amortises the per-call overhead of pools."""
    return [run_task(runners, task) for task in chunk]
