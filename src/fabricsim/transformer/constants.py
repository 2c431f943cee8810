"""The few global constants of the training-step model, in one place (layer L4).

Every estimate of every model, system and layout uses these same values; nothing is tuned per row
of a validation suite. Each constant says where it comes from and whether it was calibrated.

* GEMM, attention and memory-bound kernel rates are no longer global constants: they come per
  device and dtype from kernel microbenchmarks in the catalog (:mod:`fabricsim.transformer.kernels`).
  Nothing in the compute model is fitted to an end-to-end run.
* ``KERNEL_OVERHEAD_S`` -- launch plus tail latency charged once per kernel (~5 µs is the usual
  CUDA launch+sync cost of a PyTorch op that is not hidden by asynchronous launch). Assumed.
  It is what a kernel launched eagerly from the host costs serving too (prefill, eager decode).
* ``CUDA_GRAPH_KERNEL_OVERHEAD_S`` -- the same per kernel when the step replays a captured CUDA
  graph (the serving engines' decode): the host launches the whole graph once and the GPU runs its
  kernels back to back, so what remains per kernel is the GPU-side gap between kernels, ~0.5 µs.
  Source: NVIDIA Technical Blog, A. Gray, "Getting Started with CUDA Graphs" (2019,
  developer.nvidia.com/blog/cuda-graphs/): a ~2.9 µs kernel takes ~3.8 µs per kernel launched
  back to back on a stream and ~3.4 µs in a graph. Calibrated low (kernel-level figure).
* ``FRAMEWORK_MEMORY_BYTES`` -- CUDA context, NCCL buffers, cuBLAS workspace and allocator
  fragmentation charged once per GPU. Assumed 3 GB (PyTorch + NCCL typically hold 1-2 GB of
  context/buffers; the rest is fragmentation head-room).
* ``OPTIMIZER_BYTES_PER_PARAM_UPDATE`` -- bytes of memory traffic per updated parameter of a fused
  mixed-precision Adam step: read fp32 grad, fp32 master, m and v (16 B), write master, m, v
  (12 B) and the 2-byte model copy: 30 B. Derived; used for the CPU Adam of optimizer offload.
* ``OPTIMIZER_SHARD_BYTES``, ``FP16_UNSCALE_BYTES``, ``MAIN_GRAD_COPY_BYTES`` -- HBM bytes of
  Megatron's GPU optimizer step (megatron/core/optimizer: ``clip_grad_norm_fp32``, ``FusedAdam``,
  ``_copy_main_params_to_model_params``, ``_unscale_main_grads_and_check_for_nan``,
  ``_copy_model_grads_to_main_grads``, ``zero_grad_buffer``), each a multi-tensor pass: on the
  parameters a rank updates (its ZeRO shard) the clipping norm reads the fp32 grad (4), Adam reads
  grad, master, m, v and writes master, m, v (28), the copy to the 16-bit weights reads 4 and
  writes 2 (6); fp16 loss scaling adds the unscale and non-finite check (read + write the fp32
  grad, 8); 16-bit gradients are first copied into fp32 main gradients (read 2, write 4); and the
  whole gradient buffer of the local replica (not sharded below ZeRO-3) is zeroed for the next
  step (its bytes per gradient). Derived.
* ``GRAD_SCALE_PASSES``, ``GRAD_NAN_CHECK_PASSES`` -- passes over the local gradient buffer before
  its data-parallel reduction (megatron/core/distributed/param_and_grad_buffer.py
  ``start_grad_sync`` @ d98e8a6): ``grad_data *= gradient_scaling_factor`` (1/dp unless averaged in
  the collective, Megatron's default: read + write) and, with ``check_for_nan_in_grad`` (Megatron-LM
  ``--check-for-nan-in-loss-and-grad``, default on), the norm of each bucket (read). Derived.
* ``MAIN_GRAD_BYTES`` -- the fp32 main-gradient copy the optimizer keeps per parameter it updates
  when the gradient buffer is 16-bit: Megatron-LM docs/user-guide/features/dist_optimizer.md
  (bytes per parameter: fp16 parameters and gradients 20, or 4 + 16/d distributed; bf16 parameters
  with fp32 gradients 18, or 6 + 12/d).
"""

from __future__ import annotations

KERNEL_OVERHEAD_S = 5.0e-6
CUDA_GRAPH_KERNEL_OVERHEAD_S = 0.5e-6  # 3.4 - 2.9 µs per kernel in a graph (Gray 2019, above)
FRAMEWORK_MEMORY_BYTES = 3.0e9
OPTIMIZER_BYTES_PER_PARAM_UPDATE = 30.0
OPTIMIZER_SHARD_BYTES = 38.0  # clip norm 4 + Adam 28 + copy to 16-bit weights 6
FP16_UNSCALE_BYTES = 8.0
MAIN_GRAD_COPY_BYTES = 6.0
MAIN_GRAD_BYTES = 4.0
GRAD_SCALE_PASSES = 2.0
GRAD_NAN_CHECK_PASSES = 1.0

# Mixed-precision Adam state per parameter (bytes): fp32 master weights + fp32 m + fp32 v.
# Source: Rajbhandari et al., ZeRO (SC'20), sec. 3.1 (K = 12).
ADAM_STATE_BYTES_PER_PARAM = 12.0

__all__ = [
    "ADAM_STATE_BYTES_PER_PARAM",
    "CUDA_GRAPH_KERNEL_OVERHEAD_S",
    "FP16_UNSCALE_BYTES",
    "FRAMEWORK_MEMORY_BYTES",
    "GRAD_NAN_CHECK_PASSES",
    "GRAD_SCALE_PASSES",
    "KERNEL_OVERHEAD_S",
    "MAIN_GRAD_BYTES",
    "MAIN_GRAD_COPY_BYTES",
    "OPTIMIZER_BYTES_PER_PARAM_UPDATE",
    "OPTIMIZER_SHARD_BYTES",
]
