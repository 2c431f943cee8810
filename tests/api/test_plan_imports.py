"""``plan train`` without a fabric imports neither the fabric simulator nor scipy (issue 27: the
import was a fifth of the reference plan's CPU); with a fabric and --refine it still runs there."""

import subprocess
import sys

PROBE = """
import sys
from fabricsim import api
result = api.plan_train("llama3-8b", "dgx-h100", 8, 16, 2048, top=1)
assert result.plans
print(",".join(m for m in ("scipy", "fabricsim.engine.fabric_loop", "fabricsim.api.fabric") if m in sys.modules))
"""


def test_analytic_plan_train_imports_no_fabric_simulator() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
