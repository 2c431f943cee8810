"""Real collectives on this machine through torch.distributed (layer L8; torch is optional).

:func:`fabricsim.measure.torch_dist.measure_collective` runs one op over a size sweep on N local
ranks (gloo on CPU, NCCL on GPUs) and returns nccl-tests-like rows, which
:func:`fabricsim.io.nccl_tests.format_nccl_tests` prints in nccl-tests' format so that
``fabricsim calibrate nccl-tests`` reads them like any other log.
"""

from fabricsim.measure.spec import MeasuredRow, MeasureResult, MeasureSpec

__all__ = ["MeasureResult", "MeasureSpec", "MeasuredRow"]
