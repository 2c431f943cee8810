"""Shared base for user-facing spec documents (layer L1)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FrozenSpec(BaseModel):
    """Immutable, strict pydantic model: unknown keys are errors, values cannot change."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
