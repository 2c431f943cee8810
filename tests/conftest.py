"""Shared pytest configuration: a fast, deterministic hypothesis profile for CI."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "fabricsim", max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("fabricsim")
