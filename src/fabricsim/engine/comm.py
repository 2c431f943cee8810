"""Adapter from the training step's communication to the collective model (layer L6).

The one place the analytic training engine talks to :mod:`fabricsim.collectives`: a
:class:`CollectiveTimes` places a group of ``ranks`` GPUs at ``stride`` on the system (rank order:
see :mod:`fabricsim.workload.training`) and asks for the time of one collective of ``size_bytes``
(nccl-tests definition) with NCCL-like automatic algorithm choice, cached per instance. The class
lives in :mod:`fabricsim.collectives.times` so that the inference step model (layer L5) shares it.
"""

from __future__ import annotations

from fabricsim.collectives.times import CollectiveTimes

__all__ = ["CollectiveTimes"]
