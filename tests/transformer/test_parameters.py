"""The cluster-size check of transformer/parameters.py: a model is refused exactly when its weights,
at 4 bits per parameter (FP4, the narrowest weight dtype modelled), outgrow every byte of memory
(HBM and each memory tier) of FABRICSIM_MAX_GPUS GPUs of the system."""

from __future__ import annotations

import json
import math

import pytest

from fabricsim import catalog
from fabricsim.errors import FabricsimError
from fabricsim.transformer.parameters import check_cluster_can_hold, parameter_counts

FP4_BYTES_PER_PARAMETER = 4 / 8  # NVFP4 / MXFP4 element width (OCP MX spec; NVIDIA Blackwell docs)


@pytest.fixture()
def million_experts(tmp_path):
    """A 10^6-expert MoE (all routed): ~5.6e15 parameters, so that whole GPUs resolve the boundary
    to better than 0.1%."""
    config = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
              "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
              "hidden_act": "silu", "num_local_experts": 10**6, "num_experts_per_tok": 8,
              "moe_intermediate_size": 14336}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return catalog.load_model(str(path))


def test_refused_exactly_when_fp4_weights_outgrow_the_largest_cluster(million_experts, monkeypatch):
    system = catalog.load_system("dgx-h100")
    per_gpu = system.device.hbm_capacity_bytes + sum(t.capacity_per_gpu_bytes for t in system.memory_tiers.values())
    enough = math.ceil(parameter_counts(million_experts).total * FP4_BYTES_PER_PARAMETER / per_gpu)
    assert enough > 1000  # the boundary is resolved to < 0.1%
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", str(enough))
    check_cluster_can_hold(million_experts, system)  # its FP4 weights fit: accepted
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", str(enough - 1))
    with pytest.raises(FabricsimError, match="FP4"):
        check_cluster_can_hold(million_experts, system)
