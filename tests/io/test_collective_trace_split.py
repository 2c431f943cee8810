"""The collective trace of a step whose NVLink legs ran apart from its NIC legs (two packet runs at
one start, api/network_collective.py): both are drawn as that step, numbered by step, not by run."""

from __future__ import annotations

from fabricsim.api.network_collective import NetworkCollectiveSpec, network_collective
from fabricsim.io.collective_trace import collective_trace_document


def test_a_steps_two_runs_carry_the_steps_number():
    spec = NetworkCollectiveSpec(op="all-reduce", system="dgx-h100", gpus=16, size="1MiB", fidelity="packet",
                                 trace=True)  # fmt: skip
    out = network_collective(spec)
    assert len(out.step_runs) == 2 * out.result.steps  # every ring step: NVLink legs and NIC legs
    doc = collective_trace_document(out.step_runs, out.link_names)
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"].startswith("step ")]
    assert sorted({e["name"] for e in slices}) == sorted(f"step {k}" for k in range(out.result.steps))
    starts = {}
    for e in slices:
        starts.setdefault(e["name"], set()).add(e["ts"])
    assert all(len(ts) == 1 for ts in starts.values())  # a step's runs start together
