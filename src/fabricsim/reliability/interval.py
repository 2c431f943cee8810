"""Checkpoint intervals and the analytic effective training time ratio (layer L8).

Pure functions of seconds. The failure process is Poisson (exponential times between failures,
mean ``mttf_s``); a job computes ``interval_s`` of work, then blocks ``checkpoint_s`` to checkpoint;
after a failure it spends ``restart_s`` restarting (a failure during a restart restarts again) and
resumes from the last durable checkpoint.
"""

from __future__ import annotations

import math

from fabricsim.errors import FabricsimError


def _check(name: str, value: float, minimum_exclusive: float | None = 0.0) -> None:
    if not math.isfinite(value) or (minimum_exclusive is not None and value <= minimum_exclusive):
        raise FabricsimError(name, f"must be a finite number > {minimum_exclusive}, got {value!r}")


def young_interval_s(checkpoint_s: float, mttf_s: float) -> float:
    """Young's first-order optimum (CACM 17(9), 1974): τ = √(2·C·M), seconds of work between checkpoints."""
    _check("checkpoint_s", checkpoint_s)
    _check("mttf_s", mttf_s)
    return math.sqrt(2.0 * checkpoint_s * mttf_s)


def daly_interval_s(checkpoint_s: float, mttf_s: float) -> float:
    """Daly's higher-order optimum (FGCS 22(3), 2006), seconds of work between checkpoints:
    τ = √(2CM)·[1 + ⅓·√(C/(2M)) + (1/9)·(C/(2M))] − C for C < 2M, else τ = M."""
    _check("checkpoint_s", checkpoint_s)
    _check("mttf_s", mttf_s)
    if checkpoint_s >= 2.0 * mttf_s:
        return mttf_s
    ratio = checkpoint_s / (2.0 * mttf_s)
    return math.sqrt(2.0 * checkpoint_s * mttf_s) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - checkpoint_s


def expected_ettr(interval_s: float, checkpoint_s: float, restart_s: float, mttf_s: float) -> float:
    """Expected fraction of wall time that is kept work (effective training time ratio).

    Daly's exact model for exponential failures (FGCS 2006: T_w = M·e^{R/M}·(e^{(τ+C)/M} − 1)·T_s/τ),
    inverted: ETTR = T_s / T_w = τ / (M·e^{R/M}·(e^{(τ+C)/M} − 1)). Derivation as a renewal-reward
    process: between failures (mean M) the job keeps τ per completed segment of τ + C after a restart
    R, and E[#segments] = e^{−R/M} / (e^{(τ+C)/M} − 1). An asynchronous checkpoint that becomes
    durable P seconds after its blocking part enters as R + P (work is kept only once persisted).
    """
    _check("interval_s", interval_s)
    _check("checkpoint_s", checkpoint_s, None)
    _check("restart_s", restart_s, None)
    _check("mttf_s", mttf_s)
    if checkpoint_s < 0 or restart_s < 0:
        raise FabricsimError("checkpoint_s", "checkpoint and restart times must be >= 0")
    segment = (interval_s + checkpoint_s) / mttf_s
    if restart_s / mttf_s > 700 or segment > 700:  # e^x overflows: essentially no work survives
        return 0.0
    return interval_s / (mttf_s * math.exp(restart_s / mttf_s) * math.expm1(segment))
