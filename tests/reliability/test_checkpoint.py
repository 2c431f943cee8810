"""Checkpoint state bytes and the blocking / overlapped / load costs of each target."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.reliability.checkpoint import (
    CheckpointPath,
    CheckpointTarget,
    RestartCost,
    checkpoint_cost,
    unique_state_bytes,
)

# 1 TB over 1,024 GPUs (shards of ~0.98 GB); PFS 1 TB/s, PCIe 64 GB/s, NIC 50 GB/s per GPU.
PATH = CheckpointPath(state_bytes=1e12, gpus=1024, pfs_Bps=1e12, host_link_Bps=64e9, nic_Bps=50e9)


def test_unique_state_counts_one_copy_of_each_replica():
    # 8 GPUs, dp 4: weights 2 and optimizer 12 bytes per GPU as the memory model reports them.
    assert unique_state_bytes(2.0, 12.0, 8, 4, 0) == pytest.approx(8 * (2 / 4 + 12 / 4))
    assert unique_state_bytes(2.0, 3.0, 8, 4, 1) == pytest.approx(8 * (2 / 4 + 3))  # optimizer sharded
    assert unique_state_bytes(0.5, 3.0, 8, 4, 3) == pytest.approx(8 * (0.5 + 3))  # everything sharded


def test_pfs_blocks_for_the_whole_write():
    cost = checkpoint_cost(PATH, CheckpointTarget.PFS)
    assert cost.blocking_s == pytest.approx(1.0)  # 1 TB at 1 TB/s (the NIC share allows 51 TB/s)
    assert cost.overlapped_s == 0.0 and cost.load_s == pytest.approx(1.0)


def test_host_snapshot_blocks_only_for_the_copy_to_cpu_memory():
    cost = checkpoint_cost(PATH, CheckpointTarget.HOST)
    assert cost.blocking_s == pytest.approx(1e12 / 1024 / 64e9)
    assert cost.overlapped_s == pytest.approx(1.0)


def test_peers_send_each_shard_over_the_scale_out_nic():
    cost = checkpoint_cost(PATH, CheckpointTarget.PEERS)
    assert cost.overlapped_s == pytest.approx(1e12 / 1024 / 50e9)
    assert cost.load_s == pytest.approx(cost.overlapped_s + cost.blocking_s)


def test_a_slow_nic_limits_the_file_system_write():
    slow = CheckpointPath(1e12, 8, 1e12, 64e9, 12.5e9)
    assert checkpoint_cost(slow, CheckpointTarget.PFS).blocking_s == pytest.approx(1e12 / 8 / 12.5e9)


@given(st.floats(1e6, 1e15), st.sampled_from(list(CheckpointTarget)))
def test_costs_grow_linearly_with_the_state(state_bytes, target):
    one = checkpoint_cost(CheckpointPath(state_bytes, 64, 1e12, 64e9, 50e9), target)
    two = checkpoint_cost(CheckpointPath(2 * state_bytes, 64, 1e12, 64e9, 50e9), target)
    assert two.blocking_s == pytest.approx(2 * one.blocking_s)
    assert two.overlapped_s == pytest.approx(2 * one.overlapped_s)


@given(st.floats(1e6, 1e15), st.floats(1e9, 1e13))
def test_a_snapshot_to_host_never_blocks_longer_than_the_write_when_the_host_links_are_faster(state_bytes, pfs_Bps):
    path = CheckpointPath(state_bytes, 64, pfs_Bps, 64e9, 50e9)
    host = checkpoint_cost(path, CheckpointTarget.HOST)
    pfs = checkpoint_cost(path, CheckpointTarget.PFS)
    assert host.blocking_s <= pfs.blocking_s * (1 + 1e-12)  # 64 x 64 GB/s of PCIe beats the 50 GB/s NIC shares
    assert host.blocking_s + host.overlapped_s >= pfs.blocking_s * (1 - 1e-12)


@pytest.mark.parametrize("field", ["state_bytes", "pfs_Bps", "host_link_Bps", "nic_Bps"])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_paths_are_user_errors(field, bad):
    values = {"state_bytes": 1e9, "gpus": 8, "pfs_Bps": 1e9, "host_link_Bps": 1e9, "nic_Bps": 1e9}
    with pytest.raises(FabricsimError, match=field):
        checkpoint_cost(CheckpointPath(**{**values, field: bad}), CheckpointTarget.PFS)


def test_restart_total_and_validation():
    restart = RestartCost(60.0, 120.0, 240.0, 30.0)
    assert restart.total_s(10.0) == pytest.approx(460.0)
    with pytest.raises(FabricsimError, match="warmup"):
        RestartCost(1.0, 1.0, 1.0, -1.0).validate()


@pytest.mark.parametrize("zero", [0, 1, 2])
def test_a_checkpoint_holds_each_parameter_once_whatever_the_zero_stage(zero):
    # conservation: however ZeRO spreads weights and Adam state over the dp ranks (stage 1 shards the
    # optimizer, stage 2 also the gradients, which are not saved; only stage 3 the weights), the job's
    # checkpoint holds one bf16 weight (2 B) and one fp32 master + m + v (12 B) per parameter
    from fabricsim import api
    from fabricsim.catalog import load_model
    from fabricsim.transformer.parameters import parameter_counts

    params = parameter_counts(load_model("llama3-8b")).total
    result = api.train("llama3-8b", "dgx-h100", 8, 8, 2048, tp=1, zero=zero).to_json()
    memory, layout = result["memory_breakdown_bytes"], result["layout"]
    assert layout["dp"] == 8 and layout["zero"] == zero
    state = unique_state_bytes(memory["weights"], memory["optimizer_states"], 8, layout["dp"], zero)
    assert state == pytest.approx(params * (2 + 12), rel=1e-5)
