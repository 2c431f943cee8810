"""Properties the planner's pruning relies on (hypothesis over the planner's own search space).

* memory per GPU does not shrink when the micro-batch grows (other fields fixed), so a micro-batch
  size none of whose variants fits rules out every larger one;
* the step is at least m micro-batches of the slowest stage's work (the time bound).
"""

import itertools

from hypothesis import given
from hypothesis import strategies as st

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import estimate_training, training_context, training_memory
from fabricsim.planner import space as sp
from fabricsim.planner.space import TrainProblem, TrainSpace
from fabricsim.transformer.flops import model_dims

CASES = [
    (load_model("gpt3-175b"), load_system("dgx-a100"), 256, 512, 2048),
    (load_model("mixtral-8x22b"), load_system("dgx-h100"), 64, 256, 4096),
    (load_model("deepseek-v3"), load_system("h800"), 256, 1024, 4096),
]
PROBLEMS = [TrainProblem(model_dims(m), s, g, b, q) for m, s, g, b, q in CASES]
GROUPS = [list(sp.train_groups(problem, TrainSpace())) for problem in PROBLEMS]


def _pick(data: st.DataObject) -> tuple[int, sp.Group]:
    case = data.draw(st.integers(0, len(CASES) - 1), label="case")
    return case, data.draw(st.sampled_from(GROUPS[case]), label="group")


@given(st.data())
def test_memory_does_not_shrink_with_a_larger_micro_batch(data: st.DataObject) -> None:
    case, group = _pick(data)
    model, system, _, batch, seq = CASES[case]
    sizes = sp.micro_batches(PROBLEMS[case], TrainSpace(), group)
    zero = data.draw(st.sampled_from(sp.zero_options(TrainSpace(), group)), label="zero")
    vpp_options = sp.virtual_options(PROBLEMS[case], TrainSpace(), group, batch // (group.data_parallel * sizes[-1]))
    vpp = data.draw(st.sampled_from(vpp_options), label="vpp")  # valid for every micro-batch size
    memory = [training_memory(model, system, group.layout(mb, zero, vpp), batch, seq).total for mb in sizes]
    assert all(later >= earlier * (1 - 1e-12) for earlier, later in itertools.pairwise(memory))


@given(st.data())
def test_step_is_at_least_the_stage_work_of_every_micro_batch(data: st.DataObject) -> None:
    case, group = _pick(data)
    model, system, _, batch, seq = CASES[case]
    mb = data.draw(st.sampled_from(sp.micro_batches(PROBLEMS[case], TrainSpace(), group)), label="micro_batch")
    m = batch // (group.data_parallel * mb)
    zero = data.draw(st.sampled_from(sp.zero_options(TrainSpace(), group)), label="zero")
    vpp = data.draw(st.sampled_from(sp.virtual_options(PROBLEMS[case], TrainSpace(), group, m)), label="vpp")
    layout = group.layout(mb, zero, vpp)
    work = training_context(model, system).stage(layout, seq).work
    bound = m * (work.forward_s + work.backward_s + work.recompute_s + work.tp_comm_s + work.cp_comm_s + work.ep_comm_s)
    assert estimate_training(model, system, layout, batch, seq).step_time_s >= bound * (1 - 1e-12)
