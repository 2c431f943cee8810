"""Shared pytest configuration: hypothesis profiles.

``ci`` (default): 60 examples per property, fresh randomness on every run (not derandomized), so
successive CI runs explore different inputs; a failure prints the seed and a
``@reproduce_failure`` blob to replay it. ``long`` (``HYPOTHESIS_PROFILE=long``, used by
``benchmarks/properties_long.py``): 2,000 examples per property. ``repro``: derandomized, for
bisecting.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
}
settings.register_profile("ci", max_examples=60, **_COMMON)
settings.register_profile("long", max_examples=2000, **_COMMON)
settings.register_profile("repro", max_examples=60, derandomize=True, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
