"""Choose a TPU slice's shape and twist for a training or serving job (layer L8):
``plan train|infer --system tpu-v5p --topology ocs-torus:auto``.

On TPU v4/v5p-style pods the optical circuit switches join whole 4x4x4 cubes into one torus per job
(:mod:`fabricsim.topology.ocs`), so a job of N chips can run on any shape a x b x c = N whose sides are
multiples of 4 within the pod, regular or (for n x n x 2n and n x 2n x 2n) twisted. The shape decides
which parallel group spans which ring: ranks fill the slice x fastest in Megatron-Core's order (TP,
then CP, EP/DP, PP), so a shape is also the mapping of the layout's dimensions onto the torus's
dimensions (the Cloud TPU docs' "topology variants": e.g. 4-way model parallelism on x and 256-way data
parallelism on y and z match a 4x16x16 slice; the default for a chip count is the most cube-like
shape, which "may be best for data-parallel training"; cloud.google.com/tpu/docs/types-topologies).

For a layout, every candidate shape x twist is costed by the job's collectives per step: the
collective ops of one pipeline stage's step graph (:func:`fabricsim.engine.training.simulate.
training_job`: TP, CP, EP all-to-all, DP gradient reduction and gathers, PP sends), each
``repeat x`` its time on the candidate by the torus model of :mod:`fabricsim.collectives.torus`
(rotated multi-dimensional rings; all-to-all at the channel-load bound of the group's torus, which
sees the twist). The shortest total wins; the runner-up and the default shape are reported. The
comparison is of communication busy time, not of the overlapped step time. A serving plan is costed
the same way on the collectives of one batch of its requests (:func:`infer_collectives`: the TP
all-reduces, EP all-to-alls and PP sends of every prefill chunk and decode step, as the inference
step model times them), so the many small decode all-reduces weigh their ring steps' latency.

How a twist changes a group's rings (module :mod:`fabricsim.topology.ocs`): the twist re-wires the
wraparound of every short dimension onto the far face shifted along the long dimensions. A group
holding the long dimensions whole is closed under that move: it keeps a bidirectional cycle per
dimension through its own chips (modelled as its regular rings, and its all-to-all on the twisted
torus of its dimensions). A group on short dimensions without the long ones loses their
wraparound: an open line of chips, one link per direction (``torus_rings``' convention for a line).

Scope: collectives the step graph keeps as analytic time only are left out (the ZeRO parameter
all-gathers, which run on the same DP group as the gradient reduce-scatter, so the shapes rank
alike; the EP all-to-all with expert TP or a dispatcher other than NCCL all-to-all; CP exchanges).
A group whose stride splits a dimension is costed as a plain ring at one link per direction. A PP
send crosses |offset| links per dimension with every rank of the stage sending at once
(dimension-order routing), the twist ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricsim.collectives import parse_op
from fabricsim.collectives.nccl import constants
from fabricsim.collectives.ops import CollectiveOp, bus_factor
from fabricsim.collectives.placement import place_group
from fabricsim.collectives.torus import (
    all_to_all_s_per_byte,
    lattice_all_to_all_s_per_byte,
    reduce_scatter_s_per_byte,
    step_latency_s,
)
from fabricsim.errors import FabricsimError
from fabricsim.specs import SystemSpec
from fabricsim.topology.ocs import CUBE_SIDE, check_slice
from fabricsim.workload.graph import CommPayload

if TYPE_CHECKING:
    from fabricsim.engine.inference.analytic import InferScenario
    from fabricsim.engine.training.simulate import TrainingCase

AUTO = "ocs-torus:auto"


@dataclass(frozen=True, slots=True)
class Pod:
    """What one pod of an OCS system offers: at most ``max_chips`` chips in a slice, and the largest
    slice's sides (ascending; None: only the chip count is known)."""

    max_chips: int
    largest: tuple[int, int, int] | None
    source: str


PODS = {
    "tpu-v5p": Pod(
        8960, (16, 16, 24),
        "Cloud TPU docs, TPU v5p (docs.cloud.google.com/tpu/docs/v5p): a pod is 8960 chips, the largest slice "
        "16x16x24 (96 cubes), slices of whole 4x4x4 cubes",
    ),
    "tpu7x": Pod(
        9216, None,
        "Cloud TPU docs, TPU7x (docs.cloud.google.com/tpu/docs/tpu7x): a 9,216-chip pod that 'shares many "
        "similarities with TPU v5p'; assumed: v5p's whole 4x4x4 cubes, no published largest-slice shape, so "
        "only the pod's chip count bounds a slice",
    ),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class SliceShape:
    """A slice of ``dims`` chips (x fastest), regular or twisted."""

    dims: tuple[int, int, int]
    twisted: bool

    @property
    def name(self) -> str:
        return "x".join(map(str, self.dims)) + (",twisted=1" if self.twisted else "")

    @property
    def chips(self) -> int:
        return math.prod(self.dims)


@dataclass(frozen=True, slots=True)
class SliceCost:
    """A candidate slice and the job's collectives on it: seconds per step in all and per op category."""

    shape: SliceShape
    collective_s: float
    by_category_s: tuple[tuple[str, float], ...]

    def as_json(self) -> dict[str, object]:
        return {
            "dims": "x".join(map(str, self.shape.dims)),
            "twisted": self.shape.twisted,
            "collective_s": self.collective_s,
            "by_collective_s": dict(self.by_category_s),
        }


@dataclass(frozen=True, slots=True)
class SlicePick:
    """The chosen slice, the runner-up (None when it is the only candidate) and the default shape."""

    best: SliceCost
    runner_up: SliceCost | None
    default: SliceCost
    candidates: int

    def as_json(self) -> dict[str, object]:
        out = self.best.as_json()
        out["topology"] = f"ocs-torus:{self.best.shape.name}"
        out["candidates"] = self.candidates
        out["runner_up"] = self.runner_up.as_json() if self.runner_up is not None else None
        out["default"] = self.default.as_json()
        return out


def is_auto(topology: str | None) -> bool:
    """Whether ``--topology`` asks the planner to choose the OCS slice (``ocs-torus:auto``); another
    parameter next to ``auto`` is refused (the planner chooses shape and twist together)."""
    if topology is None:
        return False
    name, _, rest = topology.strip().partition(":")
    if name.strip() != "ocs-torus" or "auto" not in (p.strip() for p in rest.split(",")):
        return False
    if rest.strip() != "auto":
        problem = f"{topology.strip()[:60]!r}: ocs-torus:auto takes no other parameter"
        raise FabricsimError("topology", problem, "use ocs-torus:auto (the planner picks both) or ocs-torus:4x4x8")
    return True


def ocs_pod(system: SystemSpec) -> Pod:
    """The pod of an OCS system (4x4x4 torus cubes joined by OCS); an error naming the ones there are."""
    pod = PODS.get(system.name)
    if pod is None or tuple(system.scale_up.dims or ()) != (CUBE_SIDE,) * 3:
        raise FabricsimError("topology", f"ocs-torus:auto needs a system of OCS-joined 4x4x4 cubes, not {system.name}",
                             f"use --system {' or '.join(sorted(PODS))}")  # fmt: skip
    return pod


def slice_shapes(chips: int, pod: Pod) -> list[SliceShape]:
    """Every valid slice of ``chips`` chips in ``pod``: sides multiples of 4 (x fastest, every order,
    since the order maps the layout's groups onto the dimensions), within the largest slice, each
    regular and, where the shape has one, twisted. Sorted (dims, twisted)."""
    if chips % CUBE_SIDE**3 or chips > pod.max_chips:
        return []
    cubes = chips // CUBE_SIDE**3
    shapes = []
    for a in range(1, cubes + 1):
        for b in range(1, cubes // a + 1):
            if cubes % (a * b):
                continue
            dims = (CUBE_SIDE * a, CUBE_SIDE * b, CUBE_SIDE * (cubes // (a * b)))
            if pod.largest is not None and any(s > m for s, m in zip(sorted(dims), pod.largest, strict=True)):
                continue
            for twisted in (False, True):
                try:
                    check_slice(dims, twisted)
                except FabricsimError:
                    continue
                shapes.append(SliceShape(dims, twisted))
    return sorted(shapes, key=lambda s: (s.dims, s.twisted))


def default_shape(shapes: list[SliceShape]) -> SliceShape:
    """The most cube-like regular shape, sides ascending (the Cloud TPU default for a chip count)."""
    regular = [s for s in shapes if not s.twisted and list(s.dims) == sorted(s.dims)]
    return min(regular, key=lambda s: (max(s.dims) / min(s.dims), s.dims))


def slice_system(system: SystemSpec, dims: tuple[int, ...]) -> SystemSpec:
    """``system`` with its scale-up torus grown to the slice ``dims`` (one ICI torus of the job's chips)."""
    up = system.scale_up.model_copy(update={"domain_gpus": math.prod(dims), "dims": tuple(dims)})
    return system.model_copy(update={"scale_up": up})


def _group_dims(dims: tuple[int, ...], ranks: int, stride: int) -> list[tuple[int, int, bool]] | None:
    """The dimensions ``ranks`` chips at ``stride`` span, as (dimension, ranks on it, whole), as
    :func:`fabricsim.collectives.placement.torus_rings` maps them; None when a stride or size splits one."""
    index, skip = 0, stride
    while skip > 1:
        if index >= len(dims) or skip % dims[index]:
            return None
        skip //= dims[index]
        index += 1
    spans, left = [], ranks
    while left > 1 and index < len(dims):
        if left % dims[index] == 0:
            spans.append((index, dims[index], True))
            left //= dims[index]
        elif left < dims[index]:
            spans.append((index, left, False))
            left = 1
        else:
            return None
        index += 1
    return spans if left == 1 else None


def _send_recv_s(shape: SliceShape, size: float, stride: int, links: tuple[float, ...], step_s: float) -> float:
    """Every rank of a stage sending ``size`` to the rank ``stride`` further: |offset| links per
    dimension, each link shared by that many sends (module docstring)."""
    offsets = [(stride // math.prod(shape.dims[:d])) % n for d, n in enumerate(shape.dims)]
    hops = [min(o, n - o) for o, n in zip(offsets, shape.dims, strict=True)]
    return sum(hops) * step_s + size * max(max(h, 1) / b for h, b in zip(hops, links, strict=True))


def collective_s(payload: CommPayload, shape: SliceShape, links: tuple[float, ...], step_s: float) -> float:
    """Seconds of one call of ``payload`` on ``shape`` (module docstring); ``links`` one link's
    bytes/s per direction per dimension, ``step_s`` one ring step's latency."""
    op, size, n = parse_op(payload.collective), float(payload.size_bytes), payload.group_gpus
    if op is CollectiveOp.SEND_RECV:
        return _send_recv_s(shape, size, payload.group_stride, links, step_s)
    spans = _group_dims(shape.dims, n, payload.group_stride)
    if spans is None:  # no ring mapping: a plain ring at one link per direction
        return (n - 1) * step_s + size * bus_factor(op, n) / min(links)
    longest = max(shape.dims)
    held = {d for d, _, whole in spans if whole}
    closed = all(d in held for d, size_d in enumerate(shape.dims) if size_d == longest)
    rings = []
    for d, ranks, whole in spans:
        wrapped = whole and ranks > 2 and (not shape.twisted or closed or shape.dims[d] == longest)
        rings.append((ranks, links[d] * (2.0 if wrapped else 1.0)))
    rings_t = tuple(rings)
    if op is CollectiveOp.ALL_TO_ALL:
        latency = sum(r // 2 for r, _ in rings_t) * step_s
        if all(whole for _, _, whole in spans) and (closed or not shape.twisted):
            sub = tuple(shape.dims[d] for d, _, _ in spans)
            sub_links = tuple(links[d] for d, _, _ in spans)
            return latency + size * lattice_all_to_all_s_per_byte(sub, shape.twisted, sub_links)
        return latency + size * all_to_all_s_per_byte(rings_t)
    phases = 2 if op is CollectiveOp.ALL_REDUCE else 1
    steps = sum(r - 1 for r, _ in rings_t)
    return phases * steps * step_s + size * phases * reduce_scatter_s_per_byte(rings_t)


def job_collectives(case: TrainingCase) -> list[tuple[str, CommPayload, float]]:
    """(category, payload, calls per step) of the collective ops of pipeline stage 0's step graph,
    built with the TP and EP overlaps off: overlapped, the graph keeps only their exposed time, but
    the slice carries all their bytes either way."""
    import dataclasses

    import numpy as np

    from fabricsim.engine.training.simulate import training_job

    options = dataclasses.replace(case.options, overlap_tp_comm=False, a2a_overlap=False)
    job = training_job(dataclasses.replace(case, options=options), np.arange(case.layout.gpus, dtype=np.int64))
    return [
        (op.category, op.payload, float(max(op.repeat, 1)))
        for op in job.graph.ops
        if op.payload is not None and op.payload.group_gpus > 1 and op.rank == 0
    ]


def infer_collectives(scenario: InferScenario) -> list[tuple[str, CommPayload, float]]:
    """(category, payload, calls) of the collectives one static batch of ``scenario.batch`` requests
    per replica runs, first prefill chunk to last decode step, as the inference step model times
    them (:class:`fabricsim.engine.inference.step.CommunicationModel`): each step runs ``pp``
    micro-batches, each micro-batch a stage's TP all-reduces and EP dispatch and combine
    all-to-alls (groups of adjacent ranks) and, with ``pp > 1``, one send to the next stage
    (``stage_gpus`` ranks further); the prompts in ``prefill_chunks`` equal steps, then
    ``output_len - 1`` decode steps of ``batch`` tokens (the end-to-end latency's composition,
    :func:`fabricsim.engine.inference.analytic.infer_estimate`). Categories are prefixed with the
    phase (``prefill``/``decode``)."""
    from fabricsim.engine.inference.analytic import prefill_chunks
    from fabricsim.engine.inference.step import CommunicationModel

    layout, batch = scenario.layout, scenario.batch
    if batch is None or batch < 1:
        raise ValueError("infer_collectives needs the batch the plan runs")
    comm, pp = CommunicationModel(scenario.system, layout, scenario.model), layout.pipeline_parallel
    chunks = prefill_chunks(scenario, batch)
    phases = (("prefill", batch * scenario.input_len / chunks, chunks), ("decode", batch, scenario.output_len - 1))
    out: list[tuple[str, CommPayload, float]] = []
    for phase, tokens, steps in phases:
        if steps < 1:
            continue
        micro = tokens / pp
        for call in comm.calls(micro):
            name = "tp-all-reduce" if call.op is CollectiveOp.ALL_REDUCE else "ep-all-to-all"
            payload = CommPayload(call.op.value, math.ceil(call.size_bytes), call.ranks)
            out.append((f"{phase} {name}", payload, steps * pp * call.count))
        if pp > 1:
            payload = CommPayload(CollectiveOp.SEND_RECV.value, math.ceil(comm.p2p_bytes(micro)), 2, layout.stage_gpus)
            out.append((f"{phase} pp-send-recv", payload, float(steps * pp)))
    return out


def cost_slice(collectives: list[tuple[str, CommPayload, float]], shape: SliceShape, system: SystemSpec) -> SliceCost:
    """The job's collectives (``calls`` x each payload) on ``shape`` (links and latency of ``system``'s ICI)."""
    links = system.scale_up.torus_link_Bps
    step_s = step_latency_s(place_group(slice_system(system, shape.dims), 2, 1), constants())
    by: dict[str, float] = {}
    for category, payload, calls in collectives:
        by[category] = by.get(category, 0.0) + calls * collective_s(payload, shape, links, step_s)
    return SliceCost(shape, sum(by.values()), tuple(sorted(by.items())))


def choose_slice(case: TrainingCase, system: SystemSpec, shapes: list[SliceShape]) -> SlicePick:
    """The slice among ``shapes`` on which ``case``'s collectives take least time per step (ties to
    1e-9 relative: the default shape, then regular before twisted, then by dims), with the runner-up
    and the default shape's cost."""
    return pick_slice(job_collectives(case), system, shapes)


def pick_slice(
    collectives: list[tuple[str, CommPayload, float]],
    system: SystemSpec,
    shapes: list[SliceShape],
    default: SliceShape | None = None,
) -> SlicePick:
    """The slice among ``shapes`` on which ``collectives`` take least time (ties as
    :func:`choose_slice`), with the runner-up and the cost on ``default`` (None: the most cube-like
    regular shape among ``shapes``; an explicitly asked-for slice is its own default)."""
    default = default or default_shape(shapes)
    costs = [cost_slice(collectives, s, system) for s in shapes]
    default_cost = next(c for c in costs if c.shape == default)
    scale = default_cost.collective_s or 1.0
    costs.sort(key=lambda c: (round(c.collective_s / scale, 9), c.shape != default, c.shape.twisted, c.shape.dims))
    return SlicePick(costs[0], costs[1] if len(costs) > 1 else None, default_cost, len(costs))


def requested_shape(topology: str | None) -> SliceShape | None:
    """The slice ``ocs-torus:AxBxC[,twisted=0|1]`` asks for (checked as the OCS builder checks it);
    None for any other topology string, ``ocs-torus:auto`` included."""
    from fabricsim.topology.parse import ocs_slice_request

    shape = ocs_slice_request(topology)
    if shape is None:
        return None
    dims, twisted = shape  # three dimensions: ocs_slice_request checked the slice
    return SliceShape((dims[0], dims[1], dims[2]), twisted)


def check_slice_chips(chips: int, pod: Pod, system: str) -> list[SliceShape]:
    """The valid slices of ``chips`` chips, or a one-line error saying which counts have one."""
    shapes = slice_shapes(chips, pod)
    if not shapes:
        cube = CUBE_SIDE**3
        problem = f"{chips} chips make no OCS slice of {system} (whole {cube}-chip cubes, at most {pod.max_chips})"
        raise FabricsimError("gpus", problem, f"use a multiple of {cube}, e.g. --gpus {cube * 2}")
    return shapes


__all__ = [
    "AUTO",
    "PODS",
    "Pod",
    "SliceCost",
    "SlicePick",
    "SliceShape",
    "check_slice_chips",
    "choose_slice",
    "collective_s",
    "default_shape",
    "infer_collectives",
    "is_auto",
    "ocs_pod",
    "pick_slice",
    "requested_shape",
    "slice_shapes",
    "slice_system",
]
