"""Several jobs on one fabric through the real engine (issue 23's ``cluster`` done-when)."""

from pathlib import Path

import pytest

from fabricsim import api

GPT3 = "train --model gpt3-175b --system dgx-h100 --gpus {gpus} --tp 8 --pp 8 --global-batch {gpus} --seq-len 2048"


def _spec(tmp_path: Path, fabric: str, routing: str, placement: str, gpus: int) -> str:
    jobs = "".join(
        f"  - name: {name}\n    command: {GPT3.format(gpus=gpus)}\n    placement: {placement}\n" for name in "ab"
    )
    path = tmp_path / f"{routing}-{placement}.yaml"
    path.write_text(f"fabric: {fabric}\nrouting: {routing}\njobs:\n{jobs}")
    return str(path)


def test_two_jobs_sharing_4_to_1_spines_slow_each_other_and_spraying_helps(tmp_path):
    fabric = "leaf-spine:leaves=32,spines=8,hosts_per_leaf=32,gbps=400,oversubscription=4"
    ecmp = api.cluster(_spec(tmp_path, fabric, "ecmp", "spread", 448)).to_json()
    spray = api.cluster(_spec(tmp_path, fabric, "spray", "spread", 448)).to_json()
    for job in ecmp["jobs"]:
        assert job["slowdown"] > 1.05 and job["shared_s"] == pytest.approx(job["alone_s"] * job["slowdown"])
    for sprayed, hashed in zip(spray["jobs"], ecmp["jobs"], strict=True):
        assert sprayed["shared_s"] < hashed["shared_s"]
    assert ecmp["links"]["spine"]["bytes"] > 0
    assert max(tier["max_utilization"] for tier in ecmp["links"].values()) <= 1.0 + 1e-6


def test_jobs_on_disjoint_pods_do_not_slow_each_other(tmp_path):
    """A k=16 fat-tree has 16 pods of 64 ports (8 DGX H100 each): two 256-GPU jobs packed take four
    pods each and their cross-pod traffic uses disjoint core links."""
    result = api.cluster(_spec(tmp_path, "fat-tree:k=16,gbps=400", "ecmp", "packed", 256)).to_json()
    for job in result["jobs"]:
        assert job["slowdown"] == pytest.approx(1.0, abs=1e-9)
