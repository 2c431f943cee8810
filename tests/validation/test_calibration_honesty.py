"""Calibration honesty (issue 27): a sustained clock without a measurement runs on the catalog
median and says so; an assumed clock is named in the calibration line of the suites it feeds."""

from fabricsim import catalog
from fabricsim.transformer import kernels
from fabricsim.validation import run_suite


def test_gb200_without_a_measured_sustained_clock_runs_on_the_catalog_median() -> None:
    """GB200's fraction was set to the B200's 0.849 with an end-to-end residual in view (a fit); no
    kernel- or telemetry-level GB200 figure exists, so it takes the generation default."""
    gb200 = catalog.load_device("gb200")
    assert gb200.kernels is not None and gb200.kernels.sustained_clock_hz is None
    assert kernels.sustained_fraction(gb200) == kernels.DEFAULT_SUSTAINED_FRACTION
    assert "kernels.sustained_clock_hz" not in gb200.sources


def _assumed(device_name: str) -> bool:
    device = catalog.load_device(device_name)
    source = device.sources.get("kernels.sustained_clock_hz", "")
    return device.kernels is None or device.kernels.sustained_clock_hz is None or source.startswith("ASSUMED")


def test_assumed_sustained_clocks_are_stated_in_the_calibration_lines() -> None:
    """The A100's 1305 MHz is NVIDIA's FP64 HPL rating applied to fp16/BF16 tensor work: its catalog
    source and the ``training`` suite's calibration line say ASSUMED; ``training-public`` names
    GB200's assumed (median) clock."""
    assert _assumed("a100-80gb") and _assumed("gb200")
    assert not _assumed("h100-sxm") and not _assumed("b200")
    training = run_suite("training", catalog).calibration
    assert "HPL" in training and "ASSUMED" in training
    from fabricsim.validation import training_public

    line = training_public.CALIBRATION
    assert "GB200" in line and "ASSUMED" in line and f"{kernels.DEFAULT_SUSTAINED_FRACTION}" in line
