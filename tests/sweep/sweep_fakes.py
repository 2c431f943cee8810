"""Test-only sweep runners: deterministic, independent of the models, optionally slow or failing.

Imported by name (``sweep_fakes``) so that process-pool and Ray workers can unpickle them.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from fabricsim.errors import FabricsimError
from fabricsim.sweep import TaskKind

HERE = Path(__file__).parent


DELAY_ENV = "FABRICSIM_TEST_TASK_DELAY_S"  # slows tasks down (kill tests) without changing results


def fake_collective(op: str, *, system: str, gpus: int, size: str | int, algorithm: str = "auto") -> dict[str, Any]:
    """A pure function of its arguments shaped like a collective result; gpus == 3 is a user error."""
    if gpus == 3:
        raise FabricsimError("gpus", "3 GPUs cannot form this group", "use a power of two")
    delay_s = float(os.environ.get(DELAY_ENV, "0"))
    if delay_s:
        time.sleep(delay_s)
    digest = hashlib.sha256(f"{op}|{system}|{gpus}|{size}|{algorithm}".encode()).digest()
    return {"op": op, "gpus": gpus, "time_s": int.from_bytes(digest[:6], "big") / 1e12, "extra": {"ranks": gpus}}


RUNNERS = {TaskKind.COLLECTIVE: fake_collective}


def grid_spec(gpus: tuple[int, ...] = (2, 3, 8)) -> dict[str, Any]:
    """A 2 x 2 x len(gpus) x 2 grid of fake collective tasks (gpus == 3 fails)."""
    return {
        "name": "fake",
        "tasks": [
            {
                "kind": "collective",
                "grid": {
                    "op": ["all-reduce", "all-gather"],
                    "system": ["dgx-a100", "dgx-h100"],
                    "gpus": list(gpus),
                    "size": ["1MiB", "1GiB"],
                    "algorithm": "auto",
                },
            }
        ],
    }
