"""DeepEP-style MoE dispatch on the real tiers (collectives/dispatch.py)."""

from __future__ import annotations

import pytest

from fabricsim.catalog import load_system
from fabricsim.collectives import place_group
from fabricsim.collectives.dispatch import deepep_dispatch_s, dispatch_bytes

H800 = load_system("h800")


def test_a_token_crosses_the_network_once_per_remote_domain() -> None:
    group = place_group(H800, 64, 1)  # 8 nodes of 8
    rdma, nvlink = dispatch_bytes(group, 1.0, 8, 1.0)
    assert rdma == pytest.approx(7 * (1 - (7 / 8) ** 8))  # 4.59 copies, where an all-to-all sends k·7/8 = 7
    assert nvlink == pytest.approx(8 * 7 / 8)
    assert dispatch_bytes(place_group(H800, 8, 1), 1.0, 8, 1.0)[0] == 0.0  # one domain: NVLink only
    assert dispatch_bytes(group, 1.0, 1, 1.0)[0] == pytest.approx(7 / 8)  # top-1: no duplicate to save


def test_intranode_bandwidth_matches_deepep_published_h800_figure() -> None:
    """DeepEP normal kernels on H800, EP8, 4,096 tokens, hidden 7168, top-8, FP8 dispatch: 153 GB/s
    over NVLink (DeepEP docs/legacy.md; reference/kernel-efficiency.md M10). Nothing is fitted to it:
    the model moves its NVLink bytes at NCCL's p2p NVLink figure, within 10% of the measurement.
    (The internode figures, M11, are "logical" bandwidths whose byte count DeepEP does not define
    precisely enough to compare.)"""
    group = place_group(H800, 8, 1)
    tokens, token_bytes = 4096.0, 7168 * (1 + 4 / 128)
    seconds = deepep_dispatch_s(group, tokens, 8, token_bytes, 0.0)
    assert dispatch_bytes(group, tokens, 8, token_bytes)[1] / seconds / 1e9 == pytest.approx(153.0, rel=0.10)
