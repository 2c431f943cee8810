"""ModelSpec refuses models the math cannot hold: zero-width heads and booleans as counts (issue 27)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fabricsim.specs import ModelSpec

BASE = {"name": "m", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 1000}


def test_hidden_size_below_heads_needs_a_head_dim():
    with pytest.raises(ValidationError, match="hidden_size"):
        ModelSpec.model_validate({**BASE, "hidden_size": 16})
    spec = ModelSpec.model_validate({**BASE, "hidden_size": 16, "head_dim": 128})
    assert spec.head_size == 128


def test_hidden_size_equal_to_heads_is_one_wide_heads():
    assert ModelSpec.model_validate({**BASE, "hidden_size": 32}).head_size == 1


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                   "vocab_size", "max_position_embeddings", "num_local_experts", "head_dim"])
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_is_not_a_count(field, value):
    with pytest.raises(ValidationError, match=field):
        ModelSpec.model_validate({**BASE, field: value})
