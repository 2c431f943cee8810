"""Serving steps and KV hand-offs on the placed fabric (layer L6): a
:class:`~fabricsim.engine.inference.scheduler.StepNetwork` built on the fabric-in-the-loop engine
(:mod:`fabricsim.engine.fabric_loop`; no second network simulator).

A deployment's GPUs are numbered replica after replica (prefill replicas first when
disaggregated), and ``host_of_gpu`` places each on a fabric endpoint. For every replica the
collectives of a step that leave its NVLink domain -- the TP all-reduces, the MoE all-to-alls over
the EP group (attention-DP + EP decode), the hand-offs between pipeline stages -- and every
prefill -> decode KV transfer (GPU ``i`` of the prefill replica sends its KV shard to GPU ``i`` of
the decode replica, all in parallel) are *items* of :class:`~fabricsim.engine.fabric_loop.ItemTimer`:

1. each item is timed alone on the network model of the fidelity (flow: max-min fair flows; packet:
   queues, PFC/credits, ECN, congestion control) with the background tenant, at two sizes, giving
   ``t(S) = alpha + beta x S`` (the models are affine in a payload that scales all flows together);
   a background tenant is drawn ``BACKGROUND_SAMPLES`` times (seeds of its pattern: which pairs its
   flows collide with changes as its traffic comes and goes), a line per sample, and each step or
   transfer draws one sample (seeded) -- the network jitter behind the tails;
2. a step or transfer starting at ``now`` shares links with what is in flight then: other replicas'
   steps (each item present with its share of that step's time, so a replica that mostly computes
   weighs little) and KV transfers (all the time). The item is slowed by
   :meth:`~fabricsim.engine.fabric_loop.ItemTimer.slowdown` (max-min per-flow share of its
   bottleneck links), fixed for its whole duration;
3. a call takes ``max(analytic, t(S) x slowdown)``: the network adds contention, never removes the
   analytic model's latency and protocol terms. The step's *network stall* is what the fabric adds
   to the analytic step (:func:`fabricsim.engine.inference.serving.make_timer`).

``link_jitter`` (sigma, at every fidelity) multiplies a step's communication and a transfer by
``1 + sigma |Z|``, one seeded half-normal draw each (:mod:`fabricsim.engine.variability`).
Without a fabric only the jitter applies, to the analytic times.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fabricsim.engine.fabric_loop import Fabric, FabricJob, FabricRun, Item, ItemTimer
from fabricsim.engine.inference.step import CommunicationModel
from fabricsim.network.base import FlowSet
from fabricsim.specs import ModelSpec, SystemSpec
from fabricsim.transformer.inference import StepWork
from fabricsim.workload.graph import CommPayload, OpGraph
from fabricsim.workload.inference_layout import InferenceLayout

BACKGROUND_SAMPLES = 8
"""Seeds of the background tenant's pattern each item is timed under (steps draw one): enough
distinct collision patterns for a P99 over thousands of steps, 8 network runs per size. Numerical."""

FIT_SIZES_BYTES = (1 << 20, 1 << 24)
"""Two payload sizes (1 MiB, 16 MiB) whose times fix the affine fit of an item on the fabric."""

WEIGHT_STEP = 0.05  # an in-flight step's weights are rounded to this for the mix cache (numerical)


@dataclass(frozen=True, slots=True)
class Line:
    """``alpha + beta x S`` seconds for a payload of S bytes."""

    alpha_s: float
    beta_s_per_B: float

    def __call__(self, size_bytes: float) -> float:
        return self.alpha_s + self.beta_s_per_B * size_bytes


@dataclass(frozen=True, slots=True)
class Deployment:
    """What the serving fabric needs of a deployment: model, system, one replica's layout, the
    replicas, and the KV bytes per token each GPU of a prefill replica ships."""

    model: ModelSpec
    system: SystemSpec
    layout: InferenceLayout
    replicas: int
    kv_bytes_per_token_per_gpu: float


@dataclass(frozen=True, slots=True)
class _Kind:
    """One collective shape of a replica's step: its items (one per pipeline stage) per size."""

    op: str
    ranks: int
    stride: int


@dataclass
class ServingNetworkRecord:
    """Per step the network stall (s), per KV hand-off its time (s)."""

    stall_s: list[float] = field(default_factory=list)
    transfer_s: list[float] = field(default_factory=list)


class ServingFabric:
    """A :class:`~fabricsim.engine.inference.scheduler.StepNetwork` (see the module docstring).

    ``timer`` is the analytic step time of one replica; ``transfer_s`` the analytic KV hand-off
    time of ``tokens`` tokens; ``fabrics`` the fabric under each background sample (one without a
    background; None: no fabric, jitter only)."""

    def __init__(
        self,
        deployment: Deployment,
        timer: Callable[[StepWork], float],
        transfer_s: Callable[[int], float] | None,
        fabrics: Sequence[Fabric] | None,
        host_of_gpu: np.ndarray | None,
        link_jitter: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.deployment, self.timer, self.nominal_transfer_s = deployment, timer, transfer_s
        self.comm = CommunicationModel(deployment.system, deployment.layout, deployment.model)
        self.link_jitter = link_jitter
        self.rng = np.random.default_rng(seed)
        self.record = ServingNetworkRecord()
        self.fabrics = list(fabrics or [])
        self.host_of_gpu = host_of_gpu
        self.jobs: list[FabricJob] = []
        self.runs = [FabricRun([], []) for _ in self.fabrics]  # per sample: its own cache of times alone
        self.timers = [ItemTimer(self.jobs, fabric, run) for fabric, run in zip(self.fabrics, self.runs, strict=True)]
        self.lines: dict[tuple[object, ...], list[Line] | None] = {}
        self.transfer_jobs: dict[tuple[int, int], tuple[int, int]] = {}
        self.busy: dict[int, tuple[float, list[tuple[Item, float]]]] = {}  # replica -> (end, weighted items)
        self.transfers: list[tuple[float, Item]] = []  # KV transfers in flight: (end, item)
        self.mix_cache: dict[tuple[Item, tuple[tuple[Item, float], ...]], float] = {}
        if self.fabrics:
            layout = deployment.layout
            self.replica_job = [self._replica_job(r) for r in range(deployment.replicas)]
            self.domain_gpus = self.fabrics[0].domain_gpus
            self.kinds = self._kinds(layout)

    @property
    def network_runs(self) -> int:
        """Runs of the network model so far (every item alone, per background sample and size)."""
        return sum(run.network_runs for run in self.runs)

    # --- items -------------------------------------------------------------------------------

    def _kinds(self, layout: InferenceLayout) -> dict[str, _Kind]:
        kinds = {}
        for call in self.comm.calls(float(layout.attention_data_parallel)):
            kinds[call.op.value] = _Kind(call.op.value, call.ranks, 1)
        if layout.pipeline_parallel > 1:
            kinds["send-recv"] = _Kind("send-recv", 2, layout.stage_gpus)
        return kinds

    def _replica_job(self, replica: int) -> int:
        """Index of the fabric job of replica ``replica`` (its two fit-size payloads per kind)."""
        layout = self.deployment.layout
        size = layout.replica_gpus
        hosts = self.host_of_gpu[replica * size:(replica + 1) * size]  # type: ignore[index]
        self.jobs.append(FabricJob(f"replica-{replica}", OpGraph(), np.asarray(hosts, dtype=np.int64),
                                   layout.pipeline_parallel, system=self.deployment.system))
        return len(self.jobs) - 1

    def _items(self, job: int, kind: _Kind, size: int) -> list[Item]:
        payload = CommPayload(kind.op, size, kind.ranks, kind.stride)
        return [(job, stage, payload) for stage in range(self.jobs[job].stages)]

    def _crosses(self, item: Item) -> bool:
        """Does the item's traffic leave an NVLink domain?"""
        flows = self.timers[0].flows(item)
        if not flows.count:
            return False
        return bool(np.any(flows.src // self.domain_gpus != flows.dst // self.domain_gpus))

    def _fit(self, items_by_size: Sequence[Sequence[Item]]) -> list[Line] | None:
        """Per background sample, the affine time of the slowest of the items (None: nothing
        leaves a domain, the analytic time stands)."""
        small, large = items_by_size
        if not any(self._crosses(item) for item in large):
            return None
        lines = []
        for timer in self.timers:
            t_small = max(timer.alone(item) for item in small)
            t_large = max(timer.alone(item) for item in large)
            beta = max(t_large - t_small, 0.0) / (FIT_SIZES_BYTES[1] - FIT_SIZES_BYTES[0])
            lines.append(Line(max(t_small - beta * FIT_SIZES_BYTES[0], 0.0), beta))
        return lines

    def _kind_lines(self, replica: int, name: str) -> list[Line] | None:
        key = (replica, name)
        if key not in self.lines:
            job, kind = self.replica_job[replica], self.kinds[name]
            self.lines[key] = self._fit([self._items(job, kind, size) for size in FIT_SIZES_BYTES])
        return self.lines[key]

    def _mix_item(self, replica: int, name: str) -> Item:
        """The item that stands for the kind in link sharing (its largest-size stage 0 payload)."""
        return self._items(self.replica_job[replica], self.kinds[name], FIT_SIZES_BYTES[1])[0]

    def _transfer_items(self, source: int, target: int) -> list[Item]:
        """The two fit-size jobs of the KV hand-off from replica ``source`` to ``target``."""
        key = (source, target)
        if key not in self.transfer_jobs:
            size = self.deployment.layout.replica_gpus
            hosts = self.host_of_gpu
            src = hosts[source * size:(source + 1) * size]  # type: ignore[index]
            dst = hosts[target * size:(target + 1) * size]  # type: ignore[index]
            jobs = []
            for nbytes in FIT_SIZES_BYTES:
                flows = FlowSet(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
                                np.full(size, float(nbytes)), np.zeros(size), np.zeros(size, dtype=np.int64))
                self.jobs.append(FabricJob(f"kv-{source}-{target}", OpGraph(), np.asarray(src, dtype=np.int64),
                                           1, flows=flows))
                jobs.append(len(self.jobs) - 1)
            self.transfer_jobs[key] = (jobs[0], jobs[1])
        return [(job, 0, CommPayload("send-recv", nbytes, 2))
                for job, nbytes in zip(self.transfer_jobs[key], FIT_SIZES_BYTES, strict=True)]

    # --- sharing -----------------------------------------------------------------------------

    def _in_flight(self, now_s: float, exclude: int) -> list[tuple[Item, float]]:
        self.transfers = [(end, item) for end, item in self.transfers if end > now_s]
        others = [(item, 1.0) for _, item in self.transfers]
        for replica, (end, items) in self.busy.items():
            if replica != exclude and end > now_s:
                others.extend(items)
        return others

    def _slowdown(self, item: Item, others: list[tuple[Item, float]]) -> float:
        if not others:
            return 1.0
        key = (item, tuple(sorted(others, key=lambda o: (o[0][0], o[0][1], o[1]))))
        if key not in self.mix_cache:
            self.mix_cache[key] = self.timers[0].slowdown(item, others)
        return self.mix_cache[key]

    def _jitter(self) -> float:
        return 1.0 + self.link_jitter * abs(float(self.rng.standard_normal())) if self.link_jitter else 1.0

    def _sample(self) -> int:
        return int(self.rng.integers(len(self.timers))) if len(self.timers) > 1 else 0  # one draw per step

    # --- StepNetwork -------------------------------------------------------------------------

    def step_s(self, replica: int, work: StepWork, now_s: float) -> float:
        """The analytic step plus what the fabric and the jitter add to its communication."""
        base_s = self.timer(work)
        pp = self.deployment.layout.pipeline_parallel
        micro_tokens = work.tokens / pp
        calls: list[tuple[str, float, float, float]] = [  # (kind, count, bytes, analytic s per call)
            (c.op.value, c.count, c.size_bytes, c.time_s) for c in self.comm.calls(micro_tokens)
        ]
        p2p_s = self.comm.p2p_s(micro_tokens)
        if p2p_s > 0:
            calls.append(("send-recv", 1.0, self.comm.p2p_bytes(micro_tokens), p2p_s))
        nominal = fabric = 0.0
        weighted: list[tuple[Item, float]] = []
        others = self._in_flight(now_s, replica) if self.timers else []
        sample = self._sample()
        for name, count, size, call_s in calls:
            nominal += count * call_s
            lines = self._kind_lines(replica, name) if self.timers else None
            if lines is None:
                fabric += count * call_s
                continue
            item = self._mix_item(replica, name)
            on_fabric = lines[sample](size) * self._slowdown(item, others)
            fabric += count * max(call_s, on_fabric)
            weighted.append((item, count * max(call_s, on_fabric)))
        comm_s = pp * fabric * self._jitter()
        stall_s = comm_s - pp * nominal
        step_s = base_s + stall_s
        if weighted and step_s > 0:
            share = [(item, round(pp * t / step_s / WEIGHT_STEP) * WEIGHT_STEP) for item, t in weighted]
            self.busy[replica] = (now_s + step_s, [(item, w) for item, w in share if w > 0])
        self.record.stall_s.append(stall_s)
        return step_s

    def transfer_s(self, source: int, target: int, tokens: int, now_s: float) -> float:
        """The KV hand-off: the analytic time, or on the fabric with what is in flight."""
        nominal = self.nominal_transfer_s(tokens) if self.nominal_transfer_s is not None else 0.0
        time_s = nominal
        if self.timers:
            small, large = self._transfer_items(source, target)
            key = ("kv", source, target)
            if key not in self.lines:
                self.lines[key] = self._fit([[small], [large]])
            lines = self.lines[key]
            if lines is not None:
                nbytes = tokens * self.deployment.kv_bytes_per_token_per_gpu
                on_fabric = lines[self._sample()](nbytes) * self._slowdown(large, self._in_flight(now_s, -1))
                time_s = max(nominal, on_fabric)
                self.transfers.append((now_s + time_s, large))
        time_s *= self._jitter()
        self.record.transfer_s.append(time_s)
        return time_s


def percentile_pair(values: Sequence[float]) -> dict[str, float]:
    """{p50, p99} of ``values`` (numpy linear interpolation); NaN when empty."""
    if not values:
        return {"p50": math.nan, "p99": math.nan}
    p50, p99 = np.percentile(np.asarray(values, dtype=float), [50, 99])
    return {"p50": float(p50), "p99": float(p99)}
