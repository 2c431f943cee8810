"""Fakes of the issue-23 pieces that the cluster code calls but other branches write: the placement
parser and ``place`` (``fabricsim.topology.placement``), ``fabric_job`` and the engine's
``simulate_jobs``, each with the contract's signature, so the cluster's own logic is tested now."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.network.base import FlowSet, make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.routing import Routing, route_table

FABRIC = "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4"
TRAIN = "train --model llama3-8b --system dgx-h100 --gpus 16 --tp 8 --global-batch 16 --seq-len 1024"
TRAFFIC = "traffic permutation --size 1MiB --hosts 4"


@dataclass(frozen=True)
class FakePolicy:
    kind: str
    seed: int | None = None
    hosts: tuple[int, ...] | None = None


def fake_parse_placement(text: str) -> FakePolicy:
    """packed | spread | random:SEED | FILE, as the contract's ``parse_placement``."""
    if text in ("packed", "spread"):
        return FakePolicy(text)
    if text.startswith("random:"):
        try:
            return FakePolicy("random", seed=int(text.removeprefix("random:")))
        except ValueError:
            raise FabricsimError("placement", f"bad seed in {text!r}", "random:SEED") from None
    if not Path(text).is_file():
        raise FabricsimError("placement", f"{text!r} is not packed, spread, random:SEED or a file", "fix it")
    return FakePolicy("file", hosts=tuple(int(word) for word in Path(text).read_text().split()))


@dataclass(frozen=True)
class FakePlacement:
    policy: str
    host_of_gpu: np.ndarray
    nodes: np.ndarray


def fake_place(topology: Any, gpus: int, gpus_per_node: int, policy: FakePolicy,
               free_nodes: np.ndarray | None = None) -> FakePlacement:
    """packed: the first free nodes; spread: every other free node (refused when too few)."""
    needed = -(-gpus // gpus_per_node)
    pool = np.asarray(free_nodes)[::2] if policy.kind == "spread" else np.asarray(free_nodes)
    if pool.size < needed:
        raise FabricsimError("placement", f"spread needs {2 * needed} free nodes", "use packed")
    nodes = pool[:needed]
    hosts = (nodes[:, None] * gpus_per_node + np.arange(gpus_per_node)).ravel()[:gpus]
    return FakePlacement(policy.kind, hosts, nodes)


@dataclass(frozen=True)
class FakePayload:
    kind: str
    group_gpus: int = 2


@dataclass(frozen=True)
class FakeOp:
    payload: FakePayload | None
    rank: int = 0
    repeat: int = 1


@dataclass(frozen=True)
class FakeGraph:
    ops: tuple[FakeOp, ...]


@dataclass
class FakeJob:
    """One communication op (``CALLS`` calls of a flow from the job's first host to its last) and a
    compute op, on one pipeline stage."""

    kind: str
    kwargs: dict[str, Any]
    host_of_gpu: np.ndarray
    stages: int = 1

    @property
    def graph(self) -> FakeGraph:
        return FakeGraph((FakeOp(FakePayload(self.kind), repeat=FakeEngine.CALLS), FakeOp(None)))


@dataclass(frozen=True)
class FakeResult:
    step_time_s: float


@dataclass(frozen=True)
class FakeRun:
    """The engine's ``FabricRun`` as the cluster reads it: one call's flows per item."""

    number: int
    flows: dict[tuple[int, int, FakePayload], FlowSet]


@dataclass
class FakeEngine:
    """``simulate_jobs``: a job alone takes ``ALONE_S`` of its kind; each other job running with it
    adds ``SHARE`` of that (a stand-in for contention); records every call."""

    calls: list[list[FakeJob]] = field(default_factory=list)
    ALONE_S = {"train": 2.0, "infer": 0.02, "traffic": 0.5}
    SHARE = 0.25
    CALLS = 2
    FLOW_BYTES = 1e6

    def fabric_job(self, kind: str, kwargs: Any, topology: Any, host_of_gpu: np.ndarray) -> FakeJob:
        if kwargs.get("model") == "no-such-model":
            raise FabricsimError("model", "unknown model 'no-such-model'", "did you mean llama3-8b?")
        return FakeJob(kind, dict(kwargs), np.asarray(host_of_gpu))

    def simulate_jobs(self, jobs: list[FakeJob], fabric: Any) -> tuple[list[FakeResult], FakeRun]:
        """(one result per job, the run), as ``fabric_loop.simulate_jobs``."""
        self.calls.append(list(jobs))
        share = 1 + self.SHARE * (len(jobs) - 1)
        flows = {(j, 0, FakePayload(job.kind)): make_flows(job.host_of_gpu[:1], job.host_of_gpu[-1:], self.FLOW_BYTES)
                 for j, job in enumerate(jobs)}
        return [FakeResult(self.ALONE_S[job.kind] * share) for job in jobs], FakeRun(len(self.calls), flows)


def flow_fabric(topology: Any) -> SimpleNamespace:
    """The parts of ``fabric_loop.Fabric`` the cluster reads: the topology and an ECMP flow network."""
    return SimpleNamespace(topology=topology, network=FlowNetwork(route_table(topology), Routing.ECMP, 0))
