"""Search over parallel layouts: what is the best way to run this model on this cluster (layer L8).

``search_train`` walks every valid training layout (TP, PP, DP, CP, EP, virtual stages,
micro-batch, ZeRO stage, recomputation, sequence parallelism, dtype), prunes by divisibility and by
memory before costing, ranks by an objective and explains why the runners-up lose;
``refine_search`` re-times the best plans with the event-driven engine. ``search_infer`` ranks
inference layouts (TP, PP, EP, dtypes, replicas) and batch sizes for throughput at a TPOT/TTFT SLO,
or for latency. ``choose_slice`` picks a TPU slice's shape and twist (OCS pods) for a layout's
collectives.
The library never prints: long searches report through an ``on_progress(done, total)`` callback.
"""

from fabricsim.planner.infer import (
    InferGoal,
    InferObjective,
    InferPlan,
    InferQuestion,
    InferSearch,
    InferSpace,
    infer_space,
    parse_infer_objective,
    search_infer,
)
from fabricsim.planner.offload import check_choices as check_offload_choices
from fabricsim.planner.offload import offload_choices
from fabricsim.planner.refine import refine_search
from fabricsim.planner.slice import SlicePick, check_slice_chips, choose_slice, default_shape, ocs_pod, slice_system
from fabricsim.planner.slice import is_auto as is_slice_auto
from fabricsim.planner.space import TrainSpace, train_space
from fabricsim.planner.split import DEFAULT_SLO_S, SplitPlan, SplitQuestion, search_splits
from fabricsim.planner.train import (
    PlanSettings,
    TrainObjective,
    TrainPlan,
    TrainQuestion,
    TrainSearch,
    parse_train_objective,
    search_train,
)

__all__ = [
    "DEFAULT_SLO_S",
    "InferGoal",
    "InferObjective",
    "InferPlan",
    "InferQuestion",
    "InferSearch",
    "InferSpace",
    "PlanSettings",
    "SlicePick",
    "SplitPlan",
    "SplitQuestion",
    "TrainObjective",
    "TrainPlan",
    "TrainQuestion",
    "TrainSearch",
    "TrainSpace",
    "check_offload_choices",
    "check_slice_chips",
    "choose_slice",
    "default_shape",
    "infer_space",
    "is_slice_auto",
    "ocs_pod",
    "offload_choices",
    "parse_infer_objective",
    "parse_train_objective",
    "refine_search",
    "search_infer",
    "search_splits",
    "search_train",
    "slice_system",
    "train_space",
]
