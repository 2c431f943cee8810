"""Sweep tests: make the test-only runners importable by name in pool and Ray workers."""

import sys
from pathlib import Path

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
