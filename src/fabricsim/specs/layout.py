"""A parallel layout: how one model is sharded over GPUs (layer L1).

A frozen slotted dataclass because the planner builds millions of them. Glossary: tp = tensor,
pp = pipeline, dp = data, cp = context, ep = expert parallel; vpp = virtual pipeline stages per rank.
Expert parallelism reuses the data-parallel ranks (as in Megatron-LM and DeepSeek), so
``gpus = tp * pp * cp * dp`` and ``ep`` must divide ``dp``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum


class Recompute(str, Enum):
    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"


@dataclass(frozen=True, slots=True)
class ParallelLayout:
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    context_parallel: int = 1
    expert_parallel: int = 1
    virtual_stages: int = 1
    micro_batch_size: int = 1
    zero_stage: int = 0
    recompute: Recompute = Recompute.NONE
    sequence_parallel: bool = False
    dtype: str = "bf16"

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel * self.context_parallel

    def as_dict(self) -> dict[str, object]:
        """Plain-JSON view with the short names the CLI uses (:data:`SHORT_NAMES`)."""
        raw = asdict(self)
        raw["recompute"] = self.recompute.value
        return {SHORT_NAMES[name]: value for name, value in raw.items()}


SHORT_NAMES: dict[str, str] = {
    "tensor_parallel": "tp",
    "pipeline_parallel": "pp",
    "data_parallel": "dp",
    "context_parallel": "cp",
    "expert_parallel": "ep",
    "virtual_stages": "vpp",
    "micro_batch_size": "micro_batch",
    "zero_stage": "zero",
    "recompute": "recompute",
    "sequence_parallel": "sequence_parallel",
    "dtype": "dtype",
}
"""The ONE map between a layout field's full name and its short (CLI / JSON) name."""

LONG_NAMES: dict[str, str] = {short: full for full, short in SHORT_NAMES.items()}


def long_names(values: dict[str, object]) -> dict[str, object]:
    """``{"tp": 8}`` -> ``{"tensor_parallel": 8}`` (keys already long are kept)."""
    return {LONG_NAMES.get(key, key): value for key, value in values.items()}
