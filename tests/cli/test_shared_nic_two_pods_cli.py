"""Two TPU v6e pods (512 chips, 8 chips and 4 NICs per host) at flow and packet fidelity: before
every chip was cabled to the NIC it shares (topology/system.py), ``train --fidelity flow`` failed
with "no path for flow 514 to endpoint 257 (too many failed links?)". The data-parallel time and
the collective time are held to the bound of the pods' data-center bandwidth: the 2-pod all-reduce
of S bytes must bring each pod the other's S bytes (or their sum), through 32 hosts x 4 NICs."""

from __future__ import annotations

import json

import pytest

from fabricsim import catalog
from fabricsim.cli.app import main
from fabricsim.transformer.parameters import parameter_counts

V6E = catalog.load_system("tpu-v6e")
POD_Bps = 256 // V6E.gpus_per_node * V6E.scale_out.bandwidth_per_node_Bps  # 32 hosts x 4 x 200 Gb/s


def _run(capsys, args: list[str]) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_pod_train_at_flow_fidelity_runs_and_its_data_parallel_time_obeys_the_pod_bound(capsys) -> None:
    out = _run(capsys, ["train", "--model", "llama3-8b", "--system", "tpu-v6e", "--gpus", "512",
                        "--global-batch", "512", "--seq-len", "4096", "--fidelity", "flow"])  # fmt: skip
    assert out["fidelity"] == "flow" and out["layout"]["dp"] == 512
    gradient_bytes = 2 * parameter_counts(catalog.load_model("llama3-8b")).total  # bf16, the least it sends
    dp_s = out["time_breakdown_s"]["dp_comm_s"]
    assert dp_s >= gradient_bytes / POD_Bps
    crossing = out["network"]["dimensions"]["dp"]["bytes_by_tier"]
    assert crossing["spine"] > 0 and dp_s >= crossing["spine"] / (2 * POD_Bps)  # both pods' NICs, out


@pytest.mark.parametrize("fidelity", ["flow", "packet"])
def test_two_pod_all_reduce_obeys_the_pod_bound(capsys, fidelity) -> None:
    size = 64 * 2**20
    out = _run(capsys, ["collective", "all-reduce", "--system", "tpu-v6e", "--gpus", "512", "--size", str(size),
                        "--algorithm", "hierarchical", "--fidelity", fidelity])  # fmt: skip
    assert out["time_s"] >= size / POD_Bps
