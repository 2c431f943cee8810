"""Each suite's ``calibration`` line against the data it describes (not a fixed string).

A line names the kernel-efficiency.md entries (G = GEMM, A = attention, B = bandwidth, S = clock)
the compute model was calibrated on and the clock it runs at; both are data in the catalog. The
checks: every entry a line names exists; a single-device suite names the entries its device's
catalog figures come from (the GEMM formats the suite runs, attention, HBM, the sustained clock),
and any clock it quotes in MHz is the catalog's. (That the kernels suite's rows are not its
calibration points is checked point by point in test_kernels_suite.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from fabricsim.validation import inference, kernels, training, training_h100, training_public

SRC = Path(training.__file__).resolve().parents[1]
KERNEL_EFFICIENCY = (SRC / "transformer" / "data" / "kernel-efficiency.md").read_text(encoding="utf-8")
DEVICES = SRC / "catalog" / "data" / "devices"


def cited(text: str) -> set[str]:
    """Entry ids named in ``text``: G18, A6-A8 (a range), G22-G25, B7/N1."""
    out = set()
    for letter, first, last in re.findall(r"\b([GABSKPN])(\d+)(?:-\1(\d+))?\b", text):
        out |= {f"{letter}{i}" for i in range(int(first), int(last or first) + 1)}
    return out


def _entry_exists(entry: str) -> bool:
    return f"| {entry} |" in KERNEL_EFFICIENCY or f"[{entry}]" in KERNEL_EFFICIENCY


def _device(name: str) -> dict:
    return yaml.safe_load((DEVICES / f"{name}.yaml").read_text(encoding="utf-8"))["kernels"]


def test_the_id_parser_reads_ranges_and_suffixed_row_ids():
    assert cited("G22-G25, FA3 A6-A8, G39-16384, B7/N1") == {"G22", "G23", "G24", "G25", "A6", "A7", "A8", "G39",
                                                            "B7", "N1"}


@pytest.mark.parametrize("suite", [kernels, training, training_h100, training_public, inference])
def test_every_entry_a_calibration_line_names_exists(suite):
    line = kernels.calibration_line() if suite is kernels else suite.CALIBRATION  # kernels builds it from its data
    named = cited(line)
    assert named, line
    assert sorted(e for e in named if not _entry_exists(e)) == []


@pytest.mark.parametrize(("suite", "device", "formats"), [
    (training, "a100-80gb", ("bf16",)),          # the SC'21/Korthikanti runs (fp16 on the BF16 figure)
    (inference, "h100-sxm", ("bf16", "fp8")),
    (training_h100, "h100-sxm", ()),             # names its source file instead of the entries
])
def test_a_single_device_line_names_its_devices_calibration_sources(suite, device, formats):
    kernels_doc = _device(device)
    line = suite.CALIBRATION
    sources = [kernels_doc["sustained_clock_hz"]["source"]]
    if formats:
        sources += [kernels_doc["gemm"][fmt]["source"] for fmt in formats]
        sources += [kernels_doc["attention"]["source"], kernels_doc["hbm_achieved_Bps"]["source"]]
    for source in sources:
        first = re.search(r"kernel-efficiency\.md ([A-Z]\d+)", source)
        assert first is not None, source
        assert first.group(1) in cited(line), (first.group(1), line)
    for mhz in re.findall(r"(\d[\d,]*) MHz", line):
        assert float(mhz.replace(",", "")) * 1e6 == pytest.approx(kernels_doc["sustained_clock_hz"]["value"])

