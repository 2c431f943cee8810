"""Collective validation: nccl-tests measurements on 8xH100 and 8xA100 (layer L8).

Rows come from the shipped copy of shared/validation/collectives-nccl-tests.yaml (sources kept
per row): the NVIDIA dgxc-benchmarking all_reduce_perf sweep on one DGX H100 (8 B .. 16 GiB) and a
public sendrecv_perf run on 8 A100. Each row runs on the catalog system of its GPU with the same
global NCCL constants; busbw is predicted as nccl-tests defines it. Rows whose busbw rounds to 0
(8 B) are compared on time instead.

The A100 send/recv rows are over-predicted (+23% to +26% at >= 256 MiB; +112% at 128 MiB). The
mechanism is in NCCL's p2p scheduler (NVIDIA/nccl src/enqueue.cc ``scheduleP2pTasksToPlan`` and
``calcP2pChunkSize``, read at v2.18.1-1; the same logic at HEAD 5067397): a send/recv is split over
a number of channels -- one CTA each -- that depends on the message size and on the communicator:

* ``p2pnChannelsPerPeer`` = next power of two of ``2 x NVLinks`` to the peer (``ncclTopoGetNchannels``,
  src/graph/paths.cc: 2 x 12 = 24 -> 32 on a DGX A100), ``p2pnChannels`` = next power of two of the
  collective channel count (32);
* ``nChannelsMin`` halves ``p2pnChannelsPerPeer`` until ``nChannelsMin x nRanks <= p2pnChannels``
  (8 ranks: 4), ``nChannelsMax`` until ``<= 4 x p2pnChannels`` (16);
* ``calcP2pChunkSize`` starts from ``size / nChannelsMin`` and doubles the channels while the
  per-channel chunk exceeds ``32 x NCCL_P2P_NVL_CHUNKSIZE`` (32 x 512 KiB = 16 MiB, single node).

For sendrecv_perf on 8 GPUs that gives 8 channels at 128 MiB and 16 channels from 256 MiB up: the
measured 110.8 GB/s at 128 MiB is 13.9 GB/s per channel, 188.6-195.1 GB/s at 256 MiB-1 GiB is
11.8-12.2 GB/s per channel -- the per-CTA copy rate that NCCL itself assumes for a p2p channel
(``NCCL_P2P_PER_CHANNEL_NET_BW`` = 14 GB/s, paths.cc). So the rows are not suspect: send/recv on an
8-rank communicator is limited by channels x ~12-14 GB/s, below NVLink's 240 GB/s. (A100 is also the
one generation where NCCL moves p2p data with reads, ``ncclTopoCheckP2p``: "Enable P2P Read for
Ampere/NVLink only".) Not modelled yet: the channel count makes time non-monotonic in size (as in
NCCL: 128 MiB + 1 B runs on twice the channels of 128 MiB), which the collective model's contract
(and its property test) excludes; fabricsim's own send/recv (pipeline stages) runs on 2-rank groups,
where ``nChannelsMin = p2pnChannels / 2`` and NVLink, not the channels, is the limit.
"""

from __future__ import annotations

from typing import Any

from fabricsim.collectives import bus_factor, estimate, parse_op, place_group
from fabricsim.validation.base import SpecSource, SuiteResult, ValidationEntry, load_entries

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
    if float(row["value"]) > 0.0:
        return ValidationEntry(row["id"], "busbw", "GB/s", float(row["value"]), busbw, row["source"], detail)
    measured_us = next(float(a["value"]) for a in row.get("also_reported", []) if a["metric"] == "time")
    return ValidationEntry(row["id"], "time", "us", measured_us, result.time_s * 1e6, row["source"], detail)


CALIBRATION = (
    "out-of-sample: NCCL constants read from the NCCL 2.30 source (tuning tables, per-link NVLink "
    "bandwidth, NVLS structure); no constant fitted on these rows (a fit of the NVLS step overhead "
    "to the H100 sweep is only a check). No kernel-level compute involved: nothing to hold out"
)


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """All nccl-tests rows of the shipped file."""
    del holdout  # nothing to hold out
    return SuiteResult("collectives", tuple(predict(row, source) for row in measured_rows()), calibration=CALIBRATION)
