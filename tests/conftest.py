"""Shared pytest configuration: hypothesis profiles, and the ``rewrite_file`` fixture.

``ci`` (default): 60 examples per property, fresh randomness on every run (not derandomized), so
successive CI runs explore different inputs; a failure prints the seed and a
``@reproduce_failure`` blob to replay it. ``long`` (``HYPOTHESIS_PROFILE=long``, used by
``benchmarks/properties_long.py``): 2,000 examples per property. ``repro``: derandomized, for
bisecting.
"""

import os

import pytest
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


def _rewrite_file(path, text: str, step_ns: int = 10**9) -> None:
    """Write ``text`` to ``path`` and move its mtime ``step_ns`` past the previous one (so that a
    cache keyed on file metadata sees the edit whatever the file system's timestamp resolution)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    later = max(before + step_ns, path.stat().st_mtime_ns)
    os.utime(path, ns=(later, later))


@pytest.fixture
def rewrite_file():
    """:func:`_rewrite_file`: rewrite a user file as an editor would, its mtime moved on."""
    return _rewrite_file
