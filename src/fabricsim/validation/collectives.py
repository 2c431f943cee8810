"""Collective validation: nccl-tests measurements on 8xH100 and 8xA100 (layer L8).

Rows come from the shipped copy of shared/validation/collectives-nccl-tests.yaml (sources kept
per row): the NVIDIA dgxc-benchmarking all_reduce_perf sweep on one DGX H100 (8 B .. 16 GiB) and a
public sendrecv_perf run on 8 A100. Each row runs on the catalog system of its GPU with the same
global NCCL constants; busbw is predicted as nccl-tests defines it. Rows whose busbw rounds to 0
(8 B) are compared on time instead.

The A100 send/recv rows were over-predicted (+112% at 128 MiB, +23% to +26% at >= 256 MiB) while
the model sent at NVLink's rate. The mechanism is NCCL's p2p scheduler, now modelled in
:mod:`fabricsim.collectives.p2p` from NCCL 2.30.7's source (NVIDIA/nccl @ 5067397c: src/enqueue.cc
``scheduleP2pTasksToPlan`` and ``addP2pToPlan``, src/graph/paths.cc ``ncclTopoGetNchannels`` and
``ncclTopoComputeP2pChannels``, src/init.cc ``P2P_NVL_CHUNKSIZE``): a send/recv is split over a
number of channels -- one CTA each -- that depends on the message size and on the communicator:

* ``p2pnChannelsPerPeer`` = next power of two of ``2 x NVLinks`` to the peer (2 x 12 = 24 -> 32 on a
  DGX A100), ``p2pnChannels`` = next power of two of the collective channel count (24 -> 32);
* ``nChannelsMax = p2pnChannelsPerPeer`` (32); ``nChannelsMin`` halves it until
  ``nChannelsMin x nRanks <= p2pnChannels`` (8 ranks: 4; 2 ranks: 16);
* a send starts on ``nChannelsMin`` channels and doubles them while its per-channel part exceeds
  ``32 x P2P_NVL_CHUNKSIZE`` (32 x 512 KiB = 16 MiB, single node) and ``nChannels <= nChannelsMax/2``.

Each channel moves at most NCCL's ``P2P_PER_CHANNEL_NET_BW`` = 14 GB/s (paths.cc), capped by NVLink
as before; nothing is fitted on these rows. For sendrecv_perf on 8 GPUs that gives 8 channels at
128 MiB (112 GB/s; measured 110.8, +0.1%), 16 at 256 MiB (224 GB/s; measured 188.6, +17.6%) and 32
from 512 MiB, where NVLink's 240 GB/s is the limit again (+23.9%, +22.7%). The measured 188.6-195.1
GB/s at 256 MiB-1 GiB are 11.8-12.2 GB/s per channel on 16 channels: NCCL <= 2.19 also clamped
``nChannelsMax`` until ``nChannelsMax x nRanks <= 4 x p2pnChannels`` (16 for 8 ranks; "Avoid
overloading channels with 8+ operations", removed in 2.20): it would keep 512 MiB-1 GiB on 16
channels (224 GB/s, +16%), as flat as the measured rows; the run's NCCL version is not published,
and fabricsim models 2.30. (A100 is also the one generation
where NCCL moves p2p data with reads, ``ncclTopoCheckP2p``: "Enable P2P Read for Ampere/NVLink only".)
The channel count makes time non-monotonic in size at a step, as in NCCL (128 MiB + 1 B runs on
twice the channels of 128 MiB); the property test allows exactly that drop.
"""

from __future__ import annotations

from typing import Any

from fabricsim.collectives import bus_factor, estimate, parse_op, place_group
from fabricsim.validation.base import SpecSource, SuiteResult, ValidationEntry, load_entries
from fabricsim.validation.commands import collective_command

DATA_FILE = "collectives-nccl-tests.yaml"
SYSTEMS = {"H100": "dgx-h100", "A100": "dgx-a100"}
OPS = {"all_reduce_perf": "all-reduce", "sendrecv_perf": "send-recv"}


def measured_rows() -> list[dict[str, Any]]:
    """Rows of the file that are nccl-tests measurements (not the busbw-factor formulas)."""
    return [row for row in load_entries(DATA_FILE) if row["category"] == "collectives/nccl-intranode"]


def _system_name(row: dict[str, Any]) -> str:
    gpu = str(row["system"]["gpu"])
    return next(name for key, name in SYSTEMS.items() if key in gpu)


def _op_name(row: dict[str, Any]) -> str:
    binary = str(row["workload"]["op"]).split()[0].rstrip(",")
    return OPS[binary]


def predict(row: dict[str, Any], source: SpecSource) -> ValidationEntry:
    """fabricsim's prediction of one row: busbw in GB/s, or time in microseconds for tiny sizes."""
    system = source.load_system(_system_name(row))
    gpus = int(row["system"]["gpu_count"])
    op = parse_op(_op_name(row))
    size = int(row["workload"]["message_bytes"])
    result = estimate(op, size, place_group(system, gpus))
    busbw = size / result.time_s * bus_factor(op, gpus) / 1e9
    detail = f"{system.name} {gpus} GPUs {op.value} {size} B: {result.algorithm.value}/{result.protocol}"
    line = collective_command(op.value, _system_name(row), gpus, size)
    if float(row["value"]) > 0.0:
        return ValidationEntry(row["id"], "busbw", "GB/s", float(row["value"]), busbw, row["source"], detail,
                               command=line, command_output="busbw_GBps")
    measured_us = next(float(a["value"]) for a in row.get("also_reported", []) if a["metric"] == "time")
    return ValidationEntry(row["id"], "time", "us", measured_us, result.time_s * 1e6, row["source"], detail,
                           command=line, command_output="time_s x 1000000.0")


CALIBRATION = (
    "out-of-sample: NCCL constants read from the NCCL 2.30 source (tuning tables, per-link NVLink "
    "bandwidth, NVLS structure, the send/recv channel rule and its 14 GB/s per channel); no constant "
    "fitted on these rows (a fit of the NVLS step overhead "
    "to the H100 sweep is only a check). No kernel-level compute involved: nothing to hold out"
)


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """All nccl-tests rows of the shipped file."""
    del holdout  # nothing to hold out
    return SuiteResult("collectives", tuple(predict(row, source) for row in measured_rows()), calibration=CALIBRATION)
