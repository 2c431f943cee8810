"""Shared base for user-facing spec documents (layer L1)."""

# The spec modules do not postpone annotations (no ``from __future__ import annotations``): pydantic
# then takes each field's type as it is rather than evaluating its text at import (issue 27).

from pydantic import BaseModel, ConfigDict


class FrozenSpec(BaseModel):
    """Immutable, strict pydantic model: unknown keys are errors, values cannot change."""

    # defer_build: a spec class builds its validator on its first validation, not at import (a CLI
    # run validates a few of the spec classes it imports; issue 27 start-up, ~8 ms of a JSON train)
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)
