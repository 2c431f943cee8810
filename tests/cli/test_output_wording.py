"""What a new user read in the tables (issue 27, "smaller things"): every plan code explained,
settings in the CLI's spelling and only those that apply, "N GPUs of SYSTEM", one fit wording,
catalog units and sources, and sizes in the unit family they were given in. JSON is unchanged."""

from __future__ import annotations

import json
import re

import pytest

from fabricsim.cli.app import main
from fabricsim.report.tables import PLAN_LEGEND, compact_layout, field_unit, settings_text
from fabricsim.units import format_size

INFER = ["infer", "--system", "dgx-h100", "--input-len", "128", "--output-len", "16", "--batch", "1"]
TRAIN = ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--global-batch", "64",
         "--seq-len", "2048"]


@pytest.fixture(autouse=True)
def wide(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # rich reads it: one table row per line


def _out(capsys, argv: list[str]) -> str:
    """The words of the table ``argv`` prints, without the box-drawing characters."""
    assert main(argv) == 0, argv
    return " ".join(re.sub("[\u2500-\u257f]", " ", capsys.readouterr().out).split())


def test_fine_grained_recompute_has_a_code_the_legend_explains() -> None:
    text = compact_layout({"tp": 2, "pp": 4, "dp": 8, "recompute": "fine-grained"})
    assert "rc:fg" in text.split() and "?" not in text
    assert "rc:fg" in PLAN_LEGEND and "fine-grained" in PLAN_LEGEND


@pytest.mark.parametrize(
    "layout",
    [
        {"tp": 8, "pp": 16, "dp": 24, "cp": 2, "ep": 4, "vpp": 8, "micro_batch": 1, "zero": 1, "recompute": mode,
         "sequence_parallel": True, "dtype": "fp8"}
        for mode in ("selective", "fine-grained", "full")
    ]
    + [
        {"tp": 4, "pp": 1, "ep": 8, "attention_dp": 2, "replicas": 2, "dtype": "fp4", "kv_dtype": "fp8"},
        {"tp": 8, "pp": 8, "dp": 2, "offload": ["optimizer", "weights", "activations"], "offload_tier": "grace"},
    ],
)
def test_every_code_of_a_plan_row_is_in_the_legend(layout: dict) -> None:
    for token in compact_layout(layout).split():
        if token.startswith("rc:") or token.startswith("fp"):
            code = token  # rc:sel, rc:fg, rc:full; a dtype
        elif ":" in token:
            code = token.split(":")[0] + ":"  # kv:fp8, off:opt+w+act@grace
        else:
            code = re.sub(r"[0-9]+$", "", token)  # tp8 -> tp, x2 -> x
        end = "" if code.endswith(":") else r"(?!\w)"  # a whole code, not a prefix of another word
        assert re.search(rf"(?<![\w:]){re.escape(code)}{end}", PLAN_LEGEND), (token, code)
    assert "off:opt+w+act@tier" in PLAN_LEGEND


def test_settings_row_is_cli_spelling_without_python_literals(capsys) -> None:
    out = _out(capsys, TRAIN)
    row = out[out.index("settings") : out.index("step time")]
    assert "flash-attention on" in row and "cross-entropy unfused" in row
    for literal in ("None", "True", "False", "_", "="):
        assert literal not in row, row
    # a dense model on one tensor group: the MoE settings, the FP8 recipe and TP overlap do not apply
    for absent in ("moe-dispatcher", "capacity-factor", "a2a-overlap", "fp8-recipe", "tp-comm-overlap", "mtp"):
        assert absent not in row, row


def test_settings_that_apply_to_moe_and_fp8_layouts_are_shown() -> None:
    options = {"flash_attention": True, "a2a_overlap": False, "fp8_recipe": "delayed", "capacity_factor": None,
               "moe_dispatcher": "alltoall", "recompute_modules": None, "pipeline_layout": None}
    dense = settings_text(options, [{"tp": 1, "pp": 1, "dp": 8, "ep": 1, "dtype": "bf16", "recompute": "none"}])
    assert dense == "flash-attention on"
    moe = settings_text(options, [{"tp": 2, "pp": 1, "dp": 8, "ep": 8, "dtype": "fp8", "recompute": "selective"}])
    assert moe == ("flash-attention on, a2a-overlap off, fp8-recipe delayed, capacity-factor dropless, "
                   "moe-dispatcher alltoall, recompute-modules core_attn")


def test_gpus_of_system_and_one_fit_wording(capsys) -> None:
    fits = _out(capsys, [*INFER, "--model", "llama3-8b", "--gpus", "8"])
    assert "on 8 GPUs of dgx-h100" in fits and " x dgx-h100" not in fits
    assert "fits yes" in fits and "True" not in fits
    unfit = _out(capsys, [*INFER, "--model", "llama3-405b", "--gpus", "1"])
    assert "fits NO" in unfit and "False" not in unfit
    assert "(fits: yes)" in _out(capsys, [*TRAIN, "--tp", "8", "--recompute", "full"])
    assert main([*INFER, "--model", "llama3-8b", "--gpus", "8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fits"] is True  # JSON stays boolean


def test_catalog_units_from_the_key_suffix_and_kernel_sources(capsys) -> None:
    assert field_unit("kernels.gemm.bf16.flops_per_s") == "FLOP/s"
    assert field_unit("kernels.attention.backward_flops_per_s") == "FLOP/s"
    assert field_unit("hbm_bandwidth_Bps") == "B/s"
    assert field_unit("kernels.tensor_clock_hz") == "Hz"
    assert field_unit("scale_up.link.latency_s") == "s"
    assert field_unit("kernels.gemm.bf16.m") == ""
    assert main(["catalog", "show", "devices", "h100-sxm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    gemm = next(line for line in lines if "kernels.gemm.bf16.flops_per_s" in line)
    assert "FLOP/s" in gemm and "kernel-efficiency.md G20" in gemm
    attention = next(line for line in lines if "kernels.attention.forward_flops_per_s" in line)
    assert "FLOP/s" in attention and " s " not in attention.split("│")[3] and attention.split("│")[4].strip()


@pytest.mark.parametrize(
    ("size", "shown"),
    [("1MB", "1 MB"), ("64MiB", "64 MiB"), ("1048576", "1 MiB"), ("1.5MB", "1.5 MB"), ("512kB", "512 kB"),
     ("1536", "1.5 KiB"), ("1000", "1 kB"), ("123456", "123.46 kB"), ("700", "700 B")],
)
def test_sizes_print_in_the_family_given(size: str, shown: str) -> None:
    from fabricsim.units import parse_size

    assert format_size(parse_size(size)) == shown


def test_traffic_and_collective_print_the_size_given(capsys) -> None:
    traffic = ["traffic", "permutation", "--topology", "fat-tree:k=4", "--size", "1MB"]
    assert "bytes per flow 1 MB" in _out(capsys, traffic)
    assert main([*traffic, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["size_bytes"] == 1_000_000
    collective = ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1MB"]
    assert "size 1 MB" in _out(capsys, collective)
