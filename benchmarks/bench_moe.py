"""DeepSeek-V3 at scale: the figures of issue 10 item 2 (not run in CI).

Prints, for NVIDIA's published folded layout on 512 H100 (TP2 PP8 DP32 EP64), GB200 NVL72 at
128-512 GPUs and DeepSeek's own 2,048 H800 run (TP1 PP16 EP64 ZeRO-1, FP8, arXiv 2412.19437):
memory per GPU against capacity for each Megatron-Core recompute mode, and step time / tokens per
GPU-second with the settings each run used. DeepSeek reports 180K H800 GPU-hours per trillion
tokens (Table 1), i.e. ~1,543 tokens/s per GPU: printed as a ratio, not fitted.
Run: ``python benchmarks/bench_moe.py``.
"""

from __future__ import annotations

from fabricsim import api

DEEPSEEK_TOKENS_PER_GPU_S = 1e12 / (180e3 * 3600)


def _row(label: str, result) -> str:
    memory = f"{result.memory_per_gpu_bytes / 1e9:6.1f} / {result.memory_capacity_bytes / 1e9:5.1f} GB"
    per_gpu = result.tokens_per_s / result.gpus
    figures = f"step {result.step_time_s:7.2f} s  {per_gpu:7.0f} tok/s/GPU  MFU {result.mfu:5.1%}"
    return f"  {label:<34} {memory} fits={result.fits!s:<5} {figures}"


def main() -> None:
    h100 = ("deepseek-v3", "dgx-h100", 512, 4096, 4096)
    layout = {"tp": 2, "pp": 8, "dp": 32, "ep": 64}
    print("deepseek-v3 on 512 H100, TP2 PP8 DP32 EP64 (expert TP 1: EP spans TP x DP), batch 4096 x 4096")
    for recompute in ("none", "selective", "fine-grained", "full"):
        print(_row(f"recompute {recompute}", api.train(*h100, **layout, recompute=recompute)))
    tuned = {"overlap_grad_reduce": True, "overlap_param_gather": True, "a2a_overlap": True}
    print(_row("fine-grained + overlaps", api.train(*h100, **layout, recompute="fine-grained", **tuned)))
    print(
        _row(
            "  + DeepEP dispatcher",
            api.train(*h100, **layout, recompute="fine-grained", moe_dispatcher="deepep", **tuned),
        )
    )
    print("deepseek-v3 on gb200-nvl72, TP2 PP8, batch 4096 x 4096, fine-grained recompute")
    for gpus, ep in ((128, 16), (256, 32), (512, 64)):
        result = api.train("deepseek-v3", "gb200-nvl72", gpus, 4096, 4096, tp=2, pp=8, ep=ep, recompute="fine-grained")
        print(_row(f"{gpus} GPUs, EP{ep}", result))
    base = ("deepseek-v3", "h800", 2048, 15360, 4096)
    ds = {"tp": 1, "pp": 16, "ep": 64, "zero": 1}
    print(f"deepseek-v3 on 2,048 H800, TP1 PP16 EP64 ZeRO-1 (DeepSeek: ~{DEEPSEEK_TOKENS_PER_GPU_S:,.0f} tok/s/GPU)")
    print(_row("bf16, no recompute", api.train(*base, **ds)))
    recipe = {"dtype": "fp8", "fp8_recipe": "block", "recompute": "fine-grained"}
    for label, extra in (
        ("fp8 + fine-grained", {}),
        ("  + overlaps", tuned),
        ("  + overlaps + DeepEP", {**tuned, "moe_dispatcher": "deepep"}),
    ):
        result = api.train(*base, **ds, **recipe, **extra)
        ratio = result.tokens_per_s / result.gpus / DEEPSEEK_TOKENS_PER_GPU_S
        print(_row(label, result) + f"  {ratio:.2f}x DeepSeek's")


if __name__ == "__main__":
    main()
