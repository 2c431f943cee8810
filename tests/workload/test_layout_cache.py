"""``resolve_checked_layout``: api.train's layouts, one object per distinct checked tuple (issue 27:
the frozen constructor and the defaults were a tenth of an in-process train)."""

import pytest

from fabricsim import catalog
from fabricsim.errors import FabricsimError
from fabricsim.specs import Recompute
from fabricsim.transformer.flops import model_dims
from fabricsim.workload import training as work

NAMES = work._LAYOUT_KEYWORDS


def _dims(name: str):
    return model_dims(catalog.load_model(name))


@pytest.mark.parametrize(
    ("model", "gpus", "values"),
    [
        ("llama3-8b", 8, (None,) * 12),
        ("llama3-8b", 8, (2, None, None, 2, None, None, 2, 1, Recompute.SELECTIVE, False, "fp8", None)),
        ("deepseek-v3", 512, (1, 16, None, None, 32, 2, None, None, Recompute.FULL, None, None, None)),
        ("megatron-1t", 3072, (4, 64, 12, None, None, None, 4, 1, Recompute.FULL, None, None, None)),
    ],
)
def test_the_kept_layout_is_the_resolved_one(model, gpus, values) -> None:
    dims = _dims(model)
    kept = work.resolve_checked_layout(gpus, dims, values)
    assert kept == work.resolve_layout(gpus, dims, **dict(zip(NAMES, values, strict=True)))
    assert work.resolve_checked_layout(gpus, dims, values) is kept


def test_dense_and_moe_models_do_not_share_a_layout() -> None:
    values = (1, 1, None, None, 8, None, None, None, None, None, None, None)
    dense = work.resolve_checked_layout(64, _dims("llama3-8b"), values)
    moe = work.resolve_checked_layout(64, _dims("mixtral-8x22b"), values)
    assert dense.zero_stage == 0 and moe.zero_stage == 1  # MoE models default to the distributed optimizer


def test_a_refusal_is_not_kept() -> None:
    dims, values = _dims("llama3-8b"), (3,) + (None,) * 11
    for _ in range(2):
        with pytest.raises(FabricsimError, match=r"^tp: "):
            work.resolve_checked_layout(8, dims, values)
