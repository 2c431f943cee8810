"""OCS twisted tori against the published TPU v4 result (issue 25, Done-when).

Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware
Support for Embeddings", ISCA 2023 (arXiv 2304.01433), sec. 2.8 and Figure 6 (measured all-to-all
throughput of regular and twisted 4x4x8 and 4x8x8 slices, steady state, 4 KiB DMAs): "The twisted
torus improves all-to-all throughput by 1.63x and 1.31x over the regular torus on 4x4x8 and 4x8x8
slices, respectively." Checked (2026-12-02) against a text extraction of the paper
(github.com/wbic16/exo-plan, r23/tpu-v4-full-text.txt @ 551d432aae58587a73120892c77e460da24907db).
It is a figure, not a table: the absolute throughputs of Figure 6 (and its "theoretical delta from
the ideal peak") are bar labels in the chart, in no text found (the paper, its text extraction,
Cloud TPU docs, secondary write-ups), so the regular torus's measured all-to-all is not compared.

fabricsim's flow model (max-min fair, ECMP over shortest paths) on ``ocs-torus`` measures the
all-to-all completion time of each slice, regular and twisted; the gain is their ratio. Measured
(2026-12-02): 4x4x8 1.505x (-7.7%); 4x8x8 1.309x (-0.1%, 80 s per run, so only 4x4x8 runs here).
The regular-torus baseline is checked against the published figure that bounds it instead (last
test): the paper's all-to-all is bisection-limited (sec. 3.4: for model parallelism "the
communication pattern consists of variable-length all-to-all exchange. The network bisection
bandwidth limits performance"), and Google publishes the bisection bandwidth of the regular
4096-chip TPU v4 torus.
"""

import pytest

PUBLISHED_GAIN = {"4x4x8": 1.63}  # Jouppi et al., ISCA 2023: twisted / regular all-to-all throughput
TOLERANCE = 0.15  # issue 25: within 15%


@pytest.mark.parametrize("shape", sorted(PUBLISHED_GAIN))
def test_twisted_torus_all_to_all_gain_matches_isca_2023(run_json, shape) -> None:
    times = {
        twisted: run_json(f"fabricsim traffic all-to-all --topology ocs-torus:{shape},twisted={twisted} --json")[
            "completion_time_s"
        ]
        for twisted in (0, 1)
    }
    gain = times[0] / times[1]
    assert gain == pytest.approx(PUBLISHED_GAIN[shape], rel=TOLERANCE)
    assert gain > 1.3  # the twist must help clearly, not by a rounding margin


# The same table (1.63x on 4x4x8, 1.31x on 4x8x8) against the analytic channel-load bound the planner
# uses (collectives/torus.py, lattice_all_to_all_s_per_byte; no flow run, so both shapes run).
# Measured (2026-12-02): 4x4x8 1.745x (+7.1%); 4x8x8 1.391x (+6.2%).
PUBLISHED_GAIN_ANALYTIC = {(4, 4, 8): 1.63, (4, 8, 8): 1.31}


@pytest.mark.parametrize("dims", sorted(PUBLISHED_GAIN_ANALYTIC))
def test_twisted_torus_channel_load_gain_matches_isca_2023(dims) -> None:
    from fabricsim.collectives.torus import lattice_all_to_all_s_per_byte

    links = (1e11,) * 3
    gain = lattice_all_to_all_s_per_byte(dims, False, links) / lattice_all_to_all_s_per_byte(dims, True, links)
    assert gain == pytest.approx(PUBLISHED_GAIN_ANALYTIC[dims], rel=TOLERANCE)


# The regular-torus baseline: the bisection bandwidth of the 4096-chip TPU v4 pod, a regular 16x16x16
# torus (ISCA 2023 sec. 2.6: OCS wraparound links "up to 16^3 (4096) chips").
V4_POD_DIMS = (16, 16, 16)
V4_POD_BISECTION_Bps = 24e12  # Cloud TPU v4 docs (cloud.google.com/tpu/docs/v4): "Bisection bandwidth per Pod 24 TB/s"
# ISCA 2023 Table 4: TPU v4 "Inter Chip Interconnect: 6 links @ 50 GB/s"; sec. 7.3 "ICI link bandwidth is 2x
# IB--400 vs 200 Gbit/s", i.e. per direction as IB's (glennklockwood.com/garden/processors/TPUv4: ICI "provides
# 400G bandwidth in each direction"). Assumed: the docs' 24 TB/s is one direction across
# the cut (the docs do not say; both directions would need 23 GB/s links, half of Table 4's).
V4_LINK_Bps = 50e9


def test_regular_torus_all_to_all_meets_the_published_tpu_v4_pod_bisection() -> None:
    """The channel-load all-to-all of the regular 16x16x16 torus (the planner's regular-torus baseline)
    moves p S / 4 bytes across the bisection in its time; the bandwidth that implies is the pod's.
    Measured (2026-12-02): 25.6 TB/s vs the published 24 TB/s (+6.7%)."""
    from fabricsim.collectives.torus import lattice_all_to_all_s_per_byte

    chips = V4_POD_DIMS[0] * V4_POD_DIMS[1] * V4_POD_DIMS[2]
    s_per_byte = lattice_all_to_all_s_per_byte(V4_POD_DIMS, False, (V4_LINK_Bps,) * 3)
    implied_bisection_Bps = chips / 4 / s_per_byte
    assert implied_bisection_Bps == pytest.approx(V4_POD_BISECTION_Bps, rel=TOLERANCE)
