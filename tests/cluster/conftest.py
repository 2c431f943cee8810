"""Cluster tests: the fakes of cluster_fakes.py importable by name, and fixtures."""

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cluster_fakes import FABRIC, fake_parse_placement  # noqa: E402

from fabricsim.api.cluster import COMMANDS  # noqa: E402
from fabricsim.api.topologies import build_topology  # noqa: E402
from fabricsim.cluster.spec import JobParsers  # noqa: E402


@pytest.fixture
def parsers() -> JobParsers:
    """The real API signatures with the fake placement parser."""
    return JobParsers(COMMANDS, fake_parse_placement)


@pytest.fixture
def topology():
    """16 hosts under 4 leaves and 2 spines."""
    return build_topology(FABRIC)
