"""The result tuples of the analytic estimate: the hot path's builders and its step-time total."""

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.engine.training.results import (
    MemoryBreakdown,
    TimeBreakdown,
    TrainingEstimate,
    new_memory_breakdown,
    new_time_breakdown,
    new_training_estimate,
)
from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.specs.memory_tier import parse_offload
from fabricsim.workload.training import TrainingOptions

H100 = load_system("dgx-h100")


@pytest.mark.parametrize(("cls", "build"), [
    (TimeBreakdown, new_time_breakdown),
    (MemoryBreakdown, new_memory_breakdown),
    (TrainingEstimate, new_training_estimate),
])
def test_builders_make_the_named_tuple(cls, build) -> None:
    values = tuple(float(i) for i in range(len(cls._fields)))
    built = build(values)
    assert type(built) is cls and built == cls(*values) and built._asdict() == cls(*values)._asdict()


def _layouts():
    for tp in (1, 2, 8):
        for pp, vpp in ((1, 1), (4, 1), (4, 2)):
            for zero in (0, 1, 3):
                for recompute in (Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL):
                    yield ParallelLayout(tp, pp, 64 // (tp * pp), 1, 8 if tp == 8 else 1, vpp, 1, zero, recompute,
                                         tp > 1, "bf16", 1 if tp == 8 else None)


@pytest.mark.parametrize(("model", "options"), [
    ("llama3-70b", TrainingOptions()),
    ("mixtral-8x22b", TrainingOptions(overlap_grad_reduce=True, overlap_param_gather=True, a2a_overlap=True)),
])
def test_estimate_is_whole_and_its_step_time_is_the_breakdowns_total(model: str, options: TrainingOptions) -> None:
    ctx = training_context(load_model(model), H100, options)
    estimates = 0
    for layout in _layouts():
        for offload in (None, parse_offload("optimizer,activations", "host")):
            try:
                est = ctx.estimate(layout, 128, 4096, offload)
            except FabricsimError:
                continue
            estimates += 1
            assert len(est) == len(TrainingEstimate._fields) and len(est.time) == len(TimeBreakdown._fields)
            assert len(est.memory) == len(MemoryBreakdown._fields)
            assert est.step_time_s == est.time.total_s  # the same additions, in the same order
            assert (est.tier is None) == (offload is None)
            assert est.memory_capacity_bytes == H100.device.hbm_capacity_bytes
            assert est.peak_flops_per_gpu == H100.device.peak("bf16")
    assert estimates > 40
