"""Sweep spec parsing and expansion: valid specs, and one-line errors naming the key path."""

from __future__ import annotations

from pathlib import Path

import pytest
import sweep_fakes

from fabricsim import api
from fabricsim.errors import FabricsimError
from fabricsim.sweep import TaskKind, expand, load_spec, parse_spec

EXAMPLE = Path(__file__).parents[2] / "examples" / "sweep-collectives.yaml"


def _block(**fields):
    return {"tasks": [{"kind": "collective", **fields}]}


def _expand(data):
    return expand(parse_spec(data), sweep_fakes.RUNNERS)


def test_example_spec_expands_against_the_api_registry():
    tasks = expand(load_spec(EXAMPLE), api.sweep_runners())
    assert len(tasks) == 3 * 2 * 3 * 3 + 2
    assert all(t.kind is TaskKind.COLLECTIVE for t in tasks)
    assert [t.task_id for t in tasks] == sorted(t.task_id for t in tasks)


def test_grid_is_a_cartesian_product_and_scalars_are_one_value():
    tasks = _expand(sweep_fakes.grid_spec())
    assert len(tasks) == 2 * 2 * 3 * 2
    assert {t.params["algorithm"] for t in tasks} == {"auto"}


def test_duplicates_across_blocks_are_one_task():
    case = {"op": "all-reduce", "system": "dgx-h100", "gpus": 8, "size": "1GiB"}
    data = {"tasks": [{"kind": "collective", "list": [case]}, {"kind": "collective", "grid": dict(case)}]}
    assert len(_expand(data)) == 1


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"tasks": [], "nmae": "x"}, "nmae"),
        (_block(grdi={"gpus": [8]}), "tasks[0].grdi"),
        ({}, "tasks"),
        ({"tasks": []}, "tasks"),
        (_block(grid={}), "tasks[0].grid"),
        (_block(grid={"gpus": []}), "tasks[0].grid.gpus"),
        (_block(list=[]), "tasks[0].list"),
        (_block(), "tasks[0]"),
        (_block(grid={"gpus": [8]}, list=[{"gpus": 8}]), "tasks[0]"),
        (_block(grid={"gpus": [8, {"a": 1}]}), "tasks[0].grid.gpus[1]"),
        (_block(list=[{"gpus": 8}, {"gpus": [8]}]), "tasks[0].list[1].gpus"),
        ({"tasks": [{"kind": "colective", "grid": {"gpus": 8}}]}, "tasks[0].kind"),
    ],
)
def test_bad_spec_shapes_name_the_key_path(data, field):
    with pytest.raises(FabricsimError) as info:
        parse_spec(data)
    assert info.value.field == field
    assert "\n" not in str(info.value)


def _params(**changes):
    params = {"op": "all-reduce", "system": "dgx-h100", "gpus": [8], "size": "1GiB"}
    params.update(changes)
    return {k: v for k, v in params.items() if v is not None}


@pytest.mark.parametrize(
    ("grid", "field", "words"),
    [
        (_params(sizee="1MiB"), "tasks[0].grid.sizee", "unknown parameter"),
        (_params(size=None), "tasks[0].grid.size", "missing"),
        (_params(gpus=["eight"]), "tasks[0].grid.gpus", "integer"),
    ],
)
def test_bad_parameters_name_the_key_path(grid, field, words):
    with pytest.raises(FabricsimError) as info:
        _expand({"tasks": [{"kind": "collective", "grid": grid}]})
    assert info.value.field == field
    assert words in str(info.value)


def test_list_entries_are_named_by_index():
    cases = [{"op": "all-reduce", "system": "s", "gpus": 8, "size": 1}, {"op": "x", "system": "s", "gpu": 8}]
    with pytest.raises(FabricsimError) as info:
        _expand({"tasks": [{"kind": "collective", "list": cases}]})
    assert info.value.field == "tasks[0].list[1].gpu"


def test_kind_without_a_runner_is_a_user_error():
    with pytest.raises(FabricsimError, match="no runner for train tasks yet"):
        _expand({"tasks": [{"kind": "train", "grid": {"gpus": 8}}]})


def test_unreadable_or_non_mapping_spec_files(tmp_path):
    with pytest.raises(FabricsimError, match="cannot read"):
        load_spec(tmp_path / "missing.yaml")
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(FabricsimError, match="mapping"):
        load_spec(path)
